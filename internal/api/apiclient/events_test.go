package apiclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestClient_Events(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	stream := apitest.NewStream(
		wire.Event{Seq: 4, Kind: wire.EventKindReset, At: at, Data: json.RawMessage(`{"reason":"subscribe","snapshots":{}}`)},
		wire.Event{Seq: 5, Kind: "agent.state", At: at, Peer: "local/coder", Data: json.RawMessage(`{"state":"up"}`)},
	)
	stream.End(io.EOF)
	got := make(chan wire.EventsRequest, 2)
	socket := filepath.Join(shortDir(t), "s.sock")
	startServer(t, socket, backend{EventsFunc: func(_ context.Context, r wire.EventsRequest) (wire.EventStream, error) {
		got <- r
		if r.After == 99 {
			return nil, fmt.Errorf("%w: no", jam.ErrInvalid)
		}
		return stream, nil
	}})
	c := apiclient.New(socket)
	defer c.Close()

	s, err := c.Events(t.Context(), wire.EventsRequest{After: wire.EventsLive})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, wire.EventsRequest{After: wire.EventsLive}, <-got)
	ev, err := s.Next()
	require.NoError(t, err)
	require.Equal(t, int64(4), ev.Seq)
	require.Equal(t, wire.EventKindReset, ev.Kind)
	ev, err = s.Next()
	require.NoError(t, err)
	require.Equal(t, wire.Event{Seq: 5, Kind: "agent.state", At: at, Peer: "local/coder", Data: json.RawMessage(`{"state":"up"}`)}, ev)
	require.JSONEq(t, `{"seq":5,"kind":"agent.state","at":"2026-01-02T03:04:05Z","peer":"local/coder","data":{"state":"up"}}`, string(s.Raw()))
	_, err = s.Next()
	require.ErrorIs(t, err, io.EOF, "the daemon ended the stream")

	_, err = c.Events(t.Context(), wire.EventsRequest{After: 99})
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.Equal(t, wire.CodeInvalidArgument, ae.Code)
	require.Equal(t, wire.EventsRequest{After: 99}, <-got, "the position travels as ?after=")
}

func TestClient_EventsNotRunning(t *testing.T) {
	t.Parallel()
	c := apiclient.New(filepath.Join(shortDir(t), "missing.sock"))
	defer c.Close()
	_, err := c.Events(t.Context(), wire.EventsRequest{After: 0})
	require.ErrorIs(t, err, apiclient.ErrNotRunning)
}

// TestClient_EventsOverCapLine serves a stream with a line over 1 MiB (a
// daemon would have replaced it itself): the client drops it and reports
// an in-band stream_resync with its seq, then goes on.
func TestClient_EventsOverCapLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		lines   []string
		wantSeq int64
	}{
		{
			"seq readable from the line's start",
			[]string{`{"seq":1,"kind":"a"}`, `{"seq":2,"kind":"big","data":{"x":"` + strings.Repeat("x", wire.MaxEventLine) + `"}}`, `{"seq":3,"kind":"c"}`},
			2,
		},
		{
			"seq unreadable: the last one before it",
			[]string{`{"seq":1,"kind":"a"}`, `{"kind":"big","seq":2,"data":{"x":"` + strings.Repeat("x", wire.MaxEventLine) + `"}}`, `{"seq":3,"kind":"c"}`},
			1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			socket := filepath.Join(shortDir(t), "s.sock")
			l, err := net.Listen("unix", socket)
			require.NoError(t, err)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.Equal(t, "after=0", r.URL.RawQuery)
				w.Header().Set("Content-Type", "application/x-ndjson")
				for _, line := range tt.lines {
					fmt.Fprintln(w, line)
				}
			})}
			var wg sync.WaitGroup
			wg.Go(func() { _ = srv.Serve(l) })
			defer func() { srv.Close(); wg.Wait() }()

			c := apiclient.New(socket)
			defer c.Close()
			s, err := c.Events(t.Context(), wire.EventsRequest{After: 0})
			require.NoError(t, err)
			defer s.Close()
			var kinds []string
			var seqs []int64
			for {
				ev, err := s.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				kinds, seqs = append(kinds, ev.Kind), append(seqs, ev.Seq)
				if ev.Kind == wire.EventKindStreamResync {
					require.JSONEq(t, `{"reason":"line_too_long"}`, string(ev.Data))
					require.JSONEq(t, fmt.Sprintf(`{"seq":%d,"kind":"stream_resync","at":"0001-01-01T00:00:00Z","data":{"reason":"line_too_long"}}`, tt.wantSeq), string(s.Raw()))
				}
			}
			require.Equal(t, []string{"a", wire.EventKindStreamResync, "c"}, kinds)
			require.Equal(t, []int64{1, tt.wantSeq, 3}, seqs)
		})
	}
}
