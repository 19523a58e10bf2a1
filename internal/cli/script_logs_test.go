package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdLogKeys checks a file of jamd's log lines (slog text or JSON, one
// record a line): every line must parse, carry each key once, and carry
// no err without an error (err=<nil>, "err":null). It fails on a file
// with fewer than min lines, so a run that logged nothing proves nothing.
//
//	logkeys PATH MIN
func cmdLogKeys(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: logkeys PATH MIN")
	}
	raw, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var min int
	if _, err := fmt.Sscan(args[1], &min); err != nil {
		ts.Fatalf("logkeys: MIN %q: %v", args[1], err)
	}
	n := 0
	for i, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if line == "" {
			continue
		}
		n++
		if err := checkLogLine(line); err != nil {
			ts.Fatalf("%s line %d: %v\n%s", args[0], i+1, err, line)
		}
	}
	if n < min {
		ts.Fatalf("%s has %d log lines, want at least %d:\n%s", args[0], n, min, raw)
	}
	ts.Logf("%s: %d log lines, each key once, no empty err", args[0], n)
}

// checkLogLine checks one record, JSON when it starts with "{", else
// slog's text form.
func checkLogLine(line string) error {
	if strings.HasPrefix(line, "{") {
		return checkJSONLogLine(line)
	}
	seen := map[string]bool{}
	s := line
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return nil
		}
		key, rest, err := logfmtToken(s, '=')
		if err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if rest == "" || rest[0] != '=' {
			return fmt.Errorf("key %q has no value", key)
		}
		val, rest, err := logfmtToken(rest[1:], ' ')
		if err != nil {
			return fmt.Errorf("value of %s: %w", key, err)
		}
		if seen[key] {
			return fmt.Errorf("key %s is repeated", key)
		}
		seen[key] = true
		if key == "err" && (val == "<nil>" || val == "") {
			return fmt.Errorf("err=%s: an err attribute without an error", val)
		}
		s = rest
	}
}

// logfmtToken reads a quoted token (Go syntax, as slog quotes) or the
// bytes before stop or a space; it returns the token and what follows.
func logfmtToken(s string, stop byte) (tok, rest string, err error) {
	if s != "" && s[0] == '"' {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				var out string
				if err := json.Unmarshal([]byte(s[:i+1]), &out); err != nil {
					// Go quoting is close to JSON's; \x escapes are not.
					out = s[1:i]
				}
				return out, s[i+1:], nil
			}
		}
		return "", "", errors.New("unterminated quote")
	}
	i := strings.IndexAny(s, string(stop)+" ")
	if i < 0 {
		return s, "", nil
	}
	return s[:i], s[i:], nil
}

// checkJSONLogLine walks a JSON record's tokens: each object's keys
// once, and no "err" that is null or "<nil>".
func checkJSONLogLine(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := checkJSONValue(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("more than one JSON value on the line")
	}
	return nil
}

func checkJSONValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			if seen[key] {
				return fmt.Errorf("key %s is repeated", key)
			}
			seen[key] = true
			if key == "err" {
				var v json.RawMessage
				if err := dec.Decode(&v); err != nil {
					return err
				}
				if s := string(bytes.TrimSpace(v)); s == "null" || s == `"<nil>"` || s == `""` {
					return fmt.Errorf("err %s: an err attribute without an error", s)
				}
				continue
			}
			if err := checkJSONValue(dec); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	case json.Delim('['):
		for dec.More() {
			if err := checkJSONValue(dec); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}

// TestCheckLogLine: the checker finds what it exists to find, so a
// passing "logkeys" means something.
func TestCheckLogLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`time=2026-12-02T05:09:53.870Z level=INFO msg="store check ok" component=jamd took=1ms`, true},
		{`time=2026-12-02T05:09:53.878Z level=INFO msg="hub listening" component=jamd component=hub url=http://127.0.0.1:1`, false},
		{`time=t level=INFO msg="human socket" component=roomfeeds account=local state=up err=<nil>`, false},
		{`time=t level=WARN msg="x y" err="unavailable: bwrap \"is\" not installed" component=messaging`, true},
		{`time=t level=WARN msg="a msg=\"b\" c" k=v`, true},
		{`time=t level=WARN msg="unterminated`, false},
		{`time=t level`, false},
		{`{"time":"t","level":"INFO","msg":"m","component":"jamd","took":"1ms"}`, true},
		{`{"time":"t","level":"INFO","msg":"m","component":"jamd","component":"hub"}`, false},
		{`{"time":"t","level":"INFO","msg":"m","err":null}`, false},
		{`{"time":"t","level":"INFO","msg":"m","err":"<nil>"}`, false},
		{`{"time":"t","msg":"m","err":"boom","g":{"a":1,"a":2}}`, false},
		{`{"time":"t","msg":"m","err":"boom","g":{"a":1,"b":[1,{"c":2}]}}`, true},
		{`{"time":"t"} {"x":1}`, false},
	} {
		err := checkLogLine(tc.line)
		if (err == nil) != tc.ok {
			t.Errorf("checkLogLine(%s) = %v, want ok=%v", tc.line, err, tc.ok)
		}
	}
}
