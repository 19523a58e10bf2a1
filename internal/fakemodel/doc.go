// Package fakemodel is a scripted stand-in for a model service: an HTTP
// server on loopback that speaks the three wire formats agent CLIs call a
// model with, so that real agents can run real turns in tests without a
// network or credentials:
//
//   - OpenAI Chat Completions (OpenCode, Copilot with its own key):
//     POST /v1/chat/completions streams "data:" chunks (a role chunk,
//     content deltas, a chunk carrying finish_reason, a usage chunk, then
//     "data: [DONE]"). A tool call streams as delta.tool_calls (the call's
//     id and name, then its arguments) and finishes with "tool_calls"; the
//     client runs the tool and asks again with a role "tool" message.
//   - OpenAI Responses (Codex): POST /v1/responses streams named events:
//     response.created, the message item added, response.output_text
//     deltas, output_text done, the item done, then response.completed
//     with the usage. A tool call is a function_call item (output item
//     done); the client asks again with a function_call_output item.
//   - Anthropic Messages (Claude Code, whose base URL is Root):
//     POST /v1/messages streams message_start, content_block_start, delta
//     and stop for a text block (text_delta) and for a tool_use block (its
//     input as one input_json_delta), message_delta with the stop reason
//     (end_turn or tool_use), then message_stop. The client asks again with
//     a user tool_result block. Errors use Anthropic's error envelope.
//
// Each format also answers with one JSON object when the request does not
// ask to stream, and is also served without the /v1 prefix. GET /v1/models
// lists one model.
//
// What the model answers is scripted, the same way for every format: a
// queue of replies (text chunks, a tool call, an HTTP error status, a delay
// before each event, a hold the test releases, or, for the Responses
// format, the usage response.completed reports), taken in order by the
// requests that offer tools. Requests without tools are the agent's
// auxiliary calls (OpenCode's title generation); they get a fixed title and
// leave the queue alone. When the queue is empty the default reply echoes
// the last user message ("FAKE-REPLY: …"), or says "FAKE-DONE after tool"
// when the request answers a tool call. Every request is captured for
// assertions with the API it used and its conversation translated into
// one shape (Request), so tests read the prompt and the tool results the
// same way whatever the format.
//
// The same server runs as a program, cmd/jam-fake-model, for trying an
// agent by hand.
package fakemodel
