package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// claudeStep bounds one exchange with the real Claude Code through jamd:
// seconds alone, 10-30 s on two loaded cores, more under the race
// detector.
const claudeStep = 3 * time.Minute

// hubCalls counts what jamd asks of the hub: the settlements (POST
// …/messages/{id}/processed answered 2xx) by message, the failure marks by
// message, and the agent's posts by room. Band is the judge of what was
// settled; these counts say how often jamd did it.
type hubCalls struct {
	mu        sync.Mutex
	processed map[string]int // guarded by mu
	failed    map[string]int // guarded by mu
	posts     map[string]int // guarded by mu
	order     []string       // guarded by mu: "post ROOM", "processed MSG", "failed MSG" as answered
}

var (
	settlePath = regexp.MustCompile(`^/api/v1/agent/chats/([^/]+)/messages/([^/]+)/(processed|failed)$`)
	postPath   = regexp.MustCompile(`^/api/v1/agent/chats/([^/]+)/messages$`)
)

// statusWriter keeps the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// front serves the hub's handler on a loopback server of its own,
// counting jamd's calls; the WebSocket passes through untouched.
func (c *hubCalls) front(t *testing.T, h http.Handler) *httptest.Server {
	c.processed, c.failed, c.posts = map[string]int{}, map[string]int{}, map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.status < 200 || sw.status > 299 {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if m := settlePath.FindStringSubmatch(r.URL.Path); m != nil {
			c.order = append(c.order, m[3]+" "+m[2])
			if m[3] == "processed" {
				c.processed[m[2]]++
			} else {
				c.failed[m[2]]++
			}
		} else if m := postPath.FindStringSubmatch(r.URL.Path); m != nil {
			c.order = append(c.order, "post "+m[1])
			c.posts[m[1]]++
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// postedBeforeSettled says whether the room had a post answered before
// msg's first settlement.
func (c *hubCalls) postedBeforeSettled(msg, room string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	posted := false
	for _, e := range c.order {
		switch e {
		case "post " + room:
			posted = true
		case "processed " + msg:
			return posted
		}
	}
	return false
}

// counts are msg's settlements and failure marks, and the room's posts.
func (c *hubCalls) counts(msg, room string) (processed, failed, posts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.processed[msg], c.failed[msg], c.posts[room]
}

// claudeRig is the real Claude Code as an owned agent (harness claude,
// permission allow) of a jamd started as its own process, under the
// default sandbox (bwrap, network off: the CLI reaches the fake model
// through realagent's bridge inside the sandbox's network namespace), on a
// hub in the test process whose calls are counted.
type claudeRig struct {
	*orphanRig
	model  *fakemodel.Server
	calls  *hubCalls
	marker string
	repo   string
	agent  wire.Agent
}

func newClaudeRig(t *testing.T) *claudeRig {
	t.Helper()
	requireBwrap(t)
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	cl := realagent.NewClaude(t, model)

	calls := &hubCalls{}
	r := newJamdRig(t, calls)
	cr := &claudeRig{orphanRig: r, model: model, calls: calls, marker: newMarker(), repo: gitRepo(t, "app")}
	r.start()
	var err error
	// No sandbox named: the daemon's default, bwrap here.
	env := append(cl.SandboxEnv(), orphanMarkerEnv+"="+cr.marker)
	cr.agent, err = r.client.AgentAdd(t.Context(), wire.AgentAddRequest{Name: "claude", Runtime: &wire.AgentRuntime{
		Harness: "claude", Command: cl.SandboxCommand(), Env: env, Permission: "allow", Network: "off",
		Repo: cr.repo, HandshakeTimeout: claudeStep.String()}})
	require.NoError(t, err)
	require.Equal(t, "bwrap", cr.agent.Runtime.Desired.Sandbox, "the default sandbox")
	return cr
}

// room makes a room with the agent.
func (cr *claudeRig) room(title string) wire.Room {
	cr.t.Helper()
	room, err := cr.client.RoomCreate(cr.t.Context(), wire.RoomCreateRequest{Title: title, Agents: []string{"claude"}})
	require.NoError(cr.t, err)
	return room
}

// mention posts text to the agent in room as the person.
func (cr *claudeRig) mention(room wire.Room, text string) protocol.MessageSent {
	cr.t.Helper()
	sent, err := cr.owner.SendChatMessage(cr.t.Context(), room.ID, "@"+cr.agent.Handle+" "+text, []protocol.Mention{{ID: cr.agent.AgentID}})
	require.NoError(cr.t, err)
	return sent
}

// hubView is what the hub shows of room: the agent's replies, oldest
// first, and the delivery to the agent of msg.
func (cr *claudeRig) hubView(room wire.Room, msg string) (replies []string, d protocol.DeliveryRecord) {
	cr.t.Helper()
	page, err := cr.owner.ChatMessages(cr.t.Context(), room.ID, "", 100)
	require.NoError(cr.t, err)
	require.False(cr.t, page.HasMore)
	msgs := page.Messages
	slices.SortStableFunc(msgs, func(a, b protocol.Message) int { return strings.Compare(a.InsertedAt, b.InsertedAt) })
	for _, m := range msgs {
		if m.SenderID == cr.agent.AgentID {
			replies = append(replies, m.Content)
		}
		if m.ID == msg {
			d = m.Metadata.DeliveryStatus[cr.agent.AgentID]
		}
	}
	return replies, d
}

// settled waits until the hub shows msg processed and returns the room's
// replies then.
func (cr *claudeRig) settled(room wire.Room, msg string) []string {
	cr.t.Helper()
	var replies []string
	require.Eventually(cr.t, func() bool {
		var d protocol.DeliveryRecord
		replies, d = cr.hubView(room, msg)
		return d.Status == protocol.DeliveryProcessed
	}, claudeStep, 50*time.Millisecond, "message %s settled on the hub", msg)
	return replies
}

// session is the agent's session in room.
func (cr *claudeRig) session(room wire.Room) wire.Session {
	cr.t.Helper()
	ss, err := cr.client.Sessions(cr.t.Context())
	require.NoError(cr.t, err)
	for _, s := range ss {
		if s.Room == room.ID {
			return s
		}
	}
	cr.t.Fatalf("no session in room %s", room.ID)
	return wire.Session{}
}

// turns lists the turns of the session in room, each with its executions.
func (cr *claudeRig) turns(room wire.Room) []wire.Turn {
	cr.t.Helper()
	ctx := cr.t.Context()
	ts, err := cr.client.Turns(ctx, cr.session(room).ID)
	require.NoError(cr.t, err)
	for i := range ts {
		ts[i], err = cr.client.Turn(ctx, ts[i].ID)
		require.NoError(cr.t, err)
	}
	return ts
}

// waitTurns waits until the session in room has n turns, the last of them
// in state, and returns them.
func (cr *claudeRig) waitTurns(room wire.Room, n int, state string) []wire.Turn {
	cr.t.Helper()
	var ts []wire.Turn
	require.Eventually(cr.t, func() bool {
		ss, err := cr.client.Sessions(cr.t.Context())
		if err != nil || len(ss) == 0 {
			return false
		}
		ts = cr.turns(room)
		return len(ts) == n && ts[n-1].State == state
	}, claudeStep, 50*time.Millisecond, "turn %d of room %s becomes %s (turns: %+v)", n, room.ID, state, &ts)
	return ts
}

// holdNext makes the model hold its answer to the next turn's request,
// and returns the gate; it waits for that request and returns it.
func (cr *claudeRig) holdNext(prior int) (chan struct{}, fakemodel.Captured) {
	cr.t.Helper()
	gate := make(chan struct{})
	cr.model.Push(fakemodel.Reply{Text: []string{"never ", "finished"}, Hold: gate})
	cr.t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	ctx, cancel := context.WithTimeout(cr.t.Context(), claudeStep)
	defer cancel()
	reqs, err := cr.model.WaitRequests(ctx, prior+1, fakemodel.Turn)
	require.NoError(cr.t, err, "the CLI asks the model")
	return gate, reqs[prior]
}

// modelTurns counts the model's turn requests.
func (cr *claudeRig) modelTurns() []fakemodel.Captured {
	var out []fakemodel.Captured
	for _, c := range cr.model.Requests() {
		if fakemodel.Turn(c) {
			out = append(out, c)
		}
	}
	return out
}

// conversation is every message's text of a model request.
func conversation(c fakemodel.Captured) string {
	var b strings.Builder
	for _, m := range c.Messages {
		b.WriteString(string(m.Content))
		b.WriteString("\n")
	}
	return b.String()
}

// requireLaunchedOn checks that the process pid (bwrap, leading the
// sandbox) was started on the Claude session thread: with --session-id
// for a fresh one, --resume for a replacement.
func requireLaunchedOn(t *testing.T, pid int, flag, thread string) {
	t.Helper()
	argv, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	require.NoError(t, err, "process %d runs", pid)
	require.Contains(t, string(argv), "\x00"+flag+"\x00"+thread+"\x00", "process %d: %q", pid, strings.ReplaceAll(string(argv), "\x00", " "))
}

// bashCall is a model reply calling Claude Code's Bash tool.
func bashCall(command string) fakemodel.Reply {
	args, _ := json.Marshal(map[string]string{"command": command, "description": "edit a file"})
	return fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "Bash", Arguments: args}}
}

// TestClaudeE2E_twoRoomsEditTheirWorktrees: a person mentions the owned
// Claude Code agent in two rooms; each room's turn runs a Bash call (the
// allow policy answers its approval) that edits a file in that room's
// worktree and commits it on the room's branch (git works in the
// sandbox); the reply appears in the right room, the message settles on
// the hub only after it, once; each room's session ran its own process
// (two leases, two live processes at once).
func TestClaudeE2E_twoRoomsEditTheirWorktrees(t *testing.T) {
	t.Parallel()
	cr := newClaudeRig(t)
	type roomRun struct {
		room  wire.Room
		sent  protocol.MessageSent
		word  string
		turns []wire.Turn
	}
	var runs []roomRun
	// Each room's two model responses report their own usage; jam usage
	// --by room shows exactly their sums.
	want := map[string]wire.UsageSum{}
	for i, word := range []string{"alpha", "beta"} {
		room := cr.room(word)
		// The tool call edits the worktree; the answer after it is
		// held until the test has seen that nothing is settled yet.
		gate := make(chan struct{})
		call := bashCall("echo " + word + " > EDIT.txt && git add EDIT.txt && git -c user.name=claude -c user.email=claude@localhost commit -qm 'edit for " + word + "'")
		call.Usage = &fakemodel.Usage{Input: 2100 + i, Cached: 300, Output: 40 + i}
		answer := fakemodel.Reply{Text: []string{"Edited ", "for " + word + "."}, Hold: gate, Usage: &fakemodel.Usage{Input: 2500 + 10*i, Cached: 2000, Output: 7}}
		want[room.ID] = wire.UsageSum{Turns: 1, InputTokens: int64(2100 + i - 300 + 2500 + 10*i - 2000), CachedTokens: 2300, OutputTokens: int64(40 + i + 7)}
		cr.model.Push(call, answer)
		prior := len(cr.modelTurns())
		sent := cr.mention(room, "please edit the file for "+word)
		ctx, cancel := context.WithTimeout(t.Context(), claudeStep)
		reqs, err := cr.model.WaitRequests(ctx, prior+2, fakemodel.Turn)
		cancel()
		require.NoError(t, err, "the CLI asks the model, then sends the tool's result")
		require.Contains(t, reqs[prior].LastUser(), "please edit the file for "+word)
		require.NotEmpty(t, reqs[prior+1].ToolResults(), "the Bash call ran and its result went back")
		require.Contains(t, conversation(reqs[prior]), "Is a git repository: true", "git works on the worktree in the sandbox")

		wt := cr.session(room).Worktree
		b, err := os.ReadFile(filepath.Join(wt, "EDIT.txt"))
		require.NoError(t, err, "the Bash call ran in the room's worktree")
		require.Equal(t, word+"\n", string(b))
		// And committed it on the room's branch, in the repository.
		s := cr.session(room)
		out, err := exec.Command("git", "-C", cr.repo, "log", "-1", "--format=%s", s.Branch).CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, "edit for "+word+"\n", string(out), "the commit is on the session's branch %s", s.Branch)
		replies, d := cr.hubView(room, sent.ID)
		require.Empty(t, replies, "no reply before the model answers")
		require.NotEqual(t, protocol.DeliveryProcessed, d.Status, "not settled before the reply")

		close(gate)
		replies = cr.settled(room, sent.ID)
		require.Len(t, replies, 1)
		require.True(t, strings.HasSuffix(replies[0], "Edited for "+word+"."), "the room's own answer: %q", replies[0])
		runs = append(runs, roomRun{room: room, sent: sent, word: word, turns: cr.waitTurns(room, 1, "succeeded")})
	}

	// Each room's file is its own; nothing of one room is in the other's
	// worktree.
	a, b := cr.session(runs[0].room), cr.session(runs[1].room)
	require.NotEqual(t, a.Worktree, b.Worktree)
	require.NotEqual(t, a.ProviderThread, b.ProviderThread, "a Claude session per room")
	for i, s := range []wire.Session{a, b} {
		require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, s.ProviderThread, "the --session-id jam picked")
		requireLaunchedOn(t, runs[i].turns[0].Executions[0].Pid, "--session-id", s.ProviderThread)
	}
	// Two leases, each its own process, and both still run.
	ea, eb := runs[0].turns[0].Executions, runs[1].turns[0].Executions
	require.Len(t, ea, 1)
	require.Len(t, eb, 1)
	require.NotEqual(t, ea[0].Lease, eb[0].Lease, "two leases")
	require.NotEqual(t, ea[0].Pid, eb[0].Pid, "two processes")
	require.True(t, processAlive(ea[0].Pid) && processAlive(eb[0].Pid), "both processes serve their rooms")
	for _, e := range []wire.Execution{ea[0], eb[0]} {
		argv, err := os.ReadFile("/proc/" + strconv.Itoa(e.Pid) + "/cmdline")
		require.NoError(t, err)
		require.Equal(t, "bwrap", filepath.Base(strings.SplitN(string(argv), "\x00", 2)[0]), "the CLI runs in the sandbox")
	}
	for _, run := range runs {
		processed, failed, posts := cr.calls.counts(run.sent.ID, run.room.ID)
		require.Equal(t, []int{1, 0, 1}, []int{processed, failed, posts}, "room %s: settled once, never failed, one reply", run.word)
		require.True(t, cr.calls.postedBeforeSettled(run.sent.ID, run.room.ID), "room %s: the reply was posted before the settlement", run.word)
	}
	rep, err := cr.client.Usage(t.Context(), "room", "")
	require.NoError(t, err)
	got := map[string]wire.UsageSum{}
	for _, row := range rep.Rows {
		require.Equal(t, int64(1), row.Costed, "room %s: Claude Code reports the cost itself", row.Key)
		require.Zero(t, row.Estimated, "room %s: a reported cost is not estimated", row.Key)
		got[row.Key] = wire.UsageSum{Turns: row.Turns, InputTokens: row.InputTokens, CachedTokens: row.CachedTokens, OutputTokens: row.OutputTokens}
	}
	require.Equal(t, want, got, "jam usage --by room: exactly what the fake model reported")
	cr.jamd.stop()
	requireNoAgentLeft(t, 0, cr.marker, "after a clean stop")
}

// lastError is the error of the delivery's current attempt on the hub.
func lastError(d protocol.DeliveryRecord) string {
	for _, a := range d.Attempts {
		if a.AttemptNumber == d.CurrentAttempt && a.Error != nil {
			return *a.Error
		}
	}
	return ""
}

// TestClaudeE2E_cancelledTurnFailsThenIsAnswered: a person cancels the
// Claude Code turn while the model holds its answer (jam turn cancel): the
// turn ends cancelled, the message is marked failed on the hub with the
// reason and stays unsettled, with no reply; after a configuration change
// offers it again, a later turn answers and settles it, once.
func TestClaudeE2E_cancelledTurnFailsThenIsAnswered(t *testing.T) {
	t.Parallel()
	cr := newClaudeRig(t)
	ctx := t.Context()
	room := cr.room("changelog")
	sent := cr.mention(room, "write the changelog")
	_, req := cr.holdNext(0)
	require.Contains(t, req.LastUser(), "write the changelog")
	ts := cr.waitTurns(room, 1, "running")

	code, out := jamCLI(t, cr.dataDir, "turn", "cancel", ts[0].ID)
	require.Equal(t, 0, code, out)
	ts = cr.waitTurns(room, 1, "cancelled")
	require.Equal(t, "cancelled_by_user", ts[0].Reason)
	var d protocol.DeliveryRecord
	require.Eventually(t, func() bool {
		_, d = cr.hubView(room, sent.ID)
		return d.Status == protocol.DeliveryFailed
	}, claudeStep, 50*time.Millisecond, "the hub shows the message failed")
	require.Equal(t, "turn cancelled (cancelled_by_user)", lastError(d))
	replies, _ := cr.hubView(room, sent.ID)
	require.Empty(t, replies, "a cancelled turn posts nothing")
	processed, failed, posts := cr.calls.counts(sent.ID, room.ID)
	require.Equal(t, []int{0, 1, 0}, []int{processed, failed, posts}, "marked failed once, never settled")
	require.True(t, processAlive(ts[0].Executions[0].Pid), "the CLI survives the interrupt")

	// Offered again: the next turn answers (the model's default reply
	// echoes the request).
	prior := len(cr.modelTurns())
	_, err := cr.client.AgentConfig(ctx, "claude", wire.AgentConfigRequest{Set: map[string]string{"handshake_timeout": "4m"}})
	require.NoError(t, err)
	replies = cr.settled(room, sent.ID)
	require.Len(t, replies, 1)
	require.Contains(t, replies[0], "FAKE-REPLY: ")
	require.Contains(t, replies[0], "write the changelog", "the answer to the cancelled message")
	require.Greater(t, len(cr.modelTurns()), prior)
	ts = cr.waitTurns(room, 2, "succeeded")
	require.Equal(t, ts[0].Message, ts[1].Message, "the same message")
	processed, failed, posts = cr.calls.counts(sent.ID, room.ID)
	require.Equal(t, []int{1, 1, 1}, []int{processed, failed, posts}, "settled once, by its one reply")
	cr.jamd.stop()
	requireNoAgentLeft(t, 0, cr.marker, "after a clean stop")
}

// TestClaudeE2E_killedCLIIsResumed: the Claude Code process group is
// SIGKILLed mid-turn; the turn ends interrupted, the session's lease is
// replaced (generation 2) by a process started with --resume, and the next
// turn answers the message in the same Claude session: the model sees the
// earlier turn, and the thread is unchanged.
func TestClaudeE2E_killedCLIIsResumed(t *testing.T) {
	t.Parallel()
	cr := newClaudeRig(t)
	room := cr.room("memory")
	first := cr.mention(room, "remember the word pineapple")
	cr.settled(room, first.ID)
	thread := cr.session(room).ProviderThread
	require.NotEmpty(t, thread)

	sent := cr.mention(room, "now refactor the parser")
	_, req := cr.holdNext(len(cr.modelTurns()))
	require.Contains(t, conversation(req), "pineapple")
	ts := cr.waitTurns(room, 2, "running")
	pid := ts[1].Executions[0].Pid
	require.Equal(t, int64(1), ts[1].LeaseGeneration)
	require.NoError(t, syscall.Kill(-pid, syscall.SIGKILL), "kill the CLI's process group mid-turn")

	prior := len(cr.modelTurns())
	replies := cr.settled(room, sent.ID)
	ts = cr.waitTurns(room, 3, "succeeded")
	require.Equal(t, "interrupted", ts[1].State)
	require.Equal(t, "process_exited", ts[1].Reason)
	require.Equal(t, ts[1].Message, ts[2].Message, "the next turn answers the same message")
	require.Equal(t, int64(2), ts[2].LeaseGeneration, "on a replaced lease")
	require.NotEqual(t, pid, ts[2].Executions[0].Pid)
	require.False(t, processAlive(pid))
	requireLaunchedOn(t, ts[2].Executions[0].Pid, "--resume", thread)
	require.Len(t, replies, 2)
	require.Contains(t, replies[1], "now refactor the parser")
	// The replacement resumed the Claude session: its first request
	// carries the earlier turn, and the thread did not change.
	mt := cr.modelTurns()
	require.Greater(t, len(mt), prior)
	require.Contains(t, conversation(mt[prior]), "pineapple", "the resumed session sent its history")
	require.Equal(t, thread, cr.session(room).ProviderThread, "the same Claude session")
	for _, m := range []protocol.MessageSent{first, sent} {
		processed, failed, _ := cr.calls.counts(m.ID, room.ID)
		require.Equal(t, []int{1, 0}, []int{processed, failed}, "message %s settled once", m.ID)
	}
	_, _, posts := cr.calls.counts("", room.ID)
	require.Equal(t, 2, posts, "one reply per message")
	cr.jamd.stop()
	requireNoAgentLeft(t, 0, cr.marker, "after a clean stop")
}

// TestClaudeE2E_restartedJamdResumes: jamd is stopped mid-turn (SIGTERM,
// a clean stop) and later SIGKILLed mid-turn; each time no process of the
// agent is left from the old jamd, and the restarted jamd resumes the
// Claude session (--resume: the model sees every earlier turn, the thread
// is unchanged) and answers the message; nothing is settled or posted
// twice.
func TestClaudeE2E_restartedJamdResumes(t *testing.T) {
	t.Parallel()
	cr := newClaudeRig(t)
	room := cr.room("restart")
	first := cr.mention(room, "remember the word pineapple")
	cr.settled(room, first.ID)
	thread := cr.session(room).ProviderThread
	msgs := []protocol.MessageSent{first}

	for i, how := range []string{"stop", "sigkill"} {
		word := []string{"mango", "papaya"}[i]
		sent := cr.mention(room, "now think about "+word)
		msgs = append(msgs, sent)
		_, req := cr.holdNext(len(cr.modelTurns()))
		require.Contains(t, req.LastUser(), word)
		ts := cr.waitTurns(room, len(msgs)+i, "running") // each restart left an interrupted turn
		pid := ts[len(ts)-1].Executions[0].Pid
		require.NotEmpty(t, agentProcesses(t, pid, cr.marker), "%s: the CLI runs before jamd goes", how)
		if how == "stop" {
			cr.jamd.stop()
			requireNoAgentLeft(t, pid, cr.marker, "after a clean stop mid-turn")
		} else {
			SIGKILLLeavesNoAgent(t, cr.jamd.cmd.Process, groupOrMarked(t, pid, cr.marker))
			_ = cr.jamd.cmd.Wait()
		}

		prior := len(cr.modelTurns())
		cr.start()
		replies := cr.settled(room, sent.ID)
		require.Len(t, replies, len(msgs), "%s: one reply per message", how)
		require.Contains(t, replies[len(replies)-1], word)
		mt := cr.modelTurns()
		require.Greater(t, len(mt), prior)
		hist := conversation(mt[prior])
		require.Contains(t, hist, "pineapple", "%s: the resumed session sent its history", how)
		if i > 0 {
			require.Contains(t, hist, "mango", "%s: and the turn answered after the first restart", how)
		}
		require.Equal(t, thread, cr.session(room).ProviderThread, "%s: the same Claude session", how)
		// The interrupted turn, then the one that answered, on a new
		// process of the restarted jamd.
		ts = cr.waitTurns(room, len(msgs)+i+1, "succeeded")
		cut, last := ts[len(ts)-2], ts[len(ts)-1]
		require.Equal(t, []string{"interrupted", "daemon_restarted", sent.ID}, []string{cut.State, cut.Reason, cut.Message}, how)
		require.Equal(t, sent.ID, last.Message)
		require.NotEqual(t, pid, last.Executions[0].Pid)
		require.Greater(t, last.LeaseGeneration, cut.LeaseGeneration)
		requireLaunchedOn(t, last.Executions[0].Pid, "--resume", thread)
	}
	// The hub settled each message once, and each has one reply.
	for _, m := range msgs {
		_, d := cr.hubView(room, m.ID)
		require.Equal(t, protocol.DeliveryProcessed, d.Status)
		processed, _, _ := cr.calls.counts(m.ID, room.ID)
		require.Equal(t, 1, processed, "message %s settled once", m.ID)
	}
	_, _, posts := cr.calls.counts("", room.ID)
	require.Equal(t, len(msgs), posts, "one reply per message")
	cr.jamd.stop()
	requireNoAgentLeft(t, 0, cr.marker, "after a clean stop")
}
