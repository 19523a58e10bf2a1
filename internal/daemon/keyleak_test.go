package daemon_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store/sqlite"

	_ "modernc.org/sqlite" // the "sqlite" driver, to read the store's tables
)

// TestKeyLeak_hubDownUnderConnectedDaemon stops Band (a standalone hub
// process) under a daemon whose agent sockets are up (two attached agents
// and an owned one at work), waits until the
// daemon has reported a reconnect whose dial failed, and then searches
// everything the daemon wrote for every credential it holds: the person's
// user key (here also the hub owner's key), each agent's key and the
// control API token. The data directory (store files, WAL and shared
// memory, peer logs), the daemon's stdout and stderr, "jam events --json"
// "jam status --json" and the command lines of jamd and its children are
// searched for each key as is, in base64
// (standard and URL alphabets, padded or not) and in hex. None may hold one.
func TestKeyLeak_hubDownUnderConnectedDaemon(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	// The hub, as its own process so that it can be stopped under the
	// daemon. Its data directory is not searched: the hub stands in for
	// Band, which holds keys by design.
	addr := freeLoopbackAddr(t)
	hubURL := "http://" + addr
	hubDir := t.TempDir()
	hubLog, err := os.Create(filepath.Join(t.TempDir(), "hub.log"))
	require.NoError(t, err)
	defer hubLog.Close()
	hubProc := &child{t: t, env: hubChildEnv, log: hubLog, args: []string{addr, hubDir}}
	hubProc.start()
	hubUp := true
	t.Cleanup(func() {
		if hubUp {
			hubProc.kill()
		}
	})
	hc := band.NewHTTP(band.HTTPConfig{Timeout: 10 * time.Second})
	t.Cleanup(hc.CloseIdle)
	var owner *band.Client
	require.Eventually(t, func() bool {
		if owner == nil {
			raw, err := os.ReadFile(filepath.Join(hubDir, "owner.key"))
			if err != nil || len(raw) == 0 {
				return false
			}
			owner, err = band.NewClient(hc, hubURL, band.APIKey(strings.TrimSpace(string(raw))))
			require.NoError(t, err)
		}
		_, err := owner.Profile(ctx)
		return err == nil
	}, 60*time.Second, 20*time.Millisecond, "the hub did not start at %s; log %s", hubURL, hubLog.Name())
	userKey, err := owner.Credential().Key(ctx)
	require.NoError(t, err)
	// An agent registered here and imported by key: the test knows its
	// key without reading the daemon's store.
	reg, err := owner.RegisterAgent(ctx, "imported", "an agent whose key jam imports")
	require.NoError(t, err)
	importedKey := reg.Credentials.APIKey
	require.NotEmpty(t, importedKey)

	// The daemon, pointed at the hub, with the key in its environment (as
	// a person would run it, and so not on its command line).
	cfg := testConfig(t)
	sqliteOnly(t, cfg)
	dataDir := cfg.DataDir
	logDir := t.TempDir()
	stdout, err := os.Create(filepath.Join(logDir, "jamd.out"))
	require.NoError(t, err)
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(logDir, "jamd.err"))
	require.NoError(t, err)
	defer stderr.Close()
	args, err := json.Marshal([]string{"--data-dir", dataDir, "--band", hubURL, "--log-level", "debug"})
	require.NoError(t, err)
	jamd := exec.Command(os.Args[0], "-test.run=^$")
	jamd.Env = append(os.Environ(), childEnv+"="+string(args), "JAM_BAND_KEY="+userKey)
	jamd.Stdout, jamd.Stderr = stdout, stderr
	require.NoError(t, jamd.Start())
	jamdUp := true
	t.Cleanup(func() {
		if jamdUp {
			_ = jamd.Process.Kill()
			_ = jamd.Wait()
		}
		if t.Failed() {
			logTail(t, stderr.Name())
			logTail(t, hubLog.Name())
		}
	})
	client := apiclient.NewWrapped(filepath.Join(dataDir, datadir.SocketFile), controlAPI.Transport)
	defer client.Close()
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	_, err = client.WaitReady(rctx, 10*time.Millisecond)
	cancel()
	require.NoError(t, err)

	// "jam events --json" follows the whole stream from the start; its
	// output is also what the test waits on.
	events := newTap()
	evCtx, stopEvents := context.WithCancel(ctx)
	var evWG sync.WaitGroup
	evWG.Go(func() {
		streams := &cli.IOStreams{In: strings.NewReader(""), Out: events, ErrOut: events}
		cli.Main(evCtx, []string{"events", "--after", "0", "--json", "--data-dir", dataDir}, streams, cli.Deps{Env: noEnv})
	})
	defer func() { stopEvents(); evWG.Wait() }()

	// One agent the daemon registers (its key is created by Band and known
	// only to the daemon), one imported, and a bound room.
	coder, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	imported, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: "imported", Key: importedKey})
	require.NoError(t, err)
	room, err := client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "keys", Agents: []string{"coder"}})
	require.NoError(t, err)
	_, err = client.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
	require.NoError(t, err)
	// And an owned agent, which jamd starts as a child process when it is
	// mentioned: its command line must carry no key.
	// The agent inherits jamd's environment, which here says "run jamd"
	// to the test binary: env removes that.
	demoCmd := append([]string{"env", "-u", childEnv, "-u", hubChildEnv}, demoAgentCommand(t)...)
	demo, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoCmd, Permission: "allow"}})
	require.NoError(t, err)
	demoRoom, err := client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "owned", Agents: []string{"demo"}})
	require.NoError(t, err)
	peers := []string{coder.Peer, imported.Peer, demo.Peer}
	events.waitFor(t, "every agent socket up", func(evs []wire.Event) bool {
		return agentStates(evs, peers, func(d agentState) bool { return d.State == string(band.StateUp) })
	})
	_, err = owner.SendChatMessage(ctx, demoRoom.ID, "@"+demo.Handle+" hello", []protocol.Mention{{ID: demo.AgentID}})
	require.NoError(t, err)
	events.waitFor(t, "the owned agent at work", func(evs []wire.Event) bool {
		for _, ev := range evs {
			if ev.Kind == "turn.update" && ev.Peer == demo.Peer {
				return true
			}
		}
		return false
	})
	argv := processArgs(t, jamd.Process.Pid)
	require.Greater(t, len(argv), 1, "jamd and its owned agent are running: %q", argv)

	// Band goes away. Each agent socket notices, backs off and dials again;
	// the dial fails.
	hubProc.kill()
	hubUp = false
	events.waitFor(t, "a reconnect with a dial error for each agent", func(evs []wire.Event) bool {
		return agentStates(evs, peers, func(d agentState) bool {
			return d.State == string(band.StateReconnecting) && strings.Contains(d.Error, "dial")
		})
	})

	status := newTap()
	code := cli.Main(ctx, []string{"status", "--json", "--data-dir", dataDir}, &cli.IOStreams{In: strings.NewReader(""), Out: status, ErrOut: status}, cli.Deps{Env: noEnv})
	require.Equal(t, 0, code, "jam status: %s", status.String())

	// The data directory as the running daemon holds it: the WAL and the
	// shared memory file exist only while it runs.
	live := readTree(t, dataDir)
	stopEvents()
	evWG.Wait()
	require.NoError(t, jamd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, jamd.Wait())
	jamdUp = false
	final := readTree(t, dataDir)

	// Every key the daemon holds, opened from its store with its own key.
	token, err := os.ReadFile(filepath.Join(dataDir, datadir.TokenFile))
	require.NoError(t, err)
	keys := map[string]string{"api token": strings.TrimSpace(string(token)), "user key": userKey, "imported agent key": importedKey}
	for name, k := range storedKeys(t, dataDir) {
		keys[name] = k
	}
	require.Contains(t, keys, "peer "+coder.Peer+" key", "the daemon-registered agent's key is in the store")
	require.Equal(t, importedKey, keys["peer "+imported.Peer+" key"])
	require.Equal(t, userKey, keys["account band key"])
	// One search per distinct key, named by every role it plays (the
	// imported agent's key is also a peer's; the user key is the account's).
	names := map[string][]string{}
	for name, k := range keys {
		require.GreaterOrEqual(t, len(k), 16, "%s is too short to search for", name)
		names[k] = append(names[k], name)
	}
	byName := map[string]string{}
	for k, ns := range names {
		slices.Sort(ns)
		byName[strings.Join(ns, " = ")] = k
	}
	const tokenName = "api token"
	require.Contains(t, byName, tokenName, "the API token is no other key")

	var leaks []string
	search := func(where string, data []byte, exempt string) {
		for name, k := range byName {
			if name == exempt {
				continue
			}
			for form, needle := range keyForms(k) {
				if i := bytes.Index(data, []byte(needle)); i >= 0 {
					leaks = append(leaks, name+" ("+form+") in "+where+": …"+excerpt(data, i, len(needle))+"…")
				}
			}
		}
	}
	for when, tree := range map[string]map[string][]byte{"running": live, "stopped": final} {
		for rel, data := range tree {
			// api.token holds the API token by design (the CLI reads it);
			// only that key is exempt, and only there.
			exempt := ""
			if rel == datadir.TokenFile {
				exempt = tokenName
			}
			search("data directory ("+when+") "+rel, data, exempt)
		}
	}
	// The store decoded: every value of every table, so a key split over
	// database pages (an overflow chain) is still found.
	for table, data := range storeValues(t, filepath.Join(dataDir, datadir.StoreFile)) {
		search("store table "+table, data, "")
	}
	out, err := os.ReadFile(stdout.Name())
	require.NoError(t, err)
	search("jamd stdout", out, "")
	errLog, err := os.ReadFile(stderr.Name())
	require.NoError(t, err)
	search("jamd stderr", errLog, "")
	search("jam events --json", []byte(events.String()), "")
	search("jam status --json", []byte(status.String()), "")
	for pid, args := range argv {
		search(fmt.Sprintf("the command line of pid %d (jamd or its child)", pid), args, "")
	}
	slices.Sort(leaks)
	require.Empty(t, leaks, "%d credentials in clear:\n%s", len(leaks), strings.Join(leaks, "\n"))

	// The search can find something: the reconnect was logged, and the
	// peer logs exist.
	require.Contains(t, string(errLog), "reconnecting")
	require.Contains(t, final, filepath.Join("logs", "band", "coder.log"))
}

// processArgs is the command line (/proc/PID/cmdline) of pid and of every
// process descended from it.
func processArgs(t *testing.T, pid int) map[int][]byte {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone since the listing
		}
		// "pid (comm) state ppid …"; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(fields) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(fields[1]); err == nil {
			parent[p] = pp
		}
	}
	descends := func(p int) bool {
		for ; p > 1; p = parent[p] {
			if p == pid {
				return true
			}
		}
		return false
	}
	out := map[int][]byte{}
	for p := range parent {
		if !descends(p) {
			continue
		}
		if args, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline")); err == nil {
			out[p] = args
		}
	}
	return out
}

// noEnv is an empty environment for in-process CLI runs.
func noEnv(string) (string, bool) { return "", false }

// agentState is the data of an agent.state event.
type agentState struct {
	State string `json:"state"`
	Error string `json:"error"`
}

// agentStates reports whether every peer has an agent.state event that
// matches.
func agentStates(evs []wire.Event, peers []string, match func(agentState) bool) bool {
	seen := map[string]bool{}
	for _, ev := range evs {
		if ev.Kind != "agent.state" {
			continue
		}
		var d agentState
		if json.Unmarshal(ev.Data, &d) == nil && match(d) {
			seen[ev.Peer] = true
		}
	}
	for _, p := range peers {
		if !seen[p] {
			return false
		}
	}
	return true
}

// tap is an output that a test reads while it is written, and waits on.
type tap struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	signal chan struct{}
}

func newTap() *tap { return &tap{signal: make(chan struct{}, 1)} }

func (w *tap) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	select {
	case w.signal <- struct{}{}:
	default:
	}
	return n, err
}

func (w *tap) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor waits until the JSON event lines written so far satisfy cond.
func (w *tap) waitFor(t *testing.T, what string, cond func([]wire.Event) bool) {
	t.Helper()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	for {
		var evs []wire.Event
		for _, line := range strings.Split(w.String(), "\n") {
			var ev wire.Event
			if json.Unmarshal([]byte(line), &ev) == nil {
				evs = append(evs, ev)
			}
		}
		if cond(evs) {
			return
		}
		select {
		case <-w.signal:
		case <-deadline.C:
			t.Fatalf("no %s within 90s; events:\n%s", what, w.String())
		}
	}
}

// readTree reads every regular file under dir, by path relative to dir.
// The control socket and other special files are skipped.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walked (a WAL at a checkpoint)
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[rel] = b
		return nil
	}))
	require.Contains(t, files, datadir.StoreFile)
	return files
}

// storedKeys reads every account and peer key of the stopped daemon's
// store: from the band connection its row names, or, for a legacy row,
// by opening its sealed key with daemon.key and the associated data the
// daemon once used (accountAAD and peerAAD), repeated here so a change
// there fails to open rather than passing silently.
func storedKeys(t *testing.T, dataDir string) map[string]string {
	t.Helper()
	box, err := secret.LoadOrCreate(filepath.Join(dataDir, "daemon.key"))
	require.NoError(t, err)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dataDir, datadir.StoreFile), Sealer: box})
	require.NoError(t, err)
	defer st.Close()
	keys := map[string]string{}
	wss, err := st.WorkspaceList(t.Context())
	require.NoError(t, err)
	open := func(ws jam.WorkspaceID, id jam.ConnectionID, sealed []byte, aad string) string {
		if id != "" {
			v, err := st.CredentialCurrent(t.Context(), ws, id)
			require.NoError(t, err, aad)
			return string(v.Secret)
		}
		k, err := box.Open(sealed, []byte(aad))
		require.NoError(t, err, aad)
		return string(k)
	}
	for _, ws := range wss {
		accts, err := st.AccountList(t.Context(), ws.ID)
		require.NoError(t, err)
		for _, a := range accts {
			keys["account "+a.Profile+" key"] = open(ws.ID, a.ConnectionID, a.KeySealed, "account|"+string(ws.ID)+"|"+a.Profile)
		}
		peers, err := st.PeerList(t.Context(), ws.ID)
		require.NoError(t, err)
		for _, p := range peers {
			keys["peer "+p.Key.String()+" key"] = open(ws.ID, p.ConnectionID, p.KeySealed, "peer|"+string(ws.ID)+"|"+p.Key.String())
		}
	}
	return keys
}

// keyForms is a key as is and in the encodings a store or log could hold
// it in. The base64 forms are the characters that encode the key alone at
// each of the three alignments it can have inside a longer encoded value.
func keyForms(k string) map[string]string {
	b := []byte(k)
	forms := map[string]string{
		"clear": k,
		"hex":   hex.EncodeToString(b),
		"HEX":   strings.ToUpper(hex.EncodeToString(b)),
	}
	for _, enc := range []struct {
		name string
		enc  *base64.Encoding
	}{{"base64", base64.RawStdEncoding}, {"base64url", base64.RawURLEncoding}} {
		for off := range 3 {
			full := enc.enc.EncodeToString(append(make([]byte, off), b...))
			// Characters wholly inside the key's bits: from bit 8·off to
			// bit 8·(off+len).
			from, to := (8*off+5)/6, (8*(off+len(b)))/6
			forms[fmt.Sprintf("%s at +%d", enc.name, off)] = full[from:to]
		}
	}
	return forms
}

// storeValues is every value of every table of the SQLite database at
// path, concatenated per table, NUL between values.
func storeValues(t *testing.T, path string) map[string][]byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'table'`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.NoError(t, rows.Close())
	require.Contains(t, tables, "events")
	out := map[string][]byte{}
	for _, table := range tables {
		rows, err := db.QueryContext(t.Context(), `SELECT * FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`)
		require.NoError(t, err)
		cols, err := rows.Columns()
		require.NoError(t, err)
		var buf bytes.Buffer
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			require.NoError(t, rows.Scan(ptrs...))
			for _, v := range vals {
				switch v := v.(type) {
				case []byte:
					buf.Write(v)
				case string:
					buf.WriteString(v)
				default:
					fmt.Fprint(&buf, v)
				}
				buf.WriteByte(0)
			}
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		out[table] = buf.Bytes()
	}
	return out
}

// excerpt is printable context around a hit, for the failure message.
func excerpt(data []byte, at, n int) string {
	from, to := max(0, at-60), min(len(data), at+n+20)
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '.'
		}
		return r
	}, string(data[from:to]))
}
