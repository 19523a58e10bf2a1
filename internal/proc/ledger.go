package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Record names one agent process group: its leader (pid, start time, on
// boot BootID), the group and the session it was started in.
type Record struct {
	Pid       int       `json:"pid"`
	Pgid      int       `json:"pgid"`
	Sid       int       `json:"sid"`
	StartTime uint64    `json:"start_time"`
	BootID    string    `json:"boot_id"`
	Started   time.Time `json:"started"`
}

// maxRecord bounds a record file; a real one is about 200 bytes.
const maxRecord = 4 << 10

// DecodeRecord decodes and validates a record file's content.
func DecodeRecord(b []byte) (Record, error) {
	if len(b) > maxRecord {
		return Record{}, fmt.Errorf("%w: process record: %d bytes", jam.ErrInvalid, len(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("%w: process record: %v", jam.ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Record{}, fmt.Errorf("%w: process record: trailing data", jam.ErrInvalid)
	}
	switch {
	case r.Pid <= 1:
		return Record{}, fmt.Errorf("%w: process record: pid %d", jam.ErrInvalid, r.Pid)
	case r.Pgid != r.Pid:
		return Record{}, fmt.Errorf("%w: process record: %d does not lead its group (%d)", jam.ErrInvalid, r.Pid, r.Pgid)
	case r.Sid < 0:
		// 0 is a real value: the session's leader lives outside this pid
		// namespace (a container started from a shell), so /proc shows 0.
		return Record{}, fmt.Errorf("%w: process record: session %d", jam.ErrInvalid, r.Sid)
	case r.StartTime == 0:
		return Record{}, fmt.Errorf("%w: process record: no start time", jam.ErrInvalid)
	case r.BootID == "" || len(r.BootID) > 64:
		return Record{}, fmt.Errorf("%w: process record: bad boot id", jam.ErrInvalid)
	}
	return r, nil
}

// Ledger is the durable record of the agent process groups a daemon
// runs: a directory with a file per group. It implements
// executor.Ledger.
type Ledger struct {
	dir  string
	boot string
	log  *slog.Logger

	mu   sync.Mutex
	live map[int]Record // guarded by mu: the groups this daemon recorded
}

// OpenLedger opens (creating it 0700) the ledger in dir.
func OpenLedger(dir string, log *slog.Logger) (*Ledger, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	boot, err := BootID()
	if err != nil {
		return nil, fmt.Errorf("process ledger: %w", err)
	}
	return &Ledger{dir: dir, boot: boot, log: log, live: map[int]Record{}}, nil
}

func (l *Ledger) path(pid int) string { return filepath.Join(l.dir, strconv.Itoa(pid)+".json") }

// Add records pid, which must lead its own process group; the record is
// on disk when Add returns.
func (l *Ledger) Add(pid int) error {
	st, err := ReadStat(pid)
	if err != nil {
		return fmt.Errorf("record agent process: %w", err)
	}
	if st.Pgid != pid {
		return fmt.Errorf("%w: record agent process: %d does not lead its process group", jam.ErrInvalid, pid)
	}
	r := Record{Pid: pid, Pgid: st.Pgid, Sid: st.Sid, StartTime: st.StartTime, BootID: l.boot, Started: time.Now().UTC()}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(l.path(pid), b); err != nil {
		return fmt.Errorf("record agent process: %w", err)
	}
	l.mu.Lock()
	l.live[pid] = r
	l.mu.Unlock()
	return nil
}

// Remove forgets pid's record (its group was ended).
func (l *Ledger) Remove(pid int) {
	l.mu.Lock()
	delete(l.live, pid)
	l.mu.Unlock()
	if err := os.Remove(l.path(pid)); err != nil && !errors.Is(err, os.ErrNotExist) {
		l.log.Warn("remove agent process record", "pid", pid, "err", err)
	}
}

// Live is the number of groups this daemon recorded and has not removed.
func (l *Ledger) Live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live)
}

// KillAll ends every group this daemon recorded and has not removed, for
// a daemon about to exit without stopping them (a second signal while it
// stops, the last step of a stop): every member of each group but its
// leader gets SIGKILL, and the leader is left to its parent-death signal,
// which fires as the daemon exits (and which ends the group anyway):
// local's shim, the agent gone, kills what is left below it, the processes
// that left the group included, which a SIGKILL of the shim would not let
// it do; bwrap's sandbox ends with it. Their records stay, for the next
// start. It returns how many groups it signalled.
func (l *Ledger) KillAll() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.live {
		// Each leader is this daemon's child, not yet waited for: its
		// pid, and so its group's id, cannot have been recycled.
		if syscall.Kill(r.Pgid, 0) != nil {
			continue
		}
		n++
		for _, m := range members(r.Pgid) {
			if m.Pid != r.Pid {
				_ = syscall.Kill(m.Pid, syscall.SIGKILL)
			}
		}
	}
	return n
}

// Reap ends the groups the records of an earlier daemon name, before any
// agent of this one starts: each group that still runs gets SIGTERM, then
// SIGKILL once grace has passed, and every record is removed. It logs a
// line per group ended and returns how many.
//
// A group still runs when its leader runs with the recorded start time on
// this boot, or, the leader gone, when processes are left in the group
// and in the recorded session (a group's id is not reused while it has
// members; a reused id whose new leader also died, in the same session, is
// the one case this cannot tell apart).
func (l *Ledger) Reap(ctx context.Context, grace time.Duration) (int, error) {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return 0, err
	}
	var groups []Record
	var files []string
	for _, e := range ents {
		name := e.Name()
		p := filepath.Join(l.dir, name)
		if !strings.HasSuffix(name, ".json") || !e.Type().IsRegular() {
			if strings.HasPrefix(name, ".tmp-") {
				files = append(files, p) // a write that never finished
			}
			continue
		}
		files = append(files, p)
		b, err := readBounded(p)
		if err != nil {
			l.log.Warn("unreadable agent process record; removed", "file", name, "err", err)
			continue
		}
		r, err := DecodeRecord(b)
		if err != nil {
			l.log.Warn("bad agent process record; removed", "file", name, "err", err)
			continue
		}
		if r.BootID != l.boot {
			continue
		}
		if running(r) {
			groups = append(groups, r)
		}
	}
	for _, r := range groups {
		_ = syscall.Kill(-r.Pgid, syscall.SIGTERM)
	}
	signal := "SIGTERM"
	if !waitGone(ctx, groups, grace) {
		signal = "SIGKILL"
		for _, r := range groups {
			_ = syscall.Kill(-r.Pgid, syscall.SIGKILL)
		}
		waitGone(ctx, groups, 10*time.Second)
	}
	for _, r := range groups {
		left := len(members(r.Pgid))
		l.log.Warn("ended an agent process group a previous run left running", "pgid", r.Pgid, "pid", r.Pid,
			"started", r.Started, "signal", signal, "left", left)
	}
	for _, p := range files {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			l.log.Warn("remove agent process record", "file", filepath.Base(p), "err", err)
		}
	}
	return len(groups), nil
}

// running says whether r's group still runs (see Reap).
func running(r Record) bool {
	st, err := ReadStat(r.Pid)
	if err == nil {
		return st.StartTime == r.StartTime && st.Pgid == r.Pgid
	}
	for _, m := range members(r.Pgid) {
		if m.Sid == r.Sid && m.StartTime >= r.StartTime {
			return true
		}
	}
	return false
}

// members lists the live (not zombie) processes of group pgid.
func members(pgid int) []Stat {
	pids, err := Pids()
	if err != nil {
		return nil
	}
	var out []Stat
	for _, pid := range pids {
		st, err := ReadStat(pid)
		if err == nil && st.Pgid == pgid && st.State != 'Z' {
			out = append(out, st)
		}
	}
	return out
}

// waitGone polls until no group of groups has a live member, for at most
// d; it reports whether they are all gone.
func waitGone(ctx context.Context, groups []Record, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		gone := true
		for _, r := range groups {
			if len(members(r.Pgid)) > 0 {
				gone = false
				break
			}
		}
		if gone {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxRecord+1))
}

// writeFileAtomic writes b to p, 0600, through a synced temporary file
// renamed into place, and syncs the directory.
func writeFileAtomic(p string, b []byte) error {
	dir := filepath.Dir(p)
	f, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
