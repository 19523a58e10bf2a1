package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/session"
)

// peerLogDir is where the broker writes one log per peer, under the data
// directory: logs/<profile>/<scope>.log.
const peerLogDir = "logs"

// Event kinds the daemon publishes besides the engine's "message.*" ones.
// A turn's transitions are "turn.<state>" (turn.queued, turn.running,
// turn.succeeded, …), like the engine's "message.<step>"; a running turn's
// streamed output is "turn.update", in batches.
const (
	kindAgentState = "agent.state"
	kindTurnPrefix = "turn."
	kindTurnUpdate = "turn.update"
)

// engineKinds names the engine events that are not about one message;
// every other engine kind is published as "message.<kind>".
var engineKinds = map[engine.EventKind]string{
	engine.EventLaneFailed:   "lane.failed",
	engine.EventRoomRetired:  "room.retired",
	engine.EventRoomRestored: "room.restored",
	engine.EventQuarantined:  "record.quarantined",
}

// startEvents starts the event broker. It starts before every component
// that publishes, so it stops after them and commits what they published.
func (d *daemon) startEvents(ctx context.Context, stack *stopStack) error {
	b, err := events.New(events.Config{
		Workspace:  d.workspace.ID,
		Logger:     d.log,
		PeerLogDir: filepath.Join(d.cfg.DataDir, peerLogDir),
	}, d.store)
	if err != nil {
		return err
	}
	// The agents' socket states are live state: a new subscriber gets them
	// in its reset. Subscriptions come through the control API, which
	// starts after messaging, so d.msg is set by then.
	if err := b.RegisterSnapshot("agents", func() (json.RawMessage, error) {
		if d.msg == nil {
			return json.RawMessage(`{}`), nil
		}
		return json.Marshal(d.msg.feeds.snapshot())
	}); err != nil {
		return err
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	stack.push("events", b.Stop)
	d.events = b
	return nil
}

// publish publishes ev. It waits only while the broker's publish buffer is
// full (the store is behind); an event refused as invalid, or published
// while the daemon stops, is logged and dropped.
func (d *daemon) publish(ev events.Event) {
	if err := d.events.Publish(context.Background(), ev); err != nil {
		d.log.Warn("event not published", "kind", ev.Kind, "peer", ev.Peer, "err", err)
	}
}

// engineEventData is the data of an engine event.
type engineEventData struct {
	Binding jam.BindingID `json:"binding,omitempty"`
	Count   int           `json:"count,omitempty"`
	Error   string        `json:"error,omitempty"`
	// Source and QuarantineID name a quarantined record.
	Source       string `json:"source,omitempty"`
	QuarantineID int64  `json:"quarantine_id,omitempty"`
}

// publishEngineEvent publishes one step of the messaging pipeline.
func (d *daemon) publishEngineEvent(ev engine.Event) {
	data := engineEventData{Binding: ev.Binding, Count: ev.Count, Source: ev.Source, QuarantineID: ev.QuarantineID}
	if ev.Err != nil {
		data.Error = ev.Err.Error()
	}
	d.publish(events.Event{Kind: eventKindOf(ev.Kind), Peer: ev.Peer, Room: ev.Room, MessageID: ev.MessageID, Data: encodeData(data)})
}

// eventKindOf names the event of an engine event kind.
func eventKindOf(k engine.EventKind) string {
	if kind, ok := engineKinds[k]; ok {
		return kind
	}
	return "message." + string(k)
}

// agentStateData is the data of an agent.state event.
type agentStateData struct {
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// publishAgentState publishes a change of a peer's agent socket.
func (d *daemon) publishAgentState(key jam.PeerKey, ev band.AgentEvent) {
	data := agentStateData{State: string(ev.State)}
	if ev.Err != nil {
		data.Error = ev.Err.Error()
	}
	d.publish(events.Event{Kind: kindAgentState, Peer: key, Data: encodeData(data)})
}

// turnEventData is the data of a turn.<state> event.
type turnEventData struct {
	Turn    jam.TurnID    `json:"turn"`
	Session jam.SessionID `json:"session"`
	// TurnSeq orders the session's turns.
	TurnSeq int64  `json:"turn_seq"`
	State   string `json:"state"`
	From    string `json:"from,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Detail is why the turn ended, in words (see wire.Turn).
	Detail          string `json:"detail,omitempty"`
	LeaseGeneration int64  `json:"lease_generation,omitempty"`
}

// turnUpdateData is the data of a turn.update event: one batch of the
// turn's output, numbered from 1 (GET /v1/turns/{turn}/output says how
// many batches it covers).
type turnUpdateData struct {
	Turn    jam.TurnID        `json:"turn"`
	Session jam.SessionID     `json:"session"`
	Batch   int               `json:"batch"`
	Updates []wire.TurnUpdate `json:"updates"`
}

// turnObserver publishes the runtime's turns as events.
type turnObserver struct{ d *daemon }

func (o turnObserver) TurnMoved(ev session.TurnEvent) {
	t := ev.Turn
	o.d.publish(events.Event{Kind: kindTurnPrefix + string(t.State), Peer: ev.Peer, Room: ev.Room, MessageID: t.SourceMessageID,
		Data: encodeData(turnEventData{Turn: t.ID, Session: t.SessionID, TurnSeq: t.Seq, State: string(t.State), From: string(ev.From),
			Reason: t.Reason, Detail: t.Detail, LeaseGeneration: t.LeaseGeneration})})
}

func (o turnObserver) TurnOutput(ev session.OutputEvent) {
	o.d.publish(events.Event{Kind: kindTurnUpdate, Peer: ev.Peer, Room: ev.Room, MessageID: ev.Turn.SourceMessageID,
		Data: encodeData(turnUpdateData{Turn: ev.Turn.ID, Session: ev.Turn.SessionID, Batch: ev.Batch, Updates: wireUpdates(ev.Updates)})})
}

// wireUpdates is the wire form of a turn's output.
// wire.TurnUpdate mirrors harness.Update field for field (pinned by
// wire's TestTurnUpdate_mirrorsHarnessUpdate).
func wireUpdates(us []harness.Update) []wire.TurnUpdate {
	out := make([]wire.TurnUpdate, 0, len(us))
	for _, u := range us {
		w := wire.TurnUpdate{Kind: string(u.Kind), Text: u.Text, ToolCallID: u.ToolCallID, Title: u.Title, ToolKind: u.ToolKind, Status: u.Status}
		for _, p := range u.Plan {
			w.Plan = append(w.Plan, wire.PlanEntry{Content: p.Content, Priority: p.Priority, Status: p.Status})
		}
		if u.Usage != nil {
			w.Usage = &wire.Usage{InputTokens: u.Usage.InputTokens, OutputTokens: u.Usage.OutputTokens, CachedTokens: u.Usage.CachedTokens,
				ReasoningTokens: u.Usage.ReasoningTokens, CostUSD: u.Usage.CostUSD, CostEstimated: u.Usage.CostEstimated}
		}
		out = append(out, w)
	}
	return out
}

// encodeData encodes the daemon's own event data, which always encodes.
func encodeData(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("encode event data %T: %v", v, err))
	}
	return raw
}

// snapshot returns every peer's socket state by peer key.
func (f *feeds) snapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]string, len(f.states))
	for k, s := range f.states {
		out[k.String()] = string(s)
	}
	return out
}

// Events implements api.Backend: the event stream from r.After.
func (d *daemon) Events(_ context.Context, r wire.EventsRequest) (wire.EventStream, error) {
	s, err := d.events.Subscribe(r.After)
	if err != nil {
		return nil, err
	}
	return eventStream{s}, nil
}

// eventStream adapts a subscription to the control API.
type eventStream struct{ s *events.Subscription }

func (es eventStream) TryNext(ctx context.Context) (wire.Event, bool, error) {
	e, ok, err := es.s.TryNext(ctx)
	if err != nil || !ok {
		return wire.Event{}, ok, err
	}
	return wireEvent(e), true, nil
}

func (es eventStream) Ready() <-chan struct{} { return es.s.Ready() }
func (es eventStream) Close()                 { es.s.Close() }

// wireEvent is the control API's form of an event. The broker's own kinds
// and the wire's are the same strings (TestWireEvent checks).
func wireEvent(e *events.Event) wire.Event {
	out := wire.Event{Seq: e.Seq, Kind: e.Kind, At: e.At, Room: string(e.Room), MessageID: string(e.MessageID), Data: e.Data}
	if !e.Peer.IsZero() {
		out.Peer = e.Peer.String()
	}
	return out
}
