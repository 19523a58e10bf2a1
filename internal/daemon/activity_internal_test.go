package daemon

import (
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
)

// TestRoomActivity_publishesChangesOnly: an indicator's start and end are
// published once each, however often the platform refreshes it or clears
// and restarts it in quick succession; one whose end never comes lapses
// after its expiry; the snapshot lists what is on.
func TestRoomActivity_publishesChangesOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		a := &roomActivity{now: time.Now, on: map[activityKey]*indicator{}, publish: func(ev events.Event) {
			var d activityData
			require.NoError(t, json.Unmarshal(ev.Data, &d))
			require.Equal(t, kindRoomActivity, ev.Kind)
			mu.Lock()
			got = append(got, string(ev.Room)+" "+d.ParticipantID+" "+map[bool]string{true: "on", false: "off"}[d.Working])
			mu.Unlock()
		}}
		published := func() []string {
			mu.Lock()
			defer mu.Unlock()
			out := got
			got = nil
			return out
		}
		const room = jam.RoomID("6f9619ff-8b86-4011-b42d-00c04fc964ff")
		expires := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }

		a.report(room, &protocol.Activity{ParticipantID: "coder", Working: true, ExpiresAt: expires(10 * time.Second)})
		for range 5 {
			time.Sleep(3 * time.Second)
			a.report(room, &protocol.Activity{ParticipantID: "coder", Working: true, ExpiresAt: expires(10 * time.Second)})
		}
		require.Equal(t, []string{string(room) + " coder on"}, published(), "refreshes publish nothing")

		snap, err := a.snapshot()
		require.NoError(t, err)
		require.JSONEq(t, `{"`+string(room)+`":["coder"]}`, string(snap))

		// An agent working through a queue clears and starts its
		// indicator per message: one span.
		for range 5 {
			a.report(room, &protocol.Activity{ParticipantID: "coder", Working: false})
			time.Sleep(activityLinger / 2)
			a.report(room, &protocol.Activity{ParticipantID: "coder", Working: true})
		}
		synctest.Wait()
		require.Empty(t, published(), "a quick restart continues the span")

		a.report(room, &protocol.Activity{ParticipantID: "coder", Working: false})
		a.report(room, &protocol.Activity{ParticipantID: "coder", Working: false})
		time.Sleep(activityLinger + time.Millisecond)
		synctest.Wait()
		require.Equal(t, []string{string(room) + " coder off"}, published(), "an end is published once, after lingering")

		// No end arrives: the indicator lapses after its expiry.
		a.report(room, &protocol.Activity{ParticipantID: "reviewer", Working: true})
		time.Sleep(activityTTL + activityGrace + time.Second)
		synctest.Wait()
		require.Equal(t, []string{string(room) + " reviewer on", string(room) + " reviewer off"}, published())

		// Stopped, it publishes nothing more.
		a.report(room, &protocol.Activity{ParticipantID: "coder", Working: true})
		a.stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, []string{string(room) + " coder on"}, published())
		a.report(room, &protocol.Activity{ParticipantID: "coder", Working: true})
		require.Empty(t, published())

		var none *roomActivity
		none.report(room, &protocol.Activity{ParticipantID: "x", Working: true}) // no tracker: ignored
	})
}
