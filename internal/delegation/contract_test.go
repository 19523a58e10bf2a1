package delegation_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustBuiltin(t testing.TB, name string) *delegation.Contract {
	t.Helper()
	c, err := delegation.Builtin(name)
	require.NoError(t, err)
	return c
}

// problemStrings is what a model reads of problems.
func problemStrings(ps []delegation.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

func TestValidate_builtin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		contract string
		result   string
		want     []string // nil: valid
	}{
		{"review approve", "review", `{"verdict":"approve","findings":[]}`, nil},
		{"review with findings", "review",
			`{"verdict":"request_changes","summary":"two bugs","findings":[{"path":"a.go","line":3,"severity":"major","message":"nil map"}]}`, nil},
		{"review line 0", "review", `{"verdict":"approve","findings":[{"path":"a.go","line":0,"severity":"info","message":"m"}]}`,
			[]string{"/findings/0/line: must be >= 1, got 0"}},
		{"review line not an integer", "review", `{"verdict":"approve","findings":[{"path":"a.go","line":1.5,"severity":"info","message":"m"}]}`,
			[]string{"/findings/0/line: must be integer, got number"}},
		{"review unknown verdict", "review", `{"verdict":"lgtm","findings":[]}`,
			[]string{`/verdict: value must be one of 'approve', 'request_changes'`}},
		{"review missing findings", "review", `{"verdict":"approve"}`, []string{`(the result): missing property 'findings'`}},
		{"review unknown property", "review", `{"verdict":"approve","findings":[],"score":3}`,
			[]string{`(the result): additional properties 'score' not allowed`}},
		{"review bad severity and path", "review", `{"verdict":"approve","findings":[{"path":"","line":1,"severity":"high","message":"m"}]}`,
			[]string{"/findings/0/path: must be at least 1 characters, got 0", "/findings/0/severity: value must be one of 'info', 'minor', 'major', 'critical'"}},
		{"test passed", "test", `{"passed":true,"commands":["go test ./..."],"failures":[]}`, nil},
		{"test failed", "test", `{"passed":false,"commands":["make"],"failures":[{"name":"TestX","message":"boom"}]}`, nil},
		{"test passed as a string", "test", `{"passed":"yes","commands":[],"failures":[]}`, []string{"/passed: must be boolean, got string"}},
		{"test failure without name", "test", `{"passed":false,"commands":[],"failures":[{"message":"boom"}]}`,
			[]string{"/failures/0: missing property 'name'"}},
		{"an array", "test", `[]`, []string{"(the result): must be a JSON object, got array"}},
		{"a string", "review", `"approve"`, []string{"(the result): must be a JSON object, got string"}},
		{"not JSON", "review", `{"verdict":`, []string{"(the result): not JSON: unexpected EOF"}},
		{"trailing data", "review", `{"verdict":"approve","findings":[]} {}`, []string{"(the result): not JSON: invalid character after top-level value"}},
		{"not UTF-8", "review", "{\"verdict\":\"\xff\",\"findings\":[]}", []string{"(the result): the result is not UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := delegation.Validate(mustBuiltin(t, tt.contract), json.RawMessage(tt.result))
			if tt.want == nil {
				require.Empty(t, got)
				return
			}
			require.ElementsMatch(t, tt.want, problemStrings(got))
		})
	}
}

func TestValidate_bounds(t *testing.T) {
	t.Parallel()
	review := mustBuiltin(t, "review")

	t.Run("oversized result", func(t *testing.T) {
		t.Parallel()
		big := `{"verdict":"approve","findings":[],"summary":"` + strings.Repeat("x", delegation.MaxResult) + `"}`
		got := delegation.Validate(review, json.RawMessage(big))
		require.Len(t, got, 1)
		require.Contains(t, got[0].Message, "bytes (at most 262144)")
	})

	t.Run("many problems", func(t *testing.T) {
		t.Parallel()
		var findings []string
		for range 100 {
			findings = append(findings, `{"path":"a.go","line":0,"severity":"x","message":"m"}`)
		}
		got := delegation.Validate(review, json.RawMessage(`{"verdict":"approve","findings":[`+strings.Join(findings, ",")+`]}`))
		require.Len(t, got, delegation.MaxProblems)
		require.Equal(t, "and 181 more problems", got[len(got)-1].Message)
	})

	t.Run("long messages are clipped", func(t *testing.T) {
		t.Parallel()
		long := strings.Repeat("ü", 300)
		got := delegation.Validate(review, json.RawMessage(`{"verdict":"approve","findings":[],"`+long+`":1}`))
		require.Len(t, got, 1)
		require.LessOrEqual(t, len(got[0].Message), delegation.MaxProblemText)
		require.True(t, strings.HasSuffix(got[0].Message, "…"))
	})
}

func TestCompile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		err    string // "": compiles
	}{
		{"custom", `{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}`, ""},
		{"custom with $schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, ""},
		{"local $ref", `{"$defs":{"n":{"type":"integer"}},"type":"object","properties":{"n":{"$ref":"#/$defs/n"}}}`, ""},
		{"remote $ref", `{"type":"object","properties":{"x":{"$ref":"https://example.com/schema.json"}}}`, "outside itself"},
		{"relative $ref", `{"type":"object","properties":{"x":{"$ref":"other.json"}}}`, "outside itself"},
		{"file $ref", `{"type":"object","properties":{"x":{"$ref":"file:///etc/passwd"}}}`, "outside itself"},
		{"remote $schema", `{"$schema":"https://example.com/meta","type":"object"}`, "$schema is not"},
		{"draft-07", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, "$schema is not"},
		{"invalid schema", `{"type":"objekt"}`, "not a valid JSON Schema"},
		{"invalid minimum", `{"type":"object","properties":{"n":{"minimum":"one"}}}`, "not a valid JSON Schema"},
		{"bad pattern", `{"type":"object","properties":{"s":{"pattern":"("}}}`, "not a valid JSON Schema"},
		{"not an object", `true`, "not a JSON object"},
		{"not JSON", `{"type":`, "not JSON"},
		{"too large", `{"description":"` + strings.Repeat("x", delegation.MaxContract) + `"}`, "bytes (at most 65536)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := delegation.Compile("custom", []byte(tt.schema))
			if tt.err == "" {
				require.NoError(t, err)
				require.Equal(t, "custom", c.Name)
				return
			}
			require.ErrorIs(t, err, jam.ErrInvalid)
			require.ErrorContains(t, err, tt.err)
			require.NotContains(t, err.Error(), "jam.invalid", "the compile URL is an implementation detail")
		})
	}

	t.Run("custom contract validates", func(t *testing.T) {
		t.Parallel()
		c, err := delegation.Compile("custom", []byte(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}`))
		require.NoError(t, err)
		require.Empty(t, delegation.Validate(c, json.RawMessage(`{"answer":"42"}`)))
		require.Equal(t, []string{"/answer: must be string, got number"}, problemStrings(delegation.Validate(c, json.RawMessage(`{"answer":42}`))))
	})

	t.Run("names", func(t *testing.T) {
		t.Parallel()
		_, err := delegation.Builtin("custom")
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = delegation.Compile("audit", []byte(`{}`))
		require.ErrorIs(t, err, jam.ErrInvalid)
		for _, name := range []string{"review", "test"} {
			c := mustBuiltin(t, name)
			require.Equal(t, name, c.Name)
			require.True(t, json.Valid(c.Doc))
		}
	})
}

// FuzzValidate: Validate never panics on any result against the built-in
// contracts, and its problems stay bounded.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"verdict":"approve","findings":[]}`,
		`{"verdict":"request_changes","findings":[{"path":"a.go","line":0,"severity":"major","message":"m"}]}`,
		`{"passed":false,"commands":["make"],"failures":[{"name":"T","message":"boom"}]}`,
		`{"passed":1e400,"commands":[[[[]]]]}`,
		`[]`, `null`, `{`, "{\"\xff\":1}", `{"findings":[{"line":-99999999999999999999999}]}`,
	} {
		f.Add([]byte(seed))
	}
	review, err := delegation.Builtin("review")
	if err != nil {
		f.Fatal(err)
	}
	test, err := delegation.Builtin("test")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		for _, c := range []*delegation.Contract{review, test} {
			ps := delegation.Validate(c, result)
			if len(ps) > delegation.MaxProblems {
				t.Fatalf("%d problems", len(ps))
			}
			for _, p := range ps {
				if len(p.Location) > delegation.MaxProblemText || len(p.Message) > delegation.MaxProblemText || p.Message == "" {
					t.Fatalf("problem out of bounds: %q", p)
				}
			}
			if len(ps) == 0 && !json.Valid(result) {
				t.Fatalf("invalid JSON accepted: %q", result)
			}
		}
	})
}

// TestVerdictOf: the word on each built-in contract's result, and none
// for a custom contract, a word the contract does not have, or no JSON.
func TestVerdictOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, contract, result, want string
	}{
		{"review approves", store.ContractReview, `{"verdict":"approve","findings":[]}`, "approve"},
		{"review asks for changes", store.ContractReview, `{"verdict":"request_changes","findings":[]}`, "request_changes"},
		{"review with another word", store.ContractReview, `{"verdict":"lgtm"}`, ""},
		{"test passed", store.ContractTest, `{"passed":true,"commands":[],"failures":[]}`, "passed"},
		{"test failed", store.ContractTest, `{"passed":false,"commands":[],"failures":[]}`, "failed"},
		{"test that does not say", store.ContractTest, `{"commands":[]}`, ""},
		{"custom", store.ContractCustom, `{"verdict":"approve","passed":true}`, ""},
		{"not JSON", store.ContractReview, `{`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, delegation.VerdictOf(tc.contract, []byte(tc.result)))
		})
	}
}
