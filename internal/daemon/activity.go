package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
)

// Working indicators, as the person's sockets see them, for the client
// event stream (the web UI shows who is working in a room).
//
// Band refreshes an indicator every few seconds, and an attached agent's
// indicator starts and ends with every message it takes and settles.
// Publishing each report would flood the event log (and the store's one
// writer) under load, so only settled changes are published, as
// "room.activity" events {participant_id, working}: working when an
// indicator starts; not working once it has been cleared for
// activityLinger without starting again, or when it lapses unrefreshed.
// An agent that works through a queue is one span, not one per message.
// The indicators that are on are the "activity" snapshot of every reset
// event, so a client that subscribes later knows them too.

// kindRoomActivity is the kind of a working indicator's change.
const kindRoomActivity = "room.activity"

const (
	// activityTTL is the expiry of a report that names none (Band's).
	activityTTL = 10 * time.Second
	// activityGrace is added to a report's expiry before the indicator
	// counts as lapsed.
	activityGrace = time.Second
	// activityLinger is how long a cleared indicator waits before its end
	// is published; a new start meanwhile continues the span.
	activityLinger = 2 * time.Second
)

type activityKey struct {
	room        jam.RoomID
	participant string
}

// roomActivity tracks the indicators that are on. Each has a timer that
// ends it (published as not working) when it lapses or, once cleared,
// when it has lingered; stop cancels them.
type roomActivity struct {
	// publish must not block: it is called from the person's socket.
	publish func(events.Event)
	now     func() time.Time

	mu      sync.Mutex
	on      map[activityKey]*indicator // guarded by mu
	stopped bool                       // guarded by mu
}

// indicator is one indicator that is on.
type indicator struct {
	timer   *time.Timer // guarded by roomActivity.mu
	cleared bool        // guarded by roomActivity.mu: lingering before its end
}

// activityData is the Data of a room.activity event.
type activityData struct {
	ParticipantID string `json:"participant_id"`
	Working       bool   `json:"working"`
}

// startActivity starts the indicator tracker and registers its snapshot.
func (d *daemon) startActivity(stack *stopStack) error {
	a := &roomActivity{publish: nonBlockingPublisher(d.log, d.events.Publish), now: time.Now, on: map[activityKey]*indicator{}}
	if err := d.events.RegisterSnapshot("activity", a.snapshot); err != nil {
		return err
	}
	d.activity = a
	stack.push("working indicators", func(context.Context) error { a.stop(); return nil })
	return nil
}

// nonBlockingPublisher publishes without waiting: when the broker's buffer
// is full (the store is behind) the event is dropped and logged. A client
// that missed an indicator's change has it right again at its next reset
// or at the indicator's next change.
func nonBlockingPublisher(log *slog.Logger, publish func(context.Context, events.Event) error) func(events.Event) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	return func(ev events.Event) {
		if err := publish(done, ev); err != nil {
			log.Warn("event not published", "kind", ev.Kind, "room", ev.Room, "err", err)
		}
	}
}

// report applies one indicator report of a watched room.
func (a *roomActivity) report(room jam.RoomID, act *protocol.Activity) {
	if a == nil || act == nil || act.ParticipantID == "" {
		return
	}
	k := activityKey{room: room, participant: act.ParticipantID}
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	ind, wasOn := a.on[k]
	if !act.Working {
		// The end is published after lingering, unless the indicator
		// starts again first. A timer that already fired is about to end
		// it anyway.
		if wasOn && !ind.cleared && ind.timer.Reset(activityLinger) {
			ind.cleared = true
		}
		a.mu.Unlock()
		return
	}
	lapse := activityTTL
	if at, err := time.Parse(time.RFC3339Nano, act.ExpiresAt); err == nil {
		lapse = at.Sub(a.now())
	}
	lapse = max(lapse, 0) + activityGrace
	if wasOn && ind.timer.Reset(lapse) {
		ind.cleared = false
		a.mu.Unlock()
		return
	}
	// New, or its timer fired and waits for the lock to end it: a new
	// indicator replaces it, which makes that timer do nothing, and the
	// span goes on without an event.
	next := &indicator{}
	next.timer = time.AfterFunc(lapse, func() { a.end(k, next) })
	a.on[k] = next
	a.mu.Unlock()
	if !wasOn {
		a.emit(k, true)
	}
}

// end ends an indicator whose timer fired, unless it was replaced.
func (a *roomActivity) end(k activityKey, ind *indicator) {
	a.mu.Lock()
	if a.stopped || a.on[k] != ind {
		a.mu.Unlock()
		return
	}
	delete(a.on, k)
	a.mu.Unlock()
	a.emit(k, false)
}

func (a *roomActivity) emit(k activityKey, working bool) {
	a.publish(events.Event{Kind: kindRoomActivity, Room: k.room, Data: encodeData(activityData{ParticipantID: k.participant, Working: working})})
}

// snapshot lists the indicators that are on: room -> participant ids.
func (a *roomActivity) snapshot() (json.RawMessage, error) {
	a.mu.Lock()
	out := map[jam.RoomID][]string{}
	for k := range a.on {
		out[k.room] = append(out[k.room], k.participant)
	}
	a.mu.Unlock()
	return json.Marshal(out)
}

// stop cancels every timer; later reports are ignored.
func (a *roomActivity) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	for k, ind := range a.on {
		ind.timer.Stop()
		delete(a.on, k)
	}
}
