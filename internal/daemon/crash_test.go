package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
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

// hubChildEnv makes the test binary run "jam hub" instead of the tests;
// the arguments (address, data directory) travel as JSON in the variable.
const hubChildEnv = "JAM_TEST_HUB_ARGS"

// runChildIfAsked runs jamd, or the hub, when the test binary was started
// as a child.
func runChildIfAsked() {
	for _, env := range []string{childEnv, hubChildEnv} {
		raw := os.Getenv(env)
		if raw == "" {
			continue
		}
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		// As cmd/jamd: after the first signal, a second one kills the
		// process at once.
		context.AfterFunc(ctx, stop)
		code := 0
		if env == childEnv {
			code = cli.MainDaemon(ctx, args, cli.System(), cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub})
		} else if err := daemon.RunHub(ctx, cli.HubOptions{IO: cli.System(), Addr: args[0], DataDir: args[1], LogLevel: "warn"}); err != nil {
			fmt.Fprintln(os.Stderr, "hub:", err)
			code = 1
		}
		stop()
		os.Exit(code)
	}
}

// child is a jamd (or hub) process the test can kill.
type child struct {
	t    *testing.T
	env  string // childEnv when empty
	args []string
	// store is jamd's store (config.Config.Store); passed in $JAM_STORE,
	// not on the command line, where a URL's password would show.
	store string
	log   *os.File
	cmd   *exec.Cmd
}

func (c *child) start() {
	c.t.Helper()
	raw, err := json.Marshal(c.args)
	require.NoError(c.t, err)
	env := c.env
	if env == "" {
		env = childEnv
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+string(raw))
	if c.store != "" {
		cmd.Env = append(cmd.Env, "JAM_STORE="+c.store)
	}
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
	kills, perRoom := 20, 40
	if failureLong() {
		kills, perRoom = 200, 200
	}
	if v := os.Getenv("JAM_CRASH_KILLS"); v != "" {
		fmt.Sscan(v, &kills)
	}
	const rooms = 5

	h, owner := startHubWithOwner(t)

	cfg := testConfig(t)
	logf, err := os.Create(filepath.Join(t.TempDir(), "jamd.log"))
	require.NoError(t, err)
	defer logf.Close()
	jamd := &child{t: t, log: logf, store: cfg.Store, args: []string{"--data-dir", cfg.DataDir, "--band", h.URL(), "--band-key", h.OwnerKey(), "--log-level", "warn"}}
	client := apiclient.NewWrapped(filepath.Join(cfg.DataDir, "jamd.sock"), controlAPI.Transport)
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
	wg.Go(func() { drainSettling(drainCtx, client, &mu, seen, firstSeen) })

	for i := range kills {
		wait := time.Duration(50+rand.IntN(400)) * time.Millisecond
		timer := time.NewTimer(wait)
		<-timer.C
		jamd.kill()
		restarted := time.Now()
		jamd.start()
		ready()
		t.Logf("kill %d after %s; ready again in %s", i+1, wait, time.Since(restarted).Round(time.Millisecond))
	}
	settling := time.Now()

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
	t.Logf("everything settled %s after the last kill", time.Since(settling).Round(time.Millisecond))
	stopDraining()
	stopPosting()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i, room := range roomIDs[:rooms-1] {
		require.Equal(t, posted[room], firstSeen[room], "room %d: first deliveries in posting order", i)
	}
	unrouted, err := client.Inbox(ctx, apiclient.InboxQuery{Agent: "coder", Unrouted: true, Limit: wire.MaxInboxLimit})
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

// failureLong reports whether failure tests run their long form
// (JAM_FAILURE_LONG=1): many more kills and messages than CI's bounded run.
func failureLong() bool { return os.Getenv("JAM_FAILURE_LONG") == "1" }

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago, so a process restarted on it comes back at the same URL.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestCrash_sigkillHubAndDaemon runs the hub as its own process ("jam
// hub" on a fixed address and data directory) and SIGKILLs it and jamd in
// turn while an owner posts and an attached agent drains. Band (the hub)
// is the judge: every owner message it holds is delivered to the agent
// and settled exactly once, each room's messages are first seen in the
// hub's order, and each worked message has exactly one reply. A post
// whose answer a kill lost is posted again, so the owner's messages are
// whatever the hub recorded, duplicates of a text included.
func TestCrash_sigkillHubAndDaemon(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills the hub and jamd repeatedly")
	}
	kills, rooms, perRoom := 9, 3, 20
	if failureLong() {
		kills, rooms, perRoom = 60, 4, 150
	}
	ctx := t.Context()
	begun := time.Now()

	addr := freeLoopbackAddr(t)
	hubURL := "http://" + addr
	hubDir := t.TempDir()
	hubLog, err := os.Create(filepath.Join(t.TempDir(), "hub.log"))
	require.NoError(t, err)
	defer hubLog.Close()
	hubProc := &child{t: t, env: hubChildEnv, log: hubLog, args: []string{addr, hubDir}}
	hc := band.NewHTTP(band.HTTPConfig{Timeout: 10 * time.Second})
	t.Cleanup(hc.CloseIdle)
	var owner *band.Client
	hubReady := func() {
		t.Helper()
		require.Eventually(t, func() bool {
			if owner == nil {
				key, err := os.ReadFile(filepath.Join(hubDir, "owner.key"))
				if err != nil || len(key) == 0 {
					return false
				}
				owner, err = band.NewClient(hc, hubURL, band.APIKey(strings.TrimSpace(string(key))))
				require.NoError(t, err)
			}
			_, err := owner.Profile(ctx)
			return err == nil
		}, 60*time.Second, 20*time.Millisecond, "the hub did not come back at %s; log %s", hubURL, hubLog.Name())
	}
	hubProc.start()
	hubReady()

	cfg := testConfig(t)
	jamdLog, err := os.Create(filepath.Join(t.TempDir(), "jamd.log"))
	require.NoError(t, err)
	defer jamdLog.Close()
	key, err := owner.Credential().Key(ctx)
	require.NoError(t, err)
	jamd := &child{t: t, log: jamdLog, store: cfg.Store, args: []string{"--data-dir", cfg.DataDir, "--band", hubURL, "--band-key", key, "--log-level", "info"}}
	t.Cleanup(func() {
		if t.Failed() {
			logTail(t, hubLog.Name())
			logTail(t, jamdLog.Name())
		}
	})
	client := apiclient.NewWrapped(filepath.Join(cfg.DataDir, "jamd.sock"), controlAPI.Transport)
	defer client.Close()
	jamdReady := func() {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_, err := client.WaitReady(rctx, 10*time.Millisecond)
		require.NoError(t, err)
	}
	jamd.start()
	jamdReady()

	agent, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	var roomIDs []string
	for i := range rooms {
		room, err := client.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("hub crash %d", i), Agents: []string{"coder"}})
		require.NoError(t, err)
		_, err = client.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
		require.NoError(t, err)
		roomIDs = append(roomIDs, room.ID)
	}

	var mu sync.Mutex
	firstSeen := map[string][]string{} // room → message ids in first-delivery order
	seen := map[string]bool{}

	var wg sync.WaitGroup
	postCtx, stopPosting := context.WithCancel(ctx)
	defer stopPosting()
	postingDone := make(chan struct{})
	wg.Go(func() {
		defer close(postingDone)
		// Posts are spread over the kills (about one per 150 ms), so that
		// kills land while messages arrive, are claimed and are settled.
		pace := time.NewTicker(150 * time.Millisecond)
		defer pace.Stop()
		for n := range perRoom {
			for _, room := range roomIDs {
				select {
				case <-postCtx.Done():
					return
				case <-pace.C:
				}
				// A post the hub's death cut off is posted again; the hub
				// may then hold the text twice, and both must be settled.
				for {
					_, err := owner.SendChatMessage(postCtx, room, fmt.Sprintf("@%s job %d", agent.Handle, n), []protocol.Mention{{ID: agent.AgentID}})
					if err == nil || postCtx.Err() != nil {
						break
					}
					timer := time.NewTimer(20 * time.Millisecond) // pacing retries while the hub restarts
					select {
					case <-postCtx.Done():
						timer.Stop()
						return
					case <-timer.C:
					}
				}
			}
		}
	})
	drainCtx, stopDraining := context.WithCancel(ctx)
	defer stopDraining()
	wg.Go(func() { drainSettling(drainCtx, client, &mu, seen, firstSeen) })

	// Kills alternate so that the hub is never killed twice in a row: a
	// daemon restart in between keeps its reconnect backoff short.
	for i := range kills {
		wait := time.Duration(100+rand.IntN(600)) * time.Millisecond
		timer := time.NewTimer(wait)
		<-timer.C
		if i%3 == 0 {
			hubProc.kill()
			hubProc.start()
			hubReady()
			t.Logf("kill %d (hub) after %s", i+1, wait)
			continue
		}
		jamd.kill()
		jamd.start()
		jamdReady()
		t.Logf("kill %d (jamd) after %s", i+1, wait)
	}
	t.Logf("kills done at %s", time.Since(begun).Round(time.Millisecond))
	select {
	case <-postingDone:
	case <-time.After(2 * time.Minute):
		t.Fatal("the owner could not post everything within 2 minutes of the last kill")
	}
	t.Logf("posting done at %s", time.Since(begun).Round(time.Millisecond))

	// The hub's view: the owner's messages in order, which are processed,
	// and how often each reply text was posted.
	type roomState struct {
		owner     []string
		content   map[string]string
		processed map[string]bool
		replies   map[string]int
	}
	hubState := func(room string) roomState {
		st := roomState{content: map[string]string{}, processed: map[string]bool{}, replies: map[string]int{}}
		var msgs []protocol.Message
		cursor := ""
		for {
			page, err := owner.ChatMessages(ctx, room, cursor, 100)
			require.NoError(t, err)
			msgs = append(msgs, page.Messages...)
			if !page.HasMore {
				break
			}
			cursor = page.NextCursor
		}
		slices.SortStableFunc(msgs, func(a, b protocol.Message) int { return strings.Compare(a.InsertedAt, b.InsertedAt) })
		for _, m := range msgs {
			switch {
			case m.SenderID == agent.AgentID:
				// The reply mentions the owner: Band stores its token
				// before the text.
				_, text, _ := strings.Cut(m.Content, "done ")
				st.replies["done "+text]++
			default:
				st.owner = append(st.owner, m.ID)
				st.content[m.ID] = m.Content
				if m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
					st.processed[m.ID] = true
				}
			}
		}
		return st
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pending := 0
		for _, room := range roomIDs {
			st := hubState(room)
			pending += len(st.owner) - len(st.processed)
		}
		if pending == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d messages still unsettled 3 minutes after the kills; logs %s %s", pending, hubLog.Name(), jamdLog.Name())
		timer := time.NewTimer(250 * time.Millisecond) // polling the hub's view of settlement
		<-timer.C
	}
	t.Logf("everything settled at %s", time.Since(begun).Round(time.Millisecond))
	stopDraining()
	stopPosting()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	total := 0
	for i, room := range roomIDs {
		st := hubState(room)
		total += len(st.owner)
		require.GreaterOrEqual(t, len(st.owner), perRoom, "room %d: the hub holds every post", i)
		require.Len(t, st.processed, len(st.owner), "room %d: every message settled", i)
		require.Equal(t, st.owner, firstSeen[room], "room %d: every message delivered, first in the hub's order", i)
		for _, id := range st.owner {
			want := 0
			if c := st.content[id]; c[len(c)-1]%2 == 0 {
				want = 1
			}
			require.Equal(t, want, st.replies["done "+id], "room %d: replies to %s (%q)", i, id, st.content[id])
			delete(st.replies, "done "+id)
		}
		require.Empty(t, st.replies, "room %d: replies to no message of the room", i)
	}
	t.Logf("%d kills, %d messages settled exactly once", kills, total)
	jamd.stop()
	hubProc.stop()
}

// logTail logs the last lines of a child's log file.
func logTail(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Logf("%s: %v", path, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	t.Logf("last lines of %s:\n%s", filepath.Base(path), strings.Join(lines[max(0, len(lines)-40):], "\n"))
}

// drainSettling works the agent's inbox until ctx ends, noting each room's
// messages in the order first seen, and replies to or acks each (by the
// parity of its last byte). A message seen again (after a crash) is worked
// again: reply and ack must make that harmless.
func drainSettling(ctx context.Context, client *apiclient.Client, mu *sync.Mutex, seen map[string]bool, firstSeen map[string][]string) {
	for ctx.Err() == nil {
		inbox, err := client.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 2000})
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
			if m.Content[len(m.Content)-1]%2 == 0 {
				_, err = client.Reply(ctx, m.ID, wire.ReplyRequest{Text: "done " + m.ID})
			} else {
				err = client.Ack(ctx, m.ID, wire.AckRequest{})
			}
			_ = err // a failed settle is retried when the message is listed again
		}
	}
}

// startTestHub starts an embedded hub in the test process, stopped when
// the test ends.
func startTestHub(t *testing.T) *hub.Hub {
	t.Helper()
	h, err := hub.New(hub.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, h.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, h.Stop(context.Background())) })
	return h
}

// startHubWithOwner is startTestHub with a Band client of the hub's owner.
func startHubWithOwner(t *testing.T) (*hub.Hub, *band.Client) {
	t.Helper()
	h := startTestHub(t)
	hc := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(hc.CloseIdle)
	owner, err := band.NewClient(hc, h.URL(), band.APIKey(h.OwnerKey()))
	require.NoError(t, err)
	return h, owner
}
