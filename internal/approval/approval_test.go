package approval_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/approval"
	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const ws = jam.WorkspaceID("ws_0000000000000000000000000a")

// rig is a Service whose announcements arrive on a channel and whose
// resolutions are recorded.
type rig struct {
	s         *approval.Service
	announced chan approval.Request
	mu        sync.Mutex
	resolved  []approval.Answer
}

func newRig(t *testing.T, timeout time.Duration, maxPending int) *rig {
	r := &rig{announced: make(chan approval.Request, 16)}
	s, err := approval.New(approval.Config{Timeout: timeout, MaxPending: maxPending, Minter: jam.NewMinter(nil, nil),
		Announce: func(_ context.Context, req approval.Request) string {
			r.announced <- req
			return "event-" + string(req.ID)
		},
		Resolved: func(_ context.Context, a approval.Answer) {
			r.mu.Lock()
			r.resolved = append(r.resolved, a)
			r.mu.Unlock()
		}})
	require.NoError(t, err)
	r.s = s
	return r
}

// ask runs Ask on its own goroutine and returns where its answer goes.
func (r *rig) ask(ctx context.Context, req approval.Request) <-chan approval.Answer {
	out := make(chan approval.Answer, 1)
	go func() { out <- r.s.Ask(ctx, req) }()
	return out
}

func request(session, kind string) approval.Request {
	return approval.Request{Workspace: ws, Session: jam.SessionID(session), Turn: "turn_1", Title: "run `make`", ToolKind: kind}
}

func TestAsk_answeredByThePerson(t *testing.T) {
	t.Parallel()
	r := newRig(t, time.Hour, 0)
	for _, d := range []approval.Decision{approval.Allow, approval.Deny} {
		got := r.ask(t.Context(), request("sess_a", "execute"))
		req := <-r.announced
		require.Equal(t, []approval.Request{{ID: req.ID, Workspace: ws, Session: "sess_a", Turn: "turn_1", Title: "run `make`", ToolKind: "execute",
			Created: req.Created, Deadline: req.Deadline, Announcement: "event-" + string(req.ID)}}, r.s.Pending(ws))
		require.Empty(t, r.s.Pending("ws_other"), "another workspace sees nothing")
		_, err := r.s.Answer("ws_other", req.ID, d, "eve")
		require.ErrorIs(t, err, jam.ErrNotFound, "nor answers it")
		a, err := r.s.Answer(ws, req.ID, d, "owner")
		require.NoError(t, err)
		require.Equal(t, d, a.Decision)
		ans := <-got
		require.Equal(t, d, ans.Decision)
		require.Equal(t, "owner", ans.By)
		require.Equal(t, d == approval.Allow, ans.Decision.Allows())
		_, err = r.s.Answer(ws, req.ID, approval.Allow, "owner")
		require.ErrorIs(t, err, jam.ErrConflict, "answered once")
		require.ErrorContains(t, err, string(d)+" by owner")
		require.Empty(t, r.s.Pending(ws))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.resolved, 2, "every end is recorded")
}

func TestAsk_timeoutAndCancelDeny(t *testing.T) {
	t.Parallel()
	r := newRig(t, 50*time.Millisecond, 0)
	a := r.s.Ask(t.Context(), request("sess_a", "execute"))
	<-r.announced
	require.Equal(t, approval.Timeout, a.Decision)
	require.False(t, a.Decision.Allows())
	_, err := r.s.Answer(ws, a.Request.ID, approval.Allow, "owner")
	require.ErrorIs(t, err, jam.ErrConflict, "too late")

	r2 := newRig(t, time.Hour, 0)
	ctx, cancel := context.WithCancel(t.Context())
	got := r2.ask(ctx, request("sess_a", "execute"))
	<-r2.announced
	cancel()
	require.Equal(t, approval.Cancelled, (<-got).Decision)
	require.Empty(t, r2.s.Pending(ws))
}

func TestAsk_alwaysStandsForTheSessionAndKind(t *testing.T) {
	t.Parallel()
	r := newRig(t, time.Hour, 0)
	got := r.ask(t.Context(), request("sess_a", "execute"))
	req := <-r.announced
	_, err := r.s.Answer(ws, req.ID, approval.Always, "owner")
	require.NoError(t, err)
	require.Equal(t, approval.Always, (<-got).Decision)

	// The same session and kind: allowed without asking.
	a := r.s.Ask(t.Context(), request("sess_a", "execute"))
	require.Equal(t, approval.Always, a.Decision)
	require.Equal(t, "jam", a.By)
	require.Empty(t, r.announced)
	// Another kind, or another session, asks.
	for _, req := range []approval.Request{request("sess_a", "edit"), request("sess_b", "execute")} {
		got := r.ask(t.Context(), req)
		asked := <-r.announced
		_, err := r.s.Answer(ws, asked.ID, approval.Deny, "owner")
		require.NoError(t, err)
		require.Equal(t, approval.Deny, (<-got).Decision)
	}
	r.s.Forget("sess_a")
	got = r.ask(t.Context(), request("sess_a", "execute"))
	asked := <-r.announced
	_, err = r.s.Answer(ws, asked.ID, approval.Allow, "owner")
	require.NoError(t, err)
	require.Equal(t, approval.Allow, (<-got).Decision, "a forgotten session asks again")
}

func TestAsk_pendingIsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, time.Hour, 2)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, second := r.ask(ctx, request("sess_a", "execute")), r.ask(ctx, request("sess_b", "execute"))
	<-r.announced
	<-r.announced
	a := r.s.Ask(ctx, request("sess_c", "execute"))
	require.Equal(t, approval.Deny, a.Decision, "beyond the bound: denied at once")
	require.Len(t, r.s.Pending(ws), 2)
	cancel()
	<-first
	<-second
}

func TestParseDecision(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]approval.Decision{"allow": approval.Allow, " Always ": approval.Always, "DENY": approval.Deny} {
		d, err := approval.ParseDecision(in)
		require.NoError(t, err)
		require.Equal(t, want, d)
	}
	for _, in := range []string{"", "yes", "timeout", "cancelled"} {
		_, err := approval.ParseDecision(in)
		require.ErrorIs(t, err, jam.ErrInvalid, in)
	}
}
