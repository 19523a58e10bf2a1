package daemon_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
)

// openCodeEdit is a real `opencode acp` agent (on the fake model) of a
// fresh repository holding parser.go, whose first turn, asked in a room,
// ran edit (a shell command) through opencode's bash tool and succeeded.
type openCodeEdit struct {
	cfg     config.Config
	r       *running
	owner   *band.Client
	repo    string
	head    string // the repository's commit before the turn
	agent   wire.Agent
	room    wire.Room
	session wire.Session
	turn    wire.Turn
}

// gitIn runs git in dir and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// runOpenCodeEdit starts a daemon and waits for the agent's turn.
func runOpenCodeEdit(t *testing.T, edit string) *openCodeEdit {
	t.Helper()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	oc := realagent.NewOpenCode(t, model)

	e := &openCodeEdit{repo: t.TempDir()}
	gitIn(t, e.repo, "init", "-q", "-b", "main")
	require.NoError(t, os.WriteFile(filepath.Join(e.repo, "parser.go"), []byte("package parser\n\nfunc Parse() error { return nil } // broken\n"), 0o644))
	gitIn(t, e.repo, "add", "-A")
	gitIn(t, e.repo, "commit", "-q", "-m", "init")
	e.head = gitIn(t, e.repo, "rev-parse", "HEAD")
	args, err := json.Marshal(map[string]string{"command": edit, "description": "fix the parser"})
	require.NoError(t, err)
	model.Push(fakemodel.Reply{ToolCall: &fakemodel.ToolCallReply{Name: "bash", Arguments: args}})

	e.cfg = testConfig(t)
	e.r = start(t, e.cfg)
	e.owner = ownerClient(t, e.r.waitReady(t))
	ctx := t.Context()
	c := e.r.client
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(e.r.log.String())
		}
	})
	e.agent, err = c.AgentAdd(ctx, wire.AgentAddRequest{Name: "opencode", Runtime: openCodeRuntime(t, oc, e.repo)})
	require.NoError(t, err)
	e.room, err = c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "parser", Agents: []string{"opencode"}})
	require.NoError(t, err)
	_, err = e.owner.SendChatMessage(ctx, e.room.ID, "@"+e.agent.Handle+" fix the parser", []protocol.Mention{{ID: e.agent.AgentID}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ss, err := c.Sessions(ctx)
		require.NoError(t, err)
		if len(ss) != 1 {
			return false
		}
		e.session = ss[0]
		ts, err := c.Turns(ctx, ss[0].ID)
		require.NoError(t, err)
		if len(ts) == 0 {
			return false
		}
		e.turn = ts[0]
		require.NotEqual(t, "failed", e.turn.State, "turn %s: %s", e.turn.ID, e.turn.Detail)
		return e.turn.State == "succeeded"
	}, 3*time.Minute, 50*time.Millisecond, "the turn succeeds")
	return e
}

// TestOwned_openCodeChangeSetEndToEnd: a person asks the real `opencode
// acp` (on the fake model) for an edit in a room of a repository's agent.
// The model runs a command through opencode's bash tool that edits a
// tracked file and writes a credential file; the reply reaches the room,
// the turn's change set holds the edit and not the credential, `jam
// changeset diff` prints the edit, and `jam changeset apply --to` a fresh
// clone at the change set's base reproduces it byte for byte.
func TestOwned_openCodeChangeSetEndToEnd(t *testing.T) {
	t.Parallel()
	edit := `printf 'package parser\n\nfunc Parse() error { return nil } // fixed\n' > parser.go && printf 'TOKEN=canary-e2e-4b1d\n' > .env`
	e := runOpenCodeEdit(t, edit)
	cfg, c, owner, agent, room, session, turn, repo := e.cfg, e.r.client, e.owner, e.agent, e.room, e.session, e.turn, e.repo
	ctx := t.Context()
	require.Eventually(t, func() bool {
		page, err := owner.ChatMessages(ctx, room.ID, "", 50)
		require.NoError(t, err)
		for _, m := range page.Messages {
			if m.SenderID == agent.AgentID && strings.Contains(m.Content, "FAKE-DONE after tool") {
				return true
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond, "the agent's reply in the room")

	// The turn's change set: the edit, and no credential.
	css, err := c.ChangeSets(ctx, wire.ChangeSetQuery{Session: session.ID, Turn: turn.ID})
	require.NoError(t, err)
	require.Len(t, css, 1)
	cs := css[0]
	require.Equal(t, "turn", cs.Origin)
	require.Len(t, cs.Files, 1, "%+v", cs.Files)
	require.Equal(t, "parser.go", cs.Files[0].Path)
	require.Equal(t, "modified", cs.Files[0].Kind)
	require.Equal(t, 1, cs.Additions)
	require.Equal(t, 1, cs.Deletions)
	wts, err := c.Worktrees(ctx)
	require.NoError(t, err)
	require.Len(t, wts, 1)
	require.FileExists(t, filepath.Join(wts[0].Path, ".env"), "the agent did write the credential file")

	env := map[string]string{"HOME": cfg.DataDir, "JAM_DATA_DIR": cfg.DataDir, "NO_COLOR": "1"}
	code, out, errOut := runJam(t, env, "changeset", "diff", cs.ID)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	require.Contains(t, out, "-func Parse() error { return nil } // broken\n+func Parse() error { return nil } // fixed\n")
	require.NotContains(t, out, "canary-e2e")

	// A fresh clone at the change set's base, and the change set applied.
	clone := filepath.Join(t.TempDir(), "clone")
	gitIn(t, filepath.Dir(clone), "clone", "-q", repo, clone)
	gitIn(t, clone, "checkout", "-q", cs.BaseCommit)
	code, out, errOut = runJam(t, env, "changeset", "apply", cs.ID, "--to", clone)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	got, err := os.ReadFile(filepath.Join(clone, "parser.go"))
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(wts[0].Path, "parser.go"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "the clone has the agent's edit, byte for byte")
	require.NoFileExists(t, filepath.Join(clone, ".env"))

	// Captured on request: everything the session changed, the same edit.
	code, out, errOut = runJam(t, env, "changeset", "capture", session.ID, "--json")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var captured wire.ChangeSet
	require.NoError(t, json.Unmarshal([]byte(out), &captured))
	require.Equal(t, "request", captured.Origin)
	require.Equal(t, cs.Files, captured.Files)
	require.Equal(t, cs.SubjectDigest, captured.SubjectDigest, "the same trees, the same digest")

	// The capture is an operation the person can read back.
	code, out, errOut = runJam(t, env, "operation", "list", "--kind", "capture", "--json")
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var ops wire.Operations
	require.NoError(t, json.Unmarshal([]byte(out), &ops))
	require.Len(t, ops.Operations, 1)
	require.Equal(t, "succeeded", ops.Operations[0].State)
	require.Equal(t, session.ID, ops.Operations[0].Subject)
	require.Contains(t, string(ops.Operations[0].Result), captured.ID)
}
