package acp_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/jam"
)

// requireTSAgentEnv, set to 1, turns a missing install of the TypeScript
// agent into a failure instead of a skip.
const requireTSAgentEnv = "JAM_REQUIRE_ACP_TS_AGENT"

// tsAgent returns the command of testdata/tsagent, an ACP agent on the
// official TypeScript SDK, or skips t.
func tsAgent(t *testing.T) []string {
	t.Helper()
	skip := t.Skip
	if os.Getenv(requireTSAgentEnv) == "1" {
		skip = t.Fatal
	}
	node, err := exec.LookPath("node")
	if err != nil {
		skip("node is not on PATH; install Node.js 20+ and run `npm ci --prefix internal/harness/acp/testdata/tsagent`")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "tsagent"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		skip("the ACP TypeScript SDK is not installed; run `npm ci --prefix internal/harness/acp/testdata/tsagent` from the repository root")
	}
	return []string{node, filepath.Join(dir, "agent.mjs"), t.TempDir()}
}

// TestTSAgent drives an agent written with the official TypeScript SDK,
// which validates every message jam sends: a prompt answered in chunks,
// permission by policy with file access through the client, a write
// outside the session's directory refused, a cancelled turn, and the
// session loaded by a new process.
func TestTSAgent(t *testing.T) {
	t.Parallel()
	command := tsAgent(t)
	dir := t.TempDir()
	start := func(policy harness.Policy) running {
		t.Helper()
		logs, u := &syncBuffer{}, &updates{}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		a, err := acp.Start(ctx, acp.Config{Command: command, Approve: policy.Approve, OnUpdate: u.add,
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), StopGrace: 10 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = a.Stop(context.Background())
			if t.Failed() {
				t.Logf("agent log:\n%s", logs.String())
			}
		})
		return running{agent: a, updates: u}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	first := start(harness.PolicyAllow)
	require.Equal(t, "jam-ts-agent 1.0.0", first.agent.Manifest().Agent)
	require.True(t, first.agent.Manifest().Resume == harness.ResumeInProcess)
	sid, err := first.agent.NewSession(ctx, dir)
	require.NoError(t, err)

	res, err := first.agent.Prompt(ctx, sid, "hello there")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
	require.Equal(t, "You said: hello there ", res.Text)

	res, err = first.agent.Prompt(ctx, sid, "PERM please")
	require.NoError(t, err)
	require.Equal(t, "read back: written via ACP", res.Text)
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	require.Equal(t, "written via ACP\n", string(b))
	require.True(t, first.updates.has(func(u acp.Update) bool {
		return u.SessionUpdate.SessionUpdate == acp.UpdateToolCallUpdate && u.Status == "completed"
	}), "the tool call's completion, whose content is a list, came through")

	res, err = first.agent.Prompt(ctx, sid, "ESCAPE")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Text, "refused: "), "a write outside the session's directory is refused: %q", res.Text)
	require.NoFileExists(t, "/etc/jam-escape")

	pctx, pcancel := context.WithCancel(ctx)
	first.updates.onChunk(pcancel)
	res, err = first.agent.Prompt(pctx, sid, "SLOW")
	pcancel()
	require.NoError(t, err)
	require.Equal(t, acp.StopCancelled, res.StopReason)
	require.True(t, strings.HasPrefix(res.Text, "slow0 "), "%q", res.Text)
	require.NoError(t, first.agent.Stop(ctx))

	// A new process, rejecting: the session loads with its history, and
	// the permission is refused.
	second := start(harness.PolicyReject)
	require.NoError(t, second.agent.LoadSession(ctx, sid, dir))
	require.True(t, second.updates.has(func(u acp.Update) bool {
		return u.SessionUpdate.SessionUpdate == acp.UpdateUserMessageChunk && u.Content != nil && u.Content.Text == "hello there"
	}), "history replayed")
	require.NoError(t, os.Remove(filepath.Join(dir, "notes.txt")))
	res, err = second.agent.Prompt(ctx, sid, "PERM again")
	require.NoError(t, err)
	require.Equal(t, "not allowed", res.Text)
	require.NoFileExists(t, filepath.Join(dir, "notes.txt"))
}

// TestTSAgent_model: a configured model reaches the agent through the
// session configuration option of category model, and through the older
// session/set_model of an agent that offers models that way, on
// session/new and again on session/load by a new process; the agent's
// answer names the model it runs. A model the agent does not offer, or an
// agent that offers no choice, fails the session's setup with an error
// naming the model and what is offered.
func TestTSAgent_model(t *testing.T) {
	t.Parallel()
	command := tsAgent(t)
	start := func(t *testing.T, style, model string) *acp.Agent {
		t.Helper()
		logs := &syncBuffer{}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		a, err := acp.Start(ctx, acp.Config{Command: command, Model: model, Env: append(os.Environ(), "JAM_TS_AGENT_MODELS="+style),
			Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), StopGrace: 10 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = a.Stop(context.Background())
			if t.Failed() {
				t.Logf("agent log:\n%s", logs.String())
			}
		})
		return a
	}
	ask := func(t *testing.T, a *acp.Agent, sid string) string {
		t.Helper()
		res, err := a.Prompt(t.Context(), sid, "MODEL")
		require.NoError(t, err)
		return res.Text
	}
	for _, style := range []string{"options", "legacy"} {
		t.Run(style, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			a := start(t, style, "ts-large")
			sid, err := a.NewSession(t.Context(), dir)
			require.NoError(t, err)
			require.Equal(t, "model: ts-large", ask(t, a, sid), "the configured model, not the agent's default")
			require.NoError(t, a.Stop(t.Context()))

			b := start(t, style, "ts-small")
			require.NoError(t, b.LoadSession(t.Context(), sid, dir))
			require.Equal(t, "model: ts-small", ask(t, b, sid), "a loaded session is put on the configured model too")

			c := start(t, style, "")
			sid, err = c.NewSession(t.Context(), dir)
			require.NoError(t, err)
			require.Equal(t, "model: ts-small", ask(t, c, sid), "no model configured: the agent's default")
		})
	}
	t.Run("unknown model", func(t *testing.T) {
		t.Parallel()
		for _, style := range []string{"options", "legacy"} {
			a := start(t, style, "gpt-9")
			_, err := a.NewSession(t.Context(), t.TempDir())
			require.ErrorIs(t, err, jam.ErrInvalid)
			require.ErrorContains(t, err, `the agent does not offer model "gpt-9" (it offers ts-small, ts-large)`)
		}
	})
	t.Run("no model selection", func(t *testing.T) {
		t.Parallel()
		a := start(t, "none", "ts-large")
		_, err := a.NewSession(t.Context(), t.TempDir())
		require.ErrorIs(t, err, jam.ErrNotImplemented)
		require.ErrorContains(t, err, `model "ts-large" is configured, but the agent offers no model selection`)
	})
}
