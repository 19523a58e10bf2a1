// Package phoenix encodes and decodes Phoenix Channels v2 frames, the
// WebSocket framing Band speaks: a JSON array
// [join_ref, ref, topic, event, payload] sent as one text message.
//
// join_ref and ref are strings or null; topic and event are non-empty
// strings; payload is any JSON value (an object in every frame Band sends).
// Decode is strict: anything else is an error wrapping ErrMalformed, so a
// hostile peer cannot smuggle a half-parsed frame into a channel.
package phoenix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Control topics and events of the Phoenix protocol.
const (
	TopicPhoenix   = "phoenix"
	EventJoin      = "phx_join"
	EventLeave     = "phx_leave"
	EventReply     = "phx_reply"
	EventError     = "phx_error"
	EventClose     = "phx_close"
	EventHeartbeat = "heartbeat"
)

// Reply statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// MaxFrameBytes bounds one frame on either side. Band documents no limit;
// 1 MiB is far above any message Band sends and keeps a hostile peer from
// exhausting memory.
const MaxFrameBytes = 1 << 20

// ErrMalformed marks a frame that is not a valid v2 frame.
var ErrMalformed = errors.New("malformed phoenix frame")

// Frame is one Phoenix v2 message. A nil JoinRef or Ref encodes as null.
type Frame struct {
	JoinRef *string
	Ref     *string
	Topic   string
	Event   string
	Payload json.RawMessage
}

// Reply is the payload of a phx_reply frame.
type Reply struct {
	Status   string          `json:"status"`
	Response json.RawMessage `json:"response"`
}

// Ref returns a pointer to s, for Frame's optional refs.
func Ref(s string) *string { return &s }

// RefString returns the ref's value, or "" for null.
func RefString(r *string) string {
	if r == nil {
		return ""
	}
	return *r
}

// Encode returns the frame's wire form. A nil payload encodes as {}.
func (f Frame) Encode() ([]byte, error) {
	if f.Topic == "" || f.Event == "" {
		return nil, fmt.Errorf("%w: topic and event must not be empty", ErrMalformed)
	}
	payload := f.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	var b bytes.Buffer
	b.WriteByte('[')
	writeRef(&b, f.JoinRef)
	b.WriteByte(',')
	writeRef(&b, f.Ref)
	b.WriteByte(',')
	writeString(&b, f.Topic)
	b.WriteByte(',')
	writeString(&b, f.Event)
	b.WriteByte(',')
	if !json.Valid(payload) {
		return nil, fmt.Errorf("%w: payload is not valid JSON", ErrMalformed)
	}
	b.Write(payload)
	b.WriteByte(']')
	if b.Len() > MaxFrameBytes {
		return nil, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrMalformed, b.Len(), MaxFrameBytes)
	}
	return b.Bytes(), nil
}

func writeRef(b *bytes.Buffer, r *string) {
	if r == nil {
		b.WriteString("null")
		return
	}
	writeString(b, *r)
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // strings always marshal
	b.Write(q)
}

// Decode parses one frame.
func Decode(data []byte) (Frame, error) {
	if len(data) > MaxFrameBytes {
		return Frame{}, fmt.Errorf("%w: frame of %d bytes exceeds %d", ErrMalformed, len(data), MaxFrameBytes)
	}
	if !utf8.Valid(data) {
		return Frame{}, fmt.Errorf("%w: not valid UTF-8", ErrMalformed)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(data, &parts); err != nil {
		return Frame{}, fmt.Errorf("%w: want a JSON array: %v", ErrMalformed, err)
	}
	if len(parts) != 5 {
		return Frame{}, fmt.Errorf("%w: want 5 elements, got %d", ErrMalformed, len(parts))
	}
	var f Frame
	var err error
	if f.JoinRef, err = decodeRef(parts[0], "join_ref"); err != nil {
		return Frame{}, err
	}
	if f.Ref, err = decodeRef(parts[1], "ref"); err != nil {
		return Frame{}, err
	}
	if f.Topic, err = decodeName(parts[2], "topic"); err != nil {
		return Frame{}, err
	}
	if f.Event, err = decodeName(parts[3], "event"); err != nil {
		return Frame{}, err
	}
	f.Payload = bytes.TrimSpace(parts[4])
	return f, nil
}

// decodeRef accepts a string or null. Numbers are accepted too and turned
// into their decimal string, as some clients send numeric refs.
func decodeRef(raw json.RawMessage, what string) (*string, error) {
	raw = bytes.TrimSpace(raw)
	if bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return &s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			s := strconv.FormatInt(i, 10)
			return &s, nil
		}
	}
	return nil, fmt.Errorf("%w: %s must be a string or null", ErrMalformed, what)
}

// maxNameLen bounds topics and events.
const maxNameLen = 256

func decodeName(raw json.RawMessage, what string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%w: %s must be a string", ErrMalformed, what)
	}
	if s == "" || len(s) > maxNameLen {
		return "", fmt.Errorf("%w: %s must be 1 to %d bytes", ErrMalformed, what, maxNameLen)
	}
	return s, nil
}

// ReplyFrame builds the phx_reply to a client frame.
func ReplyFrame(to Frame, status string, response any) (Frame, error) {
	resp, err := json.Marshal(response)
	if err != nil {
		return Frame{}, err
	}
	if response == nil {
		resp = json.RawMessage("{}")
	}
	payload, err := json.Marshal(Reply{Status: status, Response: resp})
	if err != nil {
		return Frame{}, err
	}
	return Frame{JoinRef: to.JoinRef, Ref: to.Ref, Topic: to.Topic, Event: EventReply, Payload: payload}, nil
}
