package acp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
)

// conformanceAgent is the scripted agent harnesstest.Exercise runs
// against: it loads sessions (any id it is given), answers "echo: " and
// the prompt in two chunks after asking permission once, and for a prompt
// containing "[slow]" thinks aloud until cancelled, then says one more
// chunk ("after cancel") before it answers cancelled, as agents do.
//
// With edgeEnv set it plays that harnesstest.Edge instead (see edgeAgent).
func conformanceAgent() {
	edge := harnesstest.Edge(os.Getenv(edgeEnv))
	if edge == harnesstest.EdgeSilentHandshake {
		// Record the pid, then read and answer nothing, ignoring the end
		// of input: only a signal ends it.
		_ = os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600)
		go func() { _, _ = io.Copy(io.Discard, os.Stdin) }()
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	var late sync.WaitGroup // output after cancel, sent before the next answer
	var conn *jsonrpc.Conn
	var mu sync.Mutex
	cancels := map[string]chan struct{}{}
	n := 0
	chunk := func(sid, kind, text string) {
		_ = conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": sid, "update": map[string]any{
			"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": text}}})
	}
	conn = jsonrpc.New(os.Stdin, os.Stdout, jsonrpc.Options{
		OnNotify: func(method string, params json.RawMessage) {
			var p acp.CancelParams
			if method == acp.MethodSessionCancel && json.Unmarshal(params, &p) == nil {
				mu.Lock()
				if c, ok := cancels[p.SessionID]; ok {
					close(c)
					delete(cancels, p.SessionID)
				}
				mu.Unlock()
			}
		},
		Handler: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			switch method {
			case acp.MethodInitialize:
				return map[string]any{"protocolVersion": acp.ProtocolVersion,
					"agentCapabilities": map[string]any{"loadSession": true, "mcpCapabilities": map[string]any{"http": os.Getenv(mcpHTTPEnv) != ""}},
					"agentInfo":         map[string]any{"name": "conformance", "version": agentVersion()}}, nil
			case acp.MethodSessionNew:
				recordMCP(method, params)
				late.Wait()
				mu.Lock()
				n++
				id := fmt.Sprintf("s%d", n)
				mu.Unlock()
				return map[string]any{"sessionId": id}, nil
			case acp.MethodSessionLoad:
				recordMCP(method, params)
				var p acp.LoadSessionParams
				_ = json.Unmarshal(params, &p)
				// The history is replayed as the user's and the agent's
				// chunks, before the answer.
				chunk(p.SessionID, acp.UpdateUserMessageChunk, "earlier prompt")
				return map[string]any{}, nil
			case acp.MethodSessionPrompt:
				var p acp.PromptParams
				_ = json.Unmarshal(params, &p)
				text := p.Prompt[0].Text
				if strings.Contains(text, "[slow]") {
					c := make(chan struct{})
					mu.Lock()
					cancels[p.SessionID] = c
					mu.Unlock()
					for {
						chunk(p.SessionID, acp.UpdateAgentThoughtChunk, "hm ")
						select {
						case <-c:
							if edge == harnesstest.EdgeOutputAfterCancel {
								// Answer at once; talk on after the answer.
								late.Go(func() {
									time.Sleep(20 * time.Millisecond)
									for range 20 {
										chunk(p.SessionID, acp.UpdateAgentMessageChunk, "late after cancel ")
										chunk(p.SessionID, acp.UpdateAgentThoughtChunk, "late thought ")
									}
								})
								return map[string]any{"stopReason": acp.StopCancelled}, nil
							}
							chunk(p.SessionID, acp.UpdateAgentMessageChunk, "after cancel")
							return map[string]any{"stopReason": acp.StopCancelled}, nil
						case <-time.After(20 * time.Millisecond):
						}
					}
				}
				switch edge {
				case harnesstest.EdgeMalformedLine:
					chunk(p.SessionID, acp.UpdateAgentMessageChunk, "echo: ")
					_, _ = os.Stdout.WriteString("this is not JSON-RPC\n")
					time.Sleep(time.Hour)
				case harnesstest.EdgeOversizeLine:
					chunk(p.SessionID, acp.UpdateAgentMessageChunk, "echo: ")
					// A line that never ends, until the reader is gone.
					buf := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"x":"`)
					for {
						if _, err := os.Stdout.Write(buf); err != nil {
							os.Exit(1)
						}
						buf = bytes.Repeat([]byte("x"), 64<<10)
					}
				}
				var perm acp.RequestPermissionResult
				if err := conn.Call(ctx, acp.MethodRequestPermission, map[string]any{"sessionId": p.SessionID,
					"toolCall": map[string]any{"toolCallId": "c1", "title": "Write NOTES.md", "kind": "edit"},
					"options":  []map[string]any{{"optionId": "yes", "name": "Allow", "kind": acp.AllowOnce}, {"optionId": "no", "name": "Reject", "kind": acp.RejectOnce}}}, &perm); err != nil {
					return nil, err
				}
				chunk(p.SessionID, acp.UpdateAgentMessageChunk, "echo: ")
				chunk(p.SessionID, acp.UpdateAgentMessageChunk, text+" ("+perm.Outcome.OptionID+")")
				return map[string]any{"stopReason": acp.StopEndTurn, "usage": map[string]any{"inputTokens": 11, "outputTokens": 7}}, nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method}
		}})
	if err := conn.Run(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// mcpHTTPEnv, set, makes the conformance agent say it takes HTTP MCP
// servers; mcpFileEnv names a file it appends each session/new's and
// session/load's method and mcpServers to, one line each.
const (
	mcpHTTPEnv = "JAM_ACP_TEST_MCP_HTTP"
	mcpFileEnv = "JAM_ACP_TEST_MCP_FILE"
)

// recordMCP appends a session request's mcpServers to the mcpFileEnv
// file, if any.
func recordMCP(method string, params json.RawMessage) {
	path := os.Getenv(mcpFileEnv)
	if path == "" {
		return
	}
	var p struct {
		MCPServers json.RawMessage `json:"mcpServers"`
	}
	_ = json.Unmarshal(params, &p)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "%s %s\n", method, p.MCPServers)
}

// argvEnv, set, makes the conformance agent give its arguments as its
// version.
const argvEnv = "JAM_ACP_TEST_ARGV"

func agentVersion() string {
	if os.Getenv(argvEnv) != "" {
		return strings.Join(os.Args[1:], " ")
	}
	return "1"
}

// conformance is the Subject of the scripted conformance agent.
func conformance(t *testing.T) harnesstest.Subject {
	return harnesstest.Subject{
		Harness: acp.Harness{},
		Spec: harness.LaunchSpec{Argv: []string{os.Args[0], "-test.run=^$"}, Executor: local.New(), Dir: t.TempDir(),
			Env: append(os.Environ(), scriptedAgentEnv+"=conformance")},
		Dir:  func(t *testing.T) string { return t.TempDir() },
		Echo: "say hello", Want: "say hello", Slow: "[slow] think", Approval: "write a note",
	}
}

// edgeEnv names the harnesstest.Edge the conformance agent plays;
// pidFileEnv the file it records its pid in.
const (
	edgeEnv    = "JAM_ACP_TEST_EDGE"
	pidFileEnv = "JAM_ACP_TEST_PID_FILE"
)

// edges is the EdgeSubject of the scripted conformance agent playing e.
func edges(t *testing.T, e harnesstest.Edge) harnesstest.EdgeSubject {
	s := conformance(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s.Spec.Env = append(s.Spec.Env, edgeEnv+"="+string(e), pidFileEnv+"="+pidFile)
	s.Timeout = 20 * time.Second
	return harnesstest.EdgeSubject{Subject: s, LaunchedPid: func(t *testing.T) int {
		b, err := os.ReadFile(pidFile)
		require.NoError(t, err, "the scripted agent recorded no pid")
		pid, err := strconv.Atoi(string(b))
		require.NoError(t, err)
		return pid
	}}
}

// TestHarness_edges runs the seam's edge cases against the scripted
// agent.
func TestHarness_edges(t *testing.T) {
	t.Parallel()
	harnesstest.Edges(t, edges)
}

// TestHarness_conformance runs the seam's suite against the scripted
// agent.
func TestHarness_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, conformance)
}

// TestHarness_namedKinds: a named ACP kind registers under its name, its
// manifest and its processes' say that name, and its arguments go after
// the command, then, for a kind with a model flag, the configured model;
// the zero Harness is acp and adds nothing.
func TestHarness_namedKinds(t *testing.T) {
	t.Parallel()
	require.Equal(t, "acp", acp.Harness{}.Name())
	require.Equal(t, "copilot", acp.Copilot.Name())
	require.Equal(t, []string{"--acp", "--no-auto-update"}, acp.Copilot.Args)
	require.Equal(t, "opencode", acp.OpenCode.Name())
	require.Equal(t, []string{"acp"}, acp.OpenCode.Args)
	require.Equal(t, "--model", acp.Copilot.ModelFlag)
	for _, h := range []acp.Harness{{}, {Kind: "named", Args: []string{"-test.count=1"}}, {Kind: "flagged", Args: []string{"-test.count=1"}, ModelFlag: "-test.timeout"}} {
		require.Equal(t, h.Name(), h.Manifest().Harness)
		s := conformance(t)
		s.Spec.Logger = slog.New(slog.DiscardHandler)
		s.Spec.Env = append(s.Spec.Env, argvEnv+"=1")
		want := strings.TrimSpace("conformance -test.run=^$ " + strings.Join(h.Args, " "))
		if h.ModelFlag != "" {
			// The agent offers no model selection: through its session,
			// the model would fail Open.
			s.Spec.Model = "10m0s"
			want += " -test.timeout 10m0s"
		}
		p, err := h.Launch(t.Context(), s.Spec)
		require.NoError(t, err)
		m := p.Manifest()
		if h.ModelFlag != "" {
			_, err := p.Open(t.Context(), t.TempDir())
			require.NoError(t, err, "the model is the command line's, not the session's")
		}
		require.NoError(t, p.Stop(context.Background()))
		require.Equal(t, h.Name(), m.Harness)
		require.Equal(t, want, m.Agent, "the arguments after the command")
		require.Equal(t, []string{os.Args[0], "-test.run=^$"}, s.Spec.Argv, "the spec's command is not changed")
	}
}

// TestHarness_outcomeCarriesUsage: the tokens an ACP agent reports with
// its answer are the turn's usage; a final tool call update ends it.
func TestHarness_outcomeCarriesUsage(t *testing.T) {
	t.Parallel()
	s := conformance(t)
	s.Spec.Logger = slog.New(slog.DiscardHandler)
	p, err := acp.Harness{}.Launch(t.Context(), s.Spec)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(context.Background()) }()
	thread, err := p.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Prompt(t.Context(), thread, harness.Input{Text: "hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Usage: harness.Usage{InputTokens: 11, OutputTokens: 7},
		Text: "echo: hi (no)"}
	if out != want {
		t.Fatalf("outcome %+v, want %+v", out, want)
	}
}

// TestTSAgent_conformance runs the seam's suite against the agent on the
// official TypeScript SDK (JAM_REQUIRE_ACP_TS_AGENT=1 requires it).
func TestTSAgent_conformance(t *testing.T) {
	t.Parallel()
	tsAgent(t)
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		return harnesstest.Subject{
			Harness: acp.Harness{},
			Spec:    harness.LaunchSpec{Argv: tsAgent(t), Executor: local.New(), Dir: t.TempDir(), Env: os.Environ()},
			Dir:     func(t *testing.T) string { return t.TempDir() },
			Echo:    "hello there", Want: "You said: hello there", Slow: "SLOW", Approval: "PERM please",
			Timeout: time.Minute,
		}
	})
}

// brokenEnv names the fault TestHarness_brokenSubject gives the ACP
// harness; it runs only when the variable is set.
const brokenEnv = "JAM_HARNESSTEST_BROKEN"

// lateOutput is an ACP harness whose processes break the seam: each
// prompt's callback gets one more update after Prompt returned.
type lateOutput struct{ acp.Harness }

func (h lateOutput) Launch(ctx context.Context, spec harness.LaunchSpec) (harness.Process, error) {
	p, err := h.Harness.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &lateProcess{Process: p}, nil
}

type lateProcess struct {
	harness.Process
	mu   sync.Mutex
	late func() // guarded by mu: the last prompt's callback, called once more
}

// flush calls the last prompt's callback again, well after that Prompt
// returned: at the next Prompt or Stop.
func (p *lateProcess) flush() {
	p.mu.Lock()
	late := p.late
	p.late = nil
	p.mu.Unlock()
	if late != nil {
		late()
	}
}

func (p *lateProcess) Prompt(ctx context.Context, thread harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	p.flush()
	out, err := p.Process.Prompt(ctx, thread, in, updates)
	if updates != nil {
		p.mu.Lock()
		p.late = func() { updates(harness.Update{Kind: harness.UpdateText, Text: "late"}) }
		p.mu.Unlock()
	}
	return out, err
}

func (p *lateProcess) Stop(ctx context.Context) error {
	p.flush()
	return p.Process.Stop(ctx)
}

func TestHarness_brokenSubject(t *testing.T) {
	if os.Getenv(brokenEnv) != "late-output" {
		t.Skip("run by TestHarness_conformanceCatchesLateOutput")
	}
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		s := conformance(t)
		s.Harness = lateOutput{}
		return s
	})
}

// TestHarness_conformanceCatchesLateOutput: the suite fails an adapter
// whose prompt's callback is called after Prompt returned.
func TestHarness_conformanceCatchesLateOutput(t *testing.T) {
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHarness_brokenSubject$", "-test.count=1")
	cmd.Env = append(os.Environ(), brokenEnv+"=late-output")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the suite passed a broken adapter:\n%s", out)
	require.Contains(t, string(out), "update after Prompt returned")
}
