package fakemodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jamhq/jam/internal/jam"
)

// MaxRequest bounds one request body.
const MaxRequest = 8 << 20

// API names the wire format a request used.
type API string

// The wire formats the server speaks.
const (
	// APIChat is OpenAI Chat Completions: POST /v1/chat/completions.
	APIChat API = "chat"
	// APIResponses is OpenAI Responses: POST /v1/responses.
	APIResponses API = "responses"
	// APIMessages is Anthropic Messages: POST /v1/messages.
	APIMessages API = "messages"
)

// Request is the part of a request the server reads, in the shape of a
// Chat Completions request whatever the wire format: the Responses and
// Messages decoders translate their conversations into Messages (tool
// results become role "tool" messages, tool calls become ToolCalls) so
// that tests assert on one shape. Unknown fields are ignored, as the real
// services ignore what they do not know of.
type Request struct {
	// API is the wire format the request came in.
	API      API       `json:"-"`
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`

	// lastUser and followsTool are set by the decoders of the formats
	// whose conversations do not map one to one onto Messages.
	lastUser    string
	followsTool bool
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
	texts, err := textParts(b, "text")
	if err != nil {
		return err
	}
	*c = Content(strings.Join(texts, "\n"))
	return nil
}

// textParts reads content that is a string, null, or a list of parts, and
// returns the texts of the parts whose type is one of kinds (a string is
// one text). A missing value is no text.
func textParts(b []byte, kinds ...string) ([]string, error) {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || bytes.Equal(b, []byte("null")):
		return nil, nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	case b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return nil, err
		}
		var texts []string
		for _, p := range parts {
			if slices.Contains(kinds, p.Type) {
				texts = append(texts, p.Text)
			}
		}
		return texts, nil
	}
	return nil, errors.New("content is neither a string, null nor a list of parts")
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
	Type string `json:"type"`
	// Namespace is the namespace tool (Responses API) a function is
	// offered in; a namespace itself is a Tool of type namespace too.
	Namespace string `json:"namespace,omitempty"`
	Function  struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// roles are the message roles the API knows.
var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// readBody reads one JSON object of at most MaxRequest bytes into v.
// Errors wrap jam.ErrInvalid.
func readBody(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, MaxRequest+1))
	if err != nil {
		return fmt.Errorf("%w: read request: %v", jam.ErrInvalid, err)
	}
	if len(b) > MaxRequest {
		return fmt.Errorf("%w: request larger than %d bytes", jam.ErrInvalid, MaxRequest)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", jam.ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: request body: data after the JSON object", jam.ErrInvalid)
	}
	return nil
}

// DecodeRequest reads and validates a Chat Completions request body.
// Errors wrap jam.ErrInvalid.
func DecodeRequest(r io.Reader) (Request, error) {
	var req Request
	if err := readBody(r, &req); err != nil {
		return Request{}, err
	}
	req.API = APIChat
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

// LastUser is the text of the last user message: what the user asked.
// For Messages requests it is the last text block of the last user message
// that is not a <system-reminder> (Claude Code puts its reminders before
// the prompt, and after tool results).
func (r Request) LastUser() string {
	if r.API != APIChat && r.API != "" {
		return r.lastUser
	}
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
	if r.API != APIChat && r.API != "" {
		return r.followsTool
	}
	return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool"
}
