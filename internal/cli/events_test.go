package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/jam"
)

var evTime = time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)

// clock is how jam events shows evTime: local time of day.
var clock = evTime.Local().Format("15:04:05.000")

func event(seq int64, kind string, data string) wire.Event {
	ev := wire.Event{Seq: seq, Kind: kind, At: evTime}
	if data != "" {
		ev.Data = json.RawMessage(data)
	}
	return ev
}

// followCase is one run of "jam events" against a fake daemon that hands
// out one stream per connection, in order; the run ends (as with Ctrl-C)
// when it connects once more than there are streams.
type followCase struct {
	name string
	args []string
	// streams are the events of each connection; each stream ends after
	// them, as the daemon ends one after a stream_resync.
	streams [][]wire.Event
	// wantAfter is the position of each connection.
	wantAfter  []int64
	wantStdout string
}

func runFollowCases(t *testing.T, cases []followCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var calls atomic.Int32
			b := setup(t, backend{EventsFunc: func(_ context.Context, r wire.EventsRequest) (wire.EventStream, error) {
				n := int(calls.Add(1)) - 1
				if assert.Less(t, n, len(tc.wantAfter), "connection %d", n+1) {
					assert.Equal(t, tc.wantAfter[n], r.After, "position of connection %d", n+1)
				}
				if n >= len(tc.streams) {
					cancel() // the user presses Ctrl-C
					s := apitest.NewStream()
					s.End(io.EOF)
					return s, nil
				}
				s := apitest.NewStream(tc.streams[n]...)
				s.End(io.EOF)
				return s, nil
			}})
			streams, _, out, errOut := cli.Test()
			code := cli.Main(ctx, append(tc.args, "--data-dir", b.dataDir), streams, cli.Deps{Env: func(string) (string, bool) { return "", false }})
			require.Equal(t, "", errOut.String(), "stderr")
			require.Equal(t, 0, code, "an interrupted follow exits 0")
			require.Equal(t, tc.wantStdout, out.String())
			require.Equal(t, len(tc.wantAfter), int(calls.Load()))
		})
	}
}

func TestEvents_follow(t *testing.T) {
	t.Parallel()
	const room, msg = "6f9619ff-8b86-4011-b42d-00c04fc964ff", "0b5d4c1e-2f3a-4b6c-8d7e-9f0a1b2c3d4e"
	reset := event(5, wire.EventKindReset, `{"reason":"subscribe","snapshots":{"agents":{"local/coder":"up"}}}`)
	queued := wire.Event{Seq: 6, Kind: "message.queued", At: evTime, Peer: "local/coder", Room: room, MessageID: msg, Data: json.RawMessage(`{"binding":"bind_1"}`)}
	failed := event(7, "message.delivery_failed", `{"error":"agent gone away","count":2}`)
	resync := event(7, wire.EventKindStreamResync, `{"reason":"lagged"}`)
	runFollowCases(t, []followCase{
		{
			name:      "one line per event, then resume after the last",
			args:      []string{"events"},
			streams:   [][]wire.Event{{reset, queued, failed}},
			wantAfter: []int64{wire.EventsLive, 7},
			wantStdout: fmt.Sprintf("5 %s reset reason=subscribe snapshots={\"agents\":{\"local/coder\":\"up\"}}\n", clock) +
				fmt.Sprintf("6 %s message.queued local/coder room=%s msg=%s binding=bind_1\n", clock, room, msg) +
				fmt.Sprintf("7 %s message.delivery_failed count=2 error=\"agent gone away\"\n", clock),
		},
		{
			name:      "json lines",
			args:      []string{"events", "--json"},
			streams:   [][]wire.Event{{reset, queued}},
			wantAfter: []int64{wire.EventsLive, 6},
			wantStdout: `{"seq":5,"kind":"reset","at":"2026-01-02T03:04:05.6Z","data":{"reason":"subscribe","snapshots":{"agents":{"local/coder":"up"}}}}` + "\n" +
				`{"seq":6,"kind":"message.queued","at":"2026-01-02T03:04:05.6Z","peer":"local/coder","room":"` + room + `","message_id":"` + msg + `","data":{"binding":"bind_1"}}` + "\n",
		},
		{
			name:      "resync resumes after its sequence, nothing twice",
			args:      []string{"events", "--after", "4"},
			streams:   [][]wire.Event{{queued, failed, resync}, {event(8, "agent.state", `{"state":"up"}`)}},
			wantAfter: []int64{4, 7, 8},
			wantStdout: fmt.Sprintf("6 %s message.queued local/coder room=%s msg=%s binding=bind_1\n", clock, room, msg) +
				fmt.Sprintf("7 %s message.delivery_failed count=2 error=\"agent gone away\"\n", clock) +
				fmt.Sprintf("7 %s stream_resync reason=lagged\n", clock) +
				fmt.Sprintf("8 %s agent.state state=up\n", clock),
		},
		{
			name:       "after zero replays from the start",
			args:       []string{"events", "--after", "0"},
			streams:    [][]wire.Event{{event(1, "agent.state", "")}},
			wantAfter:  []int64{0, 1},
			wantStdout: fmt.Sprintf("1 %s agent.state\n", clock),
		},
	})
}

func TestEvents_refused(t *testing.T) {
	t.Parallel()
	runCases(t, []cmdCase{
		{
			name:       "negative after",
			inv:        invocation{args: []string{"events", "--after", "-3"}},
			wantCode:   2,
			wantStderr: "jam: --after -3 is negative\n",
		},
		{
			name:       "not a number",
			inv:        invocation{args: []string{"events", "--after", "x"}},
			wantCode:   2,
			wantStderr: "jam: invalid argument \"x\" for \"--after\" flag: must be an integer (see jam events --help)\n",
		},
		{
			name: "a refusal that cannot pass ends it",
			backend: backend{EventsFunc: func(context.Context, wire.EventsRequest) (wire.EventStream, error) {
				return nil, fmt.Errorf("%w: events are off", jam.ErrInvalid)
			}},
			inv:        invocation{args: []string{"events"}},
			wantCode:   2,
			wantStderr: "jam: events: invalid argument: events are off (invalid_argument)\n",
		},
		{
			name:       "a daemon without the route",
			inv:        invocation{args: []string{"events"}},
			wantCode:   1,
			wantStderr: "jam: events: fake backend: method not set: not implemented (not_implemented)\n",
		},
	})
}
