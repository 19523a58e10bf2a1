package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/internal/agentconf"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/claude"
	"github.com/jamhq/jam/internal/harness/codex"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mcp"
	"github.com/jamhq/jam/internal/session"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// worktreeDir holds the owned sessions' working trees, under the data
// directory.
const worktreeDir = "worktrees"

// checkpointDir holds the private git directories of the checkpoints of
// sessions without a repository, under the data directory.
const checkpointDir = "checkpoints"

// deliverer hands owned bindings' messages to the session manager; the
// messages of attached agents are already in the queue they pull from.
type deliverer struct {
	rt atomic.Pointer[session.Manager]
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

// startRuntime builds the session manager on top of the engine and
// recovers turns a previous run left active. It runs before the engine
// starts, so redeliveries at start find their turns.
func (m *messaging) startRuntime(ctx context.Context, stack *stopStack, del *deliverer) error {
	m.sandbox = defaultSandbox(m.log)
	prices, err := openPrices(m.d.cfg.DataDir, m.log)
	if err != nil {
		return err
	}
	if m.approvals, err = m.newApprovals(&del.rt); err != nil {
		return err
	}
	m.ask = m.askPerson(&del.rt)
	if m.delegations, err = delegation.New(delegation.Config{Minter: m.d.minter, Logger: m.log, Changed: m.d.delegationChanged}, m.d.store, children{m: m}); err != nil {
		return err
	}
	tools, err := mcp.New(mcp.Config{Actions: toolActions{m: m, rt: &del.rt}, Logger: m.log})
	if err != nil {
		return err
	}
	if err := tools.Listen("127.0.0.1:0"); err != nil {
		return fmt.Errorf("jam's tools for agents: %w", err)
	}
	stack.push("tools for agents", tools.Close)
	m.tools = tools
	m.log.Info("tools for agents listening", "url", tools.URL())
	rt, err := session.New(session.Config{
		Workspace: m.d.workspace.ID, Store: m.d.store, Settler: m.engine, Logger: m.d.log,
		Observer: turnObserver{d: m.d},
		Metrics:  m.d.metrics,
		Launch:   m.launch,
		Manifest: harnessManifest,
		Prices:   prices,
		Tools:    m.sessionTools,
		HopLimit: m.d.cfg.HopLimit,
		Results: &session.ResultsConfig{PrivateRoot: filepath.Join(m.d.cfg.DataDir, checkpointDir),
			Exclude: m.d.cfg.CheckpointExclude, MaxPatchBytes: m.d.cfg.ChangeSetMaxPatchBytes},
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

// harnesses are the harnesses an owned agent can run, by the harness
// configuration key (their default commands: harness.Kinds).
var harnesses = harness.NewRegistry(acp.Harness{}, acp.Copilot, acp.OpenCode, claude.Harness{}, codex.Harness{}, demoHarness)

// demoHarness is jam's demo agent, an ACP agent that jamd runs from its
// own executable (harness.Kinds: demo; launch resolves its command).
var demoHarness = acp.Harness{Kind: "demo"}

// selfExecutable is jamd's own executable, which runs the builtin kinds;
// found at each launch, so a rebuilt or moved jam is the one that runs.
var selfExecutable = os.Executable

// builtinCommand gives a builtin kind's configuration (demo) its command:
// jamd's own executable as it is now, with the kind's arguments. Other
// kinds are returned as they are.
func builtinCommand(cfg store.TemplateConfig) (store.TemplateConfig, error) {
	if k, _ := harness.KindOf(cfg.Harness); k.Builtin != nil {
		exe, err := selfExecutable()
		if err != nil {
			return cfg, fmt.Errorf("%w: find jamd's own executable to run %s: %v", jam.ErrUnavailable, k.CLI, err)
		}
		cfg.Command = harness.BuiltinCommand(cfg.Harness, exe)
	}
	return cfg, nil
}

// harnessManifest is what a harness's processes can do, by its key.
func harnessManifest(name string) (harness.Manifest, error) {
	h, err := harnesses.Get(name)
	if err != nil {
		return harness.Manifest{}, err
	}
	return h.Manifest(), nil
}

// conf is the agent configuration use cases over this daemon's key and
// default sandbox (known once the runtime started).
func (m *messaging) conf() agentconf.Conf {
	return agentconf.Conf{Harnesses: harnesses, Box: m.box, Workspace: m.d.workspace.ID, Sandbox: m.sandbox}
}

// wireRuntime is the wire form of a stored configuration.
func wireRuntime(c store.TemplateConfig) wire.AgentRuntime {
	r := agentconf.Of(c)
	return wire.AgentRuntime{Harness: r.Harness, Command: r.Command, Model: r.Model, Repo: r.Repo, Placement: r.Placement, Permission: r.Permission,
		EnvNames: agentconf.EnvNames(c.Env), HandshakeTimeout: r.HandshakeTimeout, Sandbox: r.Sandbox, Network: r.Network, ReadOnly: r.ReadOnly, CommitTurns: r.CommitTurns}
}

// runtimeRequest is the use cases' form of a wire runtime request.
func runtimeRequest(w wire.AgentRuntime) agentconf.Runtime {
	return agentconf.Runtime{Harness: w.Harness, Command: w.Command, Model: w.Model, Repo: w.Repo, Placement: w.Placement, Permission: w.Permission,
		Env: w.Env, HandshakeTimeout: w.HandshakeTimeout, Sandbox: w.Sandbox, Network: w.Network, ReadOnly: w.ReadOnly, CommitTurns: w.CommitTurns}
}

// launch starts an agent process for a configuration through its harness:
// under its executor, in its own home, with the allowlisted environment
// and the paths of its sandbox (agentArea), the template's handshake
// bound (0: the harness's default), model and permission policy. Errors
// hide the template's environment values.
func (m *messaging) launch(ctx context.Context, cfg store.TemplateConfig, tools []harness.MCPServer) (harness.Process, error) {
	h, err := harnesses.Get(cfg.Harness)
	if err != nil {
		return nil, err
	}
	// Before the sandbox is laid out: it shows the agent its command's
	// executable, read-only.
	if cfg, err = builtinCommand(cfg); err != nil {
		return nil, err
	}
	// Named in words under every executor (bwrap only says it exited).
	if err := m.conf().CheckRunnable(ctx, cfg, true, false); err != nil {
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
	env, err := agentconf.AgentEnv(m.box, m.d.workspace.ID, cfg, area.home, area.tmp)
	if err != nil {
		return nil, err
	}
	if err := m.d.resolveConnections(ctx, env[len(env)-len(cfg.Env):]); err != nil {
		return nil, err
	}
	// A process of one session works in its worktree (cfg.Dir); one of
	// many in its home, each session in its own directory.
	dir := area.home
	if cfg.Dir != "" {
		dir = cfg.Dir
	}
	secrets := agentconf.TemplateValues(env, len(cfg.Env))
	for _, t := range tools {
		secrets = append(secrets, t.Secrets()...)
	}
	var ask harness.Approval
	if harness.Policy(cfg.Permission) == harness.PolicyAsk {
		ask = m.ask
	}
	return h.Launch(ctx, harness.LaunchSpec{Argv: cfg.Command, Executor: ex, Dir: dir, Env: env, MCP: tools, PrivateDir: area.tmp, Approve: ask,
		Writable: area.writable, ReadOnly: area.readOnly, NoNetwork: cfg.NoNetwork, Secrets: secrets,
		Logger: m.log, HandshakeTimeout: cfg.HandshakeTimeout, Model: cfg.Model, Policy: harness.Policy(cfg.Permission),
		Resume: harness.Thread(cfg.Resume)})
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
	if _, err := agentconf.Validate(harnesses, agentconf.Of(ov.Apply(c))); err != nil {
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
		w, err := worktree.New(ctx, root, jam.New[jam.WorktreeID](m.d.minter), t, s, s.CreatedAt)
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
		w, err := worktree.New(ctx, root, jam.New[jam.WorktreeID](m.d.minter), t, s, time.Now())
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
