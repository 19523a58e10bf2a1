package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// MaxFailReason bounds the reason a failure mark posts to Band, in bytes.
const MaxFailReason = 480

// failRef names one message whose failure mark is being retried.
type failRef struct {
	ws  jam.WorkspaceID
	key jam.PeerKey
	msg jam.PlatformMessageID
}

// Fail marks a queued message failed on Band (POST …/failed) with a short
// reason: its agent could not serve it (the command did not start, the
// repository is not a git repository, the turn failed or was cancelled).
// It never settles: the row stays queued, a later redelivery (a restart,
// a reconnect, a configuration change) claims it again, and the reply of
// the turn that then answers it settles it as usual (Band takes
// /processing after /failed, and /processed on that new attempt).
//
// The reason is cut to one line of at most MaxFailReason bytes; callers
// give a reason without secrets (the runtime gives a turn's detail, whose
// agent environment values are redacted). Band closes only an active
// attempt as failed: with none (the mark follows a restart, or an earlier
// mark) Fail opens one first.
//
// A mark Band refuses for a while (retryable errors) is retried in the
// background with backoff, bounded by ClaimAttempts, and Fail returns at
// once: it never holds a room's lane or the caller's turn. A later Fail
// of the same message replaces the reason a pending retry posts. A mark
// lost to a stop is not kept: the message is still queued, and the turn
// that serves it after the restart marks it again if it fails again.
func (e *Engine) Fail(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, reason string) error {
	p, row, err := e.row(ctx, ws, key, msg)
	if err != nil {
		return err
	}
	reason = FailReason(reason)
	if row.MessageID.IsNotice() {
		// A local notice never reached Band; its failure is local.
		e.emitFailed(row, reason)
		return nil
	}
	ref := failRef{ws, key, msg}
	e.mu.Lock()
	if _, pending := e.fails[ref]; pending {
		e.fails[ref] = reason // the retry under way posts this one
		e.mu.Unlock()
		return nil
	}
	e.mu.Unlock()
	err = e.markFailed(ctx, p, row, reason)
	switch {
	case err == nil:
		e.emitFailed(row, reason)
		return nil
	case errors.Is(err, errSettledOnBand):
		return nil
	case !retryable(err):
		return fmt.Errorf("mark %s failed: %w", msg, err)
	}
	e.mu.Lock()
	if _, pending := e.fails[ref]; pending {
		e.fails[ref] = reason
		e.mu.Unlock()
		return nil
	}
	e.fails[ref] = reason
	e.mu.Unlock()
	e.emit(Event{Kind: EventFailRetry, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding, Err: err})
	if !e.spawn(func() { e.retryFail(p, ref) }) {
		e.mu.Lock()
		delete(e.fails, ref)
		e.mu.Unlock()
	}
	return nil
}

// errSettledOnBand: Band has settled the message; there is nothing to mark.
var errSettledOnBand = errors.New("settled on Band")

// markFailed posts the failure mark, opening an attempt first when Band
// has none active.
func (e *Engine) markFailed(ctx context.Context, p *peerState, row store.QueueRow, reason string) error {
	room, msg := string(row.Room), string(row.MessageID)
	_, err := p.rt.Agent.AgentFailed(ctx, room, msg, reason)
	if err == nil || !alreadyProcessed(err) {
		return err
	}
	// No active attempt (422): open one, then close it as failed.
	if _, err := p.rt.Agent.AgentProcessing(ctx, room, msg); err != nil {
		if alreadyProcessed(err) {
			return errSettledOnBand
		}
		return err
	}
	_, err = p.rt.Agent.AgentFailed(ctx, room, msg, reason)
	return err
}

// retryFail retries a failure mark with backoff until it is posted, the
// message is settled or gone, a permanent error, or ClaimAttempts.
func (e *Engine) retryFail(p *peerState, ref failRef) {
	ctx := e.ctx
	defer func() {
		e.mu.Lock()
		delete(e.fails, ref)
		e.mu.Unlock()
	}()
	if e.backoff(func() bool {
		row, err := e.cfg.Store.QueueGet(ctx, ref.ws, ref.key, ref.msg)
		if err != nil {
			return true // settled or gone: nothing to mark
		}
		e.mu.Lock()
		reason := e.fails[ref]
		e.mu.Unlock()
		err = e.markFailed(ctx, p, row, reason)
		switch {
		case err == nil:
			e.emitFailed(row, reason)
			return true
		case errors.Is(err, errSettledOnBand):
			return true
		case !retryable(err):
			e.log.Warn("failure mark refused", "peer", ref.key, "message", ref.msg, "err", err)
			return true
		}
		return false
	}) {
		return
	}
	e.log.Warn("failure mark not posted; the message stays queued", "peer", ref.key, "message", ref.msg, "attempts", e.cfg.ClaimAttempts)
}

func (e *Engine) emitFailed(row store.QueueRow, reason string) {
	e.emit(Event{Kind: EventFailed, Workspace: row.WorkspaceID, Peer: row.Peer, Room: row.Room, MessageID: row.MessageID, Binding: row.Binding,
		Err: errors.New(reason)})
}

// FailReason is the reason a failure mark posts: control characters and
// line breaks folded to spaces, white space collapsed, cut at a UTF-8
// boundary to MaxFailReason bytes (ending with "…" when cut); a blank
// reason (Band refuses one) becomes "failed".
func FailReason(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "failed"
	}
	if len(s) <= MaxFailReason {
		return s
	}
	const ellipsis = "…"
	cut := MaxFailReason - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + ellipsis
}

// RefuseRoom records that a peer's agent cannot serve room: its session
// there could not be made (the repository is not a git repository). The
// room's messages queued unrouted are marked failed on Band with reason
// now, and each that lands unrouted later is marked as it is queued,
// until ServeRoom (or a binding that claims the room, which redelivers
// them). The record is in memory: after a restart the room is tried
// again as its agent's feed lists it.
func (e *Engine) RefuseRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, reason string) error {
	l := store.Lane{WorkspaceID: ws, Peer: key, Room: room}
	e.mu.Lock()
	e.refused[l] = FailReason(reason)
	e.mu.Unlock()
	rows, err := e.cfg.Store.QueueList(ctx, store.QueueListParams{WorkspaceID: ws, Peer: key, Unrouted: true, Room: room})
	if err != nil {
		return fmt.Errorf("refuse room %s: %w", room, err)
	}
	var errs []error
	for _, r := range rows {
		if err := e.Fail(ctx, ws, key, r.MessageID, reason); err != nil && !errors.Is(err, jam.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ServeRoom forgets a RefuseRoom: the peer's agent serves room again.
func (e *Engine) ServeRoom(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) {
	e.mu.Lock()
	delete(e.refused, store.Lane{WorkspaceID: ws, Peer: key, Room: room})
	e.mu.Unlock()
}

// refusal is the reason a lane's agent cannot serve it; "" when it can.
func (e *Engine) refusal(l store.Lane) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refused[l]
}

// Refused returns why the peer's agent cannot serve one of its rooms
// (RefuseRoom), if any.
func (e *Engine) Refused(ws jam.WorkspaceID, key jam.PeerKey) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for l, why := range e.refused {
		if l.WorkspaceID == ws && l.Peer == key {
			return why, true
		}
	}
	return "", false
}
