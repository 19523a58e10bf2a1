// Package bandtest is the protocol conformance suite for Band-compatible
// servers: jam's embedded hub, and real Band when a test opts in.
//
// Exercise drives a Target with raw HTTP (net/http) and raw Phoenix v2
// frames (github.com/coder/websocket and internal/band/phoenix). It imports
// neither jam's Band client nor the hub, and decodes responses into its own
// small structs rather than the shared internal/band/protocol types, so a
// mistake shared by the hub and the client cannot hide itself: the suite is
// as valid against https://app.band.ai as against the hub. What it expects
// comes from docs/band-protocol.md; where that note leaves a behaviour open,
// the suite does not check it.
//
// The suite covers the acceptance scenario (register agents, create a room,
// mention one agent, process and reply, read the history), the processing
// lifecycle and its queue filters, the error envelope and status codes,
// cursor pagination, and the WebSocket rules (upgrade refusals, join
// authorisation, heartbeats, malformed frames, leave, supersede). When
// Target.Restart is set, the acceptance scenario restarts the server between
// every pair of steps, which makes it a durability check.
//
// When Band's OpenAPI document is found (../shared/docs/band/openapi.json
// from the module root, or the file named by JAM_BAND_OPENAPI), every REST
// response the suite receives is validated against the schema its operation
// declares for that status, and so is every message_created payload
// (against ChatMessage). The validator is a small one written here for the
// subset of JSON Schema the document uses (type, required, properties,
// additionalProperties, items, enum, oneOf/anyOf/allOf, $ref, formats uuid,
// date-time and email); a general library would reject the document's $refs,
// whose schema names contain unescaped slashes. The operations validated are
// logged when Exercise finishes.
//
// Subtests run in parallel, each on its own Target when it needs isolation.
// A few cases share one socket and run in order, because Band allows one
// socket per agent; they say so where they do. Nothing waits with sleeps:
// every wait is on a frame, a reply or a closed socket, with a deadline.
package bandtest
