package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/cli"
)

// jamCLI runs the jam command line against the daemon of dataDir and
// returns its exit code and output.
func jamCLI(t *testing.T, dataDir string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Main(t.Context(), append(args, "--data-dir", dataDir), &cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, cli.Deps{Env: noEnv})
	return code, out.String()
}

// demoAgentScript writes an executable script at path that runs the demo
// agent (from the test binary) with its sessions in its home.
func demoAgentScript(t *testing.T, path string) {
	t.Helper()
	script := fmt.Sprintf("#!/bin/sh\n%s=\"$HOME/demo-agent\" exec %q -test.run='^$'\n", demoAgentEnv, os.Args[0])
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
}

// waitDelivery waits until the agent's delivery of msg in room has status
// (queued, processing, processed or failed), as GET /v1/rooms/{room}/messages
// shows it, and returns it.
func waitDelivery(t *testing.T, c *apiclient.Client, room, msg, agentID, status string) wire.AgentDelivery {
	t.Helper()
	var got wire.AgentDelivery
	require.Eventually(t, func() bool {
		page, err := c.RoomMessages(t.Context(), room, apiclient.RoomMessagesQuery{})
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.ID != msg {
				continue
			}
			for _, d := range m.Delivery {
				if d.AgentID == agentID {
					got = d
					return d.Status == status
				}
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "delivery of %s becomes %s (last: %+v)", msg, status, got)
	return got
}

// agentNamed is the agent as GET /v1/agents shows it.
func agentNamed(t *testing.T, c *apiclient.Client, handle string) wire.Agent {
	t.Helper()
	agents, err := c.Agents(t.Context())
	require.NoError(t, err)
	for _, a := range agents {
		if a.Handle == handle {
			return a
		}
	}
	t.Fatalf("no agent %s", handle)
	return wire.Agent{}
}

// TestFailures_badCommandShowsFailedInTheRoom: an owned agent whose
// command is gone (removed after it was added) cannot serve a message: the
// message shows failed, with why, in jam room show; the agent is degraded
// with the reason in jam agent list; the message is not settled, and once
// the command is good again it is answered and settled.
func TestFailures_badCommandShowsFailedInTheRoom(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone-agent.sh")
	demoAgentScript(t, gone)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "flaky", Runtime: &wire.AgentRuntime{Command: []string{gone}, Permission: "allow", Sandbox: "local"}})
	require.NoError(t, err)
	require.Equal(t, wire.HealthOnline, agent.Health, "no turn has failed yet")
	require.NoError(t, os.Remove(gone))

	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "flaky", Agents: []string{"flaky"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" hello", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	d := waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryFailed)
	require.Contains(t, d.Error, "harness_error")
	require.Contains(t, d.Error, "gone-agent.sh")
	code, out := jamCLI(t, cfg.DataDir, "room", "show", room.ID)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `-> @`+agent.Handle+` failed: turn failed \(harness_error\): start agent .*gone-agent\.sh`, out)

	a := agentNamed(t, c, agent.Handle)
	require.Equal(t, wire.HealthDegraded, a.Health)
	require.Contains(t, a.HealthReason, "gone-agent.sh")
	code, out = jamCLI(t, cfg.DataDir, "agent", "list")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `local/flaky\s+\S+\s+degraded`, out)
	require.Contains(t, out, "degraded local/flaky: harness_error: ")

	in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "flaky"})
	require.NoError(t, err)
	require.Len(t, in.Messages, 1, "a failed message is still queued, not settled")

	// A good command again: the configuration change offers the message
	// again, and the next turn answers and settles it.
	good := filepath.Join(dir, "good-agent.sh")
	demoAgentScript(t, good)
	_, err = c.AgentConfig(ctx, "flaky", wire.AgentConfigRequest{Set: map[string]string{"command": good}})
	require.NoError(t, err)
	waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryProcessed)
	require.Eventually(t, func() bool {
		return agentNamed(t, c, agent.Handle).Health == wire.HealthOnline
	}, 10*time.Second, 20*time.Millisecond, "online again after a success")
}

// TestFailures_cancelledTurnShowsFailedInTheRoom: a turn cancelled while
// it runs leaves its message failed (cancelled) in the room, not settled.
func TestFailures_cancelledTurnShowsFailedInTheRoom(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "slow", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow"}})
	require.NoError(t, err)
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "slow", Agents: []string{"slow"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" [slow] think it over", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	var turn string
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) == 0 {
			return false
		}
		turn = ss[0].CurrentTurn
		return ss[0].CurrentTurnState == "running"
	}, 60*time.Second, 20*time.Millisecond, "the turn runs")
	code, out := jamCLI(t, cfg.DataDir, "turn", "cancel", turn)
	require.Equal(t, 0, code, out)

	d := waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryFailed)
	require.Equal(t, "turn cancelled (cancelled_by_user)", d.Error)
	code, out = jamCLI(t, cfg.DataDir, "room", "show", room.ID)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "-> @"+agent.Handle+" failed: turn cancelled (cancelled_by_user)")
	in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "slow"})
	require.NoError(t, err)
	require.Len(t, in.Messages, 1, "a cancelled turn settles nothing")
	require.Equal(t, wire.HealthOnline, agentNamed(t, c, agent.Handle).Health, "a cancel is no fault of the agent")
}

// TestFailures_badRepositoryShowsFailedInTheRoom: an owned agent whose
// repository stopped being a git repository cannot get a session in a new
// room: the room's message shows failed with why, and the agent degraded;
// once the repository is one again (and the configuration names it), the
// room gets its session and the message is answered and settled.
func TestFailures_badRepositoryShowsFailedInTheRoom(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	ctx := t.Context()
	c := r.client
	repo := gitRepo(t, "proj")
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Repo: repo}})
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(repo, ".git")))

	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "coder", Agents: []string{"coder"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, room.ID, "@"+agent.Handle+" fix it", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)

	d := waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryFailed)
	require.Contains(t, d.Error, "agent cannot serve this room")
	require.Contains(t, d.Error, "not a git repository")
	code, out := jamCLI(t, cfg.DataDir, "room", "show", room.ID)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `-> @`+agent.Handle+` failed: agent cannot serve this room: .*not a git repository`, out)
	a := agentNamed(t, c, agent.Handle)
	require.Equal(t, wire.HealthDegraded, a.Health)
	require.Contains(t, a.HealthReason, "not a git repository")

	// A repository again: naming it offers the room's messages again.
	fixed := gitRepo(t, "proj")
	_, err = c.AgentConfig(ctx, "coder", wire.AgentConfigRequest{Set: map[string]string{"repo": fixed}})
	require.NoError(t, err)
	waitDelivery(t, c, room.ID, sent.ID, agent.AgentID, protocol.DeliveryProcessed)
	require.Equal(t, wire.HealthOnline, agentNamed(t, c, agent.Handle).Health)
}

// TestFailures_agentAddChecksCommandAndRepo: jam agent add refuses, before
// anything is registered, a command that is not found or not executable
// and a repository that is not a git repository, with invalid_argument
// (exit code 2) naming what is wrong; jam agent config and jam room add
// check the keys they change the same way.
func TestFailures_agentAddChecksCommandAndRepo(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	c := r.client
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-exec.sh")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	plain := t.TempDir()
	for _, tc := range []struct {
		name string
		rt   wire.AgentRuntime
		want string
	}{
		{"missing", wire.AgentRuntime{Command: []string{"jam-no-such-agent-7f3"}}, `command "jam-no-such-agent-7f3" is not found on jamd's PATH`},
		{"absent", wire.AgentRuntime{Command: []string{filepath.Join(dir, "absent")}}, "does not exist"},
		{"notexec", wire.AgentRuntime{Command: []string{notExec}}, "is not executable"},
		{"dir", wire.AgentRuntime{Command: []string{dir}}, "is a directory"},
		{"plainrepo", wire.AgentRuntime{Command: []string{"/bin/sh"}, Repo: plain}, "is not a git repository"},
		{"norepo", wire.AgentRuntime{Command: []string{"/bin/sh"}, Repo: filepath.Join(dir, "nowhere")}, "is not a directory"},
	} {
		_, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: tc.name, Runtime: &tc.rt})
		requireCode(t, err, wire.CodeInvalidArgument, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
	agents, err := c.Agents(ctx)
	require.NoError(t, err)
	require.Empty(t, agents, "nothing was registered")

	code, out := jamCLI(t, cfg.DataDir, "agent", "add", "ghost", "--command", "jam-no-such-agent-7f3")
	require.Equal(t, int(cli.ExitUsage), code, out)
	require.Contains(t, out, `"jam-no-such-agent-7f3" is not found`)

	_, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "ok", Runtime: &wire.AgentRuntime{Command: []string{"/bin/sh"}}})
	require.NoError(t, err)
	code, out = jamCLI(t, cfg.DataDir, "agent", "config", "ok", "command=jam-no-such-agent-7f3")
	require.Equal(t, int(cli.ExitUsage), code, out)
	require.Contains(t, out, "is not found")
	_, err = c.AgentConfig(ctx, "ok", wire.AgentConfigRequest{Set: map[string]string{"repo": plain}})
	requireCode(t, err, wire.CodeInvalidArgument)
	require.ErrorContains(t, err, "is not a git repository")
	_, err = c.AgentConfig(ctx, "ok", wire.AgentConfigRequest{Set: map[string]string{"model": "m"}})
	require.NoError(t, err, "a key that is not checked changes as before")
}

// TestWebUI_failedDeliveryShowsWhy: in the web UI, a message an owned
// agent could not serve shows failed in the room's timeline with the
// reason in words, and the agents page shows the agent degraded, why, and
// not online.
func TestWebUI_failedDeliveryShowsWhy(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTPAddr = "127.0.0.1:0"
	r := start(t, cfg)
	r.waitReady(t)
	ctx := t.Context()
	c := r.client
	gone := filepath.Join(t.TempDir(), "gone-agent.sh")
	demoAgentScript(t, gone)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "flaky", Runtime: &wire.AgentRuntime{Command: []string{gone}, Permission: "allow", Sandbox: "local"}})
	require.NoError(t, err)
	require.NoError(t, os.Remove(gone))
	room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "Flaky room", Agents: []string{"flaky"}})
	require.NoError(t, err)

	p := openBrowser(t)
	p.signIn(signInLink(t, r))
	p.waitFor("the rooms list", `document.querySelector('main a[data-room=`+js(room.ID)+`]') !== null`)
	p.do(chromedp.Click(chromedp.CSS(`main a[data-room=` + js(room.ID) + `]`)))
	p.waitFor("the room", `document.querySelector('#compose') !== null`)
	posted, err := c.RoomPost(ctx, room.ID, wire.RoomPostRequest{Text: "@" + agent.Handle + " hello"})
	require.NoError(t, err)
	chip := msgSelector(posted.ID) + ` .chip[data-agent=` + js(agent.AgentID) + `]`
	p.waitFor("the failed delivery with its reason", `(document.querySelector(`+js(chip)+`) || {dataset: {}}).dataset.status === 'failed' && document.querySelector(`+js(chip)+`).textContent.includes('gone-agent.sh')`)
	text := p.eval(`document.querySelector(` + js(chip) + `).textContent`)
	require.Contains(t, text, "failed: turn failed (harness_error): start agent")
	p.screenshot("webui-room-failed")

	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="agents"]`)))
	row := `tr[data-peer="local/flaky"]`
	p.waitFor("the degraded agent", `(document.querySelector(`+js(row)+`) || {textContent: ''}).textContent.includes('degraded')`)
	rowText := p.eval(`document.querySelector(` + js(row) + `).textContent`)
	require.Contains(t, rowText, "gone-agent.sh", "the agents page says why")
	require.NotContains(t, rowText, "online")
	p.screenshot("webui-agents-degraded")
}
