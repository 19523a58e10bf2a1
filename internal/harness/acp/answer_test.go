package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
	"github.com/jamhq/jam/internal/jam"
)

// scriptedAgentEnv names the script the test binary plays as an agent.
const scriptedAgentEnv = "JAM_ACP_TEST_SCRIPTED_AGENT"

// bigChunk is one of the two chunks of the "big answer" script: 1,000,000
// bytes, mostly two-byte runes, so a cut can fall inside one.
var bigChunk = "a" + strings.Repeat("é", 499_999) + "b"

func runScriptedAgentIfAsked() {
	script := os.Getenv(scriptedAgentEnv)
	if script == "" {
		return
	}
	if script == "close-input" {
		closeInputAgent()
	}
	if script == "conformance" {
		conformanceAgent()
	}
	var conn *jsonrpc.Conn
	conn = jsonrpc.New(os.Stdin, os.Stdout, jsonrpc.Options{Handler: func(_ context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case acp.MethodInitialize:
			return map[string]any{"protocolVersion": acp.ProtocolVersion, "agentCapabilities": map[string]any{}}, nil
		case acp.MethodSessionNew:
			return map[string]any{"sessionId": "s1"}, nil
		case acp.MethodSessionPrompt:
			if script == "read-file" {
				// The prompt is a path: the answer is the file's content,
				// or the error reading it.
				var p acp.PromptParams
				_ = json.Unmarshal(params, &p)
				var res acp.ReadTextFileResult
				text := ""
				if err := conn.Call(context.Background(), acp.MethodReadTextFile, acp.ReadTextFileParams{SessionID: "s1", Path: p.Prompt[0].Text}, &res); err != nil {
					text = "error: " + err.Error()
				} else {
					text = "content: " + res.Content
				}
				_ = conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": "s1", "update": map[string]any{
					"sessionUpdate": acp.UpdateAgentMessageChunk, "content": map[string]any{"type": "text", "text": text}}})
				return map[string]any{"stopReason": acp.StopEndTurn}, nil
			}
			for range 2 {
				_ = conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": "s1", "update": map[string]any{
					"sessionUpdate": acp.UpdateAgentMessageChunk, "content": map[string]any{"type": "text", "text": bigChunk}}})
			}
			return map[string]any{"stopReason": acp.StopEndTurn}, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method}
	}})
	if err := conn.Run(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// closeInputAgent answers initialize and session/new, then closes its
// input for good and lingers before it exits: the client's next write
// fails while the process still runs, as when an agent is killed mid-turn
// and its pipe breaks before its exit is seen. It reads synchronously, so
// that no read holds the pipe open when it is closed.
func closeInputAgent() {
	in := bufio.NewReader(os.Stdin)
	for range 2 {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(1)
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) != nil {
			os.Exit(1)
		}
		result := map[string]any{"sessionId": "s1"}
		if req.Method == acp.MethodInitialize {
			result = map[string]any{"protocolVersion": acp.ProtocolVersion, "agentCapabilities": map[string]any{}}
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		os.Stdout.Write(append(b, '\n'))
	}
	syscall.Close(0)
	time.Sleep(300 * time.Millisecond) // the agent's behaviour, not the test's synchronisation
	os.Exit(0)
}

// TestPrompt_writeToAGoneAgentIsItsExit: a prompt whose write fails because
// the agent stopped reading (killed mid-turn, its exit not seen yet)
// reports the agent gone, with the process exited, so that the turn is
// interrupted and answered by the next one, not failed (seen under load:
// "json-rpc: write: write |1: broken pipe" failed the turn, and the
// message waited unanswered).
func TestPrompt_writeToAGoneAgentIsItsExit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	a := startScripted(t, "close-input")
	sid, err := a.NewSession(ctx, t.TempDir())
	require.NoError(t, err)
	_, err = a.Prompt(ctx, sid, "are you there")
	require.ErrorIs(t, err, jam.ErrUnavailable, "the agent is gone: %v", err)
	select {
	case <-a.Exited():
	default:
		t.Fatal("Prompt returned before the agent's exit showed")
	}
}

// TestPrompt_answerIsBounded: an agent answering with 2 × 1 MB chunks once
// had all of it kept (and posted as 125 messages); the turn now keeps
// MaxAnswerBytes, cut at a rune boundary, and counts the rest.
func TestPrompt_answerIsBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	a := startScripted(t, "big-answer")
	sid, err := a.NewSession(ctx, t.TempDir())
	require.NoError(t, err)
	res, err := a.Prompt(ctx, sid, "say a lot")
	require.NoError(t, err)
	require.Equal(t, acp.StopEndTurn, res.StopReason)
	require.LessOrEqual(t, len(res.Text), acp.MaxAnswerBytes, "answer bytes kept")
	require.Greater(t, len(res.Text), acp.MaxAnswerBytes-4)
	require.True(t, utf8.ValidString(res.Text), "cut at a rune boundary")
	require.Equal(t, 2*len(bigChunk), len(res.Text)+res.Omitted, "the rest is counted")
	require.True(t, strings.HasPrefix(res.Text, bigChunk))
}

// startScripted starts the test binary as the agent playing script.
func startScripted(t *testing.T, script string) *acp.Agent {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	logs := &syncBuffer{}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	a, err := acp.Start(ctx, acp.Config{Command: []string{exe}, Env: append(os.Environ(), scriptedAgentEnv+"="+script),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = a.Stop(context.Background())
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	return a
}

// TestPrompt_fileReadsOverTheWire: an agent process reads a file of its
// session through the client, and a .git path is refused with its reason.
func TestPrompt_fileReadsOverTheWire(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("line \x00 <b>\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644))
	a := startScripted(t, "read-file")
	sid, err := a.NewSession(t.Context(), dir)
	require.NoError(t, err)
	res, err := a.Prompt(t.Context(), sid, filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	require.Equal(t, "content: line \x00 <b>\n", res.Text)
	res, err = a.Prompt(t.Context(), sid, filepath.Join(dir, ".git", "config"))
	require.NoError(t, err)
	require.Contains(t, res.Text, "error: json-rpc error -32602: ")
	require.Contains(t, res.Text, `"reason":"git_path"`)
}
