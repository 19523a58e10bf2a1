package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/pricing"
	"github.com/jamhq/jam/internal/store"
)

// noReply is the answer with which an agent says a message needs no reply:
// the message is acknowledged instead.
const noReply = "NO_REPLY"

// runTurn runs one queued turn to its end.
func (m *Manager) runTurn(ctx context.Context, s store.Session, wt store.Worktree, t store.Turn) error {
	// Cancel reaches the turn through its context from before it leaves
	// queued: a cancel racing the worker is never lost.
	turnCtx, cancelTurn := context.WithCancelCause(ctx)
	defer cancelTurn(nil)
	m.mu.Lock()
	m.active[t.ID] = cancelTurn
	m.mu.Unlock()
	// Once the turn's outcome is decided, a cancel is too late.
	decided := func() {
		m.mu.Lock()
		delete(m.active, t.ID)
		m.mu.Unlock()
	}
	defer decided()
	byUser := func() bool { return errors.Is(context.Cause(turnCtx), errCancelledByUser) }

	tmpl, err := m.cfg.Store.TemplateGet(ctx, m.cfg.Workspace, s.TemplateID)
	if err != nil {
		return err
	}
	// The turn boundary: a host whose configuration is outstanding, or
	// that is to be restarted, is replaced before the turn obtains it.
	leave, err := m.enterHost(ctx, tmpl, s, wt.Path)
	if err != nil {
		return err
	}
	defer leave()
	l, err := m.hostFor(ctx, tmpl, s, wt.Path)
	if errors.Is(err, jam.ErrIncompatible) {
		return m.refuse(ctx, s, t, jam.ReasonPlacementIncompatible, err)
	}
	if _, ok := errors.AsType[*launchError](err); ok {
		return m.refuse(ctx, s, t, jam.ReasonHarnessError, err)
	}
	if err != nil {
		return err
	}
	// used is what the turn reported using so far: the last usage it
	// streamed, then its Outcome's.
	used := &turnUsage{model: tmpl.Effective.Model}
	// moveWhy moves the turn; a move to a terminal state carries cause's
	// text (if any) as the turn's detail, and the turn's usage.
	moveWhy := func(from, to jam.TurnState, reason string, cause error) error {
		p := store.TurnTransitionParams{ID: t.ID, From: from, To: to,
			Reason: reason, LeaseID: l.record.ID, LeaseGeneration: l.record.Generation, At: m.cfg.Now()}
		if to.Terminal() {
			p.Usage = m.settleUsage(used)
		}
		if cause != nil {
			p.Detail = cause.Error()
		}
		if from == jam.TurnQueued && to == jam.TurnPreparing {
			// The attempt on this lease starts with the move.
			p.Execution = jam.New[jam.ExecutionID](m.cfg.Minter)
		}
		var err error
		t, err = m.transition(ctx, s, p)
		return err
	}
	move := func(from, to jam.TurnState, reason string) error { return moveWhy(from, to, reason, nil) }
	cancelled := func(from jam.TurnState) error {
		if err := move(from, jam.TurnCancelling, jam.ReasonCancelledByUser); err != nil {
			return err
		}
		return move(jam.TurnCancelling, jam.TurnCancelled, jam.ReasonCancelledByUser)
	}
	if err := move(jam.TurnQueued, jam.TurnPreparing, ""); err != nil {
		if cur, gerr := m.cfg.Store.TurnGet(ctx, m.cfg.Workspace, t.ID); errors.Is(err, jam.ErrConflict) && gerr == nil && cur.State != jam.TurnQueued {
			return nil // cancelled while queued, before this worker took it
		}
		return err
	}
	thread, err := m.sessionOn(ctx, l, s, wt.Path)
	if err != nil {
		return m.endTurn(ctx, l, s, t, jam.ReasonHarnessError, err, nil)
	}
	// A Band message's text comes from the engine (it is sealed there); a
	// message sent to the session directly carries its own.
	band := t.SourceMessageID != ""
	var text string
	fromAgent := false
	if band {
		msg, err := m.cfg.Settler.Message(ctx, m.cfg.Workspace, s.Peer, t.SourceMessageID)
		if err != nil {
			// The message was settled or retired meanwhile: nothing to answer.
			return moveWhy(jam.TurnPreparing, jam.TurnFailed, "message_gone", err)
		}
		if n, over := m.hop(s.Room, msg.FromAgent()); over {
			decided()
			return m.hopLimited(ctx, s, t, msg, n, func(reason string, cause error) error {
				return moveWhy(jam.TurnPreparing, jam.TurnFailed, reason, cause)
			})
		}
		fromAgent = msg.FromAgent()
		text = prompt(msg, m.hasTools(l, s))
	} else {
		msg, err := m.cfg.Store.MessageGet(ctx, m.cfg.Workspace, t.MessageID)
		if err != nil {
			return moveWhy(jam.TurnPreparing, jam.TurnFailed, "message_gone", err)
		}
		text = msg.Text
	}
	notes, consumed, err := m.turnNotes(ctx, t)
	if err != nil {
		return err
	}
	if byUser() {
		decided()
		return cancelled(jam.TurnPreparing)
	}
	// The worktree as the turn finds it, before the agent sees the prompt.
	res, err := m.startResults(ctx, wt, t)
	if err != nil {
		m.log.Warn("turn start checkpoint not taken", "turn", t.ID, "session", s.ID, "err", err)
		return moveWhy(jam.TurnPreparing, jam.TurnFailed, ReasonCheckpointFailed, err)
	}
	// The notes the prompt carries are consumed by this turn in the
	// transaction that moves it to running.
	t, err = m.transition(ctx, s, store.TurnTransitionParams{ID: t.ID, From: jam.TurnPreparing, To: jam.TurnRunning,
		LeaseID: l.record.ID, LeaseGeneration: l.record.Generation, At: m.cfg.Now(), ConsumeNotes: consumed})
	if err != nil {
		return err
	}
	endWork := func() {}
	if band {
		endWork = m.cfg.Settler.Working(m.cfg.Workspace, s.Peer, s.Room)
	}
	// The turn's dispositions are staged from here until its answer is
	// in: a tool call after that is refused.
	st := &staging{turn: t, peer: s.Peer, room: s.Room, source: t.SourceMessageID, tools: m.hasTools(l, s), wt: wt, start: res, thread: thread}
	running := t
	batches := 0 // only the batcher's goroutine touches it
	out := newBatcher(m.cfg.BatchInterval, m.cfg.BatchBytes, func(batch []harness.Update) {
		batches++
		m.storeOutput(ctx, running, batches, batch)
		m.keepOutput(running.ID, batches, batch)
		m.cfg.Observer.TurnOutput(OutputEvent{Turn: running, Peer: s.Peer, Room: s.Room, Batch: batches, Updates: batch})
	})
	st.out = out
	m.beginStaging(st)
	ans, perr := l.host.Prompt(turnCtx, thread, harness.Input{Text: withNotes(notes, text)}, func(u harness.Update) {
		if u.Kind == harness.UpdateUsage && u.Usage != nil {
			used.set(*u.Usage, "")
		}
		out.add(u)
	})
	if perr == nil && (!ans.Usage.IsZero() || ans.Model != "") {
		// The outcome's usage is the turn's whole; an outcome without any
		// leaves the last streamed.
		used.set(ans.Usage, ans.Model)
	}
	staged, settledStaged := m.endStaging(st)
	// The output is out before the turn's end is recorded.
	out.close()
	decided()
	endWork()
	// With the answer in hand, the bookkeeping finishes even when the
	// daemon is stopping: Stop waits for it.
	stopping := ctx.Err() != nil && !byUser()
	ctx = context.WithoutCancel(ctx)
	// What the turn changed is recorded before its answer settles.
	origin := store.ChangeSetTurn
	if perr != nil || ans.StopReason == harness.StopCancelled || ans.StopReason == harness.StopFailed {
		origin = store.ChangeSetSalvage
	}
	m.endResults(ctx, wt, t, res, origin, tmpl.Desired.CommitTurns)
	if perr != nil {
		return m.endTurn(ctx, l, s, t, jam.ReasonHarnessError, perr, m.settleUsage(used))
	}
	if ans.StopReason == harness.StopCancelled && stopping {
		// Cut short by the daemon's stop, not by a person: the message is
		// answered by the next turn, after the restart.
		return m.interruptWhy(ctx, s, t, jam.ReasonDaemonRestarted, nil, m.settleUsage(used))
	}
	if ans.StopReason == harness.StopCancelled {
		return cancelled(jam.TurnRunning)
	}
	if ans.StopReason == harness.StopFailed {
		return m.endTurn(ctx, l, s, t, jam.ReasonHarnessError, fmt.Errorf("the agent reports the turn failed (%s)", ans.Reason()), m.settleUsage(used))
	}
	// Only now, with the answer in hand and the lease still ours, settle.
	if _, err := m.cfg.Store.LeaseLive(ctx, m.cfg.Workspace, l.record.Holder); err != nil {
		return err
	}
	// What the turn staged is committed in order; then its message
	// settles: by a staged reply or no-reply, else by the final text
	// (NO_REPLY acknowledges), except that a message from an agent to a
	// thread with jam's tools needs an explicit disposition.
	answer := strings.TrimSpace(ans.Text)
	var final *Disposition
	notice := t.SourceMessageID.IsNotice()
	switch {
	case !band || settledStaged:
	case notice:
		// A local notice cannot be replied to: whatever the agent says to
		// it stays in the turn's output, and the notice is acknowledged.
		final = &Disposition{Kind: DispositionNoReply, Reason: "a notice from jam"}
	case answer == noReply:
		final = &Disposition{Kind: DispositionNoReply, Reason: "NO_REPLY"}
	case answer != "" && !(fromAgent && st.tools):
		final = &Disposition{Kind: DispositionReply, Text: answer}
	}
	if final != nil {
		staged = append(staged, *final)
	}
	var serr error
	if final != nil && final.Kind == DispositionReply && len(staged) == 1 {
		// The compatibility answer alone: the engine also keeps the count
		// of what the harness dropped of it.
		_, serr = m.cfg.Settler.Reply(ctx, engine.ReplyParams{WorkspaceID: m.cfg.Workspace, Peer: s.Peer, MessageID: t.SourceMessageID, Text: answer, Omitted: ans.Omitted, Turn: t.ID})
	} else {
		serr = m.commitDispositions(ctx, st, staged)
	}
	if serr != nil {
		// The message stays queued: it is answered by a later turn.
		m.log.Warn("turn answer not settled", "turn", t.ID, "err", serr)
		if err := moveWhy(jam.TurnRunning, jam.TurnFailed, jam.ReasonSettlementFailed, serr); err != nil {
			return err
		}
		if !band {
			return nil
		}
		_, err := m.enqueue(ctx, s, t.MessageID, t.SourceMessageID)
		return err
	}
	if band && !settledStaged && final == nil {
		why := "the agent answered nothing: no room_reply, no room_no_reply, no final text"
		if answer != "" {
			why = "the message came from an agent, which needs room_reply or room_no_reply; the final text was not posted"
		}
		return moveWhy(jam.TurnRunning, jam.TurnFailed, jam.ReasonNoDisposition, errors.New(why))
	}
	return move(jam.TurnRunning, jam.TurnSucceeded, ans.Reason())
}

// prompt is the text a turn gives the agent for a message.
func prompt(msg engine.InboxItem, tools bool) string {
	from := msg.SenderName
	if from == "" {
		from = string(msg.SenderID)
	}
	if msg.MessageID.IsNotice() {
		p := "jam tells you (a notice: nobody reads a reply to it; to tell participants something, use room_send):\n" + msg.Content
		if !tools {
			p = "jam tells you (a notice, not a message in the room):\n" + msg.Content
		}
		return p
	}
	if msg.FromAgent() {
		from += " (an agent)"
	}
	p := fmt.Sprintf("%s wrote in the room:\n%s", from, msg.Content)
	if tools {
		p += "\n\n[Answer in the room with jam's room_reply tool, or room_no_reply when no answer is needed.]"
	}
	return p
}

// endTurn ends an active turn that failed on the host's side, with
// cause's text as its detail and u as what it used. If the process died,
// the turn is interrupted, the lease ends, and the message is queued again
// for the next turn (which gets a new lease); otherwise the turn fails and
// settles nothing.
func (m *Manager) endTurn(ctx context.Context, l *lease, s store.Session, t store.Turn, reason string, cause error, u *store.ExecutionUsage) error {
	select {
	case <-l.host.Exited():
		m.dropHost(l)
		if err := m.interruptWhy(ctx, s, t, jam.ReasonProcessExited, cause, u); err != nil {
			return err
		}
		return nil
	default:
	}
	m.log.Warn("turn failed", "turn", t.ID, "err", cause)
	_, err := m.transition(ctx, s, store.TurnTransitionParams{ID: t.ID, From: t.State, To: jam.TurnFailed,
		Reason: reason, Detail: cause.Error(), LeaseID: t.LeaseID, LeaseGeneration: t.LeaseGeneration, At: m.cfg.Now(), Usage: u})
	return err
}

// interrupt ends an active turn whose process is gone, ends its lease if
// still live, and queues its message again.
func (m *Manager) interrupt(ctx context.Context, s store.Session, t store.Turn, reason string) error {
	return m.interruptWhy(ctx, s, t, reason, nil, nil)
}

// interruptWhy is interrupt with cause's text as the turn's detail and u
// as what it used (nil: nothing known).
func (m *Manager) interruptWhy(ctx context.Context, s store.Session, t store.Turn, reason string, cause error, u *store.ExecutionUsage) error {
	p := store.TurnTransitionParams{ID: t.ID, From: t.State, To: jam.TurnInterrupted,
		Reason: reason, LeaseID: t.LeaseID, LeaseGeneration: t.LeaseGeneration, At: m.cfg.Now(), Usage: u}
	if cause != nil {
		p.Detail = cause.Error()
	}
	_, err := m.transition(ctx, s, p)
	if err != nil {
		return fmt.Errorf("interrupt turn %s: %w", t.ID, err)
	}
	if t.LeaseID != "" {
		if err := m.cfg.Store.LeaseEnd(ctx, m.cfg.Workspace, t.LeaseID, reason, m.cfg.Now()); err != nil && !errors.Is(err, jam.ErrConflict) {
			return err
		}
	}
	if t.SourceMessageID != "" || t.MessageID != "" {
		if _, err := m.enqueue(ctx, s, t.MessageID, t.SourceMessageID); err != nil {
			return err
		}
	}
	return nil
}

// markFailed shows in the room a Band message its turn ended without
// answering: a turn that failed (the agent did not start, placement was
// refused, the harness failed) or was cancelled marks the message failed
// on Band with the turn's reason and detail. The message stays queued and
// is answered by a later turn. A turn whose message is gone, or whose
// answer was not settled (it is queued again at once), or that the hop
// limit stopped (its message is acknowledged), marks nothing.
func (m *Manager) markFailed(ctx context.Context, s store.Session, t store.Turn) {
	if t.SourceMessageID == "" || (t.State != jam.TurnFailed && t.State != jam.TurnCancelled) ||
		t.Reason == "message_gone" || t.Reason == jam.ReasonSettlementFailed || t.Reason == jam.ReasonHopLimit {
		return
	}
	reason := "turn " + string(t.State) + " (" + t.Reason + ")"
	if t.Detail != "" {
		reason += ": " + t.Detail
	}
	// One bounded try; the engine retries a mark Band refuses for now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), failMarkTimeout)
	defer cancel()
	if err := m.cfg.Settler.Fail(ctx, m.cfg.Workspace, s.Peer, t.SourceMessageID, reason); err != nil {
		m.log.Warn("failure not marked on Band", "turn", t.ID, "message", t.SourceMessageID, "err", err)
	}
}

// failMarkTimeout bounds the failure mark's first try.
const failMarkTimeout = 10 * time.Second

// turnUsage is what a running turn reported using: written from the
// harness's update callback and read by the turn's worker.
type turnUsage struct {
	mu    sync.Mutex
	u     harness.Usage
	model string
}

// set records the turn's usage so far, and its model when known.
func (tu *turnUsage) set(u harness.Usage, model string) {
	tu.mu.Lock()
	defer tu.mu.Unlock()
	tu.u = u
	if model != "" {
		tu.model = model
	}
}

// settleUsage is the usage a turn's execution stores: what the turn
// reported, costed with the price table when it reported no cost; nil
// when it reported nothing.
func (m *Manager) settleUsage(tu *turnUsage) *store.ExecutionUsage {
	tu.mu.Lock()
	u, model := tu.u, tu.model
	tu.mu.Unlock()
	if u.IsZero() {
		// A model alone, from the configuration, is not a report.
		return nil
	}
	var prices pricing.Table
	if m.cfg.Prices != nil {
		prices = m.cfg.Prices()
	}
	return prices.Settle(model, u)
}
