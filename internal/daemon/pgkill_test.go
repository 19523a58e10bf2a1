package daemon_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
)

// pgCluster is a PostgreSQL server of the test's own, so the test may
// kill it without disturbing the shared one.
type pgCluster struct {
	t    *testing.T
	bin  string // the directory of pg_ctl
	root string // owned by the server's user
	port int
	as   []string // the prefix that runs a command as the server's user
}

// newPGCluster starts a throwaway cluster on a free loopback port, or
// skips t when this machine has no PostgreSQL server binaries. As root
// the server runs as the user postgres (initdb refuses root).
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if p, err := exec.LookPath("initdb"); err == nil && len(bins) == 0 {
		bins = append(bins, p)
	}
	if len(bins) == 0 {
		t.Skip("no PostgreSQL server binaries (pg_ctl) on this machine")
	}
	sort.Strings(bins)
	c := &pgCluster{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	root, err := os.MkdirTemp("", "jampg")
	require.NoError(t, err)
	c.root = root
	t.Cleanup(func() { os.RemoveAll(root) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user to run the server")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(root, uid, gid))
		c.as = []string{"runuser", "-u", "postgres", "--"}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c.port = ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	c.run("initdb", "-D", filepath.Join(root, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync")
	c.start()
	t.Cleanup(func() { _ = c.cmd("pg_ctl", "-D", filepath.Join(root, "data"), "-m", "immediate", "-w", "stop").Run() })
	c.run("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(c.port), "-U", "postgres", "jam")
	return c
}

func (c *pgCluster) cmd(name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, c.as...), filepath.Join(c.bin, name)), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.root // the server's user may not enter the test's directory
	return cmd
}

func (c *pgCluster) run(name string, args ...string) {
	c.t.Helper()
	out, err := c.cmd(name, args...).CombinedOutput()
	require.NoError(c.t, err, "%s: %s", name, out)
}

// start starts the server and waits until it accepts connections.
func (c *pgCluster) start() {
	c.t.Helper()
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off", c.port, c.root)
	c.run("pg_ctl", "-D", filepath.Join(c.root, "data"), "-l", filepath.Join(c.root, "server.log"), "-w", "-t", "60", "-o", opts, "start")
}

// crash stops the server as a power cut would: pg_ctl stop -m immediate
// (no checkpoint; the server recovers from its WAL at the next start).
func (c *pgCluster) crash() {
	c.t.Helper()
	c.run("pg_ctl", "-D", filepath.Join(c.root, "data"), "-m", "immediate", "-w", "stop")
}

func (c *pgCluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/jam?sslmode=disable", c.port)
}

// TestPostgres_serverCrashUnderTraffic: PostgreSQL is stopped with
// pg_ctl stop -m immediate while the owner posts and an attached agent
// drains, then started again. Meanwhile status names the store's problem;
// afterwards jamd serves again by itself, and every message is delivered
// and settled exactly once, each room's in posting order.
func TestPostgres_serverCrashUnderTraffic(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a PostgreSQL server of its own")
	}
	const rooms, perRoom = 3, 60
	pg := newPGCluster(t)
	cfg := testConfig(t)
	cfg.Store = pg.url()
	r := start(t, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			var lines []string
			for _, l := range strings.Split(r.log.String(), "\n") {
				if !strings.Contains(l, "level=DEBUG") && !strings.Contains(l, "level=INFO") {
					lines = append(lines, l)
				}
			}
			t.Logf("jamd's warnings and errors (last 40):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	st := r.waitReady(t)
	require.Equal(t, "postgres", st.Store.Driver)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	var roomIDs []string
	for i := range rooms {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("room %d", i), Agents: []string{"coder"}})
		require.NoError(t, err)
		_, err = c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
		require.NoError(t, err)
		roomIDs = append(roomIDs, room.ID)
	}

	// The owner posts (to the embedded hub, which keeps its own SQLite
	// file and so serves through the outage); the crash comes after a
	// third of the messages, the restart once status has reported it.
	var mu sync.Mutex
	posted := make([][]string, rooms)
	total := 0
	crashAt := make(chan struct{})
	var crashOnce sync.Once
	var wg sync.WaitGroup
	for i, room := range roomIDs {
		wg.Go(func() {
			for n := range perRoom {
				sent, err := owner.SendChatMessage(ctx, room, fmt.Sprintf("@%s task %d-%d", agent.Handle, i, n), []protocol.Mention{{ID: agent.AgentID}})
				if err != nil {
					t.Errorf("post: %v", err)
					return
				}
				mu.Lock()
				posted[i] = append(posted[i], sent.ID)
				total++
				if total == rooms*perRoom/3 {
					crashOnce.Do(func() { close(crashAt) })
				}
				mu.Unlock()
			}
		})
	}
	outage := make(chan string, 1) // the store error status showed
	wg.Go(func() {
		select {
		case <-crashAt:
		case <-ctx.Done():
			return
		}
		pg.crash()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			s, err := c.Status(ctx)
			if err == nil && s.Store.Error != "" {
				outage <- s.Store.Error
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		close(outage)
		pg.start()
	})

	// The agent drains; a call that fails during the outage is tried
	// again, and a message seen before is settled again if its settle
	// failed.
	bound := rooms * perRoom
	order := map[string][]string{}
	seen := map[string]bool{}
	settled := map[string]bool{}
	failures := 0
	deadline := time.Now().Add(2 * time.Minute)
	for len(settled) < bound {
		require.True(t, time.Now().Before(deadline), "settled %d of %d", len(settled), bound)
		inbox, err := c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 2000})
		if err != nil {
			failures++
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		for _, m := range inbox.Messages {
			if settled[m.ID] {
				continue
			}
			if !seen[m.ID] {
				seen[m.ID] = true
				order[m.Room] = append(order[m.Room], m.ID)
			}
			if err := c.Ack(ctx, m.ID, wire.AckRequest{}); err != nil {
				failures++
				continue
			}
			settled[m.ID] = true
		}
	}
	wg.Wait()
	problem, ok := <-outage
	require.True(t, ok && problem != "", "status reported the store's problem while PostgreSQL was down")
	t.Logf("status during the outage: store error %q; %d calls failed meanwhile", problem, failures)
	require.NotContains(t, problem, "\n")

	for i, room := range roomIDs {
		require.Equal(t, posted[i], order[room], "room %d: every message seen once, in posting order", i)
	}
	s, err := c.Status(ctx)
	require.NoError(t, err)
	require.Empty(t, s.Store.Error, "the store's problem is gone once it answers again")
	// Nothing is left queued or delivered twice.
	inbox, err := c.Inbox(ctx, wire.InboxQuery{Agent: "coder", Limit: wire.MaxInboxLimit})
	require.NoError(t, err)
	require.Empty(t, inbox.Messages)
}
