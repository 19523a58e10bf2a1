package daemon_test

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/demoagent"
)

// roomWithoutAgent creates a room the agent is not in yet.
func roomWithoutAgent(t *testing.T, c *apiclient.Client, title string) string {
	t.Helper()
	room, err := c.RoomCreate(t.Context(), wire.RoomCreateRequest{Title: title})
	require.NoError(t, err)
	return room.ID
}

// inRoom reports whether the agent is a participant of the room on Band.
func inRoom(t *testing.T, owner *band.Client, room, agentID string) bool {
	t.Helper()
	ps, err := owner.ChatParticipants(t.Context(), room)
	require.NoError(t, err)
	for _, p := range ps {
		if p.ID == agentID {
			return true
		}
	}
	return false
}

// askAndWait mentions the agent in the room and waits for its reply.
func askAndWait(t *testing.T, owner *band.Client, agent wire.Agent, room, text string) {
	t.Helper()
	ctx := t.Context()
	_, err := owner.SendChatMessage(ctx, room, "@"+agent.Handle+" "+text, []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, room, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.SenderID == agent.AgentID && strings.Contains(m.Content, text) {
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "the agent answers %q", text)
}

// sessionIn returns the agent's session in the room.
func sessionIn(t *testing.T, c *apiclient.Client, room string) wire.Session {
	t.Helper()
	ss, err := c.Sessions(t.Context())
	require.NoError(t, err)
	for _, s := range ss {
		if s.Room == room {
			return s
		}
	}
	t.Fatalf("no session in room %s among %d", room, len(ss))
	return wire.Session{}
}

// gitRepo makes a repository with one commit holding a file named after
// it.
func gitRepo(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, name+".txt"), []byte(name+"\n"), 0o644))
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."},
		{"-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "first"}} {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	return dir
}

// TestRoomAdd_sharedRefusesAnotherCommand: under placement shared, a room
// asking for a command other than the agent's is refused with
// placement_incompatible (HTTP 409) before anything is made: no session,
// no worktree directory, and the agent is not added to the room on Band. A
// room asking for the agent's own command is added as usual.
func TestRoomAdd_sharedRefusesAnotherCommand(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	c := r.client
	ctx := t.Context()
	cmd := demoAgentCommand(t)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: cmd, Permission: "allow", Placement: "shared"}})
	require.NoError(t, err)
	room := roomWithoutAgent(t, c, "refused")

	err = c.RoomAdd(ctx, room, wire.RoomAddRequest{Agent: "demo", Overrides: wire.SessionOverrides{Command: append(append([]string{}, cmd...), "--other")}})
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "an API error: %v", err)
	require.Equal(t, wire.CodePlacementIncompatible, ae.Code)
	require.Equal(t, http.StatusConflict, ae.HTTPStatus)
	require.Contains(t, ae.Message, "placement=dedicated", "the message says what to do")

	ss, err := c.Sessions(ctx)
	require.NoError(t, err)
	require.Empty(t, ss, "no session was made")
	entries, err := os.ReadDir(filepath.Join(cfg.DataDir, "worktrees"))
	if err == nil {
		require.Empty(t, entries, "no worktree was made")
	} else {
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	require.False(t, inRoom(t, owner, room, agent.AgentID), "the agent was not added to the room")

	// Bad overrides are invalid arguments, refused the same way.
	for name, ov := range map[string]wire.SessionOverrides{
		"relative repository": {Repo: "src/elsewhere"},
		"missing repository":  {Repo: filepath.Join(t.TempDir(), "nothing-here")},
		"blank program":       {Command: []string{" "}},
	} {
		err := c.RoomAdd(ctx, room, wire.RoomAddRequest{Agent: "demo", Overrides: ov})
		require.True(t, errors.As(err, &ae), "%s: an API error: %v", name, err)
		require.Equal(t, wire.CodeInvalidArgument, ae.Code, name)
	}
	require.False(t, inRoom(t, owner, room, agent.AgentID))

	// The agent's own command is no override: the room is added, and its
	// session runs the template's configuration as is.
	require.NoError(t, c.RoomAdd(ctx, room, wire.RoomAddRequest{Agent: "demo", Overrides: wire.SessionOverrides{Command: cmd}}))
	require.True(t, inRoom(t, owner, room, agent.AgentID))
	require.Nil(t, sessionIn(t, c, room).Overrides)
	askAndWait(t, owner, agent, room, "hello shared")
}

// TestRoomAdd_dedicatedRunsTheRoomsCommand: under placement dedicated, a
// room added with --command runs its turns on a process started with that
// command, and the agent's other room on one started with the template's.
// The two commands give the demo agent different state directories, where
// each process keeps the sessions it served.
func TestRoomAdd_dedicatedRunsTheRoomsCommand(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	c := r.client
	ctx := t.Context()
	// Local: each command keeps its sessions in a directory of the
	// test's, which tells which process served a room.
	templateState, roomState := t.TempDir(), t.TempDir()
	templateCmd, roomCmd := demoAgentCommandIn(templateState), demoAgentCommandIn(roomState)
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: templateCmd, Permission: "allow", Placement: "dedicated",
		Sandbox: "local"}})
	require.NoError(t, err)
	plain, own := roomWithoutAgent(t, c, "plain"), roomWithoutAgent(t, c, "own")
	require.NoError(t, c.RoomAdd(ctx, plain, wire.RoomAddRequest{Agent: "demo"}))
	require.NoError(t, c.RoomAdd(ctx, own, wire.RoomAddRequest{Agent: "demo", Overrides: wire.SessionOverrides{Command: roomCmd}}))
	// The session exists as soon as the add returns: it was made before
	// the agent joined.
	ownSession := sessionIn(t, c, own)
	require.NotNil(t, ownSession.Overrides)
	require.Equal(t, roomCmd, ownSession.Overrides.Command)
	require.Nil(t, sessionIn(t, c, plain).Overrides)

	askAndWait(t, owner, agent, plain, "plain room work")
	askAndWait(t, owner, agent, own, "own room work")

	for _, tc := range []struct{ room, state, other string }{{plain, templateState, roomState}, {own, roomState, templateState}} {
		s := sessionIn(t, c, tc.room)
		require.NotEmpty(t, s.ProviderThread)
		_, err := os.Stat(filepath.Join(tc.state, s.ProviderThread+".json"))
		require.NoError(t, err, "room %s: its session was served by the process started with its command", tc.room)
		_, err = os.Stat(filepath.Join(tc.other, s.ProviderThread+".json"))
		require.ErrorIs(t, err, os.ErrNotExist, "room %s: not by the other process", tc.room)
	}

	// Switched to shared, the room with its own command is not served by
	// the shared process under the wrong command: its turn fails with
	// placement_incompatible and settles nothing. The plain room is
	// served on.
	_, err = c.AgentConfig(ctx, "demo", wire.AgentConfigRequest{Set: map[string]string{"placement": "shared"}})
	require.NoError(t, err)
	sent, err := owner.SendChatMessage(ctx, own, "@"+agent.Handle+" after the switch", []protocol.Mention{{ID: agent.AgentID}})
	require.NoError(t, err)
	var refused wire.Turn
	require.Eventually(t, func() bool {
		turns, err := c.Turns(ctx, ownSession.ID)
		require.NoError(t, err)
		for _, tr := range turns {
			if tr.Message == sent.ID && tr.State == "failed" {
				refused = tr
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "the own room's turn is refused")
	require.Equal(t, "placement_incompatible", refused.Reason)
	require.Empty(t, refused.Lease, "it ran on no process")
	askAndWait(t, owner, agent, plain, "plain after the switch")
	page, err := owner.ChatMessages(ctx, own, "", 50)
	require.NoError(t, err)
	for _, m := range page.Messages {
		require.NotContains(t, m.Content, "You said: after the switch", "nothing answered the refused message")
		if m.ID == sent.ID {
			require.NotEqual(t, protocol.DeliveryProcessed, m.Metadata.DeliveryStatus[agent.AgentID].Status, "the refused message is not settled")
		}
	}
	in, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "demo"})
	require.NoError(t, err)
	queued := false
	for _, m := range in.Messages {
		queued = queued || m.ID == sent.ID
	}
	require.True(t, queued, "the refused message stays queued for the agent")
}

// TestRoomAdd_sharedRoomWithAnotherRepository: a repository override is
// per session, so the shared placement takes it: the room's worktree is a
// checkout of that repository, the agent's other room's of the template's,
// and the shared process works in each.
func TestRoomAdd_sharedRoomWithAnotherRepository(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	r := start(t, cfg)
	owner := ownerClient(t, r.waitReady(t))
	c := r.client
	ctx := t.Context()
	mainRepo, other := gitRepo(t, "main"), gitRepo(t, "other")
	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "demo", Runtime: &wire.AgentRuntime{Command: demoAgentCommand(t), Permission: "allow", Repo: mainRepo}})
	require.NoError(t, err)
	plain, own := roomWithoutAgent(t, c, "plain"), roomWithoutAgent(t, c, "own")
	require.NoError(t, c.RoomAdd(ctx, plain, wire.RoomAddRequest{Agent: "demo"}))
	require.NoError(t, c.RoomAdd(ctx, own, wire.RoomAddRequest{Agent: "demo", Overrides: wire.SessionOverrides{Repo: other}}))
	askAndWait(t, owner, agent, plain, "plain repo work")
	askAndWait(t, owner, agent, own, "other repo work")

	for _, tc := range []struct{ room, repo, file string }{{plain, mainRepo, "main.txt"}, {own, other, "other.txt"}} {
		s := sessionIn(t, c, tc.room)
		require.NotEmpty(t, s.Worktree)
		out, err := exec.Command("git", "-C", s.Worktree, "rev-parse", "--path-format=absolute", "--git-common-dir").CombinedOutput()
		require.NoError(t, err, "%s", out)
		want, err := filepath.EvalSymlinks(filepath.Join(tc.repo, ".git"))
		require.NoError(t, err)
		got, err := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
		require.NoError(t, err)
		require.Equal(t, want, got, "room %s: a worktree of %s", tc.room, tc.repo)
		_, err = os.Stat(filepath.Join(s.Worktree, tc.file))
		require.NoError(t, err, "the checkout holds the repository's files")
		_, err = os.Stat(filepath.Join(s.Worktree, demoagent.NotesFile))
		require.NoError(t, err, "the shared process worked in the room's own worktree")
	}
	require.Equal(t, other, sessionIn(t, c, own).Overrides.Repo)
	require.Nil(t, sessionIn(t, c, plain).Overrides)
}
