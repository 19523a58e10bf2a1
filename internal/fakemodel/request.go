package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// MaxRequest bounds one request body.
const MaxRequest = 8 << 20

// Request is the part of a Chat Completions request the server reads.
// Unknown fields are ignored, as the real service ignores what it does not
// know of.
type Request struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
}

// Message is one message of the conversation.
type Message struct {
	Role       string     `json:"role"`
	Content    Content    `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Content is a message's text. On the wire it is a string, null, or a
// list of parts; the text parts are joined and other parts (images) are
// dropped.
type Content string

// UnmarshalJSON reads any of the three forms.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = Content(s)
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var texts []string
		for _, p := range parts {
			if p.Type == "text" {
				texts = append(texts, p.Text)
			}
		}
		*c = Content(strings.Join(texts, "\n"))
		return nil
	}
	return errors.New("content is neither a string, null nor a list of parts")
}

// ToolCall is a function call the assistant made.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as a JSON
// text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function the client offers.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// roles are the message roles the API knows.
var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// DecodeRequest reads and validates a request body. Errors wrap
// jam.ErrInvalid.
func DecodeRequest(r io.Reader) (Request, error) {
	var req Request
	b, err := io.ReadAll(io.LimitReader(r, MaxRequest+1))
	if err != nil {
		return req, fmt.Errorf("%w: read request: %v", jam.ErrInvalid, err)
	}
	if len(b) > MaxRequest {
		return req, fmt.Errorf("%w: request larger than %d bytes", jam.ErrInvalid, MaxRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("%w: request body: %v", jam.ErrInvalid, err)
	}
	if dec.More() {
		return Request{}, fmt.Errorf("%w: request body: data after the JSON object", jam.ErrInvalid)
	}
	if req.Model == "" {
		return Request{}, fmt.Errorf("%w: request has no model", jam.ErrInvalid)
	}
	if len(req.Messages) == 0 {
		return Request{}, fmt.Errorf("%w: request has no messages", jam.ErrInvalid)
	}
	for i, m := range req.Messages {
		if !roles[m.Role] {
			return Request{}, fmt.Errorf("%w: message %d has role %q", jam.ErrInvalid, i, m.Role)
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return Request{}, fmt.Errorf("%w: tool message %d has no tool_call_id", jam.ErrInvalid, i)
		}
	}
	for i, t := range req.Tools {
		if t.Function.Name == "" {
			return Request{}, fmt.Errorf("%w: tool %d has no function name", jam.ErrInvalid, i)
		}
	}
	return req, nil
}

// LastUser is the text of the last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return string(r.Messages[i].Content)
		}
	}
	return ""
}

// ToolResults are the tool messages, in order.
func (r Request) ToolResults() []Message {
	var out []Message
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// OffersTool says whether the request offers a function of that name.
func (r Request) OffersTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// answersTool says whether the conversation ends with tool results, that
// is, the model is asked to go on after its tool call.
func (r Request) answersTool() bool {
	return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool"
}
