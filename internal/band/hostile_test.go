package band

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/phoenix"
)

// TestSocket_hostileServerFrames: a frame no honest Band sends ends the
// session with an error naming it, and the socket reconnects and works;
// a binary frame is ignored.
func TestSocket_hostileServerFrames(t *testing.T) {
	t.Parallel()
	nested := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	for _, tc := range []struct {
		name    string
		typ     websocket.MessageType
		data    string
		wantErr string // "" when the session survives
	}{
		{"not json", websocket.MessageText, `hello`, "bad frame"},
		{"four elements", websocket.MessageText, `[null,null,"room:1","message_created"]`, "bad frame"},
		{"empty topic", websocket.MessageText, `[null,null,"","message_created",{}]`, "bad frame"},
		{"invalid utf-8", websocket.MessageText, "[null,null,\"room:\xff\",\"message_created\",{}]", "bad frame"},
		{"deeply nested payload", websocket.MessageText, `[null,null,"room:1","message_created",` + nested + `]`, "bad frame"},
		{"oversize frame", websocket.MessageText, `[null,null,"room:1","message_created",{"x":"` + strings.Repeat("x", phoenix.MaxFrameBytes) + `"}]`, "read"},
		{"binary frame", websocket.MessageBinary, `[null,null,"room:1","message_created",{}]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fp := newFakePhoenix(t)
			s, err := NewSocket(testSocketConfig(fp.srv.URL, APIKey("k")))
			require.NoError(t, err)
			rec := newRecorder(func(ctx context.Context, s *Session) error { return s.Join(ctx, "room:1") })
			runSocket(t, s, rec)
			fc := fp.accept(t)
			join := fc.nextNot(t, phoenix.EventHeartbeat)
			fc.reply(t, join, phoenix.StatusOK, nil)
			rec.waitState(t, StateUp)

			_ = fc.c.Write(context.Background(), tc.typ, []byte(tc.data))
			if tc.wantErr == "" {
				// Still the same session: a push arrives.
				fc.send(t, phoenix.Frame{JoinRef: join.JoinRef, Topic: "room:1", Event: "message_created", Payload: json.RawMessage(`{"id":"m1"}`)})
				p := waitPush(t, rec)
				require.Equal(t, "message_created", p.Event)
				return
			}
			sc := rec.waitState(t, StateReconnecting)
			require.ErrorContains(t, sc.err, tc.wantErr)
			fc = fp.accept(t)
			join = fc.nextNot(t, phoenix.EventHeartbeat)
			fc.reply(t, join, phoenix.StatusOK, nil)
			rec.waitState(t, StateUp)
		})
	}
}

// TestSocket_repeatedRepliesDoNotWedgeTheReader: a server that answers one
// request several times must not block the reader (which would stop every
// push and hang the session's shutdown).
func TestSocket_repeatedRepliesDoNotWedgeTheReader(t *testing.T) {
	t.Parallel()
	fp := newFakePhoenix(t)
	s, err := NewSocket(testSocketConfig(fp.srv.URL, APIKey("k")))
	require.NoError(t, err)
	rec := newRecorder(func(ctx context.Context, s *Session) error { return s.Join(ctx, "room:1") })
	cancel, done := runSocket(t, s, rec)
	fc := fp.accept(t)
	join := fc.nextNot(t, phoenix.EventHeartbeat)
	for range 4 {
		fc.reply(t, join, phoenix.StatusOK, nil)
	}
	rec.waitState(t, StateUp)
	fc.send(t, phoenix.Frame{JoinRef: join.JoinRef, Topic: "room:1", Event: "message_created", Payload: json.RawMessage(`{"id":"m1"}`)})
	require.Equal(t, "message_created", waitPush(t, rec).Event, "the reader still reads")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the socket did not stop")
	}
}

func waitPush(t *testing.T, rec *recorder) Push {
	t.Helper()
	select {
	case p := <-rec.pushes:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no push")
		return Push{}
	}
}
