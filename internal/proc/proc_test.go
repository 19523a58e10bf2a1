package proc_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/proc"
)

func TestParseStat(t *testing.T) {
	// 52 fields as Linux writes them; starttime (22) is 8765.
	rest := " S 1 4242 4000 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 8765 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
	for _, tc := range []struct {
		name, in string
		want     proc.Stat
		err      bool
	}{
		{name: "plain", in: "4242 (sleep)" + rest, want: proc.Stat{Pid: 4242, State: 'S', Ppid: 1, Pgid: 4242, Sid: 4000, StartTime: 8765}},
		{name: "name with spaces and parens", in: "4242 (a) b (c))" + rest, want: proc.Stat{Pid: 4242, State: 'S', Ppid: 1, Pgid: 4242, Sid: 4000, StartTime: 8765}},
		{name: "empty", in: "", err: true},
		{name: "no name", in: "4242 S 1 2 3", err: true},
		{name: "bad pid", in: "x (a)" + rest, err: true},
		{name: "zero pid", in: "0 (a)" + rest, err: true},
		{name: "short", in: "4242 (a) S 1 2 3", err: true},
		{name: "bad start", in: "4242 (a) S 1 4242 4000 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5 1", err: true},
		{name: "bad pgid", in: "4242 (a) S 1 x 4000 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 8765 1", err: true},
		{name: "long state", in: "4242 (a) SS 1 4242 4000 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 8765 1", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := proc.ParseStat([]byte(tc.in))
			if tc.err {
				require.ErrorIs(t, err, jam.ErrInvalid)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestReadStat_self(t *testing.T) {
	st, err := proc.ReadStat(os.Getpid())
	require.NoError(t, err)
	require.Equal(t, os.Getpid(), st.Pid)
	require.Equal(t, os.Getppid(), st.Ppid)
	require.Equal(t, syscall.Getpgrp(), st.Pgid)
	require.NotZero(t, st.StartTime)
	_, err = proc.ReadStat(1 << 30)
	require.ErrorIs(t, err, jam.ErrNotFound)
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (sleep) S 1 4242 4000 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 8765 1000"))
	f.Add([]byte("1 ((( S"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := proc.ParseStat(b)
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			return
		}
		require.Positive(t, st.Pid)
	})
}

func validRecord() proc.Record {
	return proc.Record{Pid: 4242, Pgid: 4242, Sid: 4000, StartTime: 8765, BootID: "0b6c2f1e-6a57-4a57-8a8e-1d2d8f0e9c11", Started: time.Unix(1700000000, 0).UTC()}
}

func TestDecodeRecord(t *testing.T) {
	good, err := json.Marshal(validRecord())
	require.NoError(t, err)
	r, err := proc.DecodeRecord(good)
	require.NoError(t, err)
	require.Equal(t, validRecord(), r)
	// In a pid namespace whose session leader is outside it (a container
	// started from a shell), /proc shows session 0: a real record.
	outside := validRecord()
	outside.Sid = 0
	b, err := json.Marshal(outside)
	require.NoError(t, err)
	r, err = proc.DecodeRecord(b)
	require.NoError(t, err)
	require.Equal(t, outside, r)
	mod := func(f func(*proc.Record)) []byte {
		r := validRecord()
		f(&r)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		return b
	}
	for name, in := range map[string][]byte{
		"empty":            nil,
		"not json":         []byte("pid=4242"),
		"unknown field":    []byte(`{"pid":4242,"pgid":4242,"sid":1,"start_time":1,"boot_id":"b","cmd":"x"}`),
		"trailing":         append(append([]byte{}, good...), []byte(`{}`)...),
		"init":             mod(func(r *proc.Record) { r.Pid, r.Pgid = 1, 1 }),
		"negative pid":     mod(func(r *proc.Record) { r.Pid, r.Pgid = -7, -7 }),
		"not the leader":   mod(func(r *proc.Record) { r.Pgid = 1 }),
		"negative session": mod(func(r *proc.Record) { r.Sid = -1 }),
		"no start time":    mod(func(r *proc.Record) { r.StartTime = 0 }),
		"no boot id":       mod(func(r *proc.Record) { r.BootID = "" }),
		"long boot id":     mod(func(r *proc.Record) { r.BootID = string(bytes.Repeat([]byte("b"), 65)) }),
		"oversize":         append(good, bytes.Repeat([]byte(" "), 5000)...),
		"string for int":   []byte(`{"pid":"4242","pgid":4242,"sid":1,"start_time":1,"boot_id":"b"}`),
		"negative start":   []byte(`{"pid":4242,"pgid":4242,"sid":1,"start_time":-1,"boot_id":"b"}`),
		"array, not dict":  []byte(`[4242]`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := proc.DecodeRecord(in)
			require.ErrorIs(t, err, jam.ErrInvalid)
		})
	}
}

func FuzzDecodeRecord(f *testing.F) {
	good, _ := json.Marshal(validRecord())
	f.Add(good)
	f.Add([]byte(`{"pid":2,"pgid":2,"sid":1,"start_time":1,"boot_id":"b"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := proc.DecodeRecord(b)
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			return
		}
		require.Greater(t, r.Pid, 1)
		require.Equal(t, r.Pid, r.Pgid)
		require.NotZero(t, r.StartTime)
	})
}

// startGroup starts `sh -c script` leading its own group, not tied to
// this process's life, and reaps it in the background.
func startGroup(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd
}

// groupMembers lists the live processes of group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	pids, err := proc.Pids()
	require.NoError(t, err)
	var out []int
	for _, pid := range pids {
		if st, err := proc.ReadStat(pid); err == nil && st.Pgid == pgid && st.State != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// groupAlive says whether any live process is in group pgid.
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	pids, err := proc.Pids()
	require.NoError(t, err)
	for _, pid := range pids {
		if st, err := proc.ReadStat(pid); err == nil && st.Pgid == pgid && st.State != 'Z' {
			return true
		}
	}
	return false
}

func newLedger(t *testing.T, dir string) (*proc.Ledger, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	l, err := proc.OpenLedger(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	return l, &logs
}

// TestLedger_reapEndsWhatAnEarlierRunLeft: the records one ledger wrote
// are acted on by the next: a group whose leader still runs is ended (one
// that ignores SIGTERM by SIGKILL), a group whose leader died but whose
// tool lingers is ended, and a record whose pid now names another process
// (another start time) or an earlier boot is dropped, the process left
// alone. Every record is gone afterwards.
func TestLedger_reapEndsWhatAnEarlierRunLeft(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, _ := newLedger(t, dir)

	polite := startGroup(t, "sleep 600 & wait")
	stubborn := startGroup(t, "trap '' TERM; sleep 600 & wait")
	require.NoError(t, first.Add(polite.Process.Pid))
	require.NoError(t, first.Add(stubborn.Process.Pid))
	// A leader that exits, leaving its tool in the group.
	release := filepath.Join(t.TempDir(), "release")
	headless := startGroup(t, "sleep 600 & while [ ! -e "+release+" ]; do sleep 0.01; done")
	require.NoError(t, first.Add(headless.Process.Pid))
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	require.Eventually(t, func() bool { return !leaderAlive(headless.Process.Pid) }, 10*time.Second, 10*time.Millisecond)

	// A record naming a live process with another start time (the pid
	// recycled), and one from another boot.
	bystander := startGroup(t, "sleep 600")
	st, err := proc.ReadStat(bystander.Process.Pid)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(polite.Process.Pid)+".json"))
	require.NoError(t, err)
	var r proc.Record
	require.NoError(t, json.Unmarshal(b, &r))
	recycled := proc.Record{Pid: st.Pid, Pgid: st.Pgid, Sid: st.Sid, StartTime: st.StartTime + 1, BootID: r.BootID}
	otherBoot := proc.Record{Pid: st.Pid, Pgid: st.Pgid, Sid: st.Sid, StartTime: st.StartTime, BootID: "another-boot"}
	for name, rec := range map[string]proc.Record{"recycled": recycled, "other-boot": otherBoot} {
		b, err := json.Marshal(rec)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), b, 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "damaged.json"), []byte("{"), 0o600))
	fi, err := os.Stat(filepath.Join(dir, strconv.Itoa(polite.Process.Pid)+".json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "records are 0600")

	second, logs := newLedger(t, dir)
	n, err := second.Reap(t.Context(), 300*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, 3, n, logs.String())
	for _, c := range []*exec.Cmd{polite, stubborn, headless} {
		require.False(t, groupAlive(t, c.Process.Pid), "group %d ended", c.Process.Pid)
	}
	require.True(t, leaderAlive(bystander.Process.Pid), "a process a record does not name exactly is left alone")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, ents, "every record is removed")
	require.Contains(t, logs.String(), "signal=SIGKILL")
	require.Contains(t, logs.String(), "bad agent process record")
}

func TestLedger_removeAndKillAll(t *testing.T) {
	dir := t.TempDir()
	l, _ := newLedger(t, dir)
	a := startGroup(t, "sleep 600 & wait")
	b := startGroup(t, "sleep 600 & wait")
	require.NoError(t, l.Add(a.Process.Pid))
	require.NoError(t, l.Add(b.Process.Pid))
	require.Equal(t, 2, l.Live())
	l.Remove(a.Process.Pid)
	_, err := os.Stat(filepath.Join(dir, strconv.Itoa(a.Process.Pid)+".json"))
	require.True(t, errors.Is(err, os.ErrNotExist))
	// A leader that stays when its member is killed.
	c := startGroup(t, "sleep 600 & exec sleep 601")
	require.NoError(t, l.Add(c.Process.Pid))
	require.Eventually(t, func() bool { return len(groupMembers(t, c.Process.Pid)) == 2 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 2, l.KillAll())
	require.Eventually(t, func() bool { return !groupAlive(t, b.Process.Pid) }, 10*time.Second, 10*time.Millisecond)
	require.True(t, groupAlive(t, a.Process.Pid), "a removed record's group is not this ledger's to kill")
	require.Eventually(t, func() bool {
		m := groupMembers(t, c.Process.Pid)
		return len(m) == 1 && m[0] == c.Process.Pid
	}, 10*time.Second, 10*time.Millisecond, "the members are killed, the leader is left to its parent-death signal")

	err = l.Add(os.Getpid())
	if syscall.Getpgrp() != os.Getpid() {
		require.ErrorIs(t, err, jam.ErrInvalid, "a process that does not lead its group is refused")
	}
}

func leaderAlive(pid int) bool {
	st, err := proc.ReadStat(pid)
	return err == nil && st.State != 'Z'
}
