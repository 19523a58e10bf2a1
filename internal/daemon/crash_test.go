package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/hub"
)

// childEnv makes the test binary run jamd instead of the tests; the
// arguments travel as JSON in the variable.
const childEnv = "JAM_TEST_JAMD_ARGS"

// runChildIfAsked runs jamd when the test binary was started as a child.
func runChildIfAsked() {
	raw := os.Getenv(childEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.MainDaemon(ctx, args, cli.System(), cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub})
	stop()
	os.Exit(code)
}

// child is a jamd process the test can kill.
type child struct {
	t    *testing.T
	args []string
	log  *os.File
	cmd  *exec.Cmd
}

func (c *child) start() {
	c.t.Helper()
	raw, err := json.Marshal(c.args)
	require.NoError(c.t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stdout, cmd.Stderr = c.log, c.log
	require.NoError(c.t, cmd.Start())
	c.cmd = cmd
}

// kill sends SIGKILL and reaps the process.
func (c *child) kill() {
	c.t.Helper()
	require.NoError(c.t, c.cmd.Process.Kill())
	_ = c.cmd.Wait()
}

// stop sends SIGTERM and waits for a clean exit.
func (c *child) stop() {
	c.t.Helper()
	require.NoError(c.t, c.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(c.t, c.cmd.Wait())
}

// TestCrash_sigkillLoop kills jamd with SIGKILL at random moments while an
// owner posts and an attached agent drains, and then checks the promises:
// every bound message is delivered and settled exactly once, each room's
// messages were first seen in posting order, no reply was posted twice,
// and the unrouted bucket holds exactly the unbound room's messages.
func TestCrash_sigkillLoop(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills jamd repeatedly")
	}
	kills := 20
	if v := os.Getenv("JAM_CRASH_KILLS"); v != "" {
		fmt.Sscan(v, &kills)
	}
	const rooms, perRoom = 5, 40

	h, err := hub.New(hub.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, h.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, h.Stop(context.Background())) })
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	owner, err := band.NewClient(hc, h.URL(), band.APIKey(h.OwnerKey()))
	require.NoError(t, err)

	cfg := testConfig(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "jamd.log"))
	require.NoError(t, err)
	defer logf.Close()
	jamd := &child{t: t, log: logf, args: []string{"--data-dir", cfg.DataDir, "--band", h.URL(), "--band-key", h.OwnerKey(), "--log-level", "warn"}}
	client := apiclient.New(filepath.Join(cfg.DataDir, "jamd.sock"))
	defer client.Close()
	ready := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		_, err := client.WaitReady(ctx, 10*time.Millisecond)
		require.NoError(t, err)
	}
	jamd.start()
	ready()
	ctx := t.Context()

	agent, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	var roomIDs []string
	for i := range rooms {
		room, err := client.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("crash %d", i), Agents: []string{"coder"}})
		require.NoError(t, err)
		roomIDs = append(roomIDs, room.ID)
		if i < rooms-1 {
			_, err := client.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
			require.NoError(t, err)
		}
	}

	var mu sync.Mutex
	posted := map[string][]string{} // room → message ids in posting order
	firstSeen := map[string][]string{}
	seen := map[string]bool{}

	var wg sync.WaitGroup
	postCtx, stopPosting := context.WithCancel(ctx)
	defer stopPosting()
	wg.Go(func() {
		for n := range perRoom {
			for _, room := range roomIDs {
				if postCtx.Err() != nil {
					return
				}
				sent, err := owner.SendChatMessage(postCtx, room, fmt.Sprintf("@%s job %d", agent.Handle, n), []protocol.Mention{{ID: agent.AgentID}})
				if err != nil {
					t.Errorf("post: %v", err)
					return
				}
				mu.Lock()
				posted[room] = append(posted[room], sent.ID)
				mu.Unlock()
			}
		}
	})

	bound := (rooms - 1) * perRoom
	drainCtx, stopDraining := context.WithCancel(ctx)
	defer stopDraining()
	wg.Go(func() {
		for drainCtx.Err() == nil {
			inbox, err := client.WaitInbox(drainCtx, wire.WaitRequest{Agent: "coder", TimeoutMS: 2000})
			if err != nil {
				continue // the daemon is down or restarting
			}
			for _, m := range inbox.Messages {
				mu.Lock()
				if !seen[m.ID] {
					seen[m.ID] = true
					firstSeen[m.Room] = append(firstSeen[m.Room], m.ID)
				}
				mu.Unlock()
				// A message seen again (after a crash) is worked again:
				// reply and ack must make that harmless.
				if m.Content[len(m.Content)-1]%2 == 0 {
					_, err = client.Reply(drainCtx, m.ID, wire.ReplyRequest{Text: "done " + m.ID})
				} else {
					err = client.Ack(drainCtx, m.ID, wire.AckRequest{})
				}
				_ = err // a failed settle is retried when the message is listed again
			}
		}
	})

	for i := range kills {
		wait := time.Duration(50+rand.IntN(400)) * time.Millisecond
		timer := time.NewTimer(wait)
		<-timer.C
		jamd.kill()
		jamd.start()
		ready()
		t.Logf("kill %d after %s", i+1, wait)
	}

	// Band is the judge of settlement: a settle whose answer was lost in
	// a kill still counts, and the agent may never hear of it again.
	hubState := func(room string) (processed map[string]bool, replies map[string]int) {
		processed, replies = map[string]bool{}, map[string]int{}
		cursor := ""
		for {
			page, err := owner.ChatMessages(ctx, room, cursor, 100)
			require.NoError(t, err)
			for _, m := range page.Messages {
				if m.SenderID == agent.AgentID {
					replies[m.Content]++
				} else if m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
					processed[m.ID] = true
				}
			}
			if !page.HasMore {
				return processed, replies
			}
			cursor = page.NextCursor
		}
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n := 0
		for _, room := range roomIDs[:rooms-1] {
			p, _ := hubState(room)
			n += len(p)
		}
		if n >= bound {
			break
		}
		require.True(t, time.Now().Before(deadline), "settled %d of %d after the kills", n, bound)
		timer := time.NewTimer(250 * time.Millisecond) // polling the hub's view of settlement
		<-timer.C
	}
	stopDraining()
	stopPosting()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i, room := range roomIDs[:rooms-1] {
		require.Equal(t, posted[room], firstSeen[room], "room %d: first deliveries in posting order", i)
	}
	unrouted, err := client.Inbox(ctx, apiclient.InboxQuery{Agent: "coder", Unrouted: true})
	require.NoError(t, err)
	var unroutedIDs []string
	for _, m := range unrouted.Messages {
		unroutedIDs = append(unroutedIDs, m.ID)
	}
	require.ElementsMatch(t, posted[roomIDs[rooms-1]], unroutedIDs, "the unrouted bucket holds exactly the unbound room's messages")

	for i, room := range roomIDs[:rooms-1] {
		processed, replies := hubState(room)
		require.Len(t, processed, perRoom, "room %d: every message settled", i)
		for content, n := range replies {
			require.Equal(t, 1, n, "room %d: reply %q posted %d times", i, content, n)
		}
		for _, id := range posted[room] {
			require.True(t, slices.Contains(firstSeen[room], id), "room %d: message %s was delivered", i, id)
		}
	}
	jamd.stop()
}
