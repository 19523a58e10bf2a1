package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// EventsOptions are the inputs of "jam events".
type EventsOptions struct {
	IO      *IOStreams
	DataDir string
	// After is the sequence to resume after; wire.EventsLive to start at
	// the present.
	After int64
	JSON  bool
	// RetryInterval is how long to wait before connecting again while the
	// daemon is down. Default 2s.
	RetryInterval time.Duration
}

func newEventsCmd(io *IOStreams, deps Deps, runF func(context.Context, *EventsOptions) error) *cobra.Command {
	opts := &EventsOptions{IO: io}
	var after int64
	cmd := &cobra.Command{
		Use:   "events [--after SEQ] [--json]",
		Short: "Follow the daemon's event stream",
		Long: `Follow the daemon's event stream: one line per event (sequence, time, kind,
agent, room, message and details), or with --json the event's JSON line.
Without --after the stream starts now, with a reset event that carries the
current state; with --after SEQ it first replays every event after SEQ.

When the daemon ends the stream (because this reader fell behind, or it
stops) or the connection drops, it resumes after the last event seen, so
nothing is missed or printed twice; while the daemon is down it tries again
every 2 seconds. It runs until interrupted (Ctrl-C), and then exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.After = wire.EventsLive
			if c.Flags().Changed("after") {
				if after < 0 {
					return &usageError{err: fmt.Errorf("--after %d is negative", after)}
				}
				opts.After = after
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runEvents(c.Context(), opts)
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "replay the events after this sequence first")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print each event's JSON line")
	return cmd
}

func runEvents(ctx context.Context, opts *EventsOptions) error {
	retry := opts.RetryInterval
	if retry <= 0 {
		retry = 2 * time.Second
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	f := &follower{opts: opts, after: opts.After}
	down := false
	for ctx.Err() == nil {
		stream, err := client.Events(ctx, wire.EventsRequest{After: f.after})
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !retryable(err):
			return err
		case err != nil:
			if !down {
				fmt.Fprintf(opts.IO.ErrOut, "jam: %s; retrying every %s\n", oneLine(err.Error()), retry)
				down = true
			}
		default:
			if down {
				fmt.Fprintln(opts.IO.ErrOut, "jam: connected to jamd again")
				down = false
			}
			got, err := f.drain(stream)
			stream.Close()
			if err != nil {
				return err
			}
			if got {
				continue // resume at once
			}
			// A stream that ended before its first event: wait, so a
			// daemon that keeps ending streams is not polled in a loop.
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	return nil
}

// retryable reports whether a failure to open the stream may pass: the
// daemon is down, stopping or busy, or the connection failed.
func retryable(err error) bool {
	var ae *apiclient.Error
	if errors.As(err, &ae) {
		return ae.Code == wire.CodeStopping || ae.Code == wire.CodeUnavailable
	}
	return true
}

// follower prints a stream and remembers where it stands.
type follower struct {
	opts *EventsOptions
	// after is the last sequence seen, or wire.EventsLive before any.
	after int64
}

// drain prints events until the stream ends and reports whether it got
// any. Only a failure to print is an error: a stream that ends, cleanly
// or not, is resumed by the caller.
func (f *follower) drain(s *apiclient.EventStream) (got bool, err error) {
	for {
		ev, err := s.Next()
		if err != nil {
			return got, nil
		}
		got = true
		// A stream_resync names the last event to resume after: the last
		// one this stream delivered, or one it had to skip.
		f.after = ev.Seq
		if f.opts.JSON {
			_, err = fmt.Fprintf(f.opts.IO.Out, "%s\n", s.Raw())
		} else {
			_, err = fmt.Fprintln(f.opts.IO.Out, formatEvent(ev))
		}
		if err != nil {
			return got, fmt.Errorf("print event: %w", err)
		}
	}
}

// formatEvent renders one event on one line: sequence, local time, kind,
// peer, room, message, then the data's fields as key=value in key order.
func formatEvent(ev wire.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s %s", ev.Seq, ev.At.Local().Format("15:04:05.000"), ev.Kind)
	if ev.Peer != "" {
		b.WriteString(" " + ev.Peer)
	}
	if ev.Room != "" {
		b.WriteString(" room=" + ev.Room)
	}
	if ev.MessageID != "" {
		b.WriteString(" msg=" + ev.MessageID)
	}
	var fields map[string]json.RawMessage
	if len(ev.Data) > 0 && json.Unmarshal(ev.Data, &fields) == nil {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteString(" " + k + "=" + formatValue(fields[k]))
		}
	}
	return b.String()
}

// formatValue shows a string bare unless it needs quotes, and anything
// else as compact JSON.
func formatValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" || strings.ContainsAny(s, " \t\n\"=") || strconv.Quote(s) != `"`+s+`"` {
			return strconv.Quote(s)
		}
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
