package engine

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

// TestEngine_failMarksFailedAndKeepsTheMessageQueued: a message its agent
// could not serve is marked failed on Band with the reason, stays queued
// (not settled), and the reply of a later turn settles it.
func TestEngine_failMarksFailedAndKeepsTheMessageQueued(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	id := b.inbound(t, 1, "task")
	b.delivered(t)
	msg := jam.PlatformMessageID(id)
	require.NoError(t, b.eng.Fail(t.Context(), b.ws, b.peer, msg, "start agent: exec: \"nope\": executable file not found in $PATH\n"))
	b.waitEvent(t, EventFailed, id)
	require.Contains(t, b.agent.Calls(), "failed "+id+` start agent: exec: "nope": executable file not found in $PATH`)
	_, err := b.st.QueueGet(t.Context(), b.ws, b.peer, msg)
	require.NoError(t, err, "a failed message is still queued")
	for _, c := range b.agent.Calls() {
		require.NotEqual(t, "processed "+id, c, "a failure never settles")
	}

	_, err = b.eng.Reply(t.Context(), ReplyParams{WorkspaceID: b.ws, Peer: b.peer, MessageID: msg, Text: "done"})
	require.NoError(t, err)
	b.waitEvent(t, EventSettled, id)
	_, err = b.st.QueueGet(t.Context(), b.ws, b.peer, msg)
	require.ErrorIs(t, err, jam.ErrNotFound)
}

// TestEngine_failOpensAnAttemptWhenNoneIsActive: Band closes only an
// active attempt; after a restart (or an earlier mark) there is none, and
// Fail opens one first.
func TestEngine_failOpensAnAttemptWhenNoneIsActive(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	id := b.inbound(t, 1, "task")
	b.delivered(t)
	var refused atomic.Int32
	b.agent.mu.Lock()
	b.agent.FailedF = func(_, _ string) error {
		if refused.Add(1) == 1 {
			return fmt.Errorf("%w: no_active_attempt", jam.ErrInvalid)
		}
		return nil
	}
	b.agent.mu.Unlock()
	require.NoError(t, b.eng.Fail(t.Context(), b.ws, b.peer, jam.PlatformMessageID(id), "turn cancelled"))
	b.waitEvent(t, EventFailed, id)
	calls := b.agent.Calls()
	require.Equal(t, []string{"failed " + id + " turn cancelled", "processing " + id, "failed " + id + " turn cancelled"}, calls[len(calls)-3:])
}

// TestEngine_failRetriesInTheBackground: a mark Band refuses for now is
// retried, and Fail returns without waiting for it; the last reason given
// is the one posted.
func TestEngine_failRetriesInTheBackground(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	id := b.inbound(t, 1, "task")
	b.delivered(t)
	release := make(chan struct{})
	var n atomic.Int32
	b.agent.mu.Lock()
	b.agent.FailedF = func(_, _ string) error {
		if n.Add(1) == 1 {
			return fmt.Errorf("%w: 503", jam.ErrUnavailable)
		}
		<-release
		return nil
	}
	b.agent.mu.Unlock()
	msg := jam.PlatformMessageID(id)
	require.NoError(t, b.eng.Fail(t.Context(), b.ws, b.peer, msg, "first"))
	b.waitEvent(t, EventFailRetry, id)
	require.NoError(t, b.eng.Fail(t.Context(), b.ws, b.peer, msg, "second"), "a pending retry takes the new reason")
	close(release)
	b.waitEvent(t, EventFailed, id)
	calls := b.agent.Calls()
	require.Contains(t, calls[len(calls)-1], "second")
}

func TestFailReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "failed"},
		{" \n\t ", "failed"},
		{"harness_error: start agent\nexit status 1\r\n", "harness_error: start agent exit status 1"},
		{"a\x00b\x1bc", "a b c"},
		{"bad \xff utf8", "bad ? utf8"},
		{"line\u2028sep", "line sep"},
	} {
		require.Equal(t, tc.want, FailReason(tc.in), "%q", tc.in)
	}
	long := FailReason(strings.Repeat("é", 1000))
	require.LessOrEqual(t, len(long), MaxFailReason)
	require.True(t, strings.HasSuffix(long, "…"))
	require.True(t, utf8.ValidString(long))
}

func FuzzFailReason(f *testing.F) {
	for _, s := range []string{"", "x", "a\nb", strings.Repeat("é", 400), "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := FailReason(s)
		if r == "" || strings.TrimSpace(r) != r || len(r) > MaxFailReason || !utf8.ValidString(r) || strings.ContainsAny(r, "\r\n\x00") {
			t.Fatalf("FailReason(%q) = %q", s, r)
		}
	})
}

// TestEngine_refusedRoomMarksItsMessagesFailed: a room its agent cannot
// serve (no session could be made there) has no binding, so its messages
// wait unrouted; each is marked failed with why, those queued before the
// refusal too, and none is settled. ServeRoom ends it.
func TestEngine_refusedRoomMarksItsMessagesFailed(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	early := b.inbound(t, 1, "before")
	b.waitEvent(t, EventQueuedUnrouted, early)
	why := "worktree of room: not a git repository"
	require.NoError(t, b.eng.RefuseRoom(t.Context(), b.ws, b.peer, b.room, why))
	b.waitEvent(t, EventFailed, early)
	late := b.inbound(t, 2, "after")
	b.waitEvent(t, EventFailed, late)
	calls := b.agent.Calls()
	require.Contains(t, calls, "failed "+early+" "+why)
	require.Contains(t, calls, "failed "+late+" "+why)
	for _, id := range []string{early, late} {
		_, err := b.st.QueueGet(t.Context(), b.ws, b.peer, jam.PlatformMessageID(id))
		require.NoError(t, err, "still queued")
	}

	b.eng.ServeRoom(b.ws, b.peer, b.room)
	third := b.inbound(t, 3, "served")
	b.waitEvent(t, EventQueuedUnrouted, third)
	for _, c := range b.agent.Calls() {
		require.NotContains(t, c, "failed "+third)
	}
}
