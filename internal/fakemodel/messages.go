package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// messagesBody is the part of an Anthropic Messages request the server
// reads.
type messagesBody struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// block is one content block of a message. Types other than text,
// tool_use and tool_result (images, thinking) are skipped.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// reminder marks the text blocks Claude Code adds to a user message
// around what the user typed.
const reminder = "<system-reminder>"

// DecodeMessagesRequest reads and validates an Anthropic Messages request
// body (what Claude Code sends to POST /v1/messages) and translates it into
// Messages: system, and each system entry of messages[] (Claude Code's
// default model sends its system prompt so), becomes a system message, a user message's tool_result
// blocks become role "tool" messages followed by a user message with its
// text, an assistant message's tool_use blocks become its ToolCalls.
// Errors wrap jam.ErrInvalid.
func DecodeMessagesRequest(r io.Reader) (Request, error) {
	var body messagesBody
	if err := readBody(r, &body); err != nil {
		return Request{}, err
	}
	if body.Model == "" {
		return Request{}, fmt.Errorf("%w: request has no model", jam.ErrInvalid)
	}
	if len(body.Messages) == 0 {
		return Request{}, fmt.Errorf("%w: request has no messages", jam.ErrInvalid)
	}
	req := Request{API: APIMessages, Model: body.Model, Stream: body.Stream}
	system, err := textParts(body.System, "text")
	if err != nil {
		return Request{}, fmt.Errorf("%w: system: %v", jam.ErrInvalid, err)
	}
	if len(system) > 0 {
		req.Messages = append(req.Messages, Message{Role: "system", Content: Content(strings.Join(system, "\n"))})
	}
	prompt := false       // req.lastUser holds a text that is not a reminder
	conversation := false // a user or assistant message was seen
	for i, m := range body.Messages {
		if m.Role == "system" {
			// Claude Code's default model gets its system prompt as an
			// entry of messages[]: a system message in its place.
			text, err := systemEntry(m.Content)
			if err != nil {
				return Request{}, fmt.Errorf("%w: message %d: %v", jam.ErrInvalid, i, err)
			}
			req.Messages = append(req.Messages, Message{Role: "system", Content: Content(text)})
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			return Request{}, fmt.Errorf("%w: message %d has role %q", jam.ErrInvalid, i, m.Role)
		}
		conversation = true
		blocks, err := blocksOf(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("%w: message %d: %v", jam.ErrInvalid, i, err)
		}
		if len(blocks) == 0 {
			return Request{}, fmt.Errorf("%w: message %d has no content", jam.ErrInvalid, i)
		}
		var texts []string
		var calls []ToolCall
		results := false
		for j, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_use":
				if m.Role != "assistant" || b.ID == "" || b.Name == "" {
					return Request{}, fmt.Errorf("%w: message %d block %d: a tool_use block needs an id, a name and the assistant role", jam.ErrInvalid, i, j)
				}
				args := bytes.TrimSpace(b.Input)
				if len(args) == 0 {
					args = []byte("{}")
				}
				calls = append(calls, ToolCall{ID: b.ID, Type: "function", Function: FunctionCall{Name: b.Name, Arguments: string(args)}})
			case "tool_result":
				if m.Role != "user" || b.ToolUseID == "" {
					return Request{}, fmt.Errorf("%w: message %d block %d: a tool_result block needs a tool_use_id and the user role", jam.ErrInvalid, i, j)
				}
				out, err := textParts(b.Content, "text")
				if err != nil {
					return Request{}, fmt.Errorf("%w: message %d block %d: %v", jam.ErrInvalid, i, j, err)
				}
				req.Messages = append(req.Messages, Message{Role: "tool", ToolCallID: b.ToolUseID, Content: Content(strings.Join(out, "\n"))})
				results = true
			case "":
				return Request{}, fmt.Errorf("%w: message %d block %d has no type", jam.ErrInvalid, i, j)
			}
		}
		if m.Role == "assistant" {
			req.Messages = append(req.Messages, Message{Role: "assistant", Content: Content(strings.Join(texts, "\n")), ToolCalls: calls})
			continue
		}
		if len(texts) > 0 || !results {
			req.Messages = append(req.Messages, Message{Role: "user", Content: Content(strings.Join(texts, "\n"))})
		}
		req.followsTool = results
		for j := len(texts) - 1; j >= 0; j-- {
			if !strings.HasPrefix(strings.TrimSpace(texts[j]), reminder) {
				req.lastUser, prompt = texts[j], true
				break
			}
			if !prompt && j == len(texts)-1 {
				req.lastUser = texts[j] // only reminders so far
			}
		}
	}
	if !conversation {
		return Request{}, fmt.Errorf("%w: request has no user or assistant message", jam.ErrInvalid)
	}
	for i, t := range body.Tools {
		if t.Name == "" {
			return Request{}, fmt.Errorf("%w: tool %d has no name", jam.ErrInvalid, i)
		}
		tool := Tool{Type: "function"}
		if t.Type != "" && t.Type != "custom" {
			tool.Type = t.Type // a server tool (web_search_…)
		}
		tool.Function.Name, tool.Function.Description, tool.Function.Parameters = t.Name, t.Description, t.InputSchema
		req.Tools = append(req.Tools, tool)
	}
	return req, nil
}

// systemEntry reads a system entry of messages[]: a string, or text
// blocks only.
func systemEntry(b json.RawMessage) (string, error) {
	blocks, err := blocksOf(b)
	if err != nil {
		return "", err
	}
	texts := make([]string, 0, len(blocks))
	for j, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("block %d of a system entry has type %q (want text)", j, bl.Type)
		}
		texts = append(texts, bl.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// blocksOf reads a message's content: a string (one text block) or a list
// of blocks.
func blocksOf(b json.RawMessage) ([]block, error) {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return []block{{Type: "text", Text: s}}, nil
	case len(b) > 0 && b[0] == '[':
		var blocks []block
		if err := json.Unmarshal(b, &blocks); err != nil {
			return nil, err
		}
		return blocks, nil
	}
	return nil, fmt.Errorf("content is neither a string nor a list of blocks")
}

// messagesFormat is Anthropic Messages.
var messagesFormat = format{
	paths:  []string{"/v1/messages", "/messages"},
	decode: DecodeMessagesRequest,
	fail:   anthropicError,
	whole:  messagesWhole,
	stream: messagesStream,
}

// anthropicErrorTypes are Anthropic's error types by HTTP status.
var anthropicErrorTypes = map[int]string{
	400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
	413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error",
}

// anthropicError writes an error in Anthropic's envelope:
// {"type":"error","error":{"type":…,"message":…}}.
func anthropicError(w http.ResponseWriter, status int, msg string) {
	typ, ok := anthropicErrorTypes[status]
	switch {
	case ok:
	case status < 500:
		typ = "invalid_request_error"
	default:
		typ = "api_error"
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// messagesUsage is the usage object of a message: counted from the
// request and reply, or the reply's scripted usage, whose Input includes
// its Cached tokens (Anthropic's input_tokens does not: cached input is
// cache_read_input_tokens). The Messages format reports no reasoning
// tokens.
func messagesUsage(c Captured, reply Reply, final bool) map[string]int {
	in, out := tokens(c.Request, reply)
	cached := 0
	if u := reply.Usage; u != nil {
		in, cached, out = u.Input-u.Cached, u.Cached, u.Output
	}
	if !final {
		out = 0
	}
	return map[string]int{"input_tokens": in, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cached}
}

// stopReason is why the reply ends.
func stopReason(reply Reply) string {
	if reply.ToolCall != nil {
		return "tool_use"
	}
	return "end_turn"
}

// toolInput is a tool call's arguments as a JSON object; scripts are
// checked, but pushed replies are not, so anything else becomes {}.
func toolInput(tc *ToolCallReply) json.RawMessage {
	var obj map[string]any
	if json.Unmarshal(tc.Arguments, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return tc.Arguments
}

// messagesWhole is the non-streamed form of a reply.
func messagesWhole(c Captured, reply Reply) any {
	content := []any{}
	if len(reply.Text) > 0 || reply.ToolCall == nil {
		content = append(content, map[string]any{"type": "text", "text": strings.Join(reply.Text, "")})
	}
	if tc := reply.ToolCall; tc != nil {
		content = append(content, map[string]any{"type": "tool_use", "id": callID("toolu_", c.Seq, tc), "name": tc.Name,
			"input": toolInput(tc)})
	}
	return map[string]any{"id": fmt.Sprintf("msg_%d", c.Seq), "type": "message", "role": "assistant", "model": c.Model,
		"content": content, "stop_reason": stopReason(reply), "stop_sequence": nil, "usage": messagesUsage(c, reply, true)}
}

// messagesStream writes a reply as Messages events: message_start; for
// text, a text block's content_block_start, text_delta deltas and
// content_block_stop; for a tool call, a tool_use block whose input comes
// as one input_json_delta; message_delta with the stop reason and usage;
// message_stop.
func messagesStream(e *events, c Captured, reply Reply) {
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", c.Seq), "type": "message", "role": "assistant", "model": c.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": messagesUsage(c, reply, false)}})
	index := 0
	if len(reply.Text) > 0 || reply.ToolCall == nil {
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, t := range reply.Text {
			if !e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": t}}) {
				return
			}
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if tc := reply.ToolCall; tc != nil {
		e.send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": callID("toolu_", c.Seq, tc), "name": tc.Name, "input": map[string]any{}}})
		e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(toolInput(tc))}})
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(reply), "stop_sequence": nil}, "usage": map[string]int{"output_tokens": messagesUsage(c, reply, true)["output_tokens"]}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}
