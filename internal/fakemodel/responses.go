package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// responsesBody is the part of an OpenAI Responses request the server
// reads.
type responsesBody struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []responsesTool `json:"tools"`
}

// responsesItem is one input item: a message, a function call the model
// made, or the output of one. Other item types (reasoning, say) are
// skipped.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// responsesTool is a tool the client offers. Function tools are flat
// (name and parameters beside the type); built-in tools (web_search) have
// only a type.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Tools are a namespace tool's functions.
	Tools []responsesTool `json:"tools,omitempty"`
}

// responsesRoles are the message roles the Responses API knows.
var responsesRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true}

// responsesText are the content part types that carry text.
var responsesText = []string{"input_text", "output_text", "text"}

// DecodeResponsesRequest reads and validates an OpenAI Responses request
// body (what Codex sends to POST /v1/responses) and translates its input
// items into Messages: instructions become a system message, function_call
// items an assistant message's ToolCalls, function_call_output items role
// "tool" messages. Errors wrap jam.ErrInvalid.
func DecodeResponsesRequest(r io.Reader) (Request, error) {
	var body responsesBody
	if err := readBody(r, &body); err != nil {
		return Request{}, err
	}
	if body.Model == "" {
		return Request{}, fmt.Errorf("%w: request has no model", jam.ErrInvalid)
	}
	req := Request{API: APIResponses, Model: body.Model, Stream: body.Stream}
	if body.Instructions != "" {
		req.Messages = append(req.Messages, Message{Role: "system", Content: Content(body.Instructions)})
	}
	items, err := responsesInput(body.Input)
	if err != nil {
		return Request{}, err
	}
	if len(items) == 0 {
		return Request{}, fmt.Errorf("%w: request has no input", jam.ErrInvalid)
	}
	for i, it := range items {
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message" // the short form of a message item
		}
		switch typ {
		case "message":
			if !responsesRoles[it.Role] {
				return Request{}, fmt.Errorf("%w: input item %d has role %q", jam.ErrInvalid, i, it.Role)
			}
			texts, err := textParts(it.Content, responsesText...)
			if err != nil {
				return Request{}, fmt.Errorf("%w: input item %d: %v", jam.ErrInvalid, i, err)
			}
			text := strings.Join(texts, "\n")
			req.Messages = append(req.Messages, Message{Role: it.Role, Content: Content(text)})
			if it.Role == "user" {
				req.lastUser, req.followsTool = text, false
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return Request{}, fmt.Errorf("%w: function_call item %d needs a call_id and a name", jam.ErrInvalid, i)
			}
			call := ToolCall{ID: it.CallID, Type: "function", Function: FunctionCall{Name: it.Name, Arguments: it.Arguments}}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "assistant" && req.Messages[n-1].Content == "" {
				req.Messages[n-1].ToolCalls = append(req.Messages[n-1].ToolCalls, call)
			} else {
				req.Messages = append(req.Messages, Message{Role: "assistant", ToolCalls: []ToolCall{call}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return Request{}, fmt.Errorf("%w: function_call_output item %d has no call_id", jam.ErrInvalid, i)
			}
			texts, err := textParts(it.Output, responsesText...)
			if err != nil {
				return Request{}, fmt.Errorf("%w: function_call_output item %d: %v", jam.ErrInvalid, i, err)
			}
			req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: it.CallID, Content: Content(strings.Join(texts, "\n"))})
			req.followsTool = true
		case "":
			return Request{}, fmt.Errorf("%w: input item %d has no type", jam.ErrInvalid, i)
		}
	}
	for i, t := range body.Tools {
		name := t.Name
		switch {
		case t.Type == "":
			return Request{}, fmt.Errorf("%w: tool %d has no type", jam.ErrInvalid, i)
		case t.Type == "function" && name == "":
			return Request{}, fmt.Errorf("%w: function tool %d has no name", jam.ErrInvalid, i)
		case name == "":
			name = t.Type // a built-in tool is known by its type
		}
		tool := Tool{Type: t.Type}
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = name, t.Description, t.Parameters
		req.Tools = append(req.Tools, tool)
		for _, f := range t.Tools {
			ft := Tool{Type: f.Type, Namespace: name}
			ft.Function.Name, ft.Function.Description, ft.Function.Parameters = f.Name, f.Description, f.Parameters
			req.Tools = append(req.Tools, ft)
		}
	}
	return req, nil
}

// responsesInput reads input, which is a list of items or a string (one
// user message).
func responsesInput(b json.RawMessage) ([]responsesItem, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("%w: input: %v", jam.ErrInvalid, err)
		}
		c, _ := json.Marshal(s)
		return []responsesItem{{Type: "message", Role: "user", Content: c}}, nil
	}
	var items []responsesItem
	if len(b) > 0 && !bytes.Equal(b, []byte("null")) {
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("%w: input: %v", jam.ErrInvalid, err)
		}
	}
	return items, nil
}

// responsesFormat is OpenAI Responses.
var responsesFormat = format{
	paths:  []string{"/v1/responses", "/responses"},
	decode: DecodeResponsesRequest,
	fail:   openAIError,
	whole:  responsesWhole,
	stream: responsesStream,
}

// responsesOutput is a reply as output items: a message (unless the reply
// is only a tool call) and a function call.
func responsesOutput(c Captured, reply Reply) (msg, call map[string]any) {
	if len(reply.Text) > 0 || reply.ToolCall == nil {
		msg = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", c.Seq), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": strings.Join(reply.Text, ""), "annotations": []any{}}}}
	}
	if tc := reply.ToolCall; tc != nil {
		call = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", c.Seq), "status": "completed",
			"call_id": callID("call_", c.Seq, tc), "name": tc.Name, "arguments": string(tc.Arguments)}
		if tc.Namespace != "" {
			call["namespace"] = tc.Namespace
		}
	}
	return msg, call
}

// responseObject is the response as response.created, response.completed
// and the non-streamed answer carry it.
func responseObject(c Captured, reply Reply, status string, output []any) map[string]any {
	r := map[string]any{"id": fmt.Sprintf("resp_%d", c.Seq), "object": "response", "created_at": time.Now().Unix(),
		"status": status, "model": c.Model, "output": output}
	if status == "completed" {
		in, out := tokens(c.Request, reply)
		cached, reasoning := 0, 0
		if u := reply.Usage; u != nil {
			in, cached, out, reasoning = u.Input, u.Cached, u.Output, u.Reasoning
		}
		r["usage"] = map[string]any{"input_tokens": in, "input_tokens_details": map[string]int{"cached_tokens": cached},
			"output_tokens": out, "output_tokens_details": map[string]int{"reasoning_tokens": reasoning}, "total_tokens": in + out}
	}
	return r
}

// responsesWhole is the non-streamed form of a reply.
func responsesWhole(c Captured, reply Reply) any {
	output := []any{}
	msg, call := responsesOutput(c, reply)
	if msg != nil {
		output = append(output, msg)
	}
	if call != nil {
		output = append(output, call)
	}
	return responseObject(c, reply, "completed", output)
}

// responsesStream writes a reply as Responses events: response.created;
// for text, the message item added, its output_text deltas, output_text
// done and the item done; for a tool call, its function_call item done;
// then response.completed with the usage.
func responsesStream(e *events, c Captured, reply Reply) {
	seq := 0
	send := func(typ string, ev map[string]any) bool {
		ev["type"], ev["sequence_number"] = typ, seq
		seq++
		return e.send(typ, ev)
	}
	send("response.created", map[string]any{"response": responseObject(c, reply, "in_progress", []any{})})
	output := []any{}
	msg, call := responsesOutput(c, reply)
	if msg != nil {
		id, index := msg["id"], len(output)
		send("response.output_item.added", map[string]any{"output_index": index,
			"item": map[string]any{"type": "message", "id": id, "status": "in_progress", "role": "assistant", "content": []any{}}})
		for _, t := range reply.Text {
			if !send("response.output_text.delta", map[string]any{"item_id": id, "output_index": index, "content_index": 0, "delta": t}) {
				return
			}
		}
		send("response.output_text.done", map[string]any{"item_id": id, "output_index": index, "content_index": 0,
			"text": strings.Join(reply.Text, "")})
		send("response.output_item.done", map[string]any{"output_index": index, "item": msg})
		output = append(output, msg)
	}
	if call != nil {
		send("response.output_item.done", map[string]any{"output_index": len(output), "item": call})
		output = append(output, call)
	}
	send("response.completed", map[string]any{"response": responseObject(c, reply, "completed", output)})
}
