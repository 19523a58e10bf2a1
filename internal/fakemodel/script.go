package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Reply is one scripted answer to one request, in whichever wire format
// the request used.
type Reply struct {
	// Text is streamed as content deltas, one per element.
	Text []string `json:"text,omitempty"`
	// ToolCall, when set, ends the reply with a function call (after the
	// text, if any): finish_reason "tool_calls" (Chat Completions), a
	// function_call item (Responses), a tool_use block and stop_reason
	// "tool_use" (Messages).
	ToolCall *ToolCallReply `json:"tool_call,omitempty"`
	// Status, when set (400–599), answers with that HTTP status and an
	// error body in the format's envelope instead.
	Status int `json:"status,omitempty"`
	// Delay comes before each event of the stream (or before the whole
	// answer when not streaming, or before the error).
	Delay Duration `json:"delay,omitempty"`
	// Usage, when set, is the usage the Responses format reports for the
	// reply (response.completed's usage) instead of the word counts.
	Usage *Usage `json:"usage,omitempty"`
	// Hold, when set, keeps the request waiting until it is closed (or the
	// client goes away): a test's gate. Not part of the script format.
	Hold <-chan struct{} `json:"-"`
	// Late, when set, makes the reply when it is served (after Hold):
	// for a test whose reply names something that exists only by then.
	// Its result's own Hold and Late are ignored. Not part of the script
	// format.
	Late func() Reply `json:"-"`
}

// ToolCallReply is a function call the model makes.
type ToolCallReply struct {
	// ID is the call id; default "call_<n>" ("toolu_<n>" for Messages),
	// n being the request's number.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Namespace, for the Responses format, is the namespace tool the
	// function is offered in (Codex offers an MCP server's tools in one).
	Namespace string `json:"namespace,omitempty"`
	// Arguments is the call's JSON object.
	Arguments json.RawMessage `json:"arguments"`
}

// Usage is a reply's scripted token counts. Input counts every input
// token, the cached ones included (the Responses format's input_tokens);
// the Messages format reports Input-Cached as input_tokens and Cached as
// cache_read_input_tokens, and no reasoning tokens.
type Usage struct {
	Input     int `json:"input"`
	Cached    int `json:"cached,omitempty"`
	Output    int `json:"output"`
	Reasoning int `json:"reasoning,omitempty"`
}

// Duration is a time.Duration written as text ("250ms", "2s") in scripts.
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string like \"250ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// validate checks one reply.
func (r Reply) validate() error {
	if r.Status != 0 {
		if r.Status < 400 || r.Status > 599 {
			return fmt.Errorf("status %d is not an error status (400–599)", r.Status)
		}
		if len(r.Text) > 0 || r.ToolCall != nil {
			return fmt.Errorf("status %d with text or a tool call: an error reply has no content", r.Status)
		}
	}
	if u := r.Usage; u != nil && (u.Input < 0 || u.Cached < 0 || u.Output < 0 || u.Reasoning < 0 || u.Cached > u.Input) {
		return fmt.Errorf("usage %+v: counts must not be negative, nor cached beyond input", *u)
	}
	if tc := r.ToolCall; tc != nil {
		if tc.Name == "" {
			return fmt.Errorf("tool call without a name")
		}
		args := bytes.TrimSpace(tc.Arguments)
		var obj map[string]any
		if len(args) == 0 || json.Unmarshal(args, &obj) != nil || obj == nil {
			return fmt.Errorf("tool call %s: arguments must be a JSON object", tc.Name)
		}
	}
	return nil
}

// Script is the scripted part of a server's behaviour: replies taken in
// order by the requests that offer tools. When it runs out, the default
// reply answers.
type Script struct {
	Replies []Reply `json:"replies"`
}

// ParseScript reads a script file. Errors wrap jam.ErrInvalid.
func ParseScript(b []byte) (Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("%w: script: %v", jam.ErrInvalid, err)
	}
	if dec.More() {
		return Script{}, fmt.Errorf("%w: script: data after the JSON object", jam.ErrInvalid)
	}
	for i, r := range s.Replies {
		if err := r.validate(); err != nil {
			return Script{}, fmt.Errorf("%w: script reply %d: %v", jam.ErrInvalid, i, err)
		}
	}
	return s, nil
}
