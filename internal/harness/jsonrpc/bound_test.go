package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConn_floodOfRequestsIsBounded: 10,000 requests whose handler blocks
// once made 10,000 goroutines; now MaxHandlers run, the rest are answered
// busy at once, and the running ones answer when released.
func TestConn_floodOfRequestsIsBounded(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	const n = 10_000
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	release := make(chan struct{})
	started := make(chan struct{}, n)
	c := New(inR, outW, Options{Handler: func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "done", nil
	}})
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	run := make(chan error, 1)
	wg.Go(func() { run <- c.Run(context.Background()) })
	answers := make(chan Message, n)
	wg.Go(func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				m, derr := Decode(line)
				if derr != nil {
					t.Errorf("answer %q: %v", line, derr)
				}
				answers <- m
			}
			if err != nil {
				return
			}
		}
	})
	t.Cleanup(func() {
		inW.Close()
		<-run
		outW.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for i := range n {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"block"}`+"\n", i); err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
		}
	})

	// Every request has either started its handler or been answered.
	running, busy := 0, 0
	deadline := time.After(time.Minute)
	for running+busy < n {
		select {
		case <-started:
			running++
		case m := <-answers:
			require.NotNil(t, m.Error, "no handler answers before release: %+v", m)
			require.Equal(t, CodeBusy, m.Error.Code)
			busy++
		case <-deadline:
			t.Fatalf("after a minute: %d handlers running, %d answered busy", running, busy)
		}
	}
	require.LessOrEqual(t, runtime.NumGoroutine()-base, DefaultMaxHandlers+8, "goroutines for %d blocked requests", n)
	require.Equal(t, DefaultMaxHandlers, running)

	close(release)
	for done := 0; done < running; done++ {
		select {
		case m := <-answers:
			require.Nil(t, m.Error)
			require.JSONEq(t, `"done"`, string(m.Result))
		case <-time.After(time.Minute):
			t.Fatalf("%d of %d released handlers answered", done, running)
		}
	}
}

// TestConn_encodedResult: an Encoded result is written as is, and its
// Written runs once it is.
func TestConn_encodedResult(t *testing.T) {
	t.Parallel()
	written := make(chan struct{})
	c, _ := pair(t, Options{}, Options{Handler: func(context.Context, string, json.RawMessage) (any, error) {
		return &Encoded{JSON: json.RawMessage(`{"content":"x\u0000y"}`), Written: func() { close(written) }}, nil
	}})
	var got struct{ Content string }
	require.NoError(t, c.Call(t.Context(), "read", nil, &got))
	require.Equal(t, "x\x00y", got.Content)
	<-written
}
