package events

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
)

var peerA = jam.PeerKey{Profile: "local", Scope: "coder"}

// readLines returns the lines of one log file.
func readLines(t *testing.T, path string) []peerLine {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []peerLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e peerLine
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&e), "line %q", sc.Text())
		out = append(out, e)
	}
	require.NoError(t, sc.Err())
	return out
}

func seqs(evs []peerLine) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func peerEvent(seq int64, key jam.PeerKey, data string) *Event {
	return &Event{Seq: seq, Kind: "agent.state", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Peer: key, Data: json.RawMessage(data)}
}

func TestPeerLog_linesPerPeer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := newPeerLog(dir, 1<<20, 16, slog.New(slog.DiscardHandler))
	other := jam.PeerKey{Profile: "band", Scope: "reviewer"}
	p.write([]*Event{
		peerEvent(1, peerA, `{"state":"up"}`),
		{Seq: 2, Kind: "daemon.note", At: time.Now()}, // names no peer
		peerEvent(3, other, `{"state":"up"}`),
		peerEvent(4, peerA, `{"state":"reconnecting"}`),
	})
	p.write([]*Event{peerEvent(5, peerA, "")})
	p.close()

	got := readLines(t, filepath.Join(dir, "local", "coder.log"))
	require.Equal(t, []int64{1, 4, 5}, seqs(got))
	require.Equal(t, peerA, got[0].Peer)
	require.Equal(t, len(`{"state":"reconnecting"}`), got[1].DataBytes, "a line has the data's size, not the data")
	require.Zero(t, got[2].DataBytes)
	require.Equal(t, []int64{3}, seqs(readLines(t, filepath.Join(dir, "band", "reviewer.log"))))

	for _, path := range []string{filepath.Join(dir, "local"), filepath.Join(dir, "local", "coder.log")} {
		st, err := os.Stat(path)
		require.NoError(t, err)
		want := os.FileMode(0o600)
		if st.IsDir() {
			want = 0o700
		}
		require.Equal(t, want, st.Mode().Perm(), path)
	}

	// A reopened log appends.
	p = newPeerLog(dir, 1<<20, 16, slog.New(slog.DiscardHandler))
	p.write([]*Event{peerEvent(6, peerA, "")})
	p.close()
	require.Equal(t, []int64{1, 4, 5, 6}, seqs(readLines(t, filepath.Join(dir, "local", "coder.log"))))
}

func TestPeerLog_rotatesToOneBackup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	line, err := json.Marshal(lineOf(peerEvent(10, peerA, `{"pad":"xxxxxxxxxxxxxxxxxxxx"}`)))
	require.NoError(t, err)
	// Room for three lines per file.
	p := newPeerLog(dir, int64(3*(len(line)+1)), 16, slog.New(slog.DiscardHandler))
	for seq := int64(10); seq < 18; seq++ {
		// Two lines per batch, so rotation also happens inside a batch.
		if seq%2 == 0 {
			p.write([]*Event{peerEvent(seq, peerA, `{"pad":"xxxxxxxxxxxxxxxxxxxx"}`), peerEvent(seq+1, peerA, `{"pad":"xxxxxxxxxxxxxxxxxxxx"}`)})
		}
	}
	p.close()
	path := filepath.Join(dir, "local", "coder.log")
	// Eight lines, three to a file: 10–12 went with the first rotation's
	// backup when the second replaced it.
	require.Equal(t, []int64{16, 17}, seqs(readLines(t, path)))
	require.Equal(t, []int64{13, 14, 15}, seqs(readLines(t, path+".1")), "one backup; older lines are gone")
	_, err = os.Stat(path + ".2")
	require.ErrorIs(t, err, os.ErrNotExist)
	for _, f := range []string{path, path + ".1"} {
		st, err := os.Stat(f)
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), int64(3*(len(line)+1)))
	}
}

func TestPeerLog_oversizedLineStillWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := newPeerLog(dir, 10, 16, slog.New(slog.DiscardHandler))
	p.write([]*Event{peerEvent(1, peerA, `{"big":"`+strings.Repeat("x", 100)+`"}`)})
	p.write([]*Event{peerEvent(2, peerA, "")})
	p.close()
	path := filepath.Join(dir, "local", "coder.log")
	require.Equal(t, []int64{2}, seqs(readLines(t, path)))
	require.Equal(t, []int64{1}, seqs(readLines(t, path+".1")), "a line over the bound fills a file on its own")
}

func TestPeerLog_boundsOpenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const maxOpen, peers = 4, 10
	p := newPeerLog(dir, 1<<20, maxOpen, slog.New(slog.DiscardHandler))
	for round := range 3 {
		var batch []*Event
		for i := range peers {
			batch = append(batch, peerEvent(int64(round*peers+i+1), jam.PeerKey{Profile: "p", Scope: fmt.Sprintf("s%d", i)}, ""))
		}
		p.write(batch)
		require.LessOrEqual(t, p.lru.Len(), maxOpen)
		require.Len(t, p.files, p.lru.Len())
	}
	// The most recently written stay open.
	for i := peers - maxOpen; i < peers; i++ {
		require.Contains(t, p.files, jam.PeerKey{Profile: "p", Scope: fmt.Sprintf("s%d", i)})
	}
	p.close()
	require.Zero(t, p.lru.Len())
	for i := range peers {
		got := readLines(t, filepath.Join(dir, "p", fmt.Sprintf("s%d.log", i)))
		require.Equal(t, []int64{int64(i + 1), int64(peers + i + 1), int64(2*peers + i + 1)}, seqs(got), "nothing lost to eviction")
	}
}

func TestPeerLog_failureSkipsAndRecovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The profile's directory is a file: the peer's log cannot open.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "local"), nil, 0o600))
	var logged strings.Builder
	p := newPeerLog(dir, 1<<20, 16, slog.New(slog.NewTextHandler(&logged, nil)))
	p.write([]*Event{peerEvent(1, peerA, "")})
	p.write([]*Event{peerEvent(2, peerA, "")})
	require.Equal(t, 1, strings.Count(logged.String(), "peer log write failed"), "one report until it recovers")

	require.NoError(t, os.Remove(filepath.Join(dir, "local")))
	p.write([]*Event{peerEvent(3, peerA, "")})
	p.close()
	require.Equal(t, []int64{3}, seqs(readLines(t, filepath.Join(dir, "local", "coder.log"))))
}
