package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// History bounds.
const (
	DefaultHistoryLimit = 20
	MaxHistoryLimit     = 100
)

// maxNameBytes bounds one handle or participant id in mentions and to.
const maxNameBytes = 256

// limits are the input bounds the decoders enforce.
type limits struct {
	maxText       int // bytes of a reply's or message's text
	maxRecipients int // entries of to, and of mentions
	maxReason     int // bytes of a no-reply reason
}

// The decoders are the only way from a call's JSON arguments to a tool's
// input: every check the input schema states is made here, with a message
// naming the field, before Actions sees anything. (The SDK's typed tools
// would validate against the schema first and answer schema-library text
// such as `validating "arguments": validating root: required: missing
// properties: ["to"]`.)

func decodeReply(raw json.RawMessage, l limits) (ReplyInput, error) {
	in, err := decodeObject[ReplyInput](raw)
	if err != nil {
		return in, err
	}
	if err := checkText("text", in.Text, l.maxText); err != nil {
		return in, err
	}
	if err := checkNames("mentions", in.Mentions, 0, l.maxRecipients); err != nil {
		return in, err
	}
	return in, nil
}

func decodeNoReply(raw json.RawMessage, l limits) (NoReplyInput, error) {
	in, err := decodeObject[NoReplyInput](raw)
	if err != nil {
		return in, err
	}
	return in, checkText("reason", in.Reason, l.maxReason)
}

func decodeSend(raw json.RawMessage, l limits) (SendInput, error) {
	in, err := decodeObject[SendInput](raw)
	if err != nil {
		return in, err
	}
	if err := checkText("text", in.Text, l.maxText); err != nil {
		return in, err
	}
	if err := checkNames("to", in.To, 1, l.maxRecipients); err != nil {
		return in, err
	}
	return in, nil
}

// decodeHistory always sets Limit: the default when none is given.
func decodeHistory(raw json.RawMessage, _ limits) (HistoryInput, error) {
	in, err := decodeObject[HistoryInput](raw)
	if err != nil {
		return in, err
	}
	if in.Limit == nil {
		in.Limit = new(DefaultHistoryLimit)
		return in, nil
	}
	if n := *in.Limit; n < 1 || n > MaxHistoryLimit {
		return in, invalid("limit", "%d is out of range: give 1 to %d, or leave it out for %d", n, MaxHistoryLimit, DefaultHistoryLimit)
	}
	return in, nil
}

func decodeNone(raw json.RawMessage, _ limits) (noInput, error) {
	return decodeObject[noInput](raw)
}

// decodeObject decodes a JSON object into T, refusing fields T lacks,
// values of the wrong type and anything after the object. Absent
// arguments (nothing, or null) are the empty object.
func decodeObject[T any](raw json.RawMessage) (T, error) {
	var v T
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return v, nil
	}
	if trimmed[0] != '{' {
		return v, invalid("arguments", "want a JSON object of named arguments")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, decodeError(err, reflect.TypeFor[T]())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return v, invalid("arguments", "want one JSON object, found more after it")
	}
	return v, nil
}

// decodeError names the field a decoding error is about; into is the
// struct decoded into.
func decodeError(err error, into reflect.Type) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "arguments"
		}
		if ft, ok := fieldType(into, field); ok && ft.Kind() == reflect.Slice && te.Type == ft.Elem() {
			return invalid(field, "want %s; an entry is a %s", jsonType(ft), te.Value)
		}
		return invalid(field, "want %s, got %s", jsonType(te.Type), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return invalid("arguments", "not valid JSON at byte %d", se.Offset)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// The name comes quoted and escaped; keep it escaped.
		if name = strings.TrimSuffix(strings.TrimPrefix(name, `"`), `"`); name == "" {
			name = `""`
		}
		return invalid(clip(name, 64), "no such argument for this tool")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid("arguments", "the JSON object is cut short")
	}
	return invalid("arguments", "%s", clip(err.Error(), 200))
}

// fieldType is the type of the field of struct t named name in JSON.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for f := range t.Fields() {
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// jsonType names a Go type the way the schema does.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonType(t.Elem()), "an "), "a ") + "s"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Pointer:
		return jsonType(t.Elem())
	}
	return t.String()
}

// checkText requires s to have a non-space character and at most max
// bytes.
func checkText(field, s string, max int) error {
	if strings.TrimSpace(s) == "" {
		return invalid(field, "is empty")
	}
	if len(s) > max {
		return invalid(field, "is %d bytes, more than the %d allowed", len(s), max)
	}
	return nil
}

// checkNames requires between min and max entries, each a non-blank
// name of at most maxNameBytes.
func checkNames(field string, names []string, min, max int) error {
	switch {
	case len(names) < min:
		return invalid(field, "is required: name at least one recipient (a handle or id from room_participants)")
	case len(names) > max:
		return invalid(field, "has %d entries, more than the %d allowed", len(names), max)
	}
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			return invalid(field, "entry %d is empty", i)
		}
		if len(n) > maxNameBytes {
			return invalid(field, "entry %d is %d bytes; a handle or id has at most %d", i, len(n), maxNameBytes)
		}
	}
	return nil
}

// clip shortens s to at most n bytes on a rune boundary, for messages
// that quote input.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Delegation bounds, the store's: the instructions, a custom contract's
// schema and a result, in bytes; the attempts a delegation may be given.
const (
	MaxInstructionsBytes = 32 << 10
	MaxSchemaBytes       = 64 << 10
	MaxResultBytes       = 256 << 10
	MaxAttempts          = 10
	maxIDBytes           = 128
)

// roles are the session roles a delegation may name.
var roles = []string{"review", "test", "research", "security", "integration", "developer", "coordinator"}

// contracts are the contracts a delegation may name.
var contracts = []string{"review", "test", "custom"}

func decodeDelegate(raw json.RawMessage, _ limits) (DelegateInput, error) {
	in, err := decodeObject[DelegateInput](raw)
	if err != nil {
		return in, err
	}
	if err := checkChoice("role", in.Role, roles); err != nil {
		return in, err
	}
	switch {
	case strings.TrimSpace(in.Agent) == "":
		return in, invalid("agent", "is required: an agent of the room, by its handle or id from room_participants")
	case len(in.Agent) > maxNameBytes:
		return in, invalid("agent", "is %d bytes; a handle or id has at most %d", len(in.Agent), maxNameBytes)
	}
	if err := checkText("instructions", in.Instructions, MaxInstructionsBytes); err != nil {
		return in, err
	}
	if err := checkID("change_set", in.ChangeSet, false); err != nil {
		return in, err
	}
	if in.Commit != "" && !isHexName(in.Commit) {
		return in, invalid("commit", "want a commit's full name (40 or 64 lower-case hex digits), got %q", clip(in.Commit, 80))
	}
	if in.Contract != "" {
		if err := checkChoice("contract", in.Contract, contracts); err != nil {
			return in, err
		}
	}
	switch {
	case in.Contract == "custom" && len(in.Schema) == 0:
		return in, invalid("schema", "is required with contract custom: give the JSON Schema object the result must satisfy")
	case in.Contract != "custom" && len(in.Schema) != 0:
		return in, invalid("schema", "is only for contract custom")
	}
	if len(in.Schema) != 0 {
		if err := checkJSONObject("schema", in.Schema, MaxSchemaBytes); err != nil {
			return in, err
		}
	}
	if in.MaxAttempts != nil && (*in.MaxAttempts < 1 || *in.MaxAttempts > MaxAttempts) {
		return in, invalid("max_attempts", "%d is out of range: give 1 to %d, or leave it out for 3", *in.MaxAttempts, MaxAttempts)
	}
	return in, nil
}

func decodeDelegation(raw json.RawMessage, _ limits) (DelegationInput, error) {
	in, err := decodeObject[DelegationInput](raw)
	if err != nil {
		return in, err
	}
	return in, checkID("delegation", in.Delegation, true)
}

func decodeSubmit(raw json.RawMessage, _ limits) (SubmitInput, error) {
	in, err := decodeObject[SubmitInput](raw)
	if err != nil {
		return in, err
	}
	if err := checkID("delegation", in.Delegation, true); err != nil {
		return in, err
	}
	if len(in.Result) == 0 {
		return in, invalid("result", "is required: a JSON object that satisfies the delegation's contract")
	}
	return in, checkJSONObject("result", in.Result, MaxResultBytes)
}

// checkChoice requires s to be one of choices.
func checkChoice(field, s string, choices []string) error {
	if slices.Contains(choices, s) {
		return nil
	}
	if s == "" {
		return invalid(field, "is required: one of %s", strings.Join(choices, ", "))
	}
	return invalid(field, "%q is not one of %s", clip(s, 64), strings.Join(choices, ", "))
}

// checkID requires a plausible id (present when required): its form is
// the daemon's to check, this only keeps junk short.
func checkID(field, s string, required bool) error {
	switch {
	case s == "" && required:
		return invalid(field, "is required")
	case len(s) > maxIDBytes:
		return invalid(field, "is %d bytes; an id has at most %d", len(s), maxIDBytes)
	case strings.TrimSpace(s) != s:
		return invalid(field, "has spaces around it")
	}
	return nil
}

// checkJSONObject requires raw to be a JSON object of at most max bytes.
func checkJSONObject(field string, raw json.RawMessage, max int) error {
	if len(raw) > max {
		return invalid(field, "is %d bytes, more than the %d allowed", len(raw), max)
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return invalid(field, "want a JSON object")
	}
	return nil
}

// isHexName reports whether s is a full git object name.
func isHexName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
