package bandtest

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// testLifecycle drives the processing attempts of four messages into four
// states and checks the queue's status filters against them:
//
//	m1 processed (two attempts), m2 failed, m3 processing, m4 untouched.
func testLifecycle(t *testing.T, e *env) {
	a := e.RegisterAgent(t, "lifecycle")
	room := e.CreateRoom(t, "lifecycle")
	e.AddParticipant(t, room, a.ID)
	m := make([]string, 4)
	for i := range m {
		m[i] = e.Post(t, room, "work item", Mention{ID: a.ID})
	}
	ag := e.agent(a)
	mark := func(msg, action string, body any) response {
		t.Helper()
		return ag.do(t, http.MethodPost, agentMessage(room, msg, action), body)
	}
	status := func(r response) messageStatus {
		t.Helper()
		return data[messageStatus](t, r.expect(t, http.StatusOK))
	}

	// Each /processing opens a new attempt.
	require.Equal(t, messageStatus{ID: m[0], Status: "processing", AttemptNumber: 1, Success: true}, status(mark(m[0], "processing", nil)), "first claim")
	require.Equal(t, messageStatus{ID: m[0], Status: "processing", AttemptNumber: 2, Success: true}, status(mark(m[0], "processing", nil)), "second claim")

	// Settling needs an active attempt.
	mark(m[1], "processed", nil).expectError(t, http.StatusUnprocessableEntity, "")
	mark(m[1], "failed", map[string]string{"error": "boom"}).expectError(t, http.StatusUnprocessableEntity, "")

	require.Equal(t, messageStatus{ID: m[0], Status: "processed", AttemptNumber: 2, Success: true}, status(mark(m[0], "processed", nil)), "processed")
	mark(m[0], "processed", nil).expectError(t, http.StatusUnprocessableEntity, "") // the attempt is closed

	// /failed needs a non-blank error.
	require.Equal(t, 1, status(mark(m[1], "processing", nil)).AttemptNumber, "claim of m2")
	for _, body := range []any{map[string]string{"error": ""}, map[string]string{"error": "   "}, map[string]any{}} {
		mark(m[1], "failed", body).expectError(t, http.StatusUnprocessableEntity, "")
	}
	require.Equal(t, messageStatus{ID: m[1], Status: "failed", AttemptNumber: 1, Success: true}, status(mark(m[1], "failed", map[string]string{"error": "boom"})), "failed")
	mark(m[1], "failed", map[string]string{"error": "again"}).expectError(t, http.StatusUnprocessableEntity, "")

	require.Equal(t, 1, status(mark(m[2], "processing", nil)).AttemptNumber, "claim of m3")

	// A failed message is still actionable: it is the oldest unprocessed.
	next := data[message](t, ag.do(t, http.MethodGet, agentMessages(room)+"/next", nil).expect(t, http.StatusOK))
	require.Equal(t, m[1], next.ID, "/next after m1 processed and m2 failed")

	cases := []struct {
		name   string
		filter string
		want   []string
	}{
		{name: "default is everything not processed", filter: "", want: []string{m[1], m[2], m[3]}},
		{name: "pending is untouched or failed without an attempt", filter: "pending", want: []string{m[1], m[3]}},
		{name: "processing", filter: "processing", want: []string{m[2]}},
		{name: "processed", filter: "processed", want: []string{m[0]}},
		{name: "failed", filter: "failed", want: []string{m[1]}},
		{name: "all", filter: "all", want: m},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := agentMessages(room)
			if tc.filter != "" {
				path += "?status=" + tc.filter
			}
			ms, meta := list[message](t, ag.do(t, http.MethodGet, path, nil).expect(t, http.StatusOK))
			require.Equal(t, tc.want, ids(ms), "GET %s, oldest first", path)
			require.NotNil(t, meta.HasMore, "metadata.has_more")
			require.False(t, *meta.HasMore, "metadata.has_more")
		})
	}

	t.Run("owner sees the delivery status", func(t *testing.T) {
		t.Parallel()
		ms, _ := list[message](t, e.owner.do(t, http.MethodGet, meMessages(room), nil).expect(t, http.StatusOK))
		got := map[string]string{}
		for _, msg := range ms {
			if d, ok := msg.Metadata.DeliveryStatus[a.ID]; ok {
				got[msg.ID] = d.Status
			}
		}
		require.Equal(t, "processed", got[m[0]], "delivery_status[A] of m1")
		require.Equal(t, "failed", got[m[1]], "delivery_status[A] of m2")
		require.Equal(t, "processing", got[m[2]], "delivery_status[A] of m3")
		if s, ok := got[m[3]]; ok {
			require.Equal(t, "delivered", s, "delivery_status[A] of the untouched m4")
		}
	})
}
