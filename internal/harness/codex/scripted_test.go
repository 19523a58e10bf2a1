package codex_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/codex"
	"github.com/jamhq/jam/internal/harness/harnesstest"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
	"github.com/jamhq/jam/internal/jam"
)

// Environment of the scripted app-server: scriptedEnv turns the test
// binary into one (its value is the fake's version), edgeEnv names the
// harnesstest.Edge it plays, pidFileEnv where it records its pid, and
// requestsEnv a file it appends every server request's answer to.
const (
	scriptedEnv = "JAM_CODEX_TEST_SCRIPTED"
	edgeEnv     = "JAM_CODEX_TEST_EDGE"
	pidFileEnv  = "JAM_CODEX_TEST_PID_FILE"
	answersEnv  = "JAM_CODEX_TEST_ANSWERS"
	secretEnv   = "JAM_CODEX_TEST_SECRET"
	// edgeInitError: the app-server answers initialize with an error
	// naming the value of secretEnv.
	edgeInitError harnesstest.Edge = "init-error"
)

// bigMessage is one of the two messages of a "[big]" turn: 600,001
// bytes, mostly two-byte runes, so a cut can fall inside one.
var bigMessage = "a" + strings.Repeat("é", 300_000)

// Scripted usage: the turn's one model response, and the thread's total
// (which the adapter must not report as the turn's).
var scriptedLast = map[string]int64{"totalTokens": 23, "inputTokens": 11, "cachedInputTokens": 3, "cacheWriteInputTokens": 0,
	"outputTokens": 7, "reasoningOutputTokens": 2}

// scriptedAppServer plays `codex app-server` on stdio, speaking JSON-RPC
// without the "jsonrpc" member (and exiting at once, status 7, if the
// client writes one). It refuses thread/start before the initialized
// notification, as Codex does. A turn answers "echo: " and the prompt in
// two deltas; a prompt containing "write" first asks to run a command
// (item/commandExecution/requestApproval) and says the decision; "ask
// user" first sends item/tool/requestUserInput, which jam must refuse;
// "[slow]" thinks aloud until turn/interrupt, then completes interrupted;
// "fail" sends an error Codex will not retry and a failed turn/completed.
func scriptedAppServer() {
	edge := harnesstest.Edge(os.Getenv(edgeEnv))
	if edge == edgeInitError {
		// Refuse the handshake with an error that echoes the environment.
		conn := jsonrpc.New(os.Stdin, os.Stdout, jsonrpc.Options{Member: jsonrpc.MemberOmitted,
			Handler: func(context.Context, string, json.RawMessage) (any, error) {
				return nil, &jsonrpc.Error{Code: -32000, Message: "provider refused key " + os.Getenv(secretEnv)}
			}})
		_ = conn.Run(context.Background())
		os.Exit(0)
	}
	if edge == harnesstest.EdgeSilentHandshake {
		_ = os.WriteFile(os.Getenv(pidFileEnv), []byte(strconv.Itoa(os.Getpid())), 0o600)
		go func() { _, _ = io.Copy(io.Discard, os.Stdin) }()
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	// Check every line for a "jsonrpc" member before the peer reads it.
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte(`"jsonrpc"`)) {
				fmt.Fprintf(os.Stderr, "client wrote a jsonrpc member: %s\n", sc.Bytes())
				os.Exit(7)
			}
			_, _ = pw.Write(append(sc.Bytes(), '\n'))
		}
		_ = pw.Close()
	}()
	var (
		conn        *jsonrpc.Conn
		mu          sync.Mutex
		initialized bool
		threads     int
		turns       int
		interrupts  = map[string]chan struct{}{} // by turn id
		steers      = map[string]chan string{}   // by turn id
		late        sync.WaitGroup
		bg          sync.WaitGroup
	)
	record := func(s string) {
		if f := os.Getenv(answersEnv); f != "" {
			fh, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintln(fh, s)
				_ = fh.Close()
			}
		}
	}
	notify := func(method string, params map[string]any) { _ = conn.Notify(method, params) }
	item := func(method, thread, turn string, it map[string]any) {
		notify(method, map[string]any{"threadId": thread, "turnId": turn, "item": it, "startedAtMs": 1})
	}
	delta := func(method, thread, turn, text string) {
		notify(method, map[string]any{"threadId": thread, "turnId": turn, "itemId": "msg_1", "delta": text, "contentIndex": 0})
	}
	completed := func(thread, turn, status string, turnErr any) {
		notify(codex.NotifyTurnCompleted, map[string]any{"threadId": thread,
			"turn": map[string]any{"id": turn, "status": status, "error": turnErr, "items": []any{}}})
	}
	runTurn := func(ctx context.Context, thread, turn, text string) {
		notify(codex.NotifyTurnStarted, map[string]any{"threadId": thread, "turn": map[string]any{"id": turn, "status": "inProgress", "items": []any{}}})
		notify("thread/status/changed", map[string]any{"threadId": thread, "status": map[string]any{"type": "active", "activeFlags": []any{}}})
		switch {
		case strings.Contains(text, "[slow]"):
			mu.Lock()
			c := interrupts[turn]
			mu.Unlock()
			mu.Lock()
			steer := steers[turn]
			mu.Unlock()
			for {
				delta(codex.NotifyReasoningDelta, thread, turn, "hm ")
				select {
				case text := <-steer:
					item(codex.NotifyItemCompleted, thread, turn, map[string]any{"type": "agentMessage", "id": "msg_2", "text": "steered: " + text})
					mu.Lock()
					delete(interrupts, turn)
					mu.Unlock()
					completed(thread, turn, codex.TurnCompleted, nil)
					return
				case <-c:
					if edge == harnesstest.EdgeOutputAfterCancel {
						completed(thread, turn, codex.TurnInterrupted, nil)
						late.Go(func() {
							time.Sleep(20 * time.Millisecond)
							for range 20 {
								delta(codex.NotifyAgentDelta, thread, turn, "late after cancel ")
								delta(codex.NotifyReasoningDelta, thread, turn, "late thought ")
								item(codex.NotifyItemCompleted, thread, turn, map[string]any{"type": "agentMessage", "id": "msg_1", "text": "late"})
							}
						})
						return
					}
					delta(codex.NotifyAgentDelta, thread, turn, "after cancel")
					completed(thread, turn, codex.TurnInterrupted, nil)
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		case strings.Contains(text, "fail"):
			delta(codex.NotifyAgentDelta, thread, turn, "trying ")
			e := map[string]any{"message": "stream disconnected", "codexErrorInfo": "Other", "additionalDetails": nil}
			notify(codex.NotifyError, map[string]any{"threadId": thread, "turnId": turn, "willRetry": true, "error": e})
			notify(codex.NotifyError, map[string]any{"threadId": thread, "turnId": turn, "willRetry": false, "error": e})
			completed(thread, turn, codex.TurnFailed, e)
			return
		}
		switch edge {
		case harnesstest.EdgeMalformedLine:
			delta(codex.NotifyAgentDelta, thread, turn, "echo: ")
			_, _ = os.Stdout.WriteString("this is not JSON-RPC\n")
			time.Sleep(time.Hour)
		case harnesstest.EdgeOversizeLine:
			delta(codex.NotifyAgentDelta, thread, turn, "echo: ")
			buf := []byte(`{"method":"item/agentMessage/delta","params":{"x":"`)
			for {
				if _, err := os.Stdout.Write(buf); err != nil {
					os.Exit(1)
				}
				buf = bytes.Repeat([]byte("x"), 64<<10)
			}
		}
		if strings.Contains(text, "[big]") {
			// Two messages of bigMessage each: together beyond the bound.
			for i := range 2 {
				item(codex.NotifyItemCompleted, thread, turn, map[string]any{"type": "agentMessage", "id": fmt.Sprintf("msg_%d", i), "text": bigMessage})
			}
			completed(thread, turn, codex.TurnCompleted, nil)
			return
		}
		decision := ""
		if strings.Contains(text, "ask user") {
			err := conn.Call(ctx, "item/tool/requestUserInput", map[string]any{"threadId": thread, "turnId": turn, "itemId": "q1", "questions": []any{}}, nil)
			record(fmt.Sprintf("requestUserInput: %v", err))
		}
		if strings.Contains(text, "patch") {
			item(codex.NotifyItemStarted, thread, turn, map[string]any{"type": "fileChange", "id": "patch_1",
				"changes": []any{map[string]any{"path": "/w/a.go", "kind": map[string]any{"type": "update"}, "diff": ""}}, "status": "inProgress"})
			var res struct {
				Decision string `json:"decision"`
			}
			err := conn.Call(ctx, codex.RequestFileApproval, map[string]any{"threadId": thread, "turnId": turn, "itemId": "patch_1", "startedAtMs": 1}, &res)
			record(fmt.Sprintf("fileApproval: %s %v", res.Decision, err))
			decision = " (" + res.Decision + ")"
			status := "completed"
			if res.Decision != "accept" {
				status = "declined"
			}
			item(codex.NotifyItemCompleted, thread, turn, map[string]any{"type": "fileChange", "id": "patch_1", "changes": []any{}, "status": status})
		}
		if strings.Contains(text, "write") {
			cmd := "/bin/bash -lc 'echo hi > notes.txt'"
			item(codex.NotifyItemStarted, thread, turn, map[string]any{"type": "commandExecution", "id": "call_1", "command": cmd,
				"cwd": "/", "status": "inProgress", "commandActions": []any{}})
			var res struct {
				Decision string `json:"decision"`
			}
			err := conn.Call(ctx, codex.RequestCommandApproval, map[string]any{"kind": "command", "threadId": thread, "turnId": turn,
				"itemId": "call_1", "command": cmd, "cwd": "/", "startedAtMs": 1}, &res)
			record(fmt.Sprintf("commandApproval: %s %v", res.Decision, err))
			decision = " (" + res.Decision + ")"
			status := "completed"
			if res.Decision != "accept" {
				status = "declined"
			}
			notify("serverRequest/resolved", map[string]any{"threadId": thread, "requestId": 0})
			item(codex.NotifyItemCompleted, thread, turn, map[string]any{"type": "commandExecution", "id": "call_1", "command": cmd,
				"status": status, "exitCode": 0})
		}
		notify(codex.NotifyPlanUpdated, map[string]any{"threadId": thread, "turnId": turn, "explanation": nil,
			"plan": []any{map[string]any{"step": "answer", "status": "inProgress"}}})
		item(codex.NotifyItemStarted, thread, turn, map[string]any{"type": "agentMessage", "id": "msg_1", "text": ""})
		delta(codex.NotifyAgentDelta, thread, turn, "echo: ")
		delta(codex.NotifyAgentDelta, thread, turn, text+decision)
		item(codex.NotifyItemCompleted, thread, turn, map[string]any{"type": "agentMessage", "id": "msg_1", "text": "echo: " + text + decision,
			"phase": nil, "unknownField": 1})
		total := map[string]any{}
		for k, v := range scriptedLast {
			total[k] = v * 10
		}
		notify(codex.NotifyTokenUsage, map[string]any{"threadId": thread, "turnId": turn,
			"tokenUsage": map[string]any{"total": total, "last": scriptedLast, "modelContextWindow": nil}})
		notify("thread/status/changed", map[string]any{"threadId": thread, "status": map[string]any{"type": "idle"}})
		completed(thread, turn, codex.TurnCompleted, nil)
	}
	threadAnswer := func(id string, model string) map[string]any {
		if model == "" {
			model = "scripted-model"
		}
		return map[string]any{"thread": map[string]any{"id": id, "ephemeral": false}, "model": model, "modelProvider": "fake",
			"cwd": "/", "approvalPolicy": codex.ApprovalPolicy, "sandbox": map[string]any{"type": "dangerFullAccess"}}
	}
	conn = jsonrpc.New(pr, os.Stdout, jsonrpc.Options{
		Member: jsonrpc.MemberOmitted,
		OnNotify: func(method string, _ json.RawMessage) {
			if method == codex.MethodInitialized {
				mu.Lock()
				initialized = true
				mu.Unlock()
			}
		},
		Handler: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			mu.Lock()
			ready := initialized
			mu.Unlock()
			if method != codex.MethodInitialize && !ready {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Not initialized"}
			}
			var p struct {
				ThreadID string `json:"threadId"`
				TurnID   string `json:"turnId"`
				Cwd      string `json:"cwd"`
				Model    string `json:"model"`
				Policy   string `json:"approvalPolicy"`
				Sandbox  string `json:"sandbox"`
				Input    []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"input"`
			}
			_ = json.Unmarshal(params, &p)
			switch method {
			case codex.MethodInitialize:
				return map[string]any{"userAgent": "jam/0.171.0 (scripted app-server)", "codexHome": "/tmp", "platformFamily": "unix",
					"platformOs": "linux"}, nil
			case codex.MethodThreadStart:
				late.Wait()
				if !filepath.IsAbs(p.Cwd) || p.Policy != codex.ApprovalPolicy || p.Sandbox == "" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad thread/start: " + string(params)}
				}
				mu.Lock()
				threads++
				id := fmt.Sprintf("thr_%d", threads)
				mu.Unlock()
				return threadAnswer(id, p.Model), nil
			case codex.MethodThreadResume:
				if p.ThreadID == "" || p.Cwd == "" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad thread/resume"}
				}
				return threadAnswer(p.ThreadID, p.Model), nil
			case codex.MethodTurnStart:
				if len(p.Input) != 1 || p.Input[0].Type != "text" {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad input"}
				}
				mu.Lock()
				turns++
				id := fmt.Sprintf("turn_%d", turns)
				interrupts[id] = make(chan struct{})
				steers[id] = make(chan string, 1)
				mu.Unlock()
				bg.Go(func() {
					// After the answer is written: a moment, as Codex's own
					// order (answer, then turn/started) is not promised.
					time.Sleep(5 * time.Millisecond)
					runTurn(context.Background(), p.ThreadID, id, p.Input[0].Text)
				})
				return map[string]any{"turn": map[string]any{"id": id, "status": "inProgress", "items": []any{}}}, nil
			case codex.MethodTurnSteer:
				var sp struct {
					ThreadID       string `json:"threadId"`
					ExpectedTurnID string `json:"expectedTurnId"`
					Input          []struct {
						Text string `json:"text"`
					} `json:"input"`
				}
				_ = json.Unmarshal(params, &sp)
				mu.Lock()
				c, ok := steers[sp.ExpectedTurnID]
				_, running := interrupts[sp.ExpectedTurnID]
				mu.Unlock()
				if !ok || !running || len(sp.Input) != 1 {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "no active turn to steer"}
				}
				c <- sp.Input[0].Text
				return map[string]any{"turnId": sp.ExpectedTurnID}, nil
			case codex.MethodTurnInterrupt:
				mu.Lock()
				c, ok := interrupts[p.TurnID]
				delete(interrupts, p.TurnID)
				mu.Unlock()
				if !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such turn " + p.TurnID}
				}
				close(c)
				return map[string]any{}, nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method}
		}})
	if err := conn.Run(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// scripted is the Subject of the scripted app-server.
func scripted(t *testing.T) harnesstest.Subject {
	return harnesstest.Subject{
		Harness: codex.Harness{},
		Spec: harness.LaunchSpec{Argv: []string{os.Args[0], "-test.run=^$"}, Executor: local.New(), Dir: t.TempDir(),
			Env: append(os.Environ(), scriptedEnv+"=1")},
		Dir:  func(t *testing.T) string { return t.TempDir() },
		Echo: "say hello", Want: "say hello", Slow: "[slow] think", Approval: "write a note",
		Timeout: 20 * time.Second,
	}
}

// edges is the EdgeSubject of the scripted app-server playing e.
func edges(t *testing.T, e harnesstest.Edge) harnesstest.EdgeSubject {
	s := scripted(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s.Spec.Env = append(s.Spec.Env, edgeEnv+"="+string(e), pidFileEnv+"="+pidFile)
	return harnesstest.EdgeSubject{Subject: s, LaunchedPid: func(t *testing.T) int {
		b, err := os.ReadFile(pidFile)
		require.NoError(t, err, "the scripted app-server recorded no pid")
		pid, err := strconv.Atoi(string(b))
		require.NoError(t, err)
		return pid
	}}
}

// TestScripted_conformance runs the seam's suite against the scripted
// app-server.
func TestScripted_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, scripted)
}

// TestScripted_edges runs the seam's edge cases against the scripted
// app-server.
func TestScripted_edges(t *testing.T) {
	t.Parallel()
	harnesstest.Edges(t, edges)
}

// launchScripted starts the scripted app-server with env added.
func launchScripted(t *testing.T, spec harness.LaunchSpec, env ...string) harness.Process {
	t.Helper()
	s := scripted(t)
	spec.Argv, spec.Executor, spec.Dir = s.Spec.Argv, s.Spec.Executor, s.Spec.Dir
	spec.Env = append(append(s.Spec.Env, spec.Env...), env...)
	spec.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	p, err := codex.Harness{}.Launch(ctx, spec)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

func scriptedTurn(t *testing.T, p harness.Process, th harness.Thread, text string) (harness.Outcome, *collect) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := &collect{}
	out, err := p.Prompt(ctx, th, harness.Input{Text: text}, c.add)
	require.NoError(t, err)
	return out, c
}

// TestScripted_outcome: a completed turn's Outcome has the completed
// agent message as its text, the turn's own usage (the update's last, not
// the thread's total), the thread's model; its stream has the deltas, the
// plan and the usage; the manifest names the server.
func TestScripted_outcome(t *testing.T) {
	t.Parallel()
	p := launchScripted(t, harness.LaunchSpec{Model: "gpt-test"})
	m := p.Manifest()
	require.Equal(t, harness.Manifest{Harness: "codex", Version: harness.ManifestVersion, Agent: "jam/0.171.0 (scripted app-server)",
		Sessions: harness.SessionsMany, Resume: harness.ResumeInProcess, Steer: true, Interrupt: true, InterruptNeedsTurn: true, Approvals: true,
		MCPServers: true}, m)
	th := openScripted(t, p)
	out, c := scriptedTurn(t, p, th, "say hi")
	want := harness.Usage{InputTokens: 8, CachedTokens: 3, OutputTokens: 7, ReasoningTokens: 2}
	require.Equal(t, harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "completed", Usage: want, Model: "gpt-test",
		Text: "echo: say hi"}, out)
	var text strings.Builder
	for _, u := range c.of(harness.UpdateText) {
		text.WriteString(u.Text)
	}
	require.Equal(t, "echo: say hi", text.String())
	require.Equal(t, []harness.Update{{Kind: harness.UpdatePlan, Plan: []harness.PlanEntry{{Content: "answer", Status: harness.ToolInProgress}}}},
		c.of(harness.UpdatePlan))
	require.Equal(t, []harness.Update{{Kind: harness.UpdateUsage, Usage: &want}}, c.of(harness.UpdateUsage))
}

func openScripted(t *testing.T, p harness.Process) harness.Thread {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	th, err := p.Open(ctx, t.TempDir())
	require.NoError(t, err)
	return th
}

// TestScripted_failedTurn: an error Codex retries does not end the turn;
// one it will not retry, and the failed turn/completed, make the turn
// StopFailed with Codex's message.
func TestScripted_failedTurn(t *testing.T) {
	t.Parallel()
	p := launchScripted(t, harness.LaunchSpec{})
	th := openScripted(t, p)
	out, _ := scriptedTurn(t, p, th, "please fail")
	require.Equal(t, harness.StopFailed, out.StopReason)
	require.Equal(t, "stream disconnected", out.ProviderReason)
	out, _ = scriptedTurn(t, p, th, "and now?")
	require.Equal(t, harness.StopCompleted, out.StopReason, "the thread goes on")
}

// TestScripted_approvals: a command approval reaches the callback as a
// neutral request (execute, the command as its title) and its decision is
// Codex's accept or decline; a server request jam does not answer
// (item/tool/requestUserInput) gets an error at once, and the turn goes
// on.
func TestScripted_approvals(t *testing.T) {
	t.Parallel()
	answers := filepath.Join(t.TempDir(), "answers")
	var mu sync.Mutex
	var asked []harness.ApprovalRequest
	decision := harness.AllowOnce
	p := launchScripted(t, harness.LaunchSpec{Approve: func(_ context.Context, req harness.ApprovalRequest) harness.Decision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		return decision
	}}, answersEnv+"="+answers)
	th := openScripted(t, p)
	out, c := scriptedTurn(t, p, th, "ask user, then write")
	require.Equal(t, "echo: ask user, then write (accept)", out.Text)
	mu.Lock()
	require.Equal(t, []harness.ApprovalRequest{{Thread: th, ToolCallID: "call_1", Title: "/bin/bash -lc 'echo hi > notes.txt'", ToolKind: "execute"}}, asked)
	decision = harness.Reject
	mu.Unlock()
	require.Equal(t, []harness.Update{{Kind: harness.UpdateToolStart, ToolCallID: "call_1", Title: "/bin/bash -lc 'echo hi > notes.txt'",
		ToolKind: "execute", Status: harness.ToolInProgress}}, c.of(harness.UpdateToolStart))
	require.Equal(t, harness.ToolCompleted, c.of(harness.UpdateToolEnd)[0].Status)

	out, c = scriptedTurn(t, p, th, "write again")
	require.Equal(t, "echo: write again (decline)", out.Text)
	require.Equal(t, harness.ToolFailed, c.of(harness.UpdateToolEnd)[0].Status, "a declined command's tool call failed")
	b, err := os.ReadFile(answers)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, "requestUserInput: json-rpc error -32601: jam does not answer item/tool/requestUserInput", lines[0])
	require.Equal(t, "commandApproval: accept <nil>", lines[1])
	require.Equal(t, "commandApproval: decline <nil>", lines[2])
}

// TestScripted_interruptFromTheCallback: the update callback may call
// Interrupt (it runs outside the process's lock); the turn then ends
// cancelled, by turn/interrupt with the turn's id.
func TestScripted_interruptFromTheCallback(t *testing.T) {
	t.Parallel()
	p := launchScripted(t, harness.LaunchSpec{})
	th := openScripted(t, p)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var once sync.Once
	out, err := p.Prompt(ctx, th, harness.Input{Text: "[slow] think"}, func(u harness.Update) {
		once.Do(func() { require.NoError(t, p.Interrupt(ctx, th)) })
	})
	require.NoError(t, err)
	require.Equal(t, harness.StopCancelled, out.StopReason)
	require.Equal(t, codex.TurnInterrupted, out.ProviderReason)
	require.NoError(t, p.Interrupt(ctx, th), "nothing happens without a running turn")
}

// TestScripted_handshakeErrorHidesSecrets: an initialize error that
// echoes the environment reaches the caller with the secret hidden.
func TestScripted_handshakeErrorHidesSecrets(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0123456789"
	s := scripted(t)
	s.Spec.Env = append(s.Spec.Env, edgeEnv+"="+string(edgeInitError), secretEnv+"="+secret)
	s.Spec.Secrets = []string{secret}
	s.Spec.Logger = slog.New(slog.DiscardHandler)
	p, err := codex.Harness{}.Launch(t.Context(), s.Spec)
	if err == nil {
		_ = p.Stop(context.Background())
	}
	require.Error(t, err)
	require.NotContains(t, err.Error(), secret)
	require.Contains(t, err.Error(), "provider refused key [redacted]")
}

// TestScripted_steer: Steer sends turn/steer naming the running turn's id,
// and the turn takes the input; without a running turn it is
// jam.ErrConflict.
func TestScripted_steer(t *testing.T) {
	t.Parallel()
	p := launchScripted(t, harness.LaunchSpec{})
	th := openScripted(t, p)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	require.ErrorIs(t, p.Steer(ctx, th, harness.Input{Text: "too early"}), jam.ErrConflict)
	var once sync.Once
	steered := make(chan error, 1)
	out, err := p.Prompt(ctx, th, harness.Input{Text: "[slow] think"}, func(harness.Update) {
		once.Do(func() { go func() { steered <- p.Steer(ctx, th, harness.Input{Text: "focus on the tests"}) }() })
	})
	require.NoError(t, err)
	require.NoError(t, <-steered)
	require.Equal(t, harness.StopCompleted, out.StopReason)
	require.Equal(t, "steered: focus on the tests", out.Text)
	require.ErrorIs(t, p.Steer(ctx, th, harness.Input{Text: "too late"}), jam.ErrConflict)
}

// TestScripted_fileChangeApproval: a file-change approval without a
// reason reaches the callback as an edit titled by its item (the files it
// changes), and the decision is Codex's.
func TestScripted_fileChangeApproval(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []harness.ApprovalRequest
	p := launchScripted(t, harness.LaunchSpec{Approve: func(_ context.Context, req harness.ApprovalRequest) harness.Decision {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req)
		return harness.Reject
	}})
	th := openScripted(t, p)
	out, c := scriptedTurn(t, p, th, "patch it")
	require.Equal(t, "echo: patch it (decline)", out.Text)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []harness.ApprovalRequest{{Thread: th, ToolCallID: "patch_1", Title: "Edit /w/a.go", ToolKind: "edit"}}, asked)
	require.Equal(t, []harness.Update{{Kind: harness.UpdateToolEnd, ToolCallID: "patch_1", Title: "Edit", ToolKind: "edit", Status: harness.ToolFailed}},
		c.of(harness.UpdateToolEnd))
}

// TestScripted_answerIsBounded: a turn keeps at most MaxAnswerBytes of
// its completed messages, cut at a rune boundary, and counts the rest.
func TestScripted_answerIsBounded(t *testing.T) {
	t.Parallel()
	p := launchScripted(t, harness.LaunchSpec{})
	th := openScripted(t, p)
	out, _ := scriptedTurn(t, p, th, "[big] talk a lot")
	total := 2*len(bigMessage) + len("\n\n")
	require.Greater(t, total, codex.MaxAnswerBytes)
	require.LessOrEqual(t, len(out.Text), codex.MaxAnswerBytes)
	require.Greater(t, len(out.Text), codex.MaxAnswerBytes-4)
	require.True(t, utf8.ValidString(out.Text), "cut at a rune boundary")
	require.Equal(t, total, len(out.Text)+out.Omitted)
	require.True(t, strings.HasPrefix(out.Text, bigMessage+"\n\n"))
}
