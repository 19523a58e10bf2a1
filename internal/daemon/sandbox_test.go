package daemon_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/executor/bwrap"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// Canaries set in jamd's environment: no agent may see them.
const (
	bandKeyCanary = "band_u_CANARY_PERSON_KEY_IN_JAMD_ENV"
	awsCanary     = "aws-canary-secret-in-jamd-env"
)

// setJamdSecrets puts credentials in jamd's environment (the test
// process's: the daemon runs in it), as a person's shell would.
func setJamdSecrets(t *testing.T) {
	t.Setenv("JAM_BAND_KEY", bandKeyCanary)
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsCanary)
	t.Setenv("LC_TIME", "C")
}

// TestSandbox_agentEnvIsAnAllowlist: jamd runs with a Band key and a cloud
// credential in its environment; an owned agent that dumps its whole
// environment (to its stderr, which jamd logs) sees neither, and gets
// jamd's PATH and locale and a home of its own, not the person's.
func TestSandbox_agentEnvIsAnAllowlist(t *testing.T) {
	setJamdSecrets(t)
	for _, sandbox := range []string{"local", "bwrap"} {
		t.Run(sandbox, func(t *testing.T) {
			if sandbox == "bwrap" {
				requireBwrap(t)
			}
			agentEnvIsAnAllowlist(t, sandbox)
		})
	}
}

func agentEnvIsAnAllowlist(t *testing.T, sandbox string) {
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	script := `env | sed 's/^/agent-env: /' >&2; ` + demoAgentEnv + `="$HOME/demo-agent" exec "$0" -test.run='^$'`
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "envdump", Runtime: &wire.AgentRuntime{
		Command: []string{"/bin/sh", "-c", script, os.Args[0]}, Permission: "allow", Env: []string{"TEMPLATE_VAR=given"}, Sandbox: sandbox}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "env", Agents: []string{"envdump"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	requireReply(t, owner, room.ID, agent.AgentID)

	var env []string
	for _, line := range strings.Split(r.log.String(), "\n") {
		if _, kv, ok := strings.Cut(line, "agent-env: "); ok {
			env = append(env, strings.TrimSuffix(kv, `"`))
		}
	}
	require.NotEmpty(t, env, "the agent's environment is in the log")
	joined := strings.Join(env, "\n")
	require.NotContains(t, joined, bandKeyCanary, "jamd's Band key does not reach the agent")
	require.NotContains(t, joined, awsCanary, "the person's cloud credential does not reach the agent")
	require.NotContains(t, joined, "JAM_BAND_KEY")
	require.Contains(t, env, "TEMPLATE_VAR=given", "the template's own variable is there")
	require.Contains(t, env, "PATH="+os.Getenv("PATH"))
	require.Contains(t, env, "LC_TIME=C", "the locale is passed on")
	home := envOf(env, "HOME")
	require.NotEqual(t, os.Getenv("HOME"), home, "not the person's home")
	require.True(t, strings.HasPrefix(home, filepath.Join(cfg.DataDir, "agents")+"/"), "the agent's own home under the data dir: %s", home)
	require.True(t, strings.HasPrefix(envOf(env, "TMPDIR"), filepath.Join(cfg.DataDir, "agents")+"/"), "and its own temp dir")
}

func envOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if n, val, ok := strings.Cut(kv, "="); ok && n == name {
			v = val
		}
	}
	return v
}

// requireReply waits for the agent's reply in a room and returns it.
func requireReply(t *testing.T, owner *band.Client, room, agentID string) string {
	t.Helper()
	var reply string
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(t.Context(), room, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.SenderID == agentID && strings.Contains(m.Content, "You said:") {
				reply = m.Content
				return true
			}
		}
		return false
	}, 90*time.Second, 20*time.Millisecond, "the agent replies")
	return reply
}

// sandboxProbeEnv, in the demo agent's environment, makes it try the
// paths it lists (label=path, separated by "|") at every prompt and report
// in its answer what it could reach.
const sandboxProbeEnv = "JAM_TEST_SANDBOX_PROBE"

// probeFile is what the probing agent writes in its worktree itself.
const probeFile = "written-inside.txt"

// sandboxProbe is the demo agent's probe: for each labelled path it says
// "label=reached" when it could read the file, list the directory or
// connect to the socket, else "label=denied"; then it writes probeFile in
// the session's directory (not through the client) and lists its
// environment's names.
func sandboxProbe(spec string) func(cwd string) string {
	return func(cwd string) string {
		var out []string
		for _, entry := range strings.Split(spec, "|") {
			label, path, _ := strings.Cut(entry, "=")
			out = append(out, label+"="+reach(path))
		}
		wrote := "ok"
		if err := os.WriteFile(filepath.Join(cwd, probeFile), []byte("from the agent's own process\n"), 0o600); err != nil {
			wrote = "failed"
		}
		// In a git worktree, commit it: git inside the sandbox reaches
		// what it needs of the repository.
		committed := "none"
		if _, err := os.Stat(filepath.Join(cwd, ".git")); err == nil {
			committed = "ok"
			for _, args := range [][]string{{"add", probeFile}, {"-c", "user.name=probe", "-c", "user.email=probe@localhost", "-c", "commit.gpgsign=false",
				"commit", "-q", "-m", "written inside the sandbox"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = cwd
				if out, err := cmd.CombinedOutput(); err != nil {
					committed = "failed:" + strings.Join(strings.Fields(string(out)), "_")
					break
				}
			}
		}
		out = append(out, "committed="+committed)
		// What would make git run a program for the next user of the
		// repository, the person included: its config and its hooks.
		gitconfig, githook := "none", "none"
		cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir")
		cmd.Dir = cwd
		if b, err := cmd.Output(); err == nil {
			common := strings.TrimSpace(string(b))
			gitconfig, githook = "written", "written"
			if f, err := os.OpenFile(filepath.Join(common, "config"), os.O_WRONLY|os.O_APPEND, 0); err != nil {
				gitconfig = "denied"
			} else {
				f.Close()
			}
			if err := os.WriteFile(filepath.Join(common, "hooks", "post-commit"), []byte("#!/bin/sh\ntouch planted\n"), 0o755); err != nil {
				githook = "denied"
			}
		}
		out = append(out, "gitconfig="+gitconfig, "githook="+githook)
		var names []string
		for _, kv := range os.Environ() {
			n, _, _ := strings.Cut(kv, "=")
			names = append(names, n)
		}
		sort.Strings(names)
		return "probe: " + strings.Join(out, " ") + " wrote=" + wrote + " env=" + strings.Join(names, ",") + " home=" + os.Getenv("HOME") + " end"
	}
}

func reach(path string) string {
	if strings.HasPrefix(path, "http://") {
		cl := http.Client{Timeout: 10 * time.Second}
		res, err := cl.Get(path)
		if err != nil {
			return "denied"
		}
		res.Body.Close()
		return "reached"
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return "denied"
	}
	switch {
	case fi.Mode()&os.ModeSocket != 0:
		c, err := net.Dial("unix", path)
		if err != nil {
			return "denied"
		}
		c.Close()
	case fi.IsDir():
		entries, err := os.ReadDir(path)
		if err != nil {
			return "denied"
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return "listed:" + strings.Join(names, "+")
	default:
		if _, err := os.ReadFile(path); err != nil {
			return "denied"
		}
	}
	return "reached"
}

// requireBwrap skips t where bubblewrap cannot make a sandbox, unless
// JAM_REQUIRE_BWRAP=1 makes that a failure.
func requireBwrap(t *testing.T) {
	t.Helper()
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Skip(err)
	}
}

// TestSandbox_bwrapAgentReachesNothingOfJam: under sandbox=bwrap an owned
// agent's own process tries jam's key, API token, control socket, store,
// hub, the data directory, another agent's worktree and jamd's /proc
// environment: all denied; its environment holds none of jamd's secrets;
// and its turn still runs, writes its worktree (itself and through the
// client) and replies.
func TestSandbox_bwrapAgentReachesNothingOfJam(t *testing.T) {
	requireBwrap(t)
	setJamdSecrets(t)
	for _, placement := range []string{"shared", "dedicated"} {
		t.Run(placement, func(t *testing.T) { bwrapAgentReachesNothingOfJam(t, placement) })
	}
}

func bwrapAgentReachesNothingOfJam(t *testing.T, placement string) {
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0" // so that api.token exists
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client

	// Another agent, with a room, so it has a worktree holding a file.
	_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "other", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	_, err = c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "other", Agents: []string{"other"}})
	require.NoError(t, err)
	var otherTree string
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		for _, s := range ss {
			if strings.Contains(s.Agent, "other") && s.Worktree != "" {
				otherTree = s.Worktree
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the other agent's session has a worktree")
	require.NoError(t, os.WriteFile(filepath.Join(otherTree, "other-secret.txt"), []byte("not yours"), 0o600))

	repo := gitRepo(t, "parser")
	data := cfg.DataDir
	targets := map[string]string{
		"repomain":  filepath.Join(repo, "parser.txt"),
		"repohooks": filepath.Join(repo, ".git", "hooks"),
		"key":       filepath.Join(data, "daemon.key"),
		"token":     filepath.Join(data, datadir.TokenFile),
		"socket":    filepath.Join(data, datadir.SocketFile),
		"store":     filepath.Join(data, datadir.StoreFile),
		"hub":       filepath.Join(data, "hub"),
		"data":      data,
		"other":     filepath.Join(otherTree, "other-secret.txt"),
		"otherdir":  otherTree,
		"jamdenv":   "/proc/" + strconv.Itoa(os.Getpid()) + "/environ",
	}
	for label, p := range targets {
		if label == "jamdenv" || label == "repohooks" {
			continue
		}
		_, err := os.Lstat(p)
		require.NoError(t, err, "%s exists outside the sandbox: %s", label, p)
	}
	var labels, entries []string
	for label := range targets {
		labels = append(labels, label)
	}
	sort.Strings(labels)
	for _, l := range labels {
		entries = append(entries, l+"="+targets[l])
	}
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "probe", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow",
		Sandbox: "bwrap", Repo: repo, Placement: placement, Env: []string{sandboxProbeEnv + "=" + strings.Join(entries, "|")}}})
	require.NoError(t, err)
	require.Equal(t, "bwrap", agent.Runtime.Desired.Sandbox, "the agent's configuration shows its sandbox")
	require.Equal(t, "on", agent.Runtime.Desired.Network)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "probe", Agents: []string{"probe"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" fix the parser", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	reply := requireReply(t, owner, room.ID, agent.AgentID)
	t.Logf("reply: %s", reply)

	require.Contains(t, reply, "You said:", "the turn ran")
	require.Contains(t, reply, "fix the parser")
	_, probe, ok := strings.Cut(reply, "probe: ")
	require.True(t, ok, "the probe reported: %s", reply)
	fields := map[string]string{}
	for _, f := range strings.Fields(probe) {
		if k, v, ok := strings.Cut(f, "="); ok {
			fields[k] = v
		}
	}
	for _, l := range labels {
		if l == "repohooks" {
			// The repository's git directory is the worktree's to use
			// (objects, refs); its main checkout is not.
			require.True(t, strings.HasPrefix(fields[l], "listed:") || fields[l] == "denied", fields[l])
			continue
		}
		if l == "data" {
			// The sandbox holds the directories leading to the agent's
			// own paths (made by bwrap, empty but for those), nothing more.
			require.Equal(t, "listed:agents+worktrees", fields[l], "the data directory shows only the way to the agent's own directories")
			continue
		}
		require.Equal(t, "denied", fields[l], "%s (%s) is out of the agent's reach", l, targets[l])
	}
	require.Equal(t, "ok", fields["wrote"], "the agent's process writes its worktree")
	require.Equal(t, "ok", fields["committed"], "and commits in it")
	require.Equal(t, "denied", fields["gitconfig"], "but cannot change the repository's config")
	require.Equal(t, "denied", fields["githook"], "nor plant a hook the person's own git would run")
	_, err = os.Stat(filepath.Join(repo, ".git", "hooks", "post-commit"))
	require.ErrorIs(t, err, os.ErrNotExist, "no hook planted in the repository")
	env := strings.Split(fields["env"], ",")
	require.NotContains(t, env, "JAM_BAND_KEY")
	require.NotContains(t, env, "AWS_SECRET_ACCESS_KEY")
	require.NotContains(t, reply, bandKeyCanary)
	require.True(t, strings.HasPrefix(fields["home"], filepath.Join(data, "agents")+"/"), "its own home: %s", fields["home"])

	// Both writes are in its worktree, seen from outside.
	var tree string
	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	for _, s := range ss {
		if strings.Contains(s.Agent, "probe") {
			tree = s.Worktree
		}
	}
	require.NotEmpty(t, tree)
	got, err := os.ReadFile(filepath.Join(tree, probeFile))
	require.NoError(t, err)
	require.Equal(t, "from the agent's own process\n", string(got))
	log, err := exec.Command("git", "-C", tree, "log", "-1", "--format=%s", "--", probeFile).CombinedOutput()
	require.NoError(t, err, "%s", log)
	require.Equal(t, "written inside the sandbox\n", string(log), "the commit made inside is on the session's branch")
	notes, err := os.ReadFile(filepath.Join(tree, "NOTES.md"))
	require.NoError(t, err)
	require.Contains(t, string(notes), "fix the parser", "the note written through the client")
	require.False(t, slices.Contains(env, ""), "env names parsed")
}

// TestSandbox_configKeys: sandbox, network and read_only are template keys
// of jam agent add and jam agent config; a read shows the agent's sandbox
// (the daemon's default when none is asked for), and a bad value is
// invalid_argument with nothing changed.
func TestSandbox_configKeys(t *testing.T) {
	t.Parallel()
	r := start(t, testConfig(t))
	r.waitReady(t)
	ctx := t.Context()
	c := r.client
	def := "local"
	if bwrap.Probe() == nil {
		def = "bwrap"
	}
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t)}})
	require.NoError(t, err)
	require.Equal(t, def, agent.Runtime.Desired.Sandbox, "no sandbox asked: the daemon's default, shown")
	require.Equal(t, "on", agent.Runtime.Desired.Network)
	require.Empty(t, agent.Runtime.PendingChange, "no process ran: nothing is pending")

	st, err := c.AgentConfig(ctx, "demo", wire.AgentConfigRequest{Set: map[string]string{"sandbox": "local", "read_only": "/opt/tools:/srv/models"}})
	require.NoError(t, err)
	require.Equal(t, "local", st.Desired.Sandbox)
	require.Equal(t, []string{"/opt/tools", "/srv/models"}, st.Desired.ReadOnly)
	require.Empty(t, st.PendingChange, "no process ran: its first start takes the change, so nothing is pending")
	st, err = c.AgentConfig(ctx, "demo", wire.AgentConfigRequest{Set: map[string]string{"sandbox": "", "read_only": ""}})
	require.NoError(t, err)
	require.Equal(t, def, st.Desired.Sandbox, "sandbox= is the default again")
	require.Empty(t, st.Desired.ReadOnly)

	for _, set := range []map[string]string{
		{"sandbox": "docker"}, {"sandbox": "BWRAP"}, {"network": "maybe"}, {"network": "off", "sandbox": "local"},
		{"read_only": "relative/path"}, {"read_only": "/"},
	} {
		_, err := c.AgentConfig(ctx, "demo", wire.AgentConfigRequest{Set: set})
		requireCode(t, err, wire.CodeInvalidArgument, "%q", set)
	}
	for _, rt := range []wire.AgentRuntime{{Sandbox: "chroot"}, {Network: "none"}, {Sandbox: "local", Network: "off"}, {ReadOnly: []string{"x"}}} {
		rt.Command = []string{"true"}
		_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "bad", Runtime: &rt})
		requireCode(t, err, wire.CodeInvalidArgument, "%+v", rt)
	}
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	require.Len(t, agents, 1, "nothing added by a refused request")
	require.Equal(t, def, agents[0].Runtime.Desired.Sandbox, "nothing changed by a refused one")
}

// TestSandbox_networkOffReachesTheModelThroughTheBridge: what the real
// OpenCode test does, with the demo agent: under sandbox=bwrap
// network=off, the agent, started behind realagent's bridge, reaches the
// fake model at its loopback address (the bridge forwards it to the
// model's unix socket) and not a loopback listener of the host; its turn
// runs and replies.
func TestSandbox_networkOffReachesTheModelThroughTheBridge(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	dir, err := os.MkdirTemp("", "jam-nb") // short: a unix socket's path is limited
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "model.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	model.Serve(ln)
	host := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(host.Close)

	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "cut", Runtime: &wire.AgentRuntime{
		Command: realagent.BridgeCommand(sock, model.Addr(), demoAgentCommand(t)...), Permission: "allow", Sandbox: "bwrap", Network: "off",
		Env: []string{sandboxProbeEnv + "=model=" + model.URL() + "/models|host=" + host.URL}}})
	require.NoError(t, err)
	require.Equal(t, "off", agent.Runtime.Desired.Network)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "cut", Agents: []string{"cut"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	reply := requireReply(t, owner, room.ID, agent.AgentID)
	require.Contains(t, reply, "model=reached", "the model, through the bridge")
	require.Contains(t, reply, "host=denied", "not the host's loopback")
	require.Contains(t, reply, "wrote=ok")
}

// TestSandbox_stopEndsTheWholeSandbox: a sandboxed agent that left a
// process in the background is ended with it when jamd stops: the group
// jamd signals holds bwrap and everything inside.
func TestSandbox_stopEndsTheWholeSandbox(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	const marker = "7734591" // sleep's argument, to find it in /proc
	r := start(t, testConfig(t))
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	script := `sleep ` + marker + ` & ` + demoAgentEnv + `="$HOME/demo-agent" exec "$0" -test.run='^$'`
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "lingerer", Runtime: &wire.AgentRuntime{
		Command: []string{"/bin/sh", "-c", script, os.Args[0]}, Permission: "allow", Sandbox: "bwrap"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "linger", Agents: []string{"lingerer"}})
	require.NoError(t, err)
	_, err = owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	requireReply(t, owner, room.ID, agent.AgentID)
	require.NotZero(t, sleepers(t, marker), "the background process runs")

	_, _ = r.stop()
	require.Eventually(t, func() bool { return sleepers(t, marker) == 0 }, 30*time.Second, 20*time.Millisecond,
		"no process of the sandbox outlives jamd's stop")
}

// sleepers counts the processes running `sleep marker`.
func sleepers(t *testing.T, marker string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	n := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+marker+"\x00" {
			n++
		}
	}
	return n
}
