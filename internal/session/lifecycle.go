package session

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// Reasons a lease ends, or a turn is cancelled, through the lifecycle
// operations.
const (
	// ReasonConfigChanged ends a host whose configuration is no longer
	// the template's desired one, at a turn boundary.
	ReasonConfigChanged = "config_changed"
	// ReasonRestarted ends a host that jam agent restart asked to replace.
	ReasonRestarted = "restarted"
	// ReasonAgentRemoved ends the hosts of an agent that is removed.
	ReasonAgentRemoved = "agent_removed"
	// ReasonSessionClosed cancels the queued turns of a session that is
	// closed.
	ReasonSessionClosed = "session_closed"
)

// hostUses tracks, per holder, the turns between their boundary (before
// they obtain their host) and their end, and the replacements asked for a
// host that was busy. It is what makes a host's replacement wait for a
// turn boundary: a host is only replaced while no turn uses it.
type hostUses struct {
	// uses counts the turns of each holder from enterHost to their leave.
	uses map[string]int // guarded by Manager.mu
	// renew names why each holder's host is to be replaced as soon as
	// no turn uses it.
	renew map[string]string // guarded by Manager.mu
	// renewing holds, while a holder's host is being replaced, a channel
	// closed when that is done; turns of the holder wait for it.
	renewing map[string]chan struct{} // guarded by Manager.mu
	// closing holds the sessions CloseSession is closing: their workers
	// take no further turn up.
	closing map[jam.SessionID]bool // guarded by Manager.mu
}

func (u *hostUses) init() {
	if u.uses == nil {
		u.uses, u.renew, u.renewing = map[string]int{}, map[string]string{}, map[string]chan struct{}{}
		u.closing = map[jam.SessionID]bool{}
	}
}

// enterHost is a turn's boundary, before it obtains its host: when no
// other turn uses the holder's live host, the host is replaced (its lease
// ends) if a restart was asked for it or the configuration it runs is no
// longer the one the session's turn would start it with (a change of the
// template's desired configuration), so the host hostFor then starts runs
// the desired configuration and it becomes effective; a host that already
// runs it makes an outstanding change effective as it is. A host another
// turn uses is kept (that turn's end replaces it if a restart is pending).
// leave ends the turn's use.
func (m *Manager) enterHost(ctx context.Context, t store.Template, s store.Session, dir string) (leave func(), err error) {
	mf := m.manifest(t)
	h := holder(t, s, mf)
	for {
		m.mu.Lock()
		m.life.init()
		ch, busy := m.life.renewing[h]
		if !busy {
			break
		}
		m.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	m.life.uses[h]++
	idle := m.life.uses[h] == 1
	reason := m.life.renew[h]
	var done chan struct{}
	if idle {
		done = make(chan struct{})
		m.life.renewing[h] = done
	}
	l := m.hosts[h]
	m.mu.Unlock()
	leave = func() { m.leaveHost(h) }
	if !idle {
		return leave, nil
	}
	pending := reason
	defer func() { m.renewed(h, done, pending) }()
	cfg, live := liveConfig(l)
	if !live {
		return leave, nil
	}
	if reason == "" && !sameLaunch(cfg, launchConfig(t, s, mf, dir)) {
		reason = ReasonConfigChanged
	}
	if reason != "" {
		m.log.Info("replacing the agent's process at a turn boundary", "peer", t.Peer, "holder", h, "reason", reason)
		if err := m.replaceHost(context.WithoutCancel(ctx), l, reason); err != nil {
			m.log.Warn("stop the agent's process", "holder", h, "err", err)
		}
		return leave, nil
	}
	if t.Outstanding() {
		// The change left the process's configuration as it is.
		if _, err := m.cfg.Store.TemplateApplied(ctx, m.cfg.Workspace, t.ID, t.DesiredGeneration, m.cfg.Now()); err != nil && !errors.Is(err, jam.ErrConflict) {
			m.log.Warn("record effective configuration", "template", t.ID, "err", err)
		}
	}
	return leave, nil
}

// renewed ends a replacement of h's host begun by enterHost, leaveHost or
// replaceHosts; consumed is the pending replacement it carried out ("" for
// none), which is cleared unless another was asked for meanwhile.
func (m *Manager) renewed(h string, done chan struct{}, consumed string) {
	m.mu.Lock()
	if consumed != "" && m.life.renew[h] == consumed {
		delete(m.life.renew, h)
	}
	delete(m.life.renewing, h)
	m.mu.Unlock()
	close(done)
}

// leaveHost ends a turn's use of h's host; the last turn to leave a host
// whose replacement is pending replaces it.
func (m *Manager) leaveHost(h string) {
	m.mu.Lock()
	m.life.uses[h]--
	if m.life.uses[h] > 0 {
		m.mu.Unlock()
		return
	}
	delete(m.life.uses, h)
	reason := m.life.renew[h]
	if reason == "" || m.stopped {
		m.mu.Unlock()
		return
	}
	done := make(chan struct{})
	m.life.renewing[h] = done
	l := m.hosts[h]
	m.mu.Unlock()
	defer m.renewed(h, done, reason)
	if l != nil {
		if err := m.replaceHost(context.Background(), l, reason); err != nil {
			m.log.Warn("stop the agent's process", "holder", h, "err", err)
		}
	}
}

// sameLaunch reports whether a process started with a runs what one
// started with b would: the thread a process resumed at its launch is
// not part of its configuration (the session's thread moves on as it
// runs).
func sameLaunch(a, b store.TemplateConfig) bool {
	a.Resume, b.Resume = "", ""
	a.CommitTurns, b.CommitTurns = false, false
	return reflect.DeepEqual(a, b)
}

// replaceHost stops l's process and ends its lease for reason; the
// conversations opened on it are forgotten, so the next process opens (or
// resumes) them anew.
func (m *Manager) replaceHost(ctx context.Context, l *lease, reason string) error {
	err := m.endLease(ctx, l, reason)
	l.mu.Lock()
	if l.host == nil {
		l.sessions = map[jam.SessionID]harness.Thread{}
	}
	l.mu.Unlock()
	return err
}

// liveConfig is the configuration l's process runs, if it runs.
func liveConfig(l *lease) (store.TemplateConfig, bool) {
	if l == nil {
		return store.TemplateConfig{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.host == nil {
		return store.TemplateConfig{}, false
	}
	select {
	case <-l.host.Exited():
		return store.TemplateConfig{}, false
	default:
	}
	return l.config, true
}

// Restarted says what Restart did.
type Restarted struct {
	// Stopped counts the processes stopped at once (no turn used them).
	Stopped int
	// Pending counts the processes a running turn uses: each is stopped
	// when its last running turn ends.
	Pending int
}

// Restart replaces the live processes of a template (its shared process,
// or its sessions' dedicated ones) at the next turn boundary: a process no
// turn uses is stopped at once (its lease ends, reason restarted), one a
// turn uses when that turn ends. The next turn starts a new process, on a
// lease of the next generation, with the desired configuration.
func (m *Manager) Restart(ctx context.Context, tmpl jam.TemplateID) (Restarted, error) {
	return m.replaceHosts(ctx, tmpl, ReasonRestarted, false)
}

// StopAgent stops every live process of a template now (their leases end,
// reason agent_removed); turns still running on them end as their process
// does.
func (m *Manager) StopAgent(ctx context.Context, tmpl jam.TemplateID) error {
	_, err := m.replaceHosts(ctx, tmpl, ReasonAgentRemoved, true)
	return err
}

func (m *Manager) replaceHosts(ctx context.Context, tmpl jam.TemplateID, reason string, now bool) (Restarted, error) {
	var out Restarted
	// Which hosts are the template's is read with each host's own lock,
	// not under m.mu (a leaf).
	m.mu.Lock()
	all := make(map[string]*lease, len(m.hosts))
	for h, l := range m.hosts {
		all[h] = l
	}
	m.mu.Unlock()
	mine := map[string]*lease{}
	for h, l := range all {
		if cfg, live := liveConfig(l); live && cfg.Template == tmpl {
			mine[h] = l
		}
	}
	type target struct {
		h    string
		l    *lease
		done chan struct{}
	}
	var stop []target
	m.mu.Lock()
	m.life.init()
	for h, l := range mine {
		if _, ok := m.life.renewing[h]; ok || (m.life.uses[h] > 0 && !now) {
			m.life.renew[h] = reason
			out.Pending++
			continue
		}
		done := make(chan struct{})
		m.life.renewing[h] = done
		stop = append(stop, target{h, l, done})
	}
	m.mu.Unlock()
	var errs []error
	for _, s := range stop {
		if err := m.replaceHost(context.WithoutCancel(ctx), s.l, reason); err != nil {
			errs = append(errs, err)
		}
		m.renewed(s.h, s.done, reason)
		out.Stopped++
	}
	m.log.Info("agent processes replaced", "template", tmpl, "reason", reason, "stopped", out.Stopped, "pending", out.Pending)
	return out, errors.Join(errs...)
}

// Retry runs a turn that failed, was cancelled or was interrupted again:
// a new queued turn for the same message, which was never settled and so
// keeps its place in the room's queue. A turn that succeeded, is not over,
// whose message is settled (or gone), or whose message another turn
// already answers or waits to, is jam.ErrConflict; so is a turn of a
// session that is closed.
func (m *Manager) Retry(ctx context.Context, id jam.TurnID) (store.Turn, error) {
	t, err := m.cfg.Store.TurnGet(ctx, m.cfg.Workspace, id)
	if err != nil {
		return store.Turn{}, err
	}
	switch t.State {
	case jam.TurnFailed, jam.TurnCancelled, jam.TurnInterrupted:
	default:
		return store.Turn{}, fmt.Errorf("%w: turn %s is %s; only a failed, cancelled or interrupted turn is retried", jam.ErrConflict, id, t.State)
	}
	if t.SourceMessageID == "" && t.MessageID == "" {
		return store.Turn{}, fmt.Errorf("%w: turn %s has no message to answer", jam.ErrConflict, id)
	}
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, t.SessionID)
	if err != nil {
		return store.Turn{}, err
	}
	if s.Lifecycle == jam.SessionClosed {
		return store.Turn{}, fmt.Errorf("%w: session %s of turn %s is closed", jam.ErrConflict, s.ID, id)
	}
	turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, s.ID)
	if err != nil {
		return store.Turn{}, err
	}
	for _, o := range turns {
		if o.ID == t.ID || o.MessageID != t.MessageID || o.SourceMessageID != t.SourceMessageID {
			continue
		}
		if !o.State.Terminal() {
			return store.Turn{}, fmt.Errorf("%w: turn %s (%s) already answers the message of turn %s", jam.ErrConflict, o.ID, o.State, id)
		}
		if o.State == jam.TurnSucceeded {
			return store.Turn{}, fmt.Errorf("%w: turn %s already answered the message of turn %s", jam.ErrConflict, o.ID, id)
		}
	}
	if t.SourceMessageID != "" {
		if _, err := m.cfg.Settler.Message(ctx, m.cfg.Workspace, s.Peer, t.SourceMessageID); err != nil {
			if errors.Is(err, jam.ErrNotFound) {
				return store.Turn{}, fmt.Errorf("%w: the message %s of turn %s is settled or gone", jam.ErrConflict, t.SourceMessageID, id)
			}
			return store.Turn{}, err
		}
	}
	if err := m.reopen(ctx, s); err != nil {
		return store.Turn{}, err
	}
	nt, err := m.enqueue(ctx, s, t.MessageID, t.SourceMessageID)
	if err != nil {
		return store.Turn{}, err
	}
	m.log.Info("turn retried", "turn", id, "as", nt.ID, "session", s.ID)
	m.wakeSession(s.ID)
	return nt, nil
}

// reopen resumes an archived session: its worktree is checked out again
// and the session is open; an open one is left as it is, and a closed
// one is jam.ErrConflict.
func (m *Manager) reopen(ctx context.Context, s store.Session) error {
	switch s.Lifecycle {
	case jam.SessionOpen, "":
		return nil
	case jam.SessionClosed:
		return fmt.Errorf("%w: session %s is closed", jam.ErrConflict, s.ID)
	}
	wt, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, s.ID)
	if err != nil && !errors.Is(err, jam.ErrNotFound) {
		return err
	}
	if err == nil && wt.State != store.WorktreeActive {
		if _, err := m.RestoreWorktree(ctx, s.ID, 0); err != nil {
			return fmt.Errorf("resume session %s: %w", s.ID, err)
		}
	}
	if err := m.cfg.Store.SessionSetLifecycle(ctx, store.SessionSetLifecycleParams{WorkspaceID: m.cfg.Workspace, ID: s.ID,
		From: jam.SessionArchived, To: jam.SessionOpen, At: m.cfg.Now()}); err != nil && !errors.Is(err, jam.ErrConflict) {
		return err
	}
	m.log.Info("session resumed", "session", s.ID)
	return nil
}

// isClosing reports whether CloseSession is closing the session.
func (m *Manager) isClosing(id jam.SessionID) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.life.closing[id]
}

// resumeFor resumes the archived session a message is delivered or sent
// to (reopen).
func (m *Manager) resumeFor(ctx context.Context, id jam.SessionID) error {
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, id)
	if err != nil {
		return err
	}
	return m.reopen(ctx, s)
}

// ArchiveSession archives a session: its git worktree's changes are
// committed to its branch and its directory removed (the branch stays; a
// plain workspace directory, without a repository, is kept as it is), and
// the session is archived. Its history stays, and a later message resumes it
// (its worktree checked out again). A session whose turn runs is
// jam.ErrConflict, as is one that is not open.
func (m *Manager) ArchiveSession(ctx context.Context, id jam.SessionID) (store.Session, error) {
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, id)
	if err != nil {
		return store.Session{}, err
	}
	if s.Lifecycle != jam.SessionOpen {
		return store.Session{}, fmt.Errorf("%w: session %s is %s", jam.ErrConflict, id, s.Lifecycle)
	}
	wt, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, id)
	if err != nil && !errors.Is(err, jam.ErrNotFound) {
		return store.Session{}, err
	}
	if err == nil && wt.State == store.WorktreeActive && wt.Repo != "" {
		if _, err := m.ArchiveWorktree(ctx, id); err != nil {
			return store.Session{}, err
		}
	}
	if err := m.cfg.Store.SessionSetLifecycle(ctx, store.SessionSetLifecycleParams{WorkspaceID: m.cfg.Workspace, ID: id,
		From: jam.SessionOpen, To: jam.SessionArchived, At: m.cfg.Now()}); err != nil {
		return store.Session{}, err
	}
	m.log.Info("session archived", "session", id)
	return m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, id)
}

// CloseSession ends a session for good: its queued turns are cancelled
// (reason session_closed; their messages stay unsettled on Band), a
// running turn is cancelled and waited for, its git worktree is archived
// (the branch keeps its work; a plain directory is kept) and the session is closed, kept as history. A
// closed session takes no further turns. Closing a closed session is
// jam.ErrConflict.
func (m *Manager) CloseSession(ctx context.Context, id jam.SessionID) (store.Session, error) {
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, id)
	if err != nil {
		return store.Session{}, err
	}
	if s.Lifecycle == jam.SessionClosed {
		return store.Session{}, fmt.Errorf("%w: session %s is closed", jam.ErrConflict, id)
	}
	// The session is held as by a worktree operation, so no worker takes
	// a turn of it up meanwhile; a running turn is cancelled first.
	m.mu.Lock()
	m.life.init()
	m.life.closing[id] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.life.closing, id)
		m.mu.Unlock()
	}()
	for !m.hold(id, holdWorktree) {
		if err := m.cancelActive(ctx, id); err != nil {
			return store.Session{}, err
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return store.Session{}, ctx.Err()
		case <-t.C:
		}
	}
	defer m.release(id)
	turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, id)
	if err != nil {
		return store.Session{}, err
	}
	for _, t := range turns {
		if t.State != jam.TurnQueued {
			continue
		}
		nt, err := m.cfg.Store.TurnTransition(ctx, store.TurnTransitionParams{WorkspaceID: m.cfg.Workspace, ID: t.ID, From: jam.TurnQueued, To: jam.TurnCancelled,
			Reason: ReasonSessionClosed, At: m.cfg.Now()})
		if err != nil {
			return store.Session{}, err
		}
		m.cfg.Observer.TurnMoved(TurnEvent{Turn: nt, From: jam.TurnQueued, Peer: s.Peer, Room: s.Room})
		m.cfg.Metrics.TurnEnded(string(nt.State), nt.UpdatedAt.Sub(nt.CreatedAt))
	}
	wt, err := m.cfg.Store.WorktreeForSession(ctx, m.cfg.Workspace, id)
	if err != nil && !errors.Is(err, jam.ErrNotFound) {
		return store.Session{}, err
	}
	if err == nil && wt.State == store.WorktreeActive && wt.Repo != "" {
		if err := worktree.Archive(ctx, wt); err != nil {
			return store.Session{}, fmt.Errorf("worktree of %s: %w", id, err)
		}
		if _, err := m.cfg.Store.WorktreeSetState(context.WithoutCancel(ctx), store.WorktreeSetStateParams{WorkspaceID: m.cfg.Workspace, ID: wt.ID,
			From: store.WorktreeActive, To: store.WorktreeArchived, At: m.cfg.Now()}); err != nil {
			return store.Session{}, err
		}
	}
	if err := m.cfg.Store.SessionSetLifecycle(ctx, store.SessionSetLifecycleParams{WorkspaceID: m.cfg.Workspace, ID: id,
		From: s.Lifecycle, To: jam.SessionClosed, At: m.cfg.Now()}); err != nil {
		return store.Session{}, err
	}
	// Its provider thread is of no further use on the host.
	m.mu.Lock()
	hosts := make([]*lease, 0, len(m.hosts))
	for _, l := range m.hosts {
		hosts = append(hosts, l)
	}
	m.mu.Unlock()
	for _, l := range hosts {
		l.mu.Lock()
		delete(l.sessions, id)
		l.mu.Unlock()
	}
	m.log.Info("session closed", "session", id)
	return m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, id)
}

// cancelActive asks the session's active turn, if any, to stop.
func (m *Manager) cancelActive(ctx context.Context, id jam.SessionID) error {
	turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, id)
	if err != nil {
		return err
	}
	for _, t := range turns {
		if !t.State.Active() {
			continue
		}
		m.mu.Lock()
		cancel, ok := m.active[t.ID]
		m.mu.Unlock()
		if ok {
			cancel(errCancelledByUser)
		}
	}
	return nil
}
