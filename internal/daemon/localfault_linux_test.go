package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/datadir"
)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid (the hard
// limit stays, so the soft one can be raised again) and returns the
// previous limits. A write past the limit then fails with EFBIG, as a
// write to a full disk fails with ENOSPC; jamd, like every Go program,
// ignores the SIGXFSZ that comes with it.
func setFileSizeLimit(t *testing.T, pid int, limit uint64) syscall.Rlimit {
	t.Helper()
	var old syscall.Rlimit
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE), 0, uintptr(unsafe.Pointer(&old)), 0, 0)
	require.Zero(t, errno, "read the file size limit: %v", errno)
	lim := syscall.Rlimit{Cur: limit, Max: old.Max}
	_, _, errno = syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_FSIZE), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	require.Zero(t, errno, "set the file size limit: %v", errno)
	return old
}

// TestLocalFault_diskFullWhileSpooling fills the disk under a running
// jamd for real: the test lowers the child daemon's file size limit
// (RLIMIT_FSIZE) to zero, so that no write to any of its files can
// allocate a byte, while the owner keeps posting. A message that cannot be spooled is not
// acknowledged: it is never claimed on Band (which keeps it for
// redelivery), the daemon log says why, status reports the store's
// problem, and no later message of the room overtakes it. Then either
// space returns to the same daemon, which takes the held messages and new
// ones (the spool is not wedged), or the daemon is killed and restarted
// without the limit, and Band's replay brings the refused message back.
// Either way, after a restart every message — those acknowledged before
// the disk filled and those refused while it was full — is delivered
// once, in posting order, and settled.
func TestLocalFault_diskFullWhileSpooling(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills a disk")
	}
	for _, restartWhileFull := range []bool{false, true} {
		name := "spaceReturns"
		if restartWhileFull {
			name = "restartWhileFull"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDiskFull(t, restartWhileFull)
		})
	}
}

func testDiskFull(t *testing.T, restartWhileFull bool) {
	h, owner := startHubWithOwner(t)

	cfg := testConfig(t)
	args, err := json.Marshal([]string{"--data-dir", cfg.DataDir, "--band", h.URL(), "--band-key", h.OwnerKey(), "--log-level", "warn"})
	require.NoError(t, err)
	var cmd *exec.Cmd
	var logs *syncBuffer
	startJamd := func() {
		logs = &syncBuffer{}
		cmd = exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(args))
		cmd.Stdout, cmd.Stderr = logs, logs
		require.NoError(t, cmd.Start())
	}
	stopJamd := func() {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, cmd.Wait(), "jamd log:\n%s", logs.String())
	}
	client := apiclient.NewWrapped(filepath.Join(cfg.DataDir, datadir.SocketFile), controlAPI.Transport)
	defer client.Close()
	ready := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		_, err := client.WaitReady(ctx, 10*time.Millisecond)
		require.NoError(t, err, "jamd log:\n%s", logs.String())
	}
	startJamd()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	ready()
	ctx := t.Context()

	agent, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	room, err := client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "disk full", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = client.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)

	// Large messages, so the database outgrows the limit quickly.
	filler := strings.Repeat("x", 16<<10)
	var posted []string
	post := func() string {
		n := len(posted)
		sent, err := owner.SendChatMessage(ctx, room.ID, fmt.Sprintf("@%s job %d %s", agent.Handle, n, filler), []protocol.Mention{{ID: agent.AgentID}})
		require.NoError(t, err)
		posted = append(posted, sent.ID)
		return sent.ID
	}
	// agentStatus is Band's delivery state of a message for the agent.
	agentStatus := func(id string) string {
		page, err := owner.ChatMessages(ctx, room.ID, "", 100)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.ID == id {
				return m.Metadata.DeliveryStatus[agent.AgentID].Status
			}
		}
		return ""
	}
	claimed := func(id string) {
		t.Helper()
		require.Eventually(t, func() bool { return agentStatus(id) == protocol.DeliveryProcessing }, 60*time.Second, 20*time.Millisecond,
			"message %s is claimed; jamd log:\n%s", id, logs.String())
	}

	// Before the disk fills: acknowledged (spooled, and claimed on Band).
	for range 5 {
		claimed(post())
	}
	acked := len(posted)

	// The disk fills: from now on no write of the daemon's to any of its
	// files can allocate a byte (a limit of 0 refuses every write that
	// grows a file, and one at an offset past it). Its sockets and pipes
	// are not files, so it still talks to Band and to the test.
	saved := setFileSizeLimit(t, cmd.Process.Pid, 0)
	refusedRe := regexp.MustCompile(`msg="[a-z]+ not spooled[^\n]* message=([0-9a-f-]{36})`)
	refused := post()
	require.Eventually(t, func() bool {
		m := refusedRe.FindStringSubmatch(logs.String())
		return m != nil && m[1] == refused
	}, 60*time.Second, 20*time.Millisecond, "message %s is refused; jamd log:\n%s", refused, logs.String())
	require.Contains(t, logs.String(), "storage full or not writable", "the log says why")
	held := []string{refused, post()} // one more while the disk is full
	st, err := client.Status(ctx)
	require.NoError(t, err)
	require.Contains(t, st.Store.Error, "storage full or not writable", "status reports the problem")
	require.NotEqual(t, protocol.DeliveryProcessing, agentStatus(refused), "a refused message is not claimed: Band keeps it for redelivery")
	for _, id := range held[1:] {
		require.NotEqual(t, protocol.DeliveryProcessing, agentStatus(id), "no later message overtakes a refused one")
	}

	if restartWhileFull {
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
	} else {
		// Space returns: the same daemon takes the held messages, in
		// order, and new ones.
		_ = setFileSizeLimit(t, cmd.Process.Pid, saved.Cur)
		for _, id := range held {
			claimed(id)
		}
		claimed(post())
		require.Eventually(t, func() bool {
			st, err := client.Status(ctx)
			return err == nil && st.Store.Error == ""
		}, 60*time.Second, 20*time.Millisecond, "status clears once writes succeed")
		stopJamd()
	}

	// A restart without the limit: everything is delivered once, in
	// posting order.
	startJamd()
	ready()
	order := drainAll(t, client, posted)
	require.Equal(t, posted, order[room.ID], "every message delivered, in posting order (%d acknowledged before the disk filled)", acked)
	page, err := owner.ChatMessages(ctx, room.ID, "", 100)
	require.NoError(t, err)
	processed := 0
	for _, m := range page.Messages {
		if m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
			processed++
		}
	}
	require.Equal(t, len(posted), processed, "each message settled")
	inbox, err := client.Inbox(ctx, apiclient.InboxQuery{Agent: "coder"})
	require.NoError(t, err)
	require.Empty(t, inbox.Messages, "nothing is delivered twice")
	stopJamd()
}
