package agentconf

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// kind is a harness that only names itself: validation asks the
// registry for names alone.
type kind string

func (k kind) Name() string               { return string(k) }
func (k kind) Manifest() harness.Manifest { return harness.Manifest{Harness: string(k)} }
func (kind) Launch(context.Context, harness.LaunchSpec) (harness.Process, error) {
	return nil, errors.New("not launched in these tests")
}

// testHarnesses are the kinds the daemon registers.
var testHarnesses = harness.NewRegistry(kind("acp"), kind("copilot"), kind("opencode"), kind("demo"))

// TestValidate_harnessFromTheRegistry: the harness key is checked
// against the registered harnesses (acp by default), an unknown one is
// invalid and the error names the known ones; the permission policy is
// the harness-neutral one.
func TestValidate_harnessFromTheRegistry(t *testing.T) {
	t.Parallel()
	c, err := Validate(testHarnesses, Runtime{Command: []string{"agent"}})
	require.NoError(t, err)
	require.Equal(t, "acp", c.Harness)
	require.Equal(t, "reject", c.Permission)
	_, err = Validate(testHarnesses, Runtime{Harness: "codex", Command: []string{"agent"}})
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, `harness "codex" (want acp or copilot or demo or opencode)`)
	_, err = Validate(testHarnesses, Runtime{Command: []string{"agent"}, Permission: "maybe"})
	require.ErrorIs(t, err, jam.ErrInvalid)
}

// TestValidate_defaultCommand: a kind without a command runs its CLI; a
// command given is kept as is (the adapter adds the kind's arguments);
// acp needs one; demo takes none (jamd's own executable, found at each
// launch) and stores its arguments alone, never a path; --model and --permission go with every kind.
func TestValidate_defaultCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   Runtime
		want []string
		err  string
	}{
		{name: "copilot", in: Runtime{Harness: "copilot"}, want: []string{"copilot"}},
		{name: "opencode", in: Runtime{Harness: "opencode"}, want: []string{"opencode"}},
		{name: "own command", in: Runtime{Harness: "copilot", Command: []string{"/opt/copilot", "--banner"}}, want: []string{"/opt/copilot", "--banner"}},
		{name: "acp with command", in: Runtime{Harness: "acp", Command: []string{"opencode", "acp"}}, want: []string{"opencode", "acp"}},
		{name: "acp without", in: Runtime{Harness: "acp"}, err: "harness acp needs a command"},
		{name: "default kind without", in: Runtime{}, err: "harness acp needs a command"},
		{name: "blank command", in: Runtime{Harness: "copilot", Command: []string{" "}}, err: "needs a command"},
		{name: "demo", in: Runtime{Harness: "demo"}, want: []string{"demo-agent"}},
		{name: "demo as read back", in: Runtime{Harness: "demo", Command: []string{"demo-agent"}}, want: []string{"demo-agent"}},
		{name: "demo with command", in: Runtime{Harness: "demo", Command: []string{"/tmp/go-build/jam", "demo-agent"}}, err: "harness demo is jam's demo agent, which jamd runs from its own executable: it takes no command"},
	} {
		tc.in.Model, tc.in.Permission = "m1", "allow"
		c, err := Validate(testHarnesses, tc.in)
		if tc.err != "" {
			require.ErrorIs(t, err, jam.ErrInvalid, tc.name)
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, c.Command, tc.name)
		require.Equal(t, "m1", c.Model, tc.name)
		require.Equal(t, "allow", c.Permission, tc.name)
	}
}

// TestValidate_storedTemplatesStay: a template stored before harness
// kinds (acp, with its command) reads back and validates to itself.
func TestValidate_storedTemplatesStay(t *testing.T) {
	t.Parallel()
	old := store.TemplateConfig{Harness: "acp", Command: []string{"opencode", "acp", "--pure"}, Model: "fake/m", Repo: "/src/r",
		Placement: jam.PlacementDedicated, Permission: "allow", Sandbox: "bwrap", ReadOnly: []string{"/opt/tools"}}
	c, err := Validate(testHarnesses, Of(old))
	require.NoError(t, err)
	require.Equal(t, old, c)
}

// TestCheckRunnable_missingCLI: a kind's default CLI not on jamd's PATH
// is named with the harness and how to install it; a command of one's own
// that is missing says so as before; one found passes.
func TestCheckRunnable_missingCLI(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "copilot"), []byte("#!/bin/sh\n"), 0o755))
	look := func(name string) (string, error) {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err != nil {
			return "", exec.ErrNotFound
		}
		return p, nil
	}
	conf := Conf{Harnesses: testHarnesses, LookPath: look}
	ctx := t.Context()
	for _, tc := range []struct {
		kind string
		argv []string
		err  string
	}{
		{kind: "copilot", argv: []string{"copilot"}},
		{kind: "opencode", argv: []string{"opencode"}, err: `harness opencode runs "opencode", which is not found on jamd's PATH: install OpenCode (npm install -g opencode-ai)`},
		{kind: "opencode", argv: []string{"opencode-dev"}, err: `command "opencode-dev" is not found on jamd's PATH`},
		{kind: "acp", argv: []string{"nope-agent"}, err: `command "nope-agent" is not found on jamd's PATH`},
		{kind: "claude", argv: []string{"claude"}, err: "install Claude Code (npm install -g @anthropic-ai/claude-code)"},
		{kind: "codex", argv: []string{"codex"}, err: "install Codex (npm install -g @openai/codex)"},
	} {
		err := conf.CheckRunnable(ctx, store.TemplateConfig{Harness: tc.kind, Command: tc.argv}, true, false)
		if tc.err == "" {
			require.NoError(t, err, tc.kind)
			continue
		}
		require.ErrorIs(t, err, jam.ErrInvalid, tc.kind)
		require.ErrorContains(t, err, tc.err, tc.kind)
	}
	require.NoError(t, conf.CheckRunnable(ctx, store.TemplateConfig{Harness: "opencode", Command: []string{"opencode"}}, false, false), "not asked")
}

// TestConfigure: keys change the desired configuration; an unknown key is invalid and names the known
// ones; an env value is sealed and not in the change's description.
func TestConfigure(t *testing.T) {
	t.Parallel()
	box := testEnvBox(t)
	bin := t.TempDir()
	look := func(name string) (string, error) { return filepath.Join(bin, name), nil }
	conf := Conf{Harnesses: testHarnesses, Box: box, Workspace: "ws_1", Sandbox: "local", LookPath: look}
	tmpl := store.Template{ID: "tmpl_1", Desired: store.TemplateConfig{Harness: "copilot", Command: []string{"/opt/copilot"}, Placement: jam.PlacementShared, Permission: "reject"}}
	c, change, err := conf.Configure(t.Context(), tmpl, map[string]string{"command": "copilot --banner", "model": "gpt-x", "env.COPILOT_PROVIDER_API_KEY": "sk-secret", "sandbox": ""})
	require.NoError(t, err)
	require.Equal(t, []string{"copilot", "--banner"}, c.Command)
	require.Equal(t, "gpt-x", c.Model)
	require.Equal(t, "local", c.Sandbox)
	require.Equal(t, []string{"COPILOT_PROVIDER_API_KEY"}, EnvNames(c.Env))
	require.Equal(t, jam.TemplateID("tmpl_1"), c.EnvTemplate)
	require.Equal(t, "command=copilot --banner, env.COPILOT_PROVIDER_API_KEY, model=gpt-x, sandbox=", change)
	require.NotContains(t, change, "sk-secret")
	_, _, err = conf.Configure(t.Context(), tmpl, map[string]string{"colour": "red"})
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, "known: command, model, repo")
	_, _, err = conf.Configure(t.Context(), tmpl, map[string]string{"command": ""})
	require.ErrorIs(t, err, jam.ErrInvalid, "an empty command")
}

// TestRuntimeConfig_sandboxKeys: the sandbox, network and read_only keys of
// a runtime request, valid and not.
func TestRuntimeConfig_sandboxKeys(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		rt        Runtime
		sandbox   string
		noNetwork bool
		readOnly  []string
		invalid   bool
	}{
		"defaults":                {rt: Runtime{}},
		"bwrap":                   {rt: Runtime{Sandbox: "bwrap"}, sandbox: "bwrap"},
		"local":                   {rt: Runtime{Sandbox: "local"}, sandbox: "local"},
		"network on":              {rt: Runtime{Network: "on"}},
		"network off":             {rt: Runtime{Sandbox: "bwrap", Network: "off"}, sandbox: "bwrap", noNetwork: true},
		"read-only paths cleaned": {rt: Runtime{ReadOnly: []string{"/opt/tools/", "/srv//m"}}, readOnly: []string{"/opt/tools", "/srv/m"}},
		"unknown sandbox":         {rt: Runtime{Sandbox: "docker"}, invalid: true},
		"sandbox case":            {rt: Runtime{Sandbox: "Bwrap"}, invalid: true},
		"unknown network":         {rt: Runtime{Network: "no"}, invalid: true},
		"local cannot cut":        {rt: Runtime{Sandbox: "local", Network: "off"}, invalid: true},
		"relative read-only":      {rt: Runtime{ReadOnly: []string{"tools"}}, invalid: true},
		"root read-only":          {rt: Runtime{ReadOnly: []string{"/"}}, invalid: true},
		"root in disguise":        {rt: Runtime{ReadOnly: []string{"/usr/.."}}, invalid: true},
		"NUL in read-only":        {rt: Runtime{ReadOnly: []string{"/a\x00b"}}, invalid: true},
	} {
		tc.rt.Command = []string{"agent"}
		c, err := Validate(testHarnesses, tc.rt)
		if tc.invalid {
			require.ErrorIs(t, err, jam.ErrInvalid, name)
			continue
		}
		require.NoError(t, err, name)
		require.Equal(t, tc.sandbox, c.Sandbox, name)
		require.Equal(t, tc.noNetwork, c.NoNetwork, name)
		require.Equal(t, tc.readOnly, c.ReadOnly, name)
		// A read round-trips.
		back := Of(c)
		c2, err := Validate(testHarnesses, back)
		require.NoError(t, err, name)
		require.Equal(t, c.Sandbox, c2.Sandbox, name)
		require.Equal(t, c.NoNetwork, c2.NoNetwork, name)
		require.Equal(t, c.ReadOnly, c2.ReadOnly, name)
	}
}

func FuzzRuntimeConfigSandbox(f *testing.F) {
	f.Add("bwrap", "off", "/opt/tools")
	f.Add("local", "on", "")
	f.Add("x", "", "/")
	f.Fuzz(func(t *testing.T, sandbox, network, ro string) {
		rt := Runtime{Command: []string{"agent"}, Sandbox: sandbox, Network: network}
		if ro != "" {
			rt.ReadOnly = filepath.SplitList(ro)
		}
		c, err := Validate(testHarnesses, rt)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("error is not invalid: %v", err)
			}
			return
		}
		if c.Sandbox != "" && c.Sandbox != "bwrap" && c.Sandbox != "local" {
			t.Fatalf("sandbox %q accepted", c.Sandbox)
		}
		if c.NoNetwork && c.Sandbox == "local" {
			t.Fatal("local without network accepted")
		}
		for _, p := range c.ReadOnly {
			if !filepath.IsAbs(p) || p == "/" || strings.ContainsRune(p, 0) {
				t.Fatalf("read-only path %q accepted", p)
			}
		}
	})
}

// FuzzConfigure: whatever key and value a person sets, Configure refuses
// with jam.ErrInvalid or returns a configuration that validates to itself;
// an env value never shows in the change's description.
func FuzzConfigure(f *testing.F) {
	f.Add("model", "gpt-x")
	f.Add("command", "copilot --banner")
	f.Add("command", "")
	f.Add("env.KEY", "sk-secret-value")
	f.Add("env.", "v")
	f.Add("read_only", "/opt:/srv")
	f.Add("network", "off")
	f.Add("handshake_timeout", "90s")
	f.Add("colour", "red")
	box, err := secretBoxForFuzz(f)
	if err != nil {
		f.Fatal(err)
	}
	look := func(name string) (string, error) { return "/bin/" + name, nil }
	conf := Conf{Harnesses: testHarnesses, Box: box, Workspace: "ws_1", Sandbox: "bwrap", LookPath: look}
	tmpl := store.Template{ID: "tmpl_1", Desired: store.TemplateConfig{Harness: "copilot", Command: []string{"copilot"}, Placement: jam.PlacementShared, Permission: "reject"}}
	f.Fuzz(func(t *testing.T, key, value string) {
		c, change, err := conf.Configure(context.Background(), tmpl, map[string]string{key: value})
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("unclassified: %v", err)
			}
			return
		}
		if strings.HasPrefix(key, envKeyPrefix) && len(value) >= 4 && strings.Contains(strings.ReplaceAll(change, key, ""), value) {
			t.Fatalf("the change %q shows the value of %s", change, key)
		}
		again, err := Validate(testHarnesses, Of(c))
		if err != nil {
			t.Fatalf("configured %+v, which does not validate: %v", c, err)
		}
		again.Env, again.EnvTemplate = c.Env, c.EnvTemplate
		require.Equal(t, c, again)
	})
}

func secretBoxForFuzz(f *testing.F) (*secret.Box, error) {
	return secret.LoadOrCreate(filepath.Join(f.TempDir(), "daemon.key"))
}
