package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// EventStream is what the backend returns for GET /v1/events; see
// wire.EventStream.
type EventStream = wire.EventStream

// eventWriteTimeout bounds how long one write of the stream may take: a
// client that accepts nothing for this long is disconnected (it resumes
// with ?after= like any other).
const eventWriteTimeout = 30 * time.Second

// handleEvents streams events until the client goes, the stream ends, or
// the server stops. It is held open outside any request budget, on the
// server's held-open context, like waitInbox.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	q, err := query(r, "after", "format")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := wire.EventsRequest{After: wire.EventsLive}
	switch v, idv := q.Get("after"), r.Header.Get("Last-Event-ID"); {
	case q.Has("after"):
		if req.After, err = parseSeq("query parameter after", v); err != nil {
			s.writeError(w, r, err)
			return
		}
	case idv != "":
		// An EventSource reconnecting sends the id of the last event it got.
		if req.After, err = parseSeq("Last-Event-ID", idv); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	sse, err := wantsSSE(q.Get("format"), r.Header.Get("Accept"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}

	ctx, cancel := s.streamContext(r.Context())
	defer cancel()
	if ctx.Err() != nil {
		s.writeError(w, r, fmt.Errorf("events: %w", jam.ErrStopping))
		return
	}
	stream, err := s.backend.Events(ctx, req)
	if err != nil {
		s.writeError(w, r, fmt.Errorf("events: %w", err))
		return
	}
	defer stream.Close()

	rc := http.NewResponseController(w)
	dl := &deadlines{rc: rc}
	// A stop (or the client leaving) cuts a write that is blocked on a
	// client that reads nothing, instead of waiting out its timeout.
	stopCut := context.AfterFunc(ctx, dl.cut)
	defer stopCut()

	h := w.Header()
	if sse {
		h.Set("Content-Type", "text/event-stream")
	} else {
		h.Set("Content-Type", "application/x-ndjson")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	// The connection ends with the stream: the write deadlines set here
	// must never carry over to a request that would reuse it.
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}

	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	if !sse {
		heartbeat.Stop()
	}
	var line []byte
	for {
		ev, ok, err := stream.TryNext(ctx)
		switch {
		case err != nil:
			if !errors.Is(err, io.EOF) && ctx.Err() == nil && !errors.Is(err, jam.ErrStopping) {
				s.log.Warn("event stream ended", "err", err)
			}
			return
		case ok:
			if line, err = encodeEvent(line[:0], ev, sse); err != nil {
				s.log.Error("encode event", "seq", ev.Seq, "err", err)
				return
			}
			if err := dl.write(w, line); err != nil {
				return
			}
			continue
		}
		// Nothing more is ready: send what was written.
		if err := dl.flush(); err != nil {
			return
		}
		select {
		case <-stream.Ready():
		case <-heartbeat.C:
			if err := dl.write(w, []byte(": heartbeat\n\n")); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// streamContext derives the context of a stream: it ends when the request
// ends or when Stop begins, and has no timeout of its own.
func (s *Server) streamContext(parent context.Context) (context.Context, context.CancelFunc) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(parent)
	stop := func() bool { return false }
	if held != nil {
		stop = context.AfterFunc(held, func() { cancel(context.Cause(held)) })
	}
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// deadlines sets the write deadline of a stream's connection around each
// write. Once the stream is cut (the server stops or the client left), a
// write in progress fails at once, later writes are refused, and an idle
// stream keeps a short grace to write the end of its response.
type deadlines struct {
	rc *http.ResponseController

	mu      sync.Mutex
	writing bool // guarded by mu
	stopped bool // guarded by mu
}

// endGrace is how long a cut stream may take to write the end of its
// response.
const endGrace = time.Second

func (d *deadlines) arm() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return context.Canceled
	}
	d.writing = true
	return d.rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
}

func (d *deadlines) disarm() {
	d.mu.Lock()
	d.writing = false
	d.mu.Unlock()
}

func (d *deadlines) write(w io.Writer, b []byte) error {
	if err := d.arm(); err != nil {
		return err
	}
	defer d.disarm()
	_, err := w.Write(b)
	return err
}

func (d *deadlines) flush() error {
	if err := d.arm(); err != nil {
		return err
	}
	defer d.disarm()
	return d.rc.Flush()
}

// cut ends the stream's writing; see deadlines.
func (d *deadlines) cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopped = true
	at := time.Now()
	if !d.writing {
		at = at.Add(endGrace)
	}
	_ = d.rc.SetWriteDeadline(at) // the connection may already be gone
}

// encodeEvent appends ev to dst as one NDJSON line or one SSE event. An
// event whose JSON exceeds wire.MaxEventLine becomes a stream_resync
// event with its seq, so a client resuming after it skips it.
func encodeEvent(dst []byte, ev wire.Event, sse bool) ([]byte, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	if len(raw) > wire.MaxEventLine {
		skipped := wire.Event{Seq: ev.Seq, Kind: wire.EventKindStreamResync, At: ev.At, Data: json.RawMessage(`{"reason":"` + wire.ResyncLineTooLong + `"}`)}
		if raw, err = json.Marshal(skipped); err != nil {
			return nil, err
		}
	}
	if !sse {
		dst = append(dst, raw...)
		return append(dst, '\n'), nil
	}
	dst = append(dst, "id: "...)
	dst = strconv.AppendInt(dst, ev.Seq, 10)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, raw...) // JSON from Marshal holds no raw newline
	return append(dst, "\n\n"...), nil
}

// parseSeq parses a non-negative event sequence.
func parseSeq(what, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, invalid("%s=%s is not a sequence number (a non-negative integer)", what, clip(v))
	}
	return n, nil
}

// wantsSSE decides the stream's format: ?format=sse or ndjson, else
// Server-Sent Events when the client accepts text/event-stream.
func wantsSSE(format, accept string) (bool, error) {
	switch format {
	case "sse":
		return true, nil
	case "ndjson":
		return false, nil
	case "":
	default:
		return false, invalid("query parameter format=%s is not ndjson or sse", clip(format))
	}
	for _, part := range strings.Split(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true, nil
		}
	}
	return false, nil
}
