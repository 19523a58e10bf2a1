// Package fakemodel is a scripted stand-in for a model service: an HTTP
// server on loopback that speaks the OpenAI Chat Completions API the way
// agent CLIs (OpenCode, Copilot with its own key) call it, so that real
// agents can run real turns in tests without a network or credentials.
//
// POST /v1/chat/completions answers with server-sent events when the
// request asks to stream (a role chunk, content deltas, a chunk carrying
// finish_reason, a usage chunk, then "data: [DONE]") and with one JSON
// completion otherwise; GET /v1/models lists one model. A tool call streams
// as delta.tool_calls (the call's id and name, then its arguments) and
// finishes with "tool_calls"; the client then runs the tool and asks again
// with a role "tool" message.
//
// What the model answers is scripted: a queue of replies (text chunks, a
// tool call, an HTTP error status, a delay before each chunk, or a hold
// the test releases), taken in order by the requests that offer tools.
// Requests without tools are the agent's auxiliary calls (OpenCode's title
// generation); they get a fixed title and leave the queue alone. When the
// queue is empty the default reply echoes the last user message
// ("FAKE-REPLY: …"), or says "FAKE-DONE after tool" after a tool result.
// Every request is captured for assertions.
//
// The same server runs as a program, cmd/jam-fake-model, for trying an
// agent by hand.
package fakemodel
