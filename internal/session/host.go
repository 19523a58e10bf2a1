package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// holder names what a session's lease serves: the template (shared
// placement: one process for all of the agent's rooms) or the session
// itself (dedicated, or a harness whose process serves one session,
// whatever the placement).
func holder(t store.Template, s store.Session, mf harness.Manifest) string {
	if t.Desired.Placement == jam.PlacementDedicated || mf.Sessions == harness.SessionsOne {
		return string(s.ID)
	}
	return string(t.ID)
}

// manifest is what the template's harness can do, before a process is
// started; without a Config.Manifest, or for a harness it does not know,
// a process holds many sessions.
func (m *Manager) manifest(t store.Template) harness.Manifest {
	if m.cfg.Manifest != nil {
		if mf, err := m.cfg.Manifest(t.Desired.Harness); err == nil {
			return mf
		}
	}
	return harness.Manifest{Sessions: harness.SessionsMany, Resume: harness.ResumeInProcess}
}

// launchConfig is the configuration a new host for the session runs. A
// dedicated host is the session's own: the template's desired
// configuration with the session's overrides applied. A shared host serves
// all the agent's rooms with the template's. A host of a harness whose
// process serves one session is the session's too, started in its
// worktree (dir) and, when the harness resumes at launch, on its provider
// thread.
func launchConfig(t store.Template, s store.Session, mf harness.Manifest, dir string) store.TemplateConfig {
	c := t.Desired
	if c.Placement == jam.PlacementDedicated {
		c = s.Overrides.Apply(c)
		c.Session = s.ID
	}
	if mf.Sessions == harness.SessionsOne {
		c.Session, c.Dir = s.ID, dir
		if mf.Resume == harness.ResumeAtLaunch {
			c.Resume = s.ProviderThread
		}
	}
	c.Template = t.ID
	return c
}

// errIncompatible refuses a session whose overrides set a per-process key
// differently from what the shared host runs (or would start with): its
// turns must not run there under the wrong command.
func errIncompatible(s store.Session) error {
	return fmt.Errorf("%w: session %s has its own command, which the agent's shared process cannot run (set placement=dedicated to give each room its own process)",
		jam.ErrIncompatible, s.ID)
}

// launchError is a host that could not be started (the command is not
// found, the handshake failed or timed out): the turn that needed it
// fails with the error's text as its detail, instead of waiting for a
// retry that would fail the same way until the configuration changes.
type launchError struct{ err error }

func (e *launchError) Error() string { return e.err.Error() }
func (e *launchError) Unwrap() error { return e.err }

// hostFor returns the live host of the session's holder, starting one (a
// new lease, with the next generation) when there is none or its process
// has exited. A new host runs launchConfig, and the template's desired
// configuration thereby becomes effective; a running host keeps the
// configuration it started with until it is replaced, and the template
// shows the change as outstanding meanwhile. A shared host refuses a
// session whose per-process overrides differ from the configuration it
// runs, or would start with, with jam.ErrIncompatible, before any process
// is started for it.
func (m *Manager) hostFor(ctx context.Context, t store.Template, s store.Session, dir string) (*lease, error) {
	mf := m.manifest(t)
	h := holder(t, s, mf)
	shared := h == string(t.ID)
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil, jam.ErrStopping
	}
	l, ok := m.hosts[h]
	if !ok {
		l = &lease{sessions: map[jam.SessionID]harness.Thread{}}
		m.hosts[h] = l
	}
	m.mu.Unlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host != nil {
		select {
		case <-l.host.Exited():
			// Replaced below; the turn that was running on it is
			// interrupted by its own worker.
			_ = m.cfg.Store.LeaseEnd(ctx, m.cfg.Workspace, l.record.ID, jam.ReasonProcessExited, m.cfg.Now())
			l.host, l.sessions = nil, map[jam.SessionID]harness.Thread{}
		default:
			if shared && s.Overrides.DiffersPerProcess(l.config) {
				return nil, errIncompatible(s)
			}
			return l, nil
		}
	}
	cfg := launchConfig(t, s, mf, dir)
	if shared && s.Overrides.DiffersPerProcess(cfg) {
		return nil, errIncompatible(s)
	}
	var tools []harness.MCPServer
	if cfg.Session != "" {
		tools = m.tools(s, cfg)
	}
	host, err := m.cfg.Launch(ctx, cfg, tools)
	if err != nil && cfg.Resume != "" && ctx.Err() == nil {
		// The CLI may no longer have the thread (its files are gone): a
		// fresh process, whose new thread sessionOn records.
		m.log.Info("agent did not start on the session's thread; starting a new thread", "session", s.ID, "thread", cfg.Resume, "err", err)
		cfg.Resume = ""
		host, err = m.cfg.Launch(ctx, cfg, tools)
	}
	if err != nil {
		err = fmt.Errorf("start agent %s: %w", t.Peer, err)
		if ctx.Err() != nil {
			// Stopping: the turn is taken up again after the restart.
			return nil, err
		}
		return nil, &launchError{err: err}
	}
	rec, err := m.cfg.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: m.cfg.Workspace, ID: jam.New[jam.LeaseID](m.cfg.Minter),
		Holder: h, Pid: host.Pid(), At: m.cfg.Now()})
	if err != nil {
		_ = host.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	if _, err := m.cfg.Store.TemplateApplied(ctx, m.cfg.Workspace, t.ID, t.DesiredGeneration, m.cfg.Now()); err != nil && !errors.Is(err, jam.ErrConflict) {
		m.log.Warn("record effective configuration", "template", t.ID, "err", err)
	}
	l.host, l.record, l.config = host, rec, cfg
	m.log.Info("agent started", "peer", t.Peer, "holder", h, "lease", rec.ID, "generation", rec.Generation, "pid", host.Pid())
	return l, nil
}

// sessionOn makes sure the session has its conversation on the host:
// resumed from its provider thread when the process's manifest says it
// resumes in process, or at launch (the process was started on it), else
// a new one (recorded as the new provider thread).
func (m *Manager) sessionOn(ctx context.Context, l *lease, s store.Session, dir string) (harness.Thread, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if thread, ok := l.sessions[s.ID]; ok {
		return thread, nil
	}
	if s.ProviderThread != "" {
		err := fmt.Errorf("%w: the harness does not resume threads in a new process", jam.ErrNotImplemented)
		if r := l.host.Manifest().Resume; r == harness.ResumeInProcess || r == harness.ResumeAtLaunch {
			err = l.host.Resume(ctx, harness.Thread(s.ProviderThread), dir, m.tools(s, l.config)...)
		}
		if err == nil {
			l.sessions[s.ID] = harness.Thread(s.ProviderThread)
			return harness.Thread(s.ProviderThread), nil
		}
		m.log.Info("session not resumed; starting a new one", "session", s.ID, "err", err)
	}
	thread, err := l.host.Open(ctx, dir, m.tools(s, l.config)...)
	if err != nil {
		return "", err
	}
	if err := m.cfg.Store.SessionSetThread(ctx, m.cfg.Workspace, s.ID, string(thread), m.cfg.Now()); err != nil {
		return "", err
	}
	l.sessions[s.ID] = thread
	return thread, nil
}

// refuse ends a queued turn the session's host cannot run: it fails with
// reason, and cause's text as its detail, and settles nothing (its Band
// message stays queued for the agent). A turn cancelled meanwhile stays
// cancelled.
func (m *Manager) refuse(ctx context.Context, s store.Session, t store.Turn, reason string, cause error) error {
	m.log.Warn("turn refused", "session", s.ID, "turn", t.ID, "reason", reason, "err", cause)
	_, err := m.transition(ctx, s, store.TurnTransitionParams{ID: t.ID, From: jam.TurnQueued, To: jam.TurnFailed, Reason: reason,
		Detail: cause.Error(), At: m.cfg.Now()})
	if errors.Is(err, jam.ErrConflict) {
		if cur, gerr := m.cfg.Store.TurnGet(ctx, m.cfg.Workspace, t.ID); gerr == nil && cur.State != jam.TurnQueued {
			return nil
		}
	}
	return err
}

// dropHost forgets a host whose process exited and ends its lease.
func (m *Manager) dropHost(l *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host == nil {
		return
	}
	_ = m.cfg.Store.LeaseEnd(context.Background(), m.cfg.Workspace, l.record.ID, jam.ReasonProcessExited, m.cfg.Now())
	l.host, l.sessions = nil, map[jam.SessionID]harness.Thread{}
}

// endLease stops a host and ends its lease.
func (m *Manager) endLease(ctx context.Context, l *lease, reason string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host == nil {
		return nil
	}
	err := l.host.Stop(ctx)
	if lerr := m.cfg.Store.LeaseEnd(context.WithoutCancel(ctx), m.cfg.Workspace, l.record.ID, reason, m.cfg.Now()); lerr != nil && !errors.Is(lerr, jam.ErrConflict) {
		err = errors.Join(err, lerr)
	}
	l.host = nil
	return err
}

// tools are the MCP servers the session's threads are given under a host
// configuration: none without Config.Tools.
func (m *Manager) tools(s store.Session, cfg store.TemplateConfig) []harness.MCPServer {
	if m.cfg.Tools == nil {
		return nil
	}
	return m.cfg.Tools(s, cfg)
}

// hasTools says whether the session's thread on l was given jam's tools:
// its host's harness takes MCP servers and the session has some.
func (m *Manager) hasTools(l *lease, s store.Session) bool {
	return l.host.Manifest().MCPServers && len(m.tools(s, l.config)) > 0
}
