package session

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Sent is what became of a message sent to a session.
type Sent struct {
	Message store.SessionMessage
	// Turn is the turn that answers a queue message; zero for a note or a
	// steer that reached the running turn.
	Turn store.Turn
}

// Send accepts a person's message to a session with the routing asked
// for. queue: a new turn answers it, after any active one; its answer is
// the turn's output (there is no Band message to settle). note: it is
// stored, starts no turn, and the session's next turn carries it as
// context. steer: it reaches the running turn when the harness can take
// it, else it is queued (Message.Routing says which).
func (m *Manager) Send(ctx context.Context, session jam.SessionID, text string, routing jam.Routing) (Sent, error) {
	if strings.TrimSpace(text) == "" {
		return Sent{}, fmt.Errorf("%w: a message needs text", jam.ErrInvalid)
	}
	if routing == "" {
		routing = jam.RoutingQueue
	}
	if _, err := jam.ParseEnum("routing", string(routing), jam.Routings); err != nil {
		return Sent{}, err
	}
	s, err := m.cfg.Store.SessionGet(ctx, m.cfg.Workspace, session)
	if err != nil {
		return Sent{}, err
	}
	// An archived session resumes; a closed one takes no message.
	if err := m.reopen(ctx, s); err != nil {
		return Sent{}, err
	}
	msg := store.SessionMessage{ID: jam.New[jam.MessageID](m.cfg.Minter), WorkspaceID: m.cfg.Workspace, SessionID: s.ID,
		Requested: routing, Routing: routing, Text: text, CreatedAt: m.cfg.Now()}
	if routing == jam.RoutingSteer {
		sent, ok, err := m.steer(ctx, s, msg)
		if ok || err != nil {
			return sent, err
		}
		msg.Routing = jam.RoutingQueue
	}
	if msg.Routing == jam.RoutingNote {
		got, _, err := m.cfg.Store.MessageAccept(ctx, store.MessageAcceptParams{Message: msg})
		return Sent{Message: got}, err
	}
	got, t, err := m.accept(ctx, s, msg)
	if err != nil {
		return Sent{}, err
	}
	m.wakeSession(s.ID)
	return Sent{Message: got, Turn: t}, nil
}

// accept records a queue message with its turn and tells the Observer.
func (m *Manager) accept(ctx context.Context, s store.Session, msg store.SessionMessage) (store.SessionMessage, store.Turn, error) {
	got, t, err := m.cfg.Store.MessageAccept(ctx, store.MessageAcceptParams{Message: msg,
		Turn: store.Turn{ID: jam.New[jam.TurnID](m.cfg.Minter), CreatedAt: msg.CreatedAt}})
	if err != nil {
		return store.SessionMessage{}, store.Turn{}, err
	}
	m.cfg.Observer.TurnMoved(TurnEvent{Turn: t, Peer: s.Peer, Room: s.Room})
	return got, t, nil
}

// steer hands msg to the session's running turn if its host can take it;
// ok is false when it cannot (no running turn, or a harness that does not
// steer), and the message is then queued by the caller.
func (m *Manager) steer(ctx context.Context, s store.Session, msg store.SessionMessage) (sent Sent, ok bool, err error) {
	turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, s.ID)
	if err != nil {
		return Sent{}, false, err
	}
	var running *store.Turn
	for i := range turns {
		if turns[i].State == jam.TurnRunning {
			running = &turns[i]
		}
	}
	if running == nil {
		return Sent{}, false, nil
	}
	tmpl, err := m.cfg.Store.TemplateGet(ctx, m.cfg.Workspace, s.TemplateID)
	if err != nil {
		return Sent{}, false, err
	}
	m.mu.Lock()
	l := m.hosts[holder(tmpl, s, m.manifest(tmpl))]
	m.mu.Unlock()
	if l == nil {
		return Sent{}, false, nil
	}
	l.mu.Lock()
	host, thread := l.host, l.sessions[s.ID]
	gen := l.record.Generation
	l.mu.Unlock()
	if host == nil || !host.Manifest().Steer || thread == "" || gen != running.LeaseGeneration {
		return Sent{}, false, nil
	}
	// Accepted first (the turn must still be running), then handed over.
	got, _, err := m.cfg.Store.MessageAccept(ctx, store.MessageAcceptParams{Message: msg, SteeredTurn: running.ID})
	if errors.Is(err, jam.ErrConflict) {
		return Sent{}, false, nil // the turn ended meanwhile: queue it
	}
	if err != nil {
		return Sent{}, false, err
	}
	if err := host.Steer(ctx, thread, harness.Input{Text: msg.Text}); err != nil {
		return Sent{Message: got}, true, fmt.Errorf("steer turn %s: message %s accepted but not delivered: %w", running.ID, got.ID, err)
	}
	return Sent{Message: got}, true, nil
}

// turnNotes are the notes a turn's prompt carries: those consumed by an
// earlier turn answering the same message that did not finish (it was
// interrupted, or its answer was not settled: the message is answered
// again, with the same context), then the session's pending notes, which
// this turn consumes (pending).
func (m *Manager) turnNotes(ctx context.Context, t store.Turn) (notes []store.SessionMessage, pending []jam.MessageID, err error) {
	all, err := m.cfg.Store.MessageList(ctx, m.cfg.Workspace, t.SessionID)
	if err != nil {
		return nil, nil, err
	}
	retried := map[jam.TurnID]bool{}
	if t.MessageID != "" {
		turns, err := m.cfg.Store.TurnList(ctx, m.cfg.Workspace, t.SessionID)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range turns {
			if o.ID != t.ID && o.MessageID == t.MessageID && (o.State == jam.TurnInterrupted || o.State == jam.TurnFailed) {
				retried[o.ID] = true
			}
		}
	}
	for _, msg := range all {
		switch {
		case msg.Routing != jam.RoutingNote:
		case msg.TurnID == "":
			notes = append(notes, msg)
			pending = append(pending, msg.ID)
		case retried[msg.TurnID]:
			notes = append(notes, msg)
		}
	}
	return notes, pending, nil
}

// withNotes puts the notes before a turn's prompt, as context.
func withNotes(notes []store.SessionMessage, text string) string {
	if len(notes) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString("Notes added to this session since the last turn (context, not requests):\n")
	for _, n := range notes {
		fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(n.Text))
	}
	b.WriteString("\n")
	b.WriteString(text)
	return b.String()
}
