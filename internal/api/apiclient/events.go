package apiclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/jamhq/jam/internal/api/wire"
)

// EventStream reads GET /v1/events. It is not safe for concurrent use,
// except that Close may be called while Next waits.
type EventStream struct {
	body io.ReadCloser
	lr   *lineReader
	raw  []byte
	// last is the seq of the last event returned, or the position the
	// stream was opened at (wire.EventsLive included) before the first.
	last int64
}

// Events opens the daemon's event stream from r.After (wire.EventsLive for
// none). The stream stays open until ctx ends, the daemon ends it, or
// Close; no timeout applies to it.
func (c *Client) Events(ctx context.Context, r wire.EventsRequest) (*EventStream, error) {
	const path = "/v1/events"
	target := "http://jamd" + path
	if r.After >= 0 {
		target += "?" + url.Values{"after": {strconv.FormatInt(r.After, 10)}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := c.hc.Do(req)
	if err != nil {
		if notRunning(err) {
			return nil, fmt.Errorf("%w (no daemon answers on %s)", ErrNotRunning, c.socket)
		}
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var eb wire.ErrorBody
		if json.Unmarshal(raw, &eb) != nil || eb.Error.Code == "" {
			return nil, &Error{HTTPStatus: resp.StatusCode, Code: wire.CodeInternal, Message: fmt.Sprintf("GET %s: unexpected %s", path, resp.Status)}
		}
		return nil, &Error{HTTPStatus: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	return &EventStream{body: resp.Body, lr: newLineReader(resp.Body, wire.MaxEventLine), last: r.After}, nil
}

// Next returns the next event. It returns io.EOF when the daemon ended the
// stream (after a stream_resync, or because it is stopping); any other
// error means the connection broke. Either way, resume with a new stream
// after the last sequence seen. A line over wire.MaxEventLine is dropped
// and reported in-band as a stream_resync event (reason line_too_long)
// carrying that line's seq when it can be read from the line's start, else
// the last seq before it (wire.EventsLive if the stream opened live and
// nothing came before it).
func (s *EventStream) Next() (wire.Event, error) {
	line, err := s.lr.next()
	if errors.Is(err, errLineTooLong) {
		seq, ok := leadingSeq(line)
		if !ok {
			seq = s.last
		}
		ev := wire.Event{Seq: seq, Kind: wire.EventKindStreamResync, Data: json.RawMessage(`{"reason":"` + wire.ResyncLineTooLong + `"}`)}
		s.raw, _ = json.Marshal(ev)
		s.last = seq
		return ev, nil
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return wire.Event{}, io.EOF
		}
		return wire.Event{}, fmt.Errorf("read event stream: %w", err)
	}
	var ev wire.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return wire.Event{}, fmt.Errorf("read event stream: decode line: %w", err)
	}
	s.raw = append(s.raw[:0], line...)
	s.last = ev.Seq
	return ev, nil
}

// Raw returns the JSON line of the event Next last returned. It is valid
// until the next call of Next.
func (s *EventStream) Raw() []byte { return s.raw }

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

// leadingSeq reads the seq of an event line from its first bytes, which
// is where the daemon writes it: {"seq":123,…}.
func leadingSeq(head []byte) (int64, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimLeft(head, " \t"), []byte(`{"seq":`))
	if !ok {
		return 0, false
	}
	end := 0
	for end < len(rest) && '0' <= rest[end] && rest[end] <= '9' {
		end++
	}
	if end == 0 || end == len(rest) {
		return 0, false // no digits, or possibly cut short
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// errLineTooLong reports a line over the reader's bound; next returns the
// line's first bytes with it.
var errLineTooLong = errors.New("line too long")

// lineHead is how much of an over-long line next keeps.
const lineHead = 64

// lineReader splits a stream into lines of at most max bytes, without
// holding more than max+2 bytes of one line in memory. Lines end with
// "\n" or "\r\n"; empty lines are skipped.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return newLineReaderSize(r, max, 64<<10)
}

func newLineReaderSize(r io.Reader, max, bufSize int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, bufSize), max: max}
}

// next returns the next non-empty line, valid until the next call. A line
// longer than max is read to its end and dropped: next returns its first
// lineHead bytes and errLineTooLong. At the end of the input it returns
// io.EOF, or io.ErrUnexpectedEOF if the input stopped in the middle of a
// line (which is dropped).
func (l *lineReader) next() ([]byte, error) {
	for {
		l.line = l.line[:0]
		tooLong := false
		for {
			frag, err := l.r.ReadSlice('\n')
			complete := err == nil
			// max+2 bytes could still be a line of max and its "\r\n";
			// beyond that the line is too long whatever ends it, and only
			// its head is kept (with room for a "\r\n" right after it).
			if !tooLong && len(l.line)+len(frag) > l.max+2 {
				tooLong = true
			}
			if tooLong {
				keep := max(0, min(lineHead+2-len(l.line), len(frag)))
				l.line = append(l.line, frag[:keep]...)
			} else {
				l.line = append(l.line, frag...)
			}
			if complete {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if errors.Is(err, io.EOF) {
				if len(l.line) == 0 && !tooLong {
					return nil, io.EOF
				}
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line := l.line
		if bytes.HasSuffix(line, []byte("\n")) {
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
		}
		if tooLong || len(line) > l.max {
			return line[:min(len(line), lineHead)], errLineTooLong
		}
		if len(line) > 0 {
			return line, nil
		}
	}
}
