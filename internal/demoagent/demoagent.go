// Package demoagent is jam's demo agent: a small, deterministic agent that
// speaks the Agent Client Protocol over stdio, for newcomers without an
// agent CLI and for tests. It is a demo, not an assistant: it answers every
// prompt by restating it, and records the prompt in NOTES.md in its
// working directory (asking permission first, and writing through the
// client's fs/write_text_file, as a real agent would).
//
// A prompt containing "[slow]" thinks aloud for a few seconds before it
// answers, so that cancelling or killing a turn midway can be shown. A
// prompt containing "[usage IN OUT]" (two whole numbers) reports, with
// its answer, that it used IN input and OUT output tokens, so that usage
// can be followed end to end; other prompts report none. Sessions are kept as JSON files in a state directory, so a new
// process can resume one (session/load replays its history).
package demoagent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
)

// Name is the agent's name in its handshake.
const Name = "jam-demo-agent"

// NotesFile is the file the agent records prompts in.
const NotesFile = "NOTES.md"

// Config configures the demo agent.
type Config struct {
	// StateDir keeps the sessions. Default: jam-demo-agent under the
	// user's cache directory.
	StateDir string
	// WordDelay paces the thoughts of a "[slow]" prompt (default 100ms)
	// and SlowFor is how long they last (default 3s).
	WordDelay, SlowFor time.Duration
	// Probe, when set, runs in the agent's process at every prompt with
	// the session's directory, and what it returns ends the answer: tests
	// use it to report what an agent's process can reach.
	Probe func(cwd string) string
}

type agent struct {
	cfg  Config
	conn *jsonrpc.Conn

	mu       sync.Mutex
	sessions map[string]*record // guarded by mu
	// prompts counts the prompts of a session received and not yet
	// answered, in wire order; a cancel counts only while one is.
	prompts map[string]int  // guarded by mu
	cancel  map[string]bool // guarded by mu: cancel requested
}

// record is a session as kept on disk.
type record struct {
	ID      string `json:"id"`
	Cwd     string `json:"cwd"`
	History []turn `json:"history"`
}

type turn struct {
	Prompt string `json:"prompt"`
	Answer string `json:"answer"`
}

// Run serves one client on in/out until in ends.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.StateDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cfg.StateDir = filepath.Join(dir, "jam-demo-agent")
	}
	if cfg.WordDelay == 0 {
		cfg.WordDelay = 100 * time.Millisecond
	}
	if cfg.SlowFor == 0 {
		cfg.SlowFor = 3 * time.Second
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return err
	}
	a := &agent{cfg: cfg, sessions: map[string]*record{}, prompts: map[string]int{}, cancel: map[string]bool{}}
	a.conn = jsonrpc.New(in, out, jsonrpc.Options{Handler: a.handle, OnNotify: a.notify, OnRequest: a.received})
	return a.conn.Run(ctx)
}

// received sees each request in wire order: a prompt starts counting
// before any cancel that follows it is read.
func (a *agent) received(method string, params json.RawMessage) {
	if method != acp.MethodSessionPrompt {
		return
	}
	var p acp.PromptParams
	if json.Unmarshal(params, &p) == nil {
		a.mu.Lock()
		a.prompts[p.SessionID]++
		a.mu.Unlock()
	}
}

func (a *agent) notify(method string, params json.RawMessage) {
	if method != acp.MethodSessionCancel {
		return
	}
	var p acp.CancelParams
	if json.Unmarshal(params, &p) == nil {
		a.mu.Lock()
		if a.prompts[p.SessionID] > 0 {
			a.cancel[p.SessionID] = true
		}
		a.mu.Unlock()
	}
}

func (a *agent) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case acp.MethodInitialize:
		var p acp.InitializeParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		return acp.InitializeResult{ProtocolVersion: acp.ProtocolVersion,
			AgentCapabilities: acp.AgentCapabilities{LoadSession: true},
			AgentInfo:         &acp.Implementation{Name: Name, Version: "1", Title: "jam demo agent"}}, nil
	case acp.MethodSessionNew:
		var p acp.NewSessionParams
		if err := json.Unmarshal(params, &p); err != nil || !filepath.IsAbs(p.Cwd) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cwd must be an absolute path"}
		}
		var b [8]byte
		_, _ = rand.Read(b[:])
		r := &record{ID: "demo-" + hex.EncodeToString(b[:]), Cwd: p.Cwd}
		if err := a.save(r); err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.sessions[r.ID] = r
		a.mu.Unlock()
		return acp.NewSessionResult{SessionID: r.ID}, nil
	case acp.MethodSessionLoad:
		var p acp.LoadSessionParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		r, err := a.load(p.SessionID)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown session " + p.SessionID}
		}
		r.Cwd = p.Cwd
		a.mu.Lock()
		a.sessions[r.ID] = r
		a.mu.Unlock()
		for _, t := range r.History {
			a.chunk(r.ID, acp.UpdateUserMessageChunk, t.Prompt)
			a.chunk(r.ID, acp.UpdateAgentMessageChunk, t.Answer)
		}
		return struct{}{}, nil
	case acp.MethodSessionPrompt:
		var p acp.PromptParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		return a.prompt(ctx, p)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
}

func (a *agent) prompt(ctx context.Context, p acp.PromptParams) (acp.PromptResult, error) {
	defer func() {
		a.mu.Lock()
		if a.prompts[p.SessionID]--; a.prompts[p.SessionID] <= 0 {
			delete(a.prompts, p.SessionID)
			delete(a.cancel, p.SessionID)
		}
		a.mu.Unlock()
	}()
	a.mu.Lock()
	r, ok := a.sessions[p.SessionID]
	a.mu.Unlock()
	if !ok {
		return acp.PromptResult{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown session " + p.SessionID}
	}
	var parts []string
	for _, b := range p.Prompt {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n"))
	cancelled := func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.cancel[p.SessionID]
	}

	noted := a.note(ctx, r, text)
	answer := "You said: " + text
	if !noted {
		answer += " (I was not allowed to note it.)"
	}
	if a.cfg.Probe != nil {
		answer += " " + a.cfg.Probe(r.Cwd)
	}
	if strings.Contains(text, "[slow]") {
		// Think aloud for a while first, so a turn can be cancelled or
		// its process killed midway.
		until := time.Now().Add(a.cfg.SlowFor)
		for time.Now().Before(until) {
			if cancelled() {
				return acp.PromptResult{StopReason: acp.StopCancelled}, nil
			}
			a.chunk(r.ID, acp.UpdateAgentThoughtChunk, "thinking… ")
			select {
			case <-ctx.Done():
				return acp.PromptResult{}, ctx.Err()
			case <-time.After(a.cfg.WordDelay):
			}
		}
	}
	for _, w := range strings.SplitAfter(answer, " ") {
		if cancelled() {
			return acp.PromptResult{StopReason: acp.StopCancelled}, nil
		}
		a.chunk(r.ID, acp.UpdateAgentMessageChunk, w)
	}
	a.mu.Lock()
	r.History = append(r.History, turn{Prompt: text, Answer: answer})
	a.mu.Unlock()
	if err := a.save(r); err != nil {
		return acp.PromptResult{}, err
	}
	return acp.PromptResult{StopReason: acp.StopEndTurn, Usage: reportedUsage(text)}, nil
}

// usageDirective is a prompt's "[usage IN OUT]".
var usageDirective = regexp.MustCompile(`\[usage ([0-9]{1,12}) ([0-9]{1,12})\]`)

// reportedUsage is the usage a prompt asks the agent to report; nil
// without the directive.
func reportedUsage(text string) *acp.PromptUsage {
	m := usageDirective.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	in, _ := strconv.ParseInt(m[1], 10, 64)
	out, _ := strconv.ParseInt(m[2], 10, 64)
	return &acp.PromptUsage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// note asks permission, then appends the prompt to NOTES.md through the
// client; it reports whether the note was written.
func (a *agent) note(ctx context.Context, r *record, text string) bool {
	path := filepath.Join(r.Cwd, NotesFile)
	call := "note-" + fmt.Sprint(len(r.History)+1)
	a.update(r.ID, map[string]any{"sessionUpdate": acp.UpdateToolCall, "toolCallId": call, "title": "Write " + NotesFile,
		"kind": "edit", "status": "pending", "locations": []map[string]string{{"path": path}}})
	var perm acp.RequestPermissionResult
	err := a.conn.Call(ctx, acp.MethodRequestPermission, map[string]any{
		"sessionId": r.ID,
		"toolCall":  map[string]any{"toolCallId": call, "title": "Write " + NotesFile, "kind": "edit"},
		"options": []acp.PermissionOption{
			{OptionID: "allow", Name: "Allow", Kind: acp.AllowOnce},
			{OptionID: "reject", Name: "Reject", Kind: acp.RejectOnce},
		},
	}, &perm)
	if err != nil || perm.Outcome.Outcome != "selected" || perm.Outcome.OptionID != "allow" {
		a.update(r.ID, map[string]any{"sessionUpdate": acp.UpdateToolCallUpdate, "toolCallId": call, "status": "failed"})
		return false
	}
	var old acp.ReadTextFileResult
	if err := a.conn.Call(ctx, acp.MethodReadTextFile, acp.ReadTextFileParams{SessionID: r.ID, Path: path}, &old); err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			return false
		}
		old.Content = "# Notes\n\n" // no file yet
	}
	err = a.conn.Call(ctx, acp.MethodWriteTextFile, acp.WriteTextFileParams{SessionID: r.ID, Path: path,
		Content: old.Content + "- " + strings.ReplaceAll(text, "\n", " ") + "\n"}, nil)
	status := "completed"
	if err != nil {
		status = "failed"
	}
	a.update(r.ID, map[string]any{"sessionUpdate": acp.UpdateToolCallUpdate, "toolCallId": call, "status": status})
	return err == nil
}

func (a *agent) chunk(session, kind, text string) {
	a.update(session, map[string]any{"sessionUpdate": kind, "content": acp.ContentBlock{Type: "text", Text: text}})
}

func (a *agent) update(session string, u map[string]any) {
	_ = a.conn.Notify(acp.MethodSessionUpdate, map[string]any{"sessionId": session, "update": u})
}

func (a *agent) file(id string) (string, error) {
	if id == "" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return "", fmt.Errorf("bad session id %q", id)
	}
	return filepath.Join(a.cfg.StateDir, id+".json"), nil
}

func (a *agent) save(r *record) error {
	a.mu.Lock()
	b, err := json.Marshal(r)
	a.mu.Unlock()
	if err != nil {
		return err
	}
	path, err := a.file(r.ID)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (a *agent) load(id string) (*record, error) {
	path, err := a.file(id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
