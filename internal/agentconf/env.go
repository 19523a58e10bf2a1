package agentconf

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// An owned agent's environment: the template adds variables to an
// allowlist of jamd's own environment (AgentEnv; a variable of the
// template wins). Their values are often credentials, so they are sealed with the
// daemon's key as soon as they arrive, bound to the template and the
// variable's name (a sealed value copied to another template or renamed
// does not open), opened only to start the agent, and never shown: reads
// list the names.

// Bounds of an agent's environment. A value is limited well below the
// kernel's limit on one environment string (128 KiB).
const (
	maxEnvVars     = 64
	maxEnvNameLen  = 256
	maxEnvValueLen = 64 << 10
)

// Bounds of the handshake timeout.
const (
	minHandshakeTimeout = time.Second
	maxHandshakeTimeout = 30 * time.Minute
)

// envKeyPrefix starts the runtime configuration key of one variable
// (env.NAME=VALUE).
const envKeyPrefix = "env."

// checkEnvName validates a variable's name: not empty, no "=", no NUL.
func checkEnvName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: an environment variable needs a name", jam.ErrInvalid)
	case len(name) > maxEnvNameLen:
		return fmt.Errorf("%w: environment variable name longer than %d bytes", jam.ErrInvalid, maxEnvNameLen)
	case strings.ContainsAny(name, "=\x00"):
		return fmt.Errorf("%w: environment variable name %q contains %q or NUL", jam.ErrInvalid, name, "=")
	}
	return nil
}

// checkEnvValue validates a variable's value: no NUL, bounded. The value
// is not quoted in errors: it may be a credential.
func checkEnvValue(name, value string) error {
	switch {
	case strings.ContainsRune(value, 0):
		return fmt.Errorf("%w: the value of environment variable %s contains NUL", jam.ErrInvalid, name)
	case len(value) > maxEnvValueLen:
		return fmt.Errorf("%w: the value of environment variable %s is longer than %d bytes", jam.ErrInvalid, name, maxEnvValueLen)
	}
	return nil
}

// parseEnvEntry splits and validates NAME=VALUE (the first "=" splits).
func parseEnvEntry(entry string) (name, value string, err error) {
	name, value, ok := strings.Cut(entry, "=")
	if !ok {
		// Not quoted whole: it may be a credential missing its name.
		return "", "", fmt.Errorf("%w: an environment entry is NAME=VALUE (an entry of %d bytes has no \"=\")", jam.ErrInvalid, len(entry))
	}
	if err := checkEnvName(name); err != nil {
		return "", "", err
	}
	if err := checkEnvValue(name, value); err != nil {
		return "", "", err
	}
	return name, value, nil
}

// envConfigKey reads a runtime configuration key: for env.NAME it returns
// NAME and true; other keys return false. A malformed name is an error.
func envConfigKey(key string) (string, bool, error) {
	name, ok := strings.CutPrefix(key, envKeyPrefix)
	if !ok {
		return "", false, nil
	}
	if err := checkEnvName(name); err != nil {
		return "", true, fmt.Errorf("runtime key %q: %w", key, err)
	}
	return name, true, nil
}

// parseHandshakeTimeout reads a handshake timeout: "" or "0" is the
// harness's default (0), else a duration from 1s to 30m.
func parseHandshakeTimeout(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%w: handshake timeout %q is not a duration (like 90s or 2m)", jam.ErrInvalid, s)
	}
	if d < minHandshakeTimeout || d > maxHandshakeTimeout {
		return 0, fmt.Errorf("%w: handshake timeout %s is out of bounds (%s to %s; 0 is the default)", jam.ErrInvalid, d, minHandshakeTimeout, maxHandshakeTimeout)
	}
	return d, nil
}

// formatHandshakeTimeout is the request form of a handshake timeout.
func formatHandshakeTimeout(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// envAAD binds a sealed value to its workspace, template and name.
func envAAD(ws jam.WorkspaceID, tmpl jam.TemplateID, name string) []byte {
	return []byte("template-env|" + string(ws) + "|" + string(tmpl) + "|" + name)
}

// envEdit is one change to an agent's environment: set a value, or unset
// the variable (Unset).
type envEdit struct {
	Name, Value string
	Unset       bool
}

// applyEnv applies edits to a template's sealed environment: a new
// variable goes last, a set one keeps its place, an unset one goes. Only
// the edited values are sealed anew (for tmpl); the others stay as they
// were. The result is checked against the bounds.
func applyEnv(box *secret.Box, ws jam.WorkspaceID, tmpl jam.TemplateID, env []store.EnvVar, edits []envEdit) ([]store.EnvVar, error) {
	out := append([]store.EnvVar(nil), env...)
	for _, e := range edits {
		if err := checkEnvName(e.Name); err != nil {
			return nil, err
		}
		i := envIndex(out, e.Name)
		if e.Unset {
			if i >= 0 {
				out = append(out[:i], out[i+1:]...)
			}
			continue
		}
		if err := checkEnvValue(e.Name, e.Value); err != nil {
			return nil, err
		}
		v := store.EnvVar{Name: e.Name, Sealed: box.Seal([]byte(e.Value), envAAD(ws, tmpl, e.Name))}
		if i >= 0 {
			out[i] = v
		} else {
			out = append(out, v)
		}
	}
	if len(out) > maxEnvVars {
		return nil, fmt.Errorf("%w: more than %d environment variables", jam.ErrInvalid, maxEnvVars)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func envIndex(env []store.EnvVar, name string) int {
	for i, v := range env {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// requestEnv parses the NAME=VALUE entries of a runtime request into edits;
// a name given twice is refused (which value was meant?).
func requestEnv(entries []string) ([]envEdit, error) {
	if len(entries) > maxEnvVars {
		return nil, fmt.Errorf("%w: more than %d environment variables", jam.ErrInvalid, maxEnvVars)
	}
	edits := make([]envEdit, 0, len(entries))
	seen := map[string]bool{}
	for _, entry := range entries {
		name, value, err := parseEnvEntry(entry)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: environment variable %s is given twice", jam.ErrInvalid, name)
		}
		seen[name] = true
		edits = append(edits, envEdit{Name: name, Value: value})
	}
	return edits, nil
}

// EnvNames lists the variables' names, for reads.
func EnvNames(env []store.EnvVar) []string {
	if len(env) == 0 {
		return nil
	}
	names := make([]string, len(env))
	for i, v := range env {
		names[i] = v.Name
	}
	return names
}

// agentEnvAllowed are the variables of jamd's own environment an agent
// gets, where jamd has them; LC_* are allowed by prefix. Nothing else of
// jamd's reaches an agent: not JAM_BAND_KEY, not a cloud credential.
var agentEnvAllowed = []string{"PATH", "LANG", "TERM", "TZ"}

// AgentEnv is the environment an agent process starts with: the
// allowlisted variables of jamd's own, HOME and TMPDIR naming the agent's
// own directories, then the template's variables, opened (last, so a
// variable of the template wins, exec keeping the last of duplicate
// names).
func AgentEnv(box *secret.Box, ws jam.WorkspaceID, cfg store.TemplateConfig, home, tmp string) ([]string, error) {
	env := []string{}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(agentEnvAllowed, name) || strings.HasPrefix(name, "LC_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "TMPDIR="+tmp)
	for _, v := range cfg.Env {
		value, err := box.Open(v.Sealed, envAAD(ws, cfg.EnvTemplate, v.Name))
		if err != nil {
			return nil, fmt.Errorf("open environment variable %s of template %s: %w", v.Name, cfg.EnvTemplate, err)
		}
		env = append(env, v.Name+"="+string(value))
	}
	return env, nil
}

// templateEnv seals the NAME=VALUE entries of a runtime request for a
// template.
func templateEnv(box *secret.Box, ws jam.WorkspaceID, tmpl jam.TemplateID, entries []string) ([]store.EnvVar, error) {
	edits, err := requestEnv(entries)
	if err != nil {
		return nil, err
	}
	return applyEnv(box, ws, tmpl, nil, edits)
}

// TemplateValues are the values of the last n entries of env: the
// template's own variables, which AgentEnv appends.
func TemplateValues(env []string, n int) []string {
	var out []string
	for _, kv := range env[max(len(env)-n, 0):] {
		if _, v, ok := strings.Cut(kv, "="); ok && v != "" {
			out = append(out, v)
		}
	}
	return out
}
