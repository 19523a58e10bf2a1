package fakemodel

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// chatFormat is OpenAI Chat Completions.
var chatFormat = format{
	paths:  []string{"/v1/chat/completions", "/chat/completions"},
	decode: DecodeRequest,
	fail:   openAIError,
	whole:  chatCompletion,
	stream: chatStream,
}

// openAIError writes an error in OpenAI's envelope, typed by its status.
func openAIError(w http.ResponseWriter, status int, msg string) {
	typ := "server_error"
	if status < 500 {
		typ = "invalid_request_error"
	}
	apiError(w, status, typ, msg)
}

// chatStream writes a reply as Chat Completions chunks: a role chunk,
// content deltas, the tool call's head and arguments, a chunk with
// finish_reason, a usage chunk and "data: [DONE]".
func chatStream(e *events, c Captured, reply Reply) {
	id := fmt.Sprintf("chatcmpl-%d", c.Seq)
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": c.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	e.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, t := range reply.Text {
		if !e.send("", chunk(map[string]any{"content": t}, nil)) {
			return
		}
	}
	finish := "stop"
	if tc := reply.ToolCall; tc != nil {
		finish = "tool_calls"
		head := map[string]any{"index": 0, "id": callID("call_", c.Seq, tc), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""}}
		args := map[string]any{"index": 0, "function": map[string]any{"arguments": string(tc.Arguments)}}
		e.send("", chunk(map[string]any{"tool_calls": []any{head}}, nil))
		e.send("", chunk(map[string]any{"tool_calls": []any{args}}, nil))
	}
	e.send("", chunk(map[string]any{}, finish))
	in, out := tokens(c.Request, reply)
	e.send("", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": c.Model,
		"choices": []any{}, "usage": map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	e.raw("data: [DONE]\n\n")
}

// chatCompletion is the non-streamed form of a reply.
func chatCompletion(c Captured, reply Reply) any {
	msg := map[string]any{"role": "assistant", "content": strings.Join(reply.Text, "")}
	finish := "stop"
	if tc := reply.ToolCall; tc != nil {
		finish = "tool_calls"
		msg["tool_calls"] = []any{map[string]any{"id": callID("call_", c.Seq, tc), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": string(tc.Arguments)}}}
	}
	in, out := tokens(c.Request, reply)
	return map[string]any{"id": fmt.Sprintf("chatcmpl-%d", c.Seq), "object": "chat.completion", "created": time.Now().Unix(),
		"model":   c.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}}
}
