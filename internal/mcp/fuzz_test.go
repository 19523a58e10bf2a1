package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
)

// FuzzToolInput feeds arbitrary bytes as each tool's arguments through
// the decoders the handlers use: they must not panic, every refusal is
// invalid_argument naming a field, and every accepted input is within
// the bounds.
func FuzzToolInput(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `7`, `{"text":"hi"}`, `{"text":"hi","mentions":["ada","p2"]}`,
		`{"text":"hi","to":["ada"]}`, `{"reason":"nothing to add"}`, `{"limit":20}`, `{"limit":0}`,
		`{"limit":1e2}`, `{"limit":20.0}`, `{"text":"a","text":""}`, `{"TEXT":"x"}`, `{"text":"x"} {}`,
		`{"text":"\u0000"}`, `{"to":[null]}`, `{"mentions":null,"text":" "}`, `{"text":"x","to":[""]}`,
		`{"limit":null}`, `{"limit":-9223372036854775809}`, `{"text":"\ud800"}`, `{"room":"r"}`, `{`,
		`{"role":"review","agent":"rev","instructions":"look","change_set":"cs_1"}`,
		`{"role":"research","agent":"rev","instructions":"x","contract":"custom","schema":{"type":"object"},"max_attempts":2}`,
		`{"role":"review","agent":"rev","instructions":"x","commit":"0123456789abcdef0123456789abcdef01234567"}`,
		`{"delegation":"del_1","result":{"verdict":"approve"}}`, `{"delegation":"del_1","result":null}`, `{"delegation":" del_1"}`,
	} {
		f.Add(seed)
	}
	l := limits{maxText: 64, maxRecipients: 3, maxReason: 16}
	f.Fuzz(func(t *testing.T, raw string) {
		check := func(err error) {
			t.Helper()
			if err == nil {
				return
			}
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("refusal %v is not invalid_argument", err)
			}
			if field, _, ok := strings.Cut(err.Error(), ": "); !ok || field == "" {
				t.Fatalf("refusal %q names no field", err)
			}
		}
		text := func(field, s string, max int) {
			t.Helper()
			if strings.TrimSpace(s) == "" || len(s) > max || !utf8.ValidString(s) {
				t.Fatalf("accepted %s %q", field, s)
			}
		}
		names := func(field string, ns []string, min int) {
			t.Helper()
			if len(ns) < min || len(ns) > l.maxRecipients {
				t.Fatalf("accepted %d %s", len(ns), field)
			}
			for _, n := range ns {
				if strings.TrimSpace(n) == "" || len(n) > maxNameBytes {
					t.Fatalf("accepted %s entry %q", field, n)
				}
			}
		}
		msg := json.RawMessage(raw)

		if in, err := decodeReply(msg, l); err == nil {
			text("text", in.Text, l.maxText)
			names("mentions", in.Mentions, 0)
		} else {
			check(err)
		}
		if in, err := decodeNoReply(msg, l); err == nil {
			text("reason", in.Reason, l.maxReason)
		} else {
			check(err)
		}
		if in, err := decodeSend(msg, l); err == nil {
			text("text", in.Text, l.maxText)
			names("to", in.To, 1)
		} else {
			check(err)
		}
		if in, err := decodeHistory(msg, l); err == nil {
			if in.Limit == nil || *in.Limit < 1 || *in.Limit > MaxHistoryLimit {
				t.Fatalf("accepted limit %v", in.Limit)
			}
		} else {
			check(err)
		}
		if _, err := decodeNone(msg, l); err != nil {
			check(err)
		}
		object := func(field string, raw json.RawMessage, max int) {
			t.Helper()
			if len(raw) > max || !json.Valid(raw) || strings.TrimSpace(string(raw))[0] != '{' {
				t.Fatalf("accepted %s %q", field, raw)
			}
		}
		if in, err := decodeDelegate(msg, l); err == nil {
			text("instructions", in.Instructions, MaxInstructionsBytes)
			names("agent", []string{in.Agent}, 1)
			if in.Commit != "" && !isHexName(in.Commit) || (in.Contract == "custom") != (len(in.Schema) > 0) {
				t.Fatalf("accepted %+v", in)
			}
			if len(in.Schema) > 0 {
				object("schema", in.Schema, MaxSchemaBytes)
			}
		} else {
			check(err)
		}
		if in, err := decodeSubmit(msg, l); err == nil {
			object("result", in.Result, MaxResultBytes)
			if in.Delegation == "" {
				t.Fatal("accepted no delegation")
			}
		} else {
			check(err)
		}
		if in, err := decodeDelegation(msg, l); err == nil && in.Delegation == "" {
			t.Fatal("accepted no delegation")
		} else if err != nil {
			check(err)
		}
	})
}
