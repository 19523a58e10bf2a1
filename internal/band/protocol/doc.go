// Package protocol holds the JSON shapes and constants of Band's REST and
// WebSocket protocol, as documented in Band's OpenAPI description and its
// WebSocket guide. The embedded hub (the server) and the Band client both
// use these types, so the two sides cannot drift apart.
//
// Field names and optionality follow the OpenAPI schemas: required fields
// are plain values, nullable ones are pointers, and fields a server may
// omit carry omitempty. Times are RFC 3339 strings in UTC with
// microseconds, as Band sends them.
package protocol
