package events

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// peerLog appends one JSON line per event that names a peer to
// <dir>/<profile>/<scope>.log (a PeerKey is safe in file names). A line
// is the event without its data, which may carry what a person or an
// agent wrote (a turn's output, an error quoting a reply): only the
// data's size is logged, and `jam events` shows the data from the store,
// where it is sealed. A file
// that would grow past maxBytes is first renamed to <scope>.log.1,
// replacing the previous backup, so a peer keeps at most two files. At
// most maxOpen files are open at once; the least recently written one is
// closed to make room.
//
// The log is diagnostics for people: the store is the record. A failed
// write is therefore logged (once per peer until a write succeeds again)
// and skipped, never retried and never allowed to hold up the broker.
// Only the broker's writer goroutine uses a peerLog, so it has no lock.
type peerLog struct {
	dir      string
	maxBytes int64
	maxOpen  int
	log      *slog.Logger

	files   map[jam.PeerKey]*list.Element // of *peerFile
	lru     *list.List                    // most recently used first
	failing map[jam.PeerKey]bool
	touched []*peerFile
}

// peerFile is one open log. pending holds the lines of the current batch,
// written with one call at the end of the batch (or before a rotation or
// a close).
type peerFile struct {
	key     jam.PeerKey
	path    string
	f       *os.File
	size    int64 // bytes in the file plus pending
	pending []byte
}

func newPeerLog(dir string, maxBytes int64, maxOpen int, log *slog.Logger) *peerLog {
	return &peerLog{dir: dir, maxBytes: maxBytes, maxOpen: maxOpen, log: log, files: map[jam.PeerKey]*list.Element{}, lru: list.New(), failing: map[jam.PeerKey]bool{}}
}

// write appends the events of batch that name a peer.
func (p *peerLog) write(batch []*Event) {
	p.touched = p.touched[:0]
	for _, e := range batch {
		if e.Peer.IsZero() {
			continue
		}
		line, err := json.Marshal(lineOf(e))
		if err != nil {
			p.fail(e.Peer, fmt.Errorf("encode event %d: %w", e.Seq, err))
			continue
		}
		line = append(line, '\n')
		pf, err := p.file(e.Peer)
		if err != nil {
			p.fail(e.Peer, err)
			continue
		}
		if pf.size > 0 && pf.size+int64(len(line)) > p.maxBytes {
			if err := p.rotate(pf); err != nil {
				p.fail(e.Peer, err)
				continue
			}
		}
		if len(pf.pending) == 0 {
			p.touched = append(p.touched, pf)
		}
		pf.pending = append(pf.pending, line...)
		pf.size += int64(len(line))
	}
	for _, pf := range p.touched {
		if err := p.flush(pf); err != nil {
			p.fail(pf.key, err)
		} else {
			delete(p.failing, pf.key)
		}
	}
}

// peerLine is one line of a peer log: an event's envelope and the size
// of its data.
type peerLine struct {
	Seq       int64                 `json:"seq"`
	Kind      string                `json:"kind"`
	At        time.Time             `json:"at"`
	Peer      jam.PeerKey           `json:"peer,omitzero"`
	Room      jam.RoomID            `json:"room,omitempty"`
	MessageID jam.PlatformMessageID `json:"message_id,omitempty"`
	DataBytes int                   `json:"data_bytes,omitempty"`
}

func lineOf(e *Event) peerLine {
	return peerLine{Seq: e.Seq, Kind: e.Kind, At: e.At, Peer: e.Peer, Room: e.Room, MessageID: e.MessageID, DataBytes: len(e.Data)}
}

// scrubPeerLogs rewrites every log under dir (<profile>/<scope>.log and
// its .1 backup) that holds a line with event data, as earlier builds
// wrote them, keeping each line's envelope and the data's size. A line
// that is not an event is dropped. A log is rewritten under a temporary
// name, fsynced and renamed over the old one, so a crash leaves either.
// Called at Start, before the writer opens any log.
func scrubPeerLogs(dir string) error {
	profiles, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("peer logs: %w", err)
	}
	for _, p := range profiles {
		if !p.IsDir() {
			continue
		}
		logs, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			return fmt.Errorf("peer logs: %w", err)
		}
		for _, l := range logs {
			if name := l.Name(); l.Type().IsRegular() && (strings.HasSuffix(name, ".log") || strings.HasSuffix(name, ".log.1")) {
				if err := scrubPeerLog(filepath.Join(dir, p.Name(), name)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// scrubPeerLog rewrites one log if any line carries data.
func scrubPeerLog(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("peer log: %w", err)
	}
	if !bytes.Contains(raw, []byte(`"data"`)) {
		return nil
	}
	var out bytes.Buffer
	for line := range bytes.Lines(raw) {
		var e Event
		if json.Unmarshal(line, &e) != nil || e.Kind == "" {
			continue
		}
		enc, err := json.Marshal(lineOf(&e))
		if err != nil {
			return fmt.Errorf("peer log %s: %w", path, err)
		}
		out.Write(enc)
		out.WriteByte('\n')
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("peer log: %w", err)
	}
	_, err = tmp.Write(out.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("peer log %s: scrub: %w", path, err)
	}
	return nil
}

// file returns the open log of key, opening it (and closing the least
// recently used one) if needed.
func (p *peerLog) file(key jam.PeerKey) (*peerFile, error) {
	if el, ok := p.files[key]; ok {
		p.lru.MoveToFront(el)
		return el.Value.(*peerFile), nil
	}
	if err := key.Validate(); err != nil {
		return nil, err
	}
	for p.lru.Len() >= p.maxOpen {
		el := p.lru.Back()
		if err := p.closeFile(el); err != nil {
			p.fail(el.Value.(*peerFile).key, err)
		}
	}
	dir := filepath.Join(p.dir, key.Profile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("peer log: %w", err)
	}
	pf := &peerFile{key: key, path: filepath.Join(dir, key.Scope+".log")}
	if err := pf.open(); err != nil {
		return nil, err
	}
	p.files[key] = p.lru.PushFront(pf)
	return pf, nil
}

func (pf *peerFile) open() error {
	f, err := os.OpenFile(pf.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("peer log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("peer log: %w", err)
	}
	pf.f, pf.size = f, st.Size()+int64(len(pf.pending))
	return nil
}

// rotate writes what is pending, renames the file to its .1 backup and
// starts a new one.
func (p *peerLog) rotate(pf *peerFile) error {
	err := errors.Join(p.flush(pf), pf.f.Close())
	pf.f = nil
	if err == nil {
		if rerr := os.Rename(pf.path, pf.path+".1"); rerr != nil {
			err = fmt.Errorf("peer log: rotate: %w", rerr)
		}
	}
	if oerr := pf.open(); oerr != nil {
		// Without a file the peer cannot be logged: forget it, so the next
		// event tries again from scratch.
		p.lru.Remove(p.files[pf.key])
		delete(p.files, pf.key)
		return errors.Join(err, oerr)
	}
	return err
}

// flush writes pf's pending lines. The lines are dropped on failure.
func (p *peerLog) flush(pf *peerFile) error {
	if len(pf.pending) == 0 || pf.f == nil {
		pf.pending = pf.pending[:0]
		return nil
	}
	_, err := pf.f.Write(pf.pending)
	pf.pending = pf.pending[:0]
	if err != nil {
		return fmt.Errorf("peer log: %w", err)
	}
	return nil
}

// closeFile writes what is pending and closes the file of el.
func (p *peerLog) closeFile(el *list.Element) error {
	pf := el.Value.(*peerFile)
	p.lru.Remove(el)
	delete(p.files, pf.key)
	err := errors.Join(p.flush(pf), pf.f.Close())
	pf.f = nil
	return err
}

// fail reports a failure of key's log, once until it recovers.
func (p *peerLog) fail(key jam.PeerKey, err error) {
	if p.failing[key] {
		return
	}
	p.failing[key] = true
	p.log.Warn("peer log write failed; skipping its lines until it recovers", "peer", key, "err", err)
}

// close writes what is pending and closes every file.
func (p *peerLog) close() {
	for p.lru.Len() > 0 {
		el := p.lru.Front()
		if err := p.closeFile(el); err != nil {
			p.log.Warn("close peer log", "peer", el.Value.(*peerFile).key, "err", err)
		}
	}
}
