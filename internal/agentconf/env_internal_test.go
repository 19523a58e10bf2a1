package agentconf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

var envEntryCases = []struct {
	name, entry string
	wantName    string
	wantValue   string
	errText     string
}{
	{name: "plain", entry: "ANTHROPIC_API_KEY=sk-123", wantName: "ANTHROPIC_API_KEY", wantValue: "sk-123"},
	{name: "empty value", entry: "EMPTY=", wantName: "EMPTY"},
	{name: "value with equals", entry: "OPENCODE_CONFIG_CONTENT={\"a\":\"b=c\"}", wantName: "OPENCODE_CONFIG_CONTENT", wantValue: "{\"a\":\"b=c\"}"},
	{name: "value with newline and spaces", entry: "K= two\nlines ", wantName: "K", wantValue: " two\nlines "},
	{name: "lower case and dots", entry: "npm_config.registry=x", wantName: "npm_config.registry", wantValue: "x"},
	{name: "no equals", entry: "sk-secret-value", errText: "has no \"=\""},
	{name: "empty name", entry: "=value", errText: "needs a name"},
	{name: "NUL in name", entry: "A\x00B=1", errText: "contains"},
	{name: "NUL in value", entry: "A=1\x002", errText: "contains NUL"},
	{name: "long name", entry: strings.Repeat("N", maxEnvNameLen+1) + "=1", errText: "longer than"},
	{name: "long value", entry: "V=" + strings.Repeat("v", maxEnvValueLen+1), errText: "longer than"},
}

func TestParseEnvEntry(t *testing.T) {
	t.Parallel()
	for _, tt := range envEntryCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name, value, err := parseEnvEntry(tt.entry)
			if tt.errText != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tt.errText)
				if strings.Contains(tt.entry, "secret") {
					require.NotContains(t, err.Error(), "secret", "an error does not echo what may be a credential")
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantName, name)
			require.Equal(t, tt.wantValue, value)
		})
	}
}

func TestEnvConfigKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key, want string
		isEnv     bool
		wantErr   bool
	}{
		{key: "env.ANTHROPIC_API_KEY", want: "ANTHROPIC_API_KEY", isEnv: true},
		{key: "env.a.b", want: "a.b", isEnv: true},
		{key: "model"},
		{key: "environment"},
		{key: "env", isEnv: false},
		{key: "env.", isEnv: true, wantErr: true},
		{key: "env.A=B", isEnv: true, wantErr: true},
		{key: "env.A\x00", isEnv: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			t.Parallel()
			name, isEnv, err := envConfigKey(tt.key)
			require.Equal(t, tt.isEnv, isEnv)
			if tt.wantErr {
				require.ErrorIs(t, err, jam.ErrInvalid)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, name)
		})
	}
}

func TestParseHandshakeTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "", want: 0},
		{in: "0", want: 0},
		{in: "2m", want: 2 * time.Minute},
		{in: "1s", want: time.Second},
		{in: "30m", want: 30 * time.Minute},
		{in: "90s", want: 90 * time.Second},
		{in: "999ms", wantErr: "out of bounds"},
		{in: "31m", wantErr: "out of bounds"},
		{in: "-1m", wantErr: "out of bounds"},
		{in: "2", wantErr: "not a duration"},
		{in: "soon", wantErr: "not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseHandshakeTimeout(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, jam.ErrInvalid)
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.want, mustParse(t, formatHandshakeTimeout(got)), "the wire form reads back")
		})
	}
}

func mustParse(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := parseHandshakeTimeout(s)
	require.NoError(t, err)
	return d
}

func testEnvBox(t *testing.T) *secret.Box {
	t.Helper()
	b, err := secret.LoadOrCreate(filepath.Join(t.TempDir(), "daemon.key"))
	require.NoError(t, err)
	return b
}

// TestApplyEnv: values are sealed, bound to template and name; edits keep
// order, replace in place, unset; an agent's environment is jamd's plus
// the template's, the template's winning.
func TestApplyEnv(t *testing.T) {
	t.Parallel()
	box := testEnvBox(t)
	const ws, tmpl = jam.WorkspaceID("ws_1"), jam.TemplateID("tmpl_1")
	env, err := templateEnv(box, ws, tmpl, []string{"B=secret-b", "A=secret-a"})
	require.NoError(t, err)
	require.Equal(t, []string{"B", "A"}, EnvNames(env))
	for _, v := range env {
		require.NotContains(t, string(v.Sealed), "secret", "sealed, not plain")
	}
	_, err = templateEnv(box, ws, tmpl, []string{"A=1", "A=2"})
	require.ErrorContains(t, err, "given twice")

	env2, err := applyEnv(box, ws, tmpl, env, []envEdit{{Name: "C", Value: "c"}, {Name: "B", Value: "new-b"}, {Name: "A", Unset: true}, {Name: "Z", Unset: true}})
	require.NoError(t, err)
	require.Equal(t, []string{"B", "C"}, EnvNames(env2))
	require.Equal(t, []string{"B", "A"}, EnvNames(env), "the input is not changed")

	cfg := store.TemplateConfig{Env: env2, EnvTemplate: tmpl}
	cfg.Env, err = applyEnv(box, ws, tmpl, cfg.Env, []envEdit{{Name: "HOME", Value: "from-template"}})
	require.NoError(t, err)
	got, err := AgentEnv(box, ws, cfg, "/agent/home", "/agent/tmp")
	require.NoError(t, err)
	require.Contains(t, got, "B=new-b")
	require.Contains(t, got, "C=c")
	require.Contains(t, got, "PATH="+os.Getenv("PATH"), "jamd's PATH is passed on")
	require.Contains(t, got, "HOME=/agent/home", "the agent's own home")
	require.Contains(t, got, "TMPDIR=/agent/tmp")
	last := ""
	for _, kv := range got {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			last = v
		}
	}
	require.Equal(t, "from-template", last, "the template's variable comes last, so it wins")

	none, err := AgentEnv(box, ws, store.TemplateConfig{}, "/h", "/t")
	require.NoError(t, err)
	require.NotNil(t, none, "never nil: nil would inherit jamd's environment")

	// A sealed value moved to another template, renamed, or opened with
	// another key does not open.
	for name, c := range map[string]store.TemplateConfig{
		"other template": {Env: env2[:1], EnvTemplate: "tmpl_2"},
		"renamed":        {Env: []store.EnvVar{{Name: "X", Sealed: env2[0].Sealed}}, EnvTemplate: tmpl},
	} {
		_, err := AgentEnv(box, ws, c, "/h", "/t")
		require.ErrorIs(t, err, secret.ErrCorrupt, name)
	}
	_, err = AgentEnv(testEnvBox(t), ws, cfg, "/h", "/t")
	require.ErrorIs(t, err, secret.ErrCorrupt, "another key")

	many := make([]envEdit, maxEnvVars+1)
	for i := range many {
		many[i] = envEdit{Name: "V" + strings.Repeat("x", i), Value: "1"}
	}
	_, err = applyEnv(box, ws, tmpl, nil, many)
	require.ErrorContains(t, err, "more than")
}

// FuzzEnvEntry: parsing never panics, an error is always jam.ErrInvalid,
// and what parses rebuilds the entry and passes the name checks.
func FuzzEnvEntry(f *testing.F) {
	for _, tt := range envEntryCases {
		if len(tt.entry) < 1024 {
			f.Add(tt.entry)
		}
	}
	f.Add("env.NAME")
	f.Fuzz(func(t *testing.T, entry string) {
		name, value, err := parseEnvEntry(entry)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("unclassified: %v", err)
			}
		} else {
			if name+"="+value != entry || name == "" || strings.ContainsAny(name, "=\x00") || strings.ContainsRune(value, 0) {
				t.Fatalf("%q parsed as %q, %q", entry, name, value)
			}
		}
		if n, ok, err := envConfigKey(entry); ok && err == nil {
			if envKeyPrefix+n != entry || checkEnvName(n) != nil {
				t.Fatalf("key %q read as %q", entry, n)
			}
		} else if err != nil && !errors.Is(err, jam.ErrInvalid) {
			t.Fatalf("unclassified: %v", err)
		}
		if _, err := parseHandshakeTimeout(entry); err != nil && !errors.Is(err, jam.ErrInvalid) {
			t.Fatalf("unclassified: %v", err)
		}
	})
}
