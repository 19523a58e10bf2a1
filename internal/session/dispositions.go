package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// DispositionKind is what a staged disposition does with the room.
type DispositionKind string

// Disposition kinds.
const (
	// DispositionReply answers the turn's message: it is posted, mentioning
	// the message's sender (and Mentions), and the message settles.
	DispositionReply DispositionKind = "reply"
	// DispositionNoReply settles the turn's message without an answer.
	DispositionNoReply DispositionKind = "no_reply"
	// DispositionSend posts a new message to the recipients in Mentions;
	// it settles nothing.
	DispositionSend DispositionKind = "send"
)

// Disposition is one thing a running turn asks to do in its room, through
// jam's tools. It is staged, and happens only when the turn completes.
type Disposition struct {
	Kind DispositionKind
	Text string
	// Mentions are recipients by handle or participant id: a reply's
	// additional ones, a send's (at least one).
	Mentions []string
	// Reason says why a message needs no reply.
	Reason string
}

// Staged is a disposition accepted for a running turn.
type Staged struct {
	Turn  jam.TurnID
	Index int // 0-based, the order it is committed in
	Kind  DispositionKind
}

// Disposition bounds.
const (
	// MaxDispositionsPerTurn bounds what one turn stages.
	MaxDispositionsPerTurn = 16
	// MaxDispositionText bounds a reply's or send's text, in bytes: a
	// longer reply is posted in parts by the engine, but what one turn may
	// post is bounded.
	MaxDispositionText = 64 << 10
	// MaxDispositionReason bounds a no-reply's reason, in bytes.
	MaxDispositionReason = 1 << 10
	// MaxRecipients bounds a disposition's recipients.
	MaxRecipients = 32
)

// DefaultHopLimit is Config.HopLimit's default: the agent messages in a
// row, in one room, with no person in between, after which a message from
// an agent is acknowledged unanswered.
const DefaultHopLimit = 8

// staging is the dispositions of one running turn, in order. It lives from
// the move to running until the turn ends: a turn that fails, is
// cancelled or is interrupted drops it unused, so nothing of it is posted
// and its message is not consumed.
type staging struct {
	turn   store.Turn
	peer   jam.PeerKey
	room   jam.RoomID
	source jam.PlatformMessageID // "": the turn answers no room message
	// tools says the thread was given jam's tools: a message from an
	// agent then needs an explicit disposition.
	tools bool
	list  []Disposition // guarded by Manager.mu
	// settled says a reply or no-reply is staged.
	settled bool // guarded by Manager.mu
	// wt and start are the turn's worktree and start checkpoint (nil
	// when results are off), for a capture during the turn.
	wt    store.Worktree
	start *store.Checkpoint
	// capturing serializes captures during the turn with its end: the
	// turn's end waits for a capture under way.
	capturing sync.Mutex
	// thread is the provider thread the turn runs on; out its output.
	thread harness.Thread
	out    *batcher
}

// Stage stages a disposition for the session's running turn. It is
// refused with jam.ErrConflict when no turn of the session is running, or
// when the turn's message already has a reply or no-reply staged (a
// message settles once); with jam.ErrInvalid for empty or oversized text,
// a reply for a turn that answers no room message, too many dispositions,
// or a recipient that is not exactly one participant of the room (a
// handle is never guessed).
func (m *Manager) Stage(ctx context.Context, session jam.SessionID, d Disposition) (Staged, error) {
	if err := validDisposition(d); err != nil {
		return Staged{}, err
	}
	st, err := m.staging(session)
	if err != nil {
		return Staged{}, err
	}
	if len(d.Mentions) > 0 {
		roster, err := m.cfg.Settler.Participants(ctx, m.cfg.Workspace, st.peer, st.room)
		if err != nil {
			return Staged{}, err
		}
		for _, r := range d.Mentions {
			if _, n := protocol.FindParticipant(roster, r); n != 1 {
				what := "not in the room"
				if n > 1 {
					what = fmt.Sprintf("ambiguous (%d participants match; use the participant's id or full handle)", n)
				}
				return Staged{}, fmt.Errorf("%w: recipient %q is %s", jam.ErrInvalid, r, what)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.staged[session]; cur != st {
		return Staged{}, fmt.Errorf("%w: turn %s ended while the disposition was checked", jam.ErrConflict, st.turn.ID)
	}
	if len(st.list) >= MaxDispositionsPerTurn {
		return Staged{}, fmt.Errorf("%w: turn %s already staged %d dispositions, the most one turn may", jam.ErrInvalid, st.turn.ID, MaxDispositionsPerTurn)
	}
	if d.Kind != DispositionSend {
		if st.source == "" {
			return Staged{}, fmt.Errorf("%w: turn %s answers no room message (it was sent to the session directly); use room_send", jam.ErrInvalid, st.turn.ID)
		}
		if d.Kind == DispositionReply && st.source.IsNotice() {
			return Staged{}, fmt.Errorf("%w: turn %s answers a notice from jam, which nobody reads a reply to; use room_send to tell participants, or just end the turn",
				jam.ErrInvalid, st.turn.ID)
		}
		if st.settled {
			return Staged{}, fmt.Errorf("%w: turn %s already staged its message's reply or no-reply", jam.ErrConflict, st.turn.ID)
		}
		st.settled = true
	}
	d.Mentions = append([]string(nil), d.Mentions...)
	st.list = append(st.list, d)
	return Staged{Turn: st.turn.ID, Index: len(st.list) - 1, Kind: d.Kind}, nil
}

// validDisposition checks a disposition's own fields.
func validDisposition(d Disposition) error {
	switch d.Kind {
	case DispositionReply, DispositionSend:
		if strings.TrimSpace(d.Text) == "" {
			return fmt.Errorf("%w: text is empty", jam.ErrInvalid)
		}
		if len(d.Text) > MaxDispositionText {
			return fmt.Errorf("%w: text is %d bytes, more than %d", jam.ErrInvalid, len(d.Text), MaxDispositionText)
		}
		if !utf8.ValidString(d.Text) {
			return fmt.Errorf("%w: text is not UTF-8", jam.ErrInvalid)
		}
		if d.Kind == DispositionSend && len(d.Mentions) == 0 {
			return fmt.Errorf("%w: a send names its recipients (to)", jam.ErrInvalid)
		}
	case DispositionNoReply:
		if len(d.Reason) > MaxDispositionReason {
			return fmt.Errorf("%w: reason is %d bytes, more than %d", jam.ErrInvalid, len(d.Reason), MaxDispositionReason)
		}
	default:
		return fmt.Errorf("%w: disposition kind %q", jam.ErrInvalid, d.Kind)
	}
	if len(d.Mentions) > MaxRecipients {
		return fmt.Errorf("%w: %d recipients, more than %d", jam.ErrInvalid, len(d.Mentions), MaxRecipients)
	}
	for _, r := range d.Mentions {
		if strings.TrimSpace(r) == "" {
			return fmt.Errorf("%w: a recipient is empty", jam.ErrInvalid)
		}
	}
	return nil
}

// staging is the session's running turn's staging, or jam.ErrConflict.
func (m *Manager) staging(session jam.SessionID) (*staging, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.staged[session]
	if !ok {
		return nil, fmt.Errorf("%w: no turn of session %s is running; jam's room tools act only during a turn", jam.ErrConflict, session)
	}
	return st, nil
}

// beginStaging opens the staging of a turn that starts running.
func (m *Manager) beginStaging(st *staging) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.staged[st.turn.SessionID] = st
}

// endStaging closes a turn's staging and returns what it staged, once
// no capture of the turn is under way.
func (m *Manager) endStaging(st *staging) (list []Disposition, settled bool) {
	st.capturing.Lock()
	defer st.capturing.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.staged[st.turn.SessionID] == st {
		delete(m.staged, st.turn.SessionID)
	}
	return st.list, st.settled
}

// CaptureInTurn captures, during the session's running turn, the change
// set of what the turn changed so far: from its start checkpoint to one
// taken now (origin request, naming the turn). The turn's own change set
// is still recorded when it ends. jam.ErrConflict without a running turn;
// jam.ErrUnavailable when change sets are off.
func (m *Manager) CaptureInTurn(ctx context.Context, session jam.SessionID) (store.ChangeSet, error) {
	st, err := m.staging(session)
	if err != nil {
		return store.ChangeSet{}, err
	}
	if st.start == nil {
		return store.ChangeSet{}, fmt.Errorf("%w: change sets are not recorded by this daemon", jam.ErrUnavailable)
	}
	st.capturing.Lock()
	defer st.capturing.Unlock()
	if cur, _ := m.staging(session); cur != st {
		return store.ChangeSet{}, fmt.Errorf("%w: turn %s ended", jam.ErrConflict, st.turn.ID)
	}
	end, err := m.checkpoint(ctx, st.wt, st.turn.ID, store.CheckpointRequest)
	if err != nil {
		return store.ChangeSet{}, err
	}
	return m.capture(ctx, *st.start, end, st.turn.ID, store.ChangeSetRequest)
}

// RunningTurn finds the running turn of a provider thread (an approval
// request names its thread): its session and turn.
func (m *Manager) RunningTurn(thread harness.Thread) (store.Session, store.Turn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, st := range m.staged {
		if st.thread == thread {
			return store.Session{ID: st.turn.SessionID, WorkspaceID: st.turn.WorkspaceID, Peer: st.peer, Room: st.room}, st.turn, true
		}
	}
	return store.Session{}, store.Turn{}, false
}

// TurnEvidence adds u to the output of the session's running turn (what
// jam decided for it, such as an approval's answer); it does nothing when
// no turn of the session runs.
func (m *Manager) TurnEvidence(session jam.SessionID, u harness.Update) {
	// Under mu: the turn's end removes its staging before it closes the
	// output, so an update is either in the output or not taken.
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.staged[session]; st != nil {
		st.out.add(u)
	}
}

// Participants is the room's roster of the session, as its agent sees it.
func (m *Manager) Participants(ctx context.Context, session jam.SessionID) ([]protocol.Participant, error) {
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, session)
	if err != nil {
		return nil, err
	}
	return m.cfg.Settler.Participants(ctx, m.cfg.Workspace, s.Peer, s.Room)
}

// commitDispositions posts a completed turn's dispositions in order:
// sends, replies and no-replies as staged. It stops at the first that
// fails and returns its error (what was posted before stays posted; the
// message is answered by a later turn).
func (m *Manager) commitDispositions(ctx context.Context, st *staging, list []Disposition) error {
	for i, d := range list {
		var err error
		switch d.Kind {
		case DispositionSend:
			_, err = m.cfg.Settler.Send(ctx, engine.SendParams{WorkspaceID: m.cfg.Workspace, Peer: st.peer, Room: st.room,
				Text: d.Text, Recipients: d.Mentions})
		case DispositionReply:
			_, err = m.cfg.Settler.Reply(ctx, engine.ReplyParams{WorkspaceID: m.cfg.Workspace, Peer: st.peer, MessageID: st.source,
				Text: d.Text, Mentions: d.Mentions, Turn: st.turn.ID})
		case DispositionNoReply:
			err = m.cfg.Settler.Ack(ctx, m.cfg.Workspace, st.peer, st.source)
		}
		if err != nil {
			return fmt.Errorf("disposition %d (%s) of turn %s: %w", i+1, d.Kind, st.turn.ID, err)
		}
	}
	return nil
}

// hop counts a turn taken up for a room message: a person's message
// resets the room's count, an agent's adds one. It returns the count and
// whether it is beyond the hop limit (the turn must not run).
func (m *Manager) hop(room jam.RoomID, fromAgent bool) (int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !fromAgent {
		delete(m.hops, room)
		return 0, false
	}
	n := m.hops[room] + 1
	if m.cfg.HopLimit > 0 && n > m.cfg.HopLimit {
		return n, true
	}
	m.hops[room] = n
	return n, false
}

// hopLimited ends the turn of an agent's message beyond the room's hop
// limit before the agent sees it: the room is told (an error event, which
// wakes nobody), the message is acknowledged unanswered, and the turn
// fails with ReasonHopLimit. A person's next message resets the count.
func (m *Manager) hopLimited(ctx context.Context, s store.Session, t store.Turn, msg engine.InboxItem, n int, move func(reason string, cause error) error) error {
	text := fmt.Sprintf("jam stopped a chain of agent messages: %d in a row in this room with no person in between (the limit is %d). The message from %s was not answered; a person's message lets the agents go on.",
		n, m.cfg.HopLimit, msg.SenderName)
	meta, _ := json.Marshal(map[string]any{"error_code": jam.ReasonHopLimit, "details": map[string]any{"hops": n, "limit": m.cfg.HopLimit, "message_id": msg.MessageID}})
	if _, err := m.cfg.Settler.RoomEvent(ctx, m.cfg.Workspace, s.Peer, s.Room, protocol.EventFields{Content: text, MessageType: "error", Metadata: meta}); err != nil {
		m.log.Warn("hop limit not shown in the room", "room", s.Room, "err", err)
	}
	if err := m.cfg.Settler.Ack(ctx, m.cfg.Workspace, s.Peer, t.SourceMessageID); err != nil {
		m.log.Warn("hop-limited message not acknowledged", "turn", t.ID, "err", err)
	}
	return move(jam.ReasonHopLimit, fmt.Errorf("%d agent messages in a row in the room (limit %d); the message was acknowledged unanswered", n, m.cfg.HopLimit))
}
