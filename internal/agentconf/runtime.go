package agentconf

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/jamhq/jam/internal/executor"
	gitcli "github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/shellwords"
	"github.com/jamhq/jam/internal/store"
)

// DefaultHarness is the harness of a request that names none.
const DefaultHarness = "acp"

// Values of the network key.
const (
	networkOn  = "on"
	networkOff = "off"
)

// Runtime is an owned agent's runtime configuration as a person gives it
// (the control API's AgentRuntime, field for field, without the names a
// read lists).
type Runtime struct {
	Harness    string
	Command    []string
	Model      string
	Repo       string
	Placement  string
	Permission string
	// Env are NAME=VALUE entries; values are secret.
	Env              []string
	HandshakeTimeout string
	Sandbox          string
	Network          string
	ReadOnly         []string
	CommitTurns      bool
}

// Of is the request form of a stored configuration: what a read shows and
// a change starts from. Its Env is nil (the values stay sealed; EnvNames
// lists the names).
func Of(c store.TemplateConfig) Runtime {
	return Runtime{Harness: c.Harness, Command: c.Command, Model: c.Model, Repo: c.Repo, Placement: string(c.Placement), Permission: c.Permission,
		HandshakeTimeout: formatHandshakeTimeout(c.HandshakeTimeout), Sandbox: c.Sandbox, Network: formatNetwork(c.NoNetwork), ReadOnly: c.ReadOnly,
		CommitTurns: c.CommitTurns}
}

// Validate checks a runtime request against the registered harnesses and
// returns the configuration it asks for, its command the kind's default
// when it gives none. The request's environment is validated but not
// returned: its values are sealed for the template they belong to (Add,
// Configure).
func Validate(reg *harness.Registry, r Runtime) (store.TemplateConfig, error) {
	c := store.TemplateConfig{Harness: r.Harness, Command: r.Command, Model: r.Model, Repo: r.Repo,
		Placement: jam.Placement(r.Placement), Permission: r.Permission, CommitTurns: r.CommitTurns}
	if c.Harness == "" {
		c.Harness = DefaultHarness
	}
	if _, err := reg.Get(c.Harness); err != nil {
		return c, err
	}
	if k, _ := harness.KindOf(c.Harness); k.Builtin != nil {
		// jamd runs it from its own executable, found at each launch: the
		// stored command is the kind's arguments alone, never a path.
		if len(c.Command) > 0 && !slices.Equal(c.Command, k.Builtin) {
			return c, fmt.Errorf("%w: harness %s is %s, which jamd runs from its own executable: it takes no command", jam.ErrInvalid, c.Harness, k.CLI)
		}
		c.Command = slices.Clone(k.Builtin)
	} else if len(c.Command) == 0 {
		if c.Command = harness.DefaultCommand(c.Harness); len(c.Command) == 0 {
			return c, fmt.Errorf("%w: harness %s needs a command (the one that runs the agent)", jam.ErrInvalid, c.Harness)
		}
	}
	if len(c.Command) > 0 && strings.TrimSpace(c.Command[0]) == "" {
		return c, fmt.Errorf("%w: an owned agent needs a command", jam.ErrInvalid)
	}
	if c.Placement == "" {
		c.Placement = jam.PlacementShared
	}
	if _, err := jam.ParseEnum("placement", string(c.Placement), jam.Placements); err != nil {
		return c, err
	}
	if c.Permission == "" {
		c.Permission = string(harness.PolicyReject)
	}
	if _, err := harness.ParsePolicy(c.Permission); err != nil {
		return c, err
	}
	if c.Repo != "" {
		if !filepath.IsAbs(c.Repo) {
			return c, fmt.Errorf("%w: repository %q is not an absolute path", jam.ErrInvalid, c.Repo)
		}
	}
	if _, err := requestEnv(r.Env); err != nil {
		return c, err
	}
	d, err := parseHandshakeTimeout(r.HandshakeTimeout)
	if err != nil {
		return c, err
	}
	c.HandshakeTimeout = d
	if r.Sandbox != "" {
		if c.Sandbox, err = executor.ParseName(r.Sandbox); err != nil {
			return c, err
		}
	}
	if c.NoNetwork, err = parseNetwork(r.Network); err != nil {
		return c, err
	}
	if c.NoNetwork && c.Sandbox == executor.Local {
		return c, fmt.Errorf("%w: network=off needs sandbox=bwrap (the local executor cannot cut an agent off the network)", jam.ErrInvalid)
	}
	for _, p := range r.ReadOnly {
		if !filepath.IsAbs(p) || filepath.Clean(p) == "/" || strings.ContainsRune(p, 0) {
			return c, fmt.Errorf("%w: read-only path %q is not an absolute path below /", jam.ErrInvalid, p)
		}
		c.ReadOnly = append(c.ReadOnly, filepath.Clean(p))
	}
	return c, nil
}

// parseNetwork reads the network key ("" is on).
func parseNetwork(s string) (noNetwork bool, err error) {
	switch s {
	case "", networkOn:
		return false, nil
	case networkOff:
		return true, nil
	}
	return false, fmt.Errorf("%w: network %q (want on or off)", jam.ErrInvalid, s)
}

func formatNetwork(noNetwork bool) string {
	if noNetwork {
		return networkOff
	}
	return networkOn
}

// Conf is what the use cases need of the daemon.
type Conf struct {
	// Harnesses are the registered harnesses. Required.
	Harnesses *harness.Registry
	// Box seals and opens environment values; Workspace binds them.
	Box       *secret.Box
	Workspace jam.WorkspaceID
	// Sandbox is the executor of agents that name none, recorded in a new
	// agent's configuration (and shown in reads).
	Sandbox string
	// LookPath finds a command's executable on jamd's PATH; nil is
	// exec.LookPath.
	LookPath func(string) (string, error)
}

// Add is the configuration of a new owned agent whose template is tmpl:
// r validated, its command and repository checked (CheckRunnable), its
// environment sealed for tmpl. It runs before anything is registered.
func (c Conf) Add(ctx context.Context, tmpl jam.TemplateID, r Runtime) (store.TemplateConfig, error) {
	if r.Sandbox == "" {
		r.Sandbox = c.Sandbox
	}
	cfg, err := Validate(c.Harnesses, r)
	if err != nil {
		return cfg, err
	}
	if err := c.CheckRunnable(ctx, cfg, true, true); err != nil {
		return cfg, err
	}
	if cfg.Env, err = templateEnv(c.Box, c.Workspace, tmpl, r.Env); err != nil {
		return cfg, err
	}
	if len(cfg.Env) > 0 {
		cfg.EnvTemplate = tmpl
	}
	return cfg, nil
}

// ConfigKeys are the keys Configure knows, besides env.NAME.
var ConfigKeys = []string{"command", "model", "repo", "placement", "permission", "handshake_timeout", "sandbox", "network", "read_only", "commit_turns"}

// Configure applies KEY=VALUE settings to template t's desired
// configuration and returns the new one with a description of the change
// (an env.NAME key is named without its value). A new command or
// repository is checked as Add checks them; sandbox= is Conf's Sandbox, read_only= none, env.NAME=
// unsets the variable. Changed values are sealed anew, the others kept as
// they are.
func (c Conf) Configure(ctx context.Context, t store.Template, set map[string]string) (store.TemplateConfig, string, error) {
	rt := Of(t.Desired)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var changes []string
	var edits []envEdit
	for _, k := range keys {
		v := set[k]
		if name, ok, err := envConfigKey(k); ok {
			// env.NAME=VALUE sets a variable, env.NAME= unsets it; the
			// value is never echoed.
			if err != nil {
				return store.TemplateConfig{}, "", err
			}
			edits = append(edits, envEdit{Name: name, Value: v, Unset: v == ""})
			changes = append(changes, k)
			continue
		}
		switch k {
		case "command":
			argv, err := shellwords.Split(v)
			if err != nil {
				return store.TemplateConfig{}, "", err
			}
			rt.Command = argv
		case "model":
			rt.Model = v
		case "repo":
			rt.Repo = v
		case "placement":
			rt.Placement = v
		case "permission":
			rt.Permission = v
		case "handshake_timeout":
			rt.HandshakeTimeout = v
		case "sandbox":
			rt.Sandbox = v
			if v == "" {
				rt.Sandbox = c.Sandbox
			}
		case "network":
			rt.Network = v
		case "commit_turns":
			switch v {
			case "true":
				rt.CommitTurns = true
			case "false", "":
				rt.CommitTurns = false
			default:
				return store.TemplateConfig{}, "", fmt.Errorf("%w: commit_turns=%q: want true or false", jam.ErrInvalid, v)
			}
		case "read_only":
			rt.ReadOnly = nil
			if v != "" {
				rt.ReadOnly = filepath.SplitList(v)
			}
		default:
			return store.TemplateConfig{}, "", fmt.Errorf("%w: unknown runtime key %q (known: %s, env.NAME)", jam.ErrInvalid, k, strings.Join(ConfigKeys, ", "))
		}
		changes = append(changes, k+"="+v)
	}
	cfg, err := Validate(c.Harnesses, rt)
	if err != nil {
		return cfg, "", err
	}
	_, cmd := set["command"]
	_, repo := set["repo"]
	if err := c.CheckRunnable(ctx, cfg, cmd, repo); err != nil {
		return cfg, "", err
	}
	if cfg.Env, err = applyEnv(c.Box, c.Workspace, t.ID, t.Desired.Env, edits); err != nil {
		return cfg, "", err
	}
	if len(cfg.Env) > 0 {
		cfg.EnvTemplate = t.ID
	}
	return cfg, strings.Join(changes, ", "), nil
}

// CheckRunnable refuses, up front, a runtime configuration that could not
// serve a message: (with command) a command whose executable is not found
// (absolute, or on jamd's PATH, which the agent's environment carries) or
// not executable, and (with repo) a repository that is not a git
// repository. A kind's default CLI that is missing is named with how to
// install it. A builtin kind's command is jamd's own executable, always
// there.
func (c Conf) CheckRunnable(ctx context.Context, cfg store.TemplateConfig, command, repo bool) error {
	if k, _ := harness.KindOf(cfg.Harness); command && len(cfg.Command) > 0 && k.Builtin == nil {
		if err := c.checkCommand(cfg.Harness, cfg.Command); err != nil {
			return err
		}
	}
	if repo && cfg.Repo != "" {
		if err := CheckRepo(ctx, cfg.Repo); err != nil {
			return err
		}
	}
	return nil
}

// checkCommand finds an agent's executable as its start would.
func (c Conf) checkCommand(kind string, argv []string) error {
	name := argv[0]
	lookPath := c.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	k, _ := harness.KindOf(kind)
	if !strings.ContainsRune(name, '/') {
		if _, err := lookPath(name); err != nil {
			if k.Install != "" && slices.Equal(argv, k.Command) {
				return fmt.Errorf("%w: harness %s runs %q, which is not found on jamd's PATH: install %s (%s), or give the command that runs it",
					jam.ErrInvalid, kind, name, k.CLI, k.Install)
			}
			return fmt.Errorf("%w: command %q is not found on jamd's PATH (give an absolute path, or install it)", jam.ErrInvalid, name)
		}
		return nil
	}
	fi, err := os.Stat(name)
	switch {
	case err != nil:
		return fmt.Errorf("%w: command %q does not exist", jam.ErrInvalid, name)
	case fi.IsDir():
		return fmt.Errorf("%w: command %q is a directory", jam.ErrInvalid, name)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%w: command %q is not executable", jam.ErrInvalid, name)
	}
	return nil
}

// CheckRepo requires a git repository at dir (git rev-parse, hardened).
func CheckRepo(ctx context.Context, dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: repository %q is not a directory", jam.ErrInvalid, dir)
	}
	ok, err := gitcli.IsRepository(ctx, dir)
	if err != nil {
		return fmt.Errorf("%w: repository %q: %v", jam.ErrInvalid, dir, err)
	}
	if !ok {
		return fmt.Errorf("%w: repository %q is not a git repository", jam.ErrInvalid, dir)
	}
	return nil
}
