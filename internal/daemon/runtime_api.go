package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/session"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// wireRuntimeStatus renders a template's status. A template no process
// has run yet (effective generation 0) has nothing pending: its first
// process starts with the desired configuration, whatever changed since
// it was created.
func wireRuntimeStatus(t store.Template) *wire.AgentRuntimeStatus {
	pending := t.PendingChange
	if t.EffectiveGeneration == 0 {
		pending = ""
	}
	return &wire.AgentRuntimeStatus{Template: string(t.ID), Desired: wireRuntime(t.Desired), DesiredGeneration: t.DesiredGeneration,
		Effective: wireRuntime(t.Effective), EffectiveGeneration: t.EffectiveGeneration, PendingChange: pending}
}

// Sessions implements api.Runtime.
func (d *daemon) Sessions(ctx context.Context) ([]wire.Session, error) {
	ws := d.workspace.ID
	ss, err := d.store.SessionList(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Session, 0, len(ss))
	for _, s := range ss {
		w := wire.Session{ID: string(s.ID), Agent: s.Peer.String(), Room: string(s.Room), Template: string(s.TemplateID),
			Lifecycle: string(s.Lifecycle), Role: string(s.Role), ProviderThread: s.ProviderThread, Created: s.CreatedAt}
		if !s.Overrides.IsZero() {
			w.Overrides = &wire.SessionOverrides{Command: s.Overrides.Command, Repo: s.Overrides.Repo}
		}
		wt, err := d.store.WorktreeForSession(ctx, ws, s.ID)
		switch {
		case err == nil:
			w.Worktree, w.Branch, w.WorktreeState = wt.Path, wt.Branch, wt.State
		case !errors.Is(err, jam.ErrNotFound):
			return nil, err
		}
		turns, err := d.store.TurnList(ctx, ws, s.ID)
		if err != nil {
			return nil, err
		}
		if cur, ok := currentTurn(turns); ok {
			w.CurrentTurn, w.CurrentTurnState = string(cur.ID), string(cur.State)
		}
		out = append(out, w)
	}
	return out, nil
}

// Turns implements api.Runtime.
func (d *daemon) Turns(ctx context.Context, session string) ([]wire.Turn, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return nil, err
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return nil, err
	}
	ts, err := d.store.TurnList(ctx, d.workspace.ID, id)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Turn, 0, len(ts))
	for _, t := range ts {
		w, err := d.wireTurn(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// wireTurn is t as the API shows it, with its start and end from the
// journal.
func (d *daemon) wireTurn(ctx context.Context, t store.Turn) (wire.Turn, error) {
	w := wire.Turn{ID: string(t.ID), Seq: t.Seq, State: string(t.State), Reason: t.Reason, Detail: t.Detail, Message: string(t.SourceMessageID),
		Input: string(t.MessageID), Lease: string(t.LeaseID), LeaseGeneration: t.LeaseGeneration, Created: t.CreatedAt, Updated: t.UpdatedAt}
	if t.State == jam.TurnQueued {
		return w, nil
	}
	journal, err := d.store.TurnJournal(ctx, d.workspace.ID, t.ID)
	if err != nil {
		return wire.Turn{}, err
	}
	for _, e := range journal {
		if e.To == jam.TurnRunning && w.Started.IsZero() {
			w.Started = e.At
		}
		if e.To.Terminal() {
			w.Ended = e.At
		}
	}
	return w, nil
}

// Turn implements api.Runtime: one turn, with its session and its
// executions (none for a turn recorded before executions were).
func (d *daemon) Turn(ctx context.Context, turn string) (wire.Turn, error) {
	id, err := d.turnRef(ctx, turn)
	if err != nil {
		return wire.Turn{}, err
	}
	t, err := d.store.TurnGet(ctx, d.workspace.ID, id)
	if err != nil {
		return wire.Turn{}, err
	}
	w, err := d.wireTurn(ctx, t)
	if err != nil {
		return wire.Turn{}, err
	}
	w.Session = string(t.SessionID)
	execs, err := d.store.ExecutionList(ctx, d.workspace.ID, id)
	if err != nil {
		return wire.Turn{}, err
	}
	for _, e := range execs {
		w.Executions = append(w.Executions, wire.Execution{ID: string(e.ID), Lease: string(e.LeaseID), LeaseGeneration: e.LeaseGeneration, Pid: e.Pid,
			State: e.State, Outcome: string(e.Outcome), Reason: e.Reason, Started: e.StartedAt, Ended: e.EndedAt, Usage: wireExecutionUsage(e.Usage)})
		if e.State == store.ExecutionEnded {
			w.Usage = wireExecutionUsage(e.Usage)
		}
	}
	return w, nil
}

// SessionMessages implements api.Runtime. It reads the store only.
func (d *daemon) SessionMessages(ctx context.Context, session string) ([]wire.SessionMessage, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return nil, err
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return nil, err
	}
	ms, err := d.store.MessageList(ctx, d.workspace.ID, id)
	if err != nil {
		return nil, err
	}
	out := make([]wire.SessionMessage, 0, len(ms))
	for _, m := range ms {
		out = append(out, wireSessionMessage(m))
	}
	return out, nil
}

// SessionSend implements api.Runtime.
func (d *daemon) SessionSend(ctx context.Context, session string, r wire.SessionSendRequest) (wire.SessionSendResult, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return wire.SessionSendResult{}, err
	}
	routing := jam.RoutingQueue
	if r.Routing != "" {
		if routing, err = jam.ParseEnum("routing", r.Routing, jam.Routings); err != nil {
			return wire.SessionSendResult{}, err
		}
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return wire.SessionSendResult{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.SessionSendResult{}, err
	}
	sent, err := rt.Send(ctx, id, r.Text, routing)
	if err != nil {
		return wire.SessionSendResult{}, err
	}
	return wire.SessionSendResult{Message: wireSessionMessage(sent.Message), RoutingEffective: string(sent.Message.Routing), Turn: string(sent.Turn.ID)}, nil
}

func wireSessionMessage(m store.SessionMessage) wire.SessionMessage {
	w := wire.SessionMessage{ID: string(m.ID), Session: string(m.SessionID), Seq: m.Seq, Routing: string(m.Routing), Text: m.Text,
		Source: string(m.SourceMessageID), Turn: string(m.TurnID), Created: m.CreatedAt, Consumed: m.ConsumedAt}
	if m.Requested != m.Routing {
		w.Requested = string(m.Requested)
	}
	return w
}

// currentTurn is a session's active turn, else its oldest queued one.
func currentTurn(turns []store.Turn) (store.Turn, bool) {
	var queued *store.Turn
	for i := range turns {
		switch {
		case turns[i].State.Active():
			return turns[i], true
		case turns[i].State == jam.TurnQueued && queued == nil:
			queued = &turns[i]
		}
	}
	if queued != nil {
		return *queued, true
	}
	return store.Turn{}, false
}

// TurnOutput implements api.Runtime.
func (d *daemon) TurnOutput(ctx context.Context, turn string) (wire.TurnOutput, error) {
	id, err := d.turnRef(ctx, turn)
	if err != nil {
		return wire.TurnOutput{}, err
	}
	if _, err := d.store.TurnGet(ctx, d.workspace.ID, id); err != nil {
		return wire.TurnOutput{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.TurnOutput{}, err
	}
	out, ok, err := rt.Output(ctx, id)
	if err != nil {
		return wire.TurnOutput{}, err
	}
	return wire.TurnOutput{Turn: turn, Kept: ok, Batches: out.Batches, Updates: wireUpdates(out.Updates), Truncated: out.Truncated}, nil
}

// ownedRuntime is the session manager, once messaging runs.
func (d *daemon) ownedRuntime() (*session.Manager, error) {
	if d.msg == nil || d.msg.runtime == nil {
		return nil, fmt.Errorf("%w: owned runtimes are not running", jam.ErrUnavailable)
	}
	return d.msg.runtime, nil
}

// Worktrees implements api.Runtime.
func (d *daemon) Worktrees(ctx context.Context) ([]wire.Worktree, error) {
	ws := d.workspace.ID
	wts, err := d.store.WorktreeList(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Worktree, 0, len(wts))
	for _, wt := range wts {
		w, err := d.wireWorktree(ctx, wt)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// wireWorktree is the wire form of a worktree, with its session's agent
// and room and, when it is active, its count of uncommitted changes.
func (d *daemon) wireWorktree(ctx context.Context, wt store.Worktree) (wire.Worktree, error) {
	s, err := d.store.SessionGet(ctx, d.workspace.ID, wt.SessionID)
	if err != nil {
		return wire.Worktree{}, err
	}
	w := wire.Worktree{ID: string(wt.ID), Session: string(wt.SessionID), Agent: s.Peer.String(), Room: string(s.Room), Repo: wt.Repo,
		Path: wt.Path, Branch: wt.Branch, State: wt.State, Updated: wt.UpdatedAt}
	if wt.State == store.WorktreeActive {
		changes, err := worktree.Changes(ctx, wt)
		if err != nil {
			return wire.Worktree{}, fmt.Errorf("worktree of %s: %w", wt.SessionID, err)
		}
		w.Changes = len(changes)
	}
	return w, nil
}

// WorktreeArchive implements api.Runtime.
func (d *daemon) WorktreeArchive(ctx context.Context, ref string) (wire.Worktree, error) {
	return d.worktreeOp(ctx, opWorktreeArchive, ref, func(rt *session.Manager, id jam.SessionID) (store.Worktree, error) {
		return rt.ArchiveWorktree(ctx, id)
	})
}

// WorktreeRemove implements api.Runtime.
func (d *daemon) WorktreeRemove(ctx context.Context, ref string, r wire.WorktreeRemoveRequest) (wire.Worktree, error) {
	return d.worktreeOp(ctx, opWorktreeRemove, ref, func(rt *session.Manager, id jam.SessionID) (store.Worktree, error) {
		return rt.RemoveWorktree(ctx, id, r.Force)
	})
}

// WorktreeRestore implements api.Runtime.
func (d *daemon) WorktreeRestore(ctx context.Context, ref string, r wire.WorktreeRestoreRequest) (wire.Worktree, error) {
	return d.worktreeOp(ctx, opWorktreeRestore, ref, func(rt *session.Manager, id jam.SessionID) (store.Worktree, error) {
		return rt.RestoreWorktree(ctx, id, r.Checkpoint)
	})
}

// worktreeOp runs op on the session ref names, recorded as an operation
// of kind once the session is known.
func (d *daemon) worktreeOp(ctx context.Context, kind, ref string, op func(*session.Manager, jam.SessionID) (store.Worktree, error)) (wire.Worktree, error) {
	id, err := d.sessionRef(ctx, ref)
	if err != nil {
		return wire.Worktree{}, err
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return wire.Worktree{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.Worktree{}, err
	}
	return recorded(d, ctx, kind, string(id), func() (wire.Worktree, error) {
		wt, err := op(rt, id)
		if err != nil {
			return wire.Worktree{}, err
		}
		return d.wireWorktree(ctx, wt)
	}, func(w wire.Worktree) map[string]any {
		return map[string]any{"worktree": w.ID, "state": w.State, "branch": w.Branch}
	})
}

// AgentConfig implements api.Runtime: it changes the desired configuration
// (the desired generation goes up); the agent's next process runs it.
func (d *daemon) AgentConfig(ctx context.Context, agent string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error) {
	p, err := d.peer(ctx, agent)
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	t, err := d.store.TemplateForPeer(ctx, d.workspace.ID, p.Key)
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	c, change, err := d.msg.conf().Configure(ctx, t, r.Set)
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	t, err = d.store.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: d.workspace.ID, ID: t.ID, Desired: c,
		Change: change, At: time.Now()})
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	d.retryUnserved(ctx, p.Key)
	return *wireRuntimeStatus(t), nil
}

// CancelTurn implements api.Runtime.
func (d *daemon) CancelTurn(ctx context.Context, turn string) error {
	id, err := d.turnRef(ctx, turn)
	if err != nil {
		return err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return err
	}
	return rt.Cancel(ctx, id)
}
