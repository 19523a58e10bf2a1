package spool

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	ossignal "os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// diskFullEnv names the directory the disk-full child works in; the test
// binary started with it set runs the child's half of
// TestSpool_diskFull.
const diskFullEnv = "JAM_TEST_SPOOL_DISKFULL_DIR"

// diskFullReport is what the child leaves for the parent to check.
type diskFullReport struct {
	Workspace jam.WorkspaceID
	Peer      jam.PeerKey
	Room      jam.RoomID
	// Acked are the messages whose push succeeded, in order: before the
	// disk filled, retried after, and new after.
	Acked []jam.PlatformMessageID
	// Refused are the messages whose push failed while the disk was full.
	Refused []jam.PlatformMessageID
	// Err is the text of the first refusal.
	Err string
}

// TestSpool_diskFull fills the disk under a running spool for real: a
// child process lowers its own file size limit (RLIMIT_FSIZE, with SIGXFSZ
// ignored, so a write past it fails with EFBIG as on a full disk) while it
// pushes. Every push from then on fails with jam.ErrStorageFull and none
// is acknowledged; once the limit is raised again the spool takes new
// pushes and the refused ones (it is not wedged), and every acknowledged
// message — before and after the fault — is in the store when it is
// opened afresh.
func TestSpool_diskFull(t *testing.T) {
	if dir := os.Getenv(diskFullEnv); dir != "" {
		diskFullChild(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpool_diskFull$", "-test.count=1")
	cmd.Env = append(os.Environ(), diskFullEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child:\n%s", out)

	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err, "child:\n%s", out)
	var rep diskFullReport
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.NotEmpty(t, rep.Refused, "the disk filled")
	require.Contains(t, rep.Err, "storage full or not writable")

	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour})
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	require.NoError(t, st.Check(t.Context()), "the fault left the database consistent")
	entries, err := st.SpoolNext(t.Context(), rep.Workspace, rep.Peer, rep.Room, 100000)
	require.NoError(t, err)
	got := make([]jam.PlatformMessageID, len(entries))
	for i, e := range entries {
		got[i] = e.MessageID
	}
	require.Equal(t, rep.Acked, got, "every acknowledged message is there, once, in order")
}

// diskFullChild is the child's half of TestSpool_diskFull.
func diskFullChild(t *testing.T, dir string) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour})
	require.NoError(t, err)
	defer st.Close()
	ws, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "w", At: epoch})
	require.NoError(t, err)
	sp, err := New(Config{}, st)
	require.NoError(t, err)
	require.NoError(t, sp.Start(ctx))
	defer func() { require.NoError(t, sp.Stop(ctx)) }()

	rep := diskFullReport{Workspace: ws.ID, Peer: jam.PeerKey{Profile: "p", Scope: "a"}, Room: "5f0c6c8e-2f6b-4d8a-9b1e-0a4c7e2d9f31"}
	entryFor := func(id jam.PlatformMessageID) store.SpoolEntry {
		sealed := make([]byte, 8<<10)
		_, _ = rand.Read(sealed)
		return store.SpoolEntry{WorkspaceID: ws.ID, Peer: rep.Peer, Room: rep.Room, MessageID: id, Sealed: sealed, ReceivedAt: epoch}
	}
	push := func(id jam.PlatformMessageID) error {
		_, appended, err := sp.Push(ctx, entryFor(id))
		if err == nil && !appended {
			return fmt.Errorf("push %s: a duplicate", id)
		}
		return err
	}
	n := 0
	newID := func() jam.PlatformMessageID {
		n++
		return jam.PlatformMessageID(fmt.Sprintf("00000000-0000-4000-8000-%012x", n))
	}

	for range 20 {
		id := newID()
		require.NoError(t, push(id))
		rep.Acked = append(rep.Acked, id)
	}

	// Fill the disk: no file may grow more than 256 KiB past the largest
	// now. The hard limit stays, so the soft one can be raised again.
	ossignal.Ignore(syscall.SIGXFSZ)
	var largest int64
	for _, name := range []string{"jam.db", "jam.db-wal"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			largest = max(largest, fi.Size())
		}
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim))
	saved := lim
	lim.Cur = uint64(largest + 256<<10)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim))

	for len(rep.Refused) < 5 {
		require.Less(t, n, 2000, "the disk never filled")
		id := newID()
		err := push(id)
		if err == nil {
			require.Empty(t, rep.Refused, "once full, no push succeeds")
			rep.Acked = append(rep.Acked, id)
			continue
		}
		require.ErrorIs(t, err, jam.ErrStorageFull)
		if rep.Err == "" {
			rep.Err = err.Error()
		}
		rep.Refused = append(rep.Refused, id)
	}
	entries, bytes := sp.Usage(ws.ID, rep.Peer)
	require.Equal(t, len(rep.Acked), entries, "a refused push holds no capacity")
	require.Equal(t, int64(len(rep.Acked))*8<<10, bytes)

	// Space returns: the refused pushes are taken when retried, and so are
	// new ones.
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &saved))
	for _, id := range rep.Refused {
		require.NoError(t, push(id), "a refused push succeeds when retried")
		rep.Acked = append(rep.Acked, id)
	}
	for range 5 {
		id := newID()
		require.NoError(t, push(id))
		rep.Acked = append(rep.Acked, id)
	}

	raw, err := json.Marshal(rep)
	require.NoError(t, err)
	if err := os.WriteFile(filepath.Join(dir, "report.json"), raw, 0o600); err != nil {
		t.Fatal(errors.Join(errors.New("write report"), err))
	}
}
