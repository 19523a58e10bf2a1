package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// fileSpool is a faithful copy of the spool jam replaces (seed 001, "The
// inbound pipeline" and "Refactor notes"), kept only as a baseline. One
// private directory per agent holds one directory per (peer, room), named
// by hashes, with one file per message named by a monotonic sequence. A
// push
//
//  1. takes the process-wide budget lock (INBOUND_SPOOL_BUDGET_LOCK);
//  2. scans every file under the agent's root to compute usage (entries
//     and bytes), and waits on the lock while the agent is at its bound
//     (push_wait: backpressure, never a drop);
//  3. creates <seq>.tmp with O_EXCL and mode 0600, writes the message,
//     fsyncs and closes it, renames it to <seq>, and fsyncs the directory;
//  4. releases the lock.
//
// The lock covers the check and the write, as it must for the bound to
// hold: released in between, concurrent pushes would all pass the check
// and overshoot it. Two costs of the seed are left out, both in the file
// spool's favour: the dedupe read of every file of the room directory, and
// a JSON envelope around the payload.
type fileSpool struct {
	root       string // the agent's root: <spool>/<sha256(agent id)>
	maxEntries int
	maxBytes   int64

	mu      sync.Mutex      // the process-wide budget lock
	freed   *sync.Cond      // signalled under mu when a file is removed
	seq     uint64          // guarded by mu
	madeDir map[string]bool // guarded by mu
}

func newFileSpool(dir, agent string, maxEntries int, maxBytes int64) (*fileSpool, error) {
	root := filepath.Join(dir, hash(agent))
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	f := &fileSpool{root: root, maxEntries: maxEntries, maxBytes: maxBytes, madeDir: map[string]bool{}}
	f.freed = sync.NewCond(&f.mu)
	return f, nil
}

func hash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

// push makes payload durable in (peer, room)'s directory and returns the
// file's path once it and its directory entry are fsynced.
func (f *fileSpool) push(peer, room string, payload []byte) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		entries, bytes, err := f.usage()
		if err != nil {
			return "", err
		}
		if entries < f.maxEntries && bytes+int64(len(payload)) <= f.maxBytes {
			break
		}
		f.freed.Wait()
	}
	dir := filepath.Join(f.root, hash(peer, room))
	if !f.madeDir[dir] {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
		f.madeDir[dir] = true
	}
	f.seq++
	final := filepath.Join(dir, fmt.Sprintf("%020d", f.seq))
	tmp := final + ".tmp"
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := file.Write(payload); err != nil {
		return "", errors.Join(err, file.Close())
	}
	if err := file.Sync(); err != nil {
		return "", errors.Join(err, file.Close())
	}
	if err := file.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	d, err := os.Open(dir)
	if err != nil {
		return "", err
	}
	if err := d.Sync(); err != nil {
		return "", errors.Join(err, d.Close())
	}
	return final, d.Close()
}

// usage scans the agent's root: every spooled file and its size. Files are
// removed without the lock, so one may vanish mid-scan.
func (f *fileSpool) usage() (entries int, bytes int64, err error) {
	err = filepath.WalkDir(f.root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // consumed since the directory was read
		}
		if err != nil {
			return err
		}
		entries++
		bytes += fi.Size()
		return nil
	})
	return entries, bytes, err
}

// remove consumes a spooled message, as the room worker does once the
// message is queued.
func (f *fileSpool) remove(path string) error {
	err := os.Remove(path)
	f.mu.Lock()
	f.freed.Broadcast()
	f.mu.Unlock()
	return err
}

// fileSpoolTarget pushes into a fileSpool bounded like the seed's (4,096
// entries, 64 MiB per agent) and consumes each message by removing its
// file.
type fileSpoolTarget struct{ f *fileSpool }

func openFileSpool(dir string) (*fileSpoolTarget, error) {
	f, err := newFileSpool(dir, "agent", 4096, 64<<20)
	if err != nil {
		return nil, err
	}
	return &fileSpoolTarget{f: f}, nil
}

func (t *fileSpoolTarget) Push(_ context.Context, producer int, payload []byte) (time.Duration, error) {
	t0 := time.Now()
	path, err := t.f.push("bench/agent", fmt.Sprintf("room-%d", producer%8), payload)
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	return d, t.f.remove(path)
}

func (t *fileSpoolTarget) Extra() map[string]float64 { return nil }

func (t *fileSpoolTarget) Close() error { return nil }
