package hub

import (
	"context"
	"time"

	"sync"

	"github.com/jamhq/jam/internal/band/protocol"
)

// activity holds the agents' "working" indicators, which live in memory
// only: a restart clears them, as Band's expire anyway. Every change and
// its push happen under mu, so a socket never sees an expiry overtake a
// newer report.
type activity struct {
	mu    sync.Mutex
	until map[activityKey]time.Time // guarded by mu
	wake  chan struct{}             // cap 1: the loop re-reads deadlines
}

type activityKey struct{ room, agent string }

func newActivity() *activity {
	return &activity{until: map[activityKey]time.Time{}, wake: make(chan struct{}, 1)}
}

// report sets (working) or clears an indicator and pushes the change.
func (a *activity) report(room, agent string, working bool, until time.Time, push func(room, agent string, working bool, until time.Time)) {
	a.mu.Lock()
	k := activityKey{room, agent}
	if working {
		a.until[k] = until
	} else {
		delete(a.until, k)
	}
	push(room, agent, working, until)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// joinWithSnapshot joins a socket to room_activity (join) and pushes the
// room's current indicators to it (push), both under the lock a report
// holds while it broadcasts.
func (a *activity) joinWithSnapshot(room string, join func(), push func(agent string, until time.Time)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	join()
	for k, t := range a.until {
		if k.room == room {
			push(k.agent, t)
		}
	}
}

// loop expires indicators until ctx ends. It is the hub's one activity
// goroutine, started by Start and waited for by Stop.
func (a *activity) loop(ctx context.Context, expire func(room, agent string)) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next := a.expireDue(time.Now(), expire)
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-t.C:
		}
	}
}

// expireDue clears the indicators due at now and returns the earliest
// remaining deadline, zero if none.
func (a *activity) expireDue(now time.Time, expire func(room, agent string)) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	var next time.Time
	for k, t := range a.until {
		if !t.After(now) {
			delete(a.until, k)
			expire(k.room, k.agent)
			continue
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

// pushActivity sends one indicator change on room_activity:{room}.
func (h *Hub) pushActivity(room, agent string, working bool, until time.Time) {
	ev := protocol.Activity{ParticipantID: agent, Working: working}
	if working {
		ev.ExpiresAt = protocol.FormatTime(until)
	}
	h.broker.publish(protocol.Topic(protocol.TopicRoomActivity, room), protocol.EventActivity, ev, nil)
}

// expireActivity pushes the end of an expired indicator.
func (h *Hub) expireActivity(room, agent string) {
	h.pushActivity(room, agent, false, time.Time{})
}
