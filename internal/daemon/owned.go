package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/runtime"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
)

// worktreeDir holds the owned sessions' working trees, under the data
// directory.
const worktreeDir = "worktrees"

// deliverer hands owned bindings' messages to the runtime manager; the
// messages of attached agents are already in the queue they pull from.
type deliverer struct {
	rt atomic.Pointer[runtime.Manager]
}

func (d *deliverer) Deliver(ctx context.Context, del engine.Delivery) error {
	if del.Binding.Mode != jam.RuntimeOwned {
		return nil
	}
	rt := d.rt.Load()
	if rt == nil {
		return fmt.Errorf("%w: owned runtimes are not running", jam.ErrUnavailable)
	}
	return rt.Deliver(ctx, del)
}

// startRuntime builds the runtime manager on top of the engine and
// recovers turns a previous run left active. It runs before the engine
// starts, so redeliveries at start find their turns.
func (m *messaging) startRuntime(ctx context.Context, stack *stopStack, del *deliverer) error {
	m.sandbox = defaultSandbox(m.log)
	rt, err := runtime.New(runtime.Config{
		Workspace: m.d.workspace.ID, Store: m.d.store, Settler: m.engine, Logger: m.d.log,
		Observer: turnObserver{d: m.d},
		Launch:   m.launch,
	})
	if err != nil {
		return err
	}
	if err := rt.Start(ctx); err != nil {
		return err
	}
	stack.push("owned runtimes", rt.Stop)
	del.rt.Store(rt)
	m.runtime = rt
	return nil
}

// launch starts an agent process for a configuration: under its
// executor, in its own home, with the allowlisted environment and the
// paths of its sandbox (agentArea).
func (m *messaging) launch(ctx context.Context, cfg store.TemplateConfig) (runtime.Host, error) {
	// Named in words under every executor (bwrap only says it exited).
	if err := checkRunnable(ctx, cfg, true, false); err != nil {
		return nil, err
	}
	ex, err := executorFor(cfg.Sandbox, m.sandbox)
	if err != nil {
		return nil, err
	}
	ex = executor.Track(ex, m.d.procs) // recorded, so the next start can end it (stop.go)
	area, err := m.agentArea(ctx, cfg)
	if err != nil {
		return nil, err
	}
	env, err := agentEnv(m.box, m.d.workspace.ID, cfg, area.home, area.tmp)
	if err != nil {
		return nil, err
	}
	h, err := launchACP(ctx, cfg, acp.Config{Executor: ex, Dir: area.home, Env: env, Writable: area.writable, ReadOnly: area.readOnly,
		NoNetwork: cfg.NoNetwork}, m.log)
	return h, redactEnv(err, templateValues(env, len(cfg.Env)))
}

// ensureOwnedRoom gives an owned agent its session, worktree and binding
// in a room it is in; nothing happens for attached agents or rooms that
// already have a session. A session made here runs the template's
// configuration as is.
func (m *messaging) ensureOwnedRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) error {
	return m.ownedRoom(ctx, ws, key, room, store.SessionOverrides{})
}

// addOwnedRoom prepares the session of an agent about to be added to a
// room (jam room add), with the room's own configuration: it runs before
// the agent joins on Band, so the room_added event that follows finds the
// session. Overrides are validated as the template's are, and under
// placement shared a per-process override that differs from the template's
// is refused with jam.ErrIncompatible; nothing is created when it fails.
// An attached agent gets nothing here, and overrides are refused for it.
func (m *messaging) addOwnedRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room string, w wire.SessionOverrides) error {
	t, err := m.d.store.TemplateForPeer(ctx, ws, key)
	if errors.Is(err, jam.ErrNotFound) {
		if len(w.Command) > 0 || w.Repo != "" {
			return fmt.Errorf("%w: %s is not owned by jam (it has no runtime); a room's command or repository is for owned agents", jam.ErrInvalid, key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	ov, err := sessionOverrides(t.Desired, w)
	if err != nil {
		return err
	}
	if ov.Repo != "" {
		if fi, err := os.Stat(ov.Repo); err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: the room's repository %q is not a directory", jam.ErrInvalid, ov.Repo)
		}
	}
	id, err := jam.ParseUUID[jam.RoomID](room)
	if err != nil {
		return err
	}
	return m.ownedRoom(ctx, ws, key, id, ov)
}

// sessionOverrides checks a room's configuration against the template's
// desired one and returns what the session records. Under placement shared
// a command equal to the template's is not recorded (the room follows its
// shared process), and one that differs is jam.ErrIncompatible.
func sessionOverrides(c store.TemplateConfig, w wire.SessionOverrides) (store.SessionOverrides, error) {
	ov := store.SessionOverrides{Command: w.Command, Repo: w.Repo}
	if w.Command != nil && len(w.Command) == 0 {
		return ov, fmt.Errorf("%w: the room's command is empty", jam.ErrInvalid)
	}
	rt := wireRuntime(ov.Apply(c))
	if _, err := runtimeConfig(&rt); err != nil {
		return ov, fmt.Errorf("room configuration: %w", err)
	}
	if c.Placement != jam.PlacementDedicated {
		if ov.DiffersPerProcess(c) {
			return ov, fmt.Errorf("%w: the agent runs one shared process for all its rooms (placement %s) with the command %q; a room cannot have its own command %q (set placement=dedicated with jam agent config first)",
				jam.ErrIncompatible, c.Placement, strings.Join(c.Command, " "), strings.Join(ov.Command, " "))
		}
		ov.Command = nil
	}
	return ov, nil
}

// ownedRoom materializes an owned agent's session in a room with
// overrides, unless the room has one: then the overrides, when any, must be
// the ones it has (jam.ErrConflict otherwise: a session's configuration is
// fixed when it is made).
func (m *messaging) ownedRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, ov store.SessionOverrides) error {
	st := m.d.store
	t, err := st.TemplateForPeer(ctx, ws, key)
	if errors.Is(err, jam.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	m.owned.Lock()
	defer m.owned.Unlock()
	// Each agent's worktrees in a directory of its own, which its shared
	// process's sandbox shows whole.
	root := filepath.Join(m.d.cfg.DataDir, worktreeDir, string(t.ID))
	s, err := st.SessionForRoom(ctx, ws, key, room)
	switch {
	case errors.Is(err, jam.ErrNotFound):
		// The worktree is made first: a repository it cannot be made of
		// leaves no session behind.
		s = store.Session{ID: jam.New[jam.SessionID](m.d.minter), WorkspaceID: ws, TemplateID: t.ID, Peer: key, Room: room, Overrides: ov, CreatedAt: time.Now()}
		w, err := runtime.NewWorktree(ctx, root, jam.New[jam.WorktreeID](m.d.minter), t, s, s.CreatedAt)
		if err != nil {
			return fmt.Errorf("worktree of room %s: %w", room, err)
		}
		if s, err = st.SessionCreate(ctx, s); err != nil {
			return err
		}
		if _, err := st.WorktreePut(ctx, w); err != nil {
			return err
		}
	case err != nil:
		return err
	case !ov.IsZero() && !sameOverrides(s.Overrides, ov):
		return fmt.Errorf("%w: %s already has session %s in room %s with its own configuration %+v; a session's configuration is fixed when it is made",
			jam.ErrConflict, key, s.ID, room, s.Overrides)
	}
	if _, err := st.WorktreeForSession(ctx, ws, s.ID); errors.Is(err, jam.ErrNotFound) {
		w, err := runtime.NewWorktree(ctx, root, jam.New[jam.WorktreeID](m.d.minter), t, s, time.Now())
		if err != nil {
			return err
		}
		if _, err := st.WorktreePut(ctx, w); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	b, err := st.BindingForRoom(ctx, ws, key, room)
	if err == nil && b.SessionID == s.ID {
		return nil
	}
	if err != nil && !errors.Is(err, jam.ErrNotFound) {
		return err
	}
	id := jam.New[jam.BindingID](m.d.minter)
	if err == nil {
		id = b.ID
	}
	_, err = st.BindingPut(ctx, store.Binding{ID: id, WorkspaceID: ws, Peer: key, Room: room, Alias: "room-" + string(room)[:8],
		SessionID: s.ID, Mode: jam.RuntimeOwned, CreatedAt: time.Now()})
	return err
}

// sameOverrides reports whether two sessions' overrides are alike.
func sameOverrides(a, b store.SessionOverrides) bool {
	return a.Repo == b.Repo && slices.Equal(a.Command, b.Command)
}

// runtimeConfig validates an agent's runtime request. The request's
// environment is validated but not returned: its values are sealed for the
// template they belong to (templateEnv), and a read's EnvNames are ignored.
func runtimeConfig(r *wire.AgentRuntime) (store.TemplateConfig, error) {
	c := store.TemplateConfig{Harness: r.Harness, Command: r.Command, Model: r.Model, Repo: r.Repo,
		Placement: jam.Placement(r.Placement), Permission: r.Permission}
	if c.Harness == "" {
		c.Harness = "acp"
	}
	if c.Harness != "acp" {
		return c, fmt.Errorf("%w: harness %q (want acp)", jam.ErrInvalid, c.Harness)
	}
	if len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == "" {
		return c, fmt.Errorf("%w: an owned agent needs a command", jam.ErrInvalid)
	}
	if c.Placement == "" {
		c.Placement = jam.PlacementShared
	}
	if _, err := jam.ParseEnum("placement", string(c.Placement), jam.Placements); err != nil {
		return c, err
	}
	if c.Permission == "" {
		c.Permission = string(acp.PolicyReject)
	}
	if _, err := acp.ParsePolicy(c.Permission); err != nil {
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

// templateEnv seals the NAME=VALUE entries of a runtime request for a
// template.
func templateEnv(box *secret.Box, ws jam.WorkspaceID, tmpl jam.TemplateID, entries []string) ([]store.EnvVar, error) {
	edits, err := requestEnv(entries)
	if err != nil {
		return nil, err
	}
	return applyEnv(box, ws, tmpl, nil, edits)
}

// acpHost adapts an ACP agent process to the runtime. The agent reports
// every session/update to route, which passes it to the Prompt running on
// that session, if any.
type acpHost struct {
	*acp.Agent
	// secrets are the template's environment values, hidden in the
	// errors the host returns (redactEnv).
	secrets []string

	mu      sync.Mutex
	prompts map[string]func(runtime.Update) // guarded by mu: by provider thread
}

func (h *acpHost) Prompt(ctx context.Context, thread, text string, updates func(runtime.Update)) (runtime.Answer, error) {
	if updates != nil {
		h.mu.Lock()
		h.prompts[thread] = updates
		h.mu.Unlock()
		// Updates reach the runtime only while Prompt runs: an update that
		// arrives after is for nobody.
		defer func() {
			h.mu.Lock()
			delete(h.prompts, thread)
			h.mu.Unlock()
		}()
	}
	res, err := h.Agent.Prompt(ctx, thread, text)
	return runtime.Answer{StopReason: res.StopReason, Text: res.Text, Omitted: res.Omitted}, redactEnv(err, h.secrets)
}

// NewSession is the agent's, with its errors redacted (redactEnv).
func (h *acpHost) NewSession(ctx context.Context, dir string) (string, error) {
	id, err := h.Agent.NewSession(ctx, dir)
	return id, redactEnv(err, h.secrets)
}

// LoadSession is the agent's, with its errors redacted (redactEnv).
func (h *acpHost) LoadSession(ctx context.Context, id, dir string) error {
	return redactEnv(h.Agent.LoadSession(ctx, id, dir), h.secrets)
}

// templateValues are the values of the last n entries of env: the
// template's own variables, which agentEnv appends.
func templateValues(env []string, n int) []string {
	var out []string
	for _, kv := range env[max(len(env)-n, 0):] {
		if _, v, ok := strings.Cut(kv, "="); ok && v != "" {
			out = append(out, v)
		}
	}
	return out
}

// redactedError is an error whose text hides secret values.
type redactedError struct {
	err  error
	text string
}

func (e *redactedError) Error() string { return e.text }

// Unwrap keeps errors.Is working; the wrapped error's own text is never
// shown.
func (e *redactedError) Unwrap() error { return e.err }

// redactEnv hides the template's environment values (sealed at rest) in
// err's text. An agent may echo its environment in the error it answers a
// handshake or prompt with, and the error becomes the turn's detail and
// goes to the log: neither may show a secret.
//
// Longer values go first, so a value inside another is not left half
// shown. Values shorter than redactMin are left alone: "1" or "on" is a
// setting, not a credential, and replacing every "1" would make the error
// unreadable ("exit status [redacted]").
func redactEnv(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	text := err.Error()
	for _, s := range secrets {
		if len(s) >= redactMin {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return &redactedError{err: err, text: text}
}

// redactMin is the shortest environment value redactEnv hides.
const redactMin = 4

// Steers implements runtime.Steerer from the harness's capability
// manifest.
func (h *acpHost) Steers() bool { return h.Manifest().Steer }

// Steer implements runtime.Steerer: ACP has no way to add input to a
// running prompt (the manifest says so), so the runtime never calls it.
func (h *acpHost) Steer(context.Context, string, string) error {
	return fmt.Errorf("%w: the ACP harness cannot steer a running turn", jam.ErrNotImplemented)
}

// route passes an update to its session's running Prompt. It runs on the
// agent's reading goroutine, in order; the runtime's callback does not
// block.
func (h *acpHost) route(u acp.Update) {
	ru, ok := runtimeUpdate(u)
	if !ok {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.prompts[u.SessionID]; f != nil {
		f(ru)
	}
}

// runtimeUpdate maps an ACP session/update to the runtime's form; false for
// updates that are not a turn's output (a replayed user message, kinds
// jam does not read).
func runtimeUpdate(u acp.Update) (runtime.Update, bool) {
	su := u.SessionUpdate
	switch su.SessionUpdate {
	case acp.UpdateAgentMessageChunk, acp.UpdateAgentThoughtChunk:
		if su.Content == nil || su.Content.Type != "text" || su.Content.Text == "" {
			return runtime.Update{}, false
		}
		kind := runtime.UpdateText
		if su.SessionUpdate == acp.UpdateAgentThoughtChunk {
			kind = runtime.UpdateThought
		}
		return runtime.Update{Kind: kind, Text: su.Content.Text}, true
	case acp.UpdateToolCall, acp.UpdateToolCallUpdate:
		kind := runtime.UpdateToolCall
		if su.SessionUpdate == acp.UpdateToolCallUpdate {
			kind = runtime.UpdateToolCallUpdate
		}
		return runtime.Update{Kind: kind, ToolCallID: su.ToolCallID, Title: su.Title, ToolKind: su.Kind, Status: su.Status}, true
	case acp.UpdatePlan:
		plan := make([]runtime.PlanEntry, 0, len(su.Entries))
		for _, e := range su.Entries {
			plan = append(plan, runtime.PlanEntry{Content: e.Content, Priority: e.Priority, Status: e.Status})
		}
		return runtime.Update{Kind: runtime.UpdatePlan, Plan: plan}, true
	}
	return runtime.Update{}, false
}

// launchACP starts an ACP agent for a template configuration, with the
// process settings of proc (executor, directory, environment, sandbox
// paths), the template's handshake bound (0: the harness's default) and
// its model, set on every session the agent opens.
func launchACP(ctx context.Context, cfg store.TemplateConfig, proc acp.Config, log *slog.Logger) (runtime.Host, error) {
	h := &acpHost{prompts: map[string]func(runtime.Update){}, secrets: templateValues(proc.Env, len(cfg.Env))}
	proc.Command, proc.Model, proc.InitTimeout = cfg.Command, cfg.Model, cfg.HandshakeTimeout
	proc.Policy, proc.Logger, proc.OnUpdate = acp.Policy(cfg.Permission), log, h.route
	a, err := acp.Start(ctx, proc)
	if err != nil {
		return nil, err
	}
	h.Agent = a
	return h, nil
}
