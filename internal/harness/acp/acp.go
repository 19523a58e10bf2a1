// Package acp drives an agent that speaks the Agent Client Protocol (ACP,
// protocol version 1) as a child process: JSON-RPC 2.0, one message per
// line, on the child's stdio.
//
// An Agent is one agent process (the runtime host of an executor lease).
// It may hold several sessions, each with its own working directory. Its
// permission requests are answered by the configured harness.Approval
// (by default the reject policy), whose decision picks the offered option
// by kind. With a model configured, every session opened
// or loaded is put on it, or fails to open (model.go). The process is
// started by an executor (internal/executor: local, or a bubblewrap
// sandbox), in a process group of its own. Stop ends the whole process
// group: stdin is closed, then SIGTERM, then SIGKILL. An agent that breaks
// the protocol (a line that is not JSON-RPC, or longer than
// jsonrpc.DefaultMaxLine) has its group killed at once: its running calls
// fail and Exited closes, whether or not it would have exited.
//
// The file requests the agent makes (fs/read_text_file, fs/write_text_file)
// are served inside the requesting session's directory only (fs.go):
//   - every one goes through an os.Root opened on the directory when the
//     session opened, so no path, link, or link swapped in while the
//     request runs, leads out;
//   - a path naming a .git entry (any case, directly or through a link) is
//     refused, read and write: the file service never lets an agent plant
//     or rewrite the git directory jam's own git calls read;
//   - a read is of a regular file of at most MaxReadBytes, opened without
//     blocking, and at most two reads hold their answers until written;
//   - a write replaces a regular file atomically, through the same root.
//
// A refusal is a JSON-RPC error whose data carries a stable reason
// (Reason*). Writes are not subject to the Policy: it answers the agent's
// permission requests and is no sandbox (the agent's own process can write
// its directory directly); the file service's guarantees are the
// confinement and the .git refusal.
//
// The answer a turn keeps is at most MaxAnswerBytes; the rest is counted
// (TurnResult.Omitted), not kept.
//
// Harness is the adapter to the seam (package harness). Its zero value is
// the kind acp, which runs the command it is given; the named kinds
// Copilot and OpenCode add their CLI's own ACP arguments after the
// command (copilot --acp --no-auto-update, opencode acp), and Copilot,
// whose sessions offer no model selection, gets the model as --model on
// its command line.
package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
	"github.com/jamhq/jam/internal/harness/procio"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/version"
)

// Update is one streamed session/update.
type Update struct {
	SessionID string
	SessionUpdate
	// Raw is the update object as the agent sent it.
	Raw json.RawMessage
}

// Config configures an Agent.
type Config struct {
	// Command is the agent's argv. Required.
	Command []string
	// Dir is the process's working directory; "" is jamd's.
	Dir string
	// Env is the process's whole environment; nil is jamd's own (the
	// daemon always passes an allowlist).
	Env []string
	// Executor starts the process (see internal/executor); nil is
	// executor/local. Writable, ReadOnly and NoNetwork are passed to it.
	Executor  executor.Executor
	Writable  []string
	ReadOnly  []string
	NoNetwork bool
	// Model, when set, is the model every session is put on after
	// session/new and session/load (see ChooseModel); a session the agent
	// cannot put on it fails to open.
	Model string
	// Approve answers permission requests: harness.AllowOnce picks the
	// offered allow_once (else allow_always) option, harness.Reject
	// reject_once (else reject_always). Default: the reject policy.
	Approve harness.Approval
	// OnUpdate receives every session/update, in order; it must not
	// block for long. Optional.
	OnUpdate func(Update)
	// Logger receives the agent's stderr and protocol trouble. Required.
	Logger *slog.Logger
	// StopGrace is how long Stop waits after closing stdin and after
	// SIGTERM. Default 2s.
	StopGrace time.Duration
	// InitTimeout bounds the handshake. Default 2m: OpenCode takes about
	// 10 s to answer initialize on an idle machine, and 30 s on a loaded
	// one.
	InitTimeout time.Duration
}

// Agent is one running ACP agent process.
type Agent struct {
	cfg  Config
	proc *procio.Proc
	in   io.WriteCloser
	conn *jsonrpc.Conn
	info InitializeResult

	exited <-chan struct{} // closed when the process has exited (proc.Err says why)

	mu       sync.Mutex
	sessions map[string]*session // guarded by mu

	reads chan struct{} // guarded by mu: a slot per read in flight (readSlots)

	noHTTPMCP sync.Once // the agent's refusal of MCP servers is logged once
}

// maxReadsInFlight bounds the file reads in flight, from the read until
// the answer is written: each holds up to maxReadEncoded bytes.
const maxReadsInFlight = 2

// sessionFS returns a session's file service.
func (a *Agent) sessionFS(id string) (*sessionFS, error) {
	a.mu.Lock()
	s, ok := a.sessions[id]
	a.mu.Unlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown session"}
	}
	return s.fs, nil
}

type session struct {
	fs        *sessionFS // the session's directory
	collect   func(Update)
	cancelled bool
	// cost is the session's cumulative cost in USD, as the last
	// usage_update said; costSeen whether one did.
	cost     float64
	costSeen bool
}

// MaxAnswerBytes bounds the answer text a turn keeps (TurnResult.Text);
// what the agent says beyond it is counted in TurnResult.Omitted. The
// engine posts less still (engine.MaxReplyParts), with a note.
const MaxAnswerBytes = harness.MaxAnswerBytes

// openSession records a session working in root (as sessionRoot returns
// it), replacing any of the same id.
func (a *Agent) openSession(id, root string) error {
	sfs, err := openSessionFS(root)
	if err != nil {
		return err
	}
	a.mu.Lock()
	old := a.sessions[id]
	a.sessions[id] = &session{fs: sfs}
	a.mu.Unlock()
	if old != nil {
		_ = old.fs.close()
	}
	return nil
}

// Start starts the agent process and performs the handshake.
func Start(ctx context.Context, cfg Config) (*Agent, error) {
	if len(cfg.Command) == 0 || cfg.Logger == nil {
		return nil, errors.New("acp: command and logger are required")
	}
	if cfg.Approve == nil {
		cfg.Approve = harness.PolicyReject.Approve
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = 2 * time.Second
	}
	if cfg.InitTimeout == 0 {
		cfg.InitTimeout = 2 * time.Minute
	}
	spec := executor.Spec{Argv: cfg.Command, Dir: cfg.Dir, Env: cfg.Env, Writable: cfg.Writable, ReadOnly: cfg.ReadOnly, NoNetwork: cfg.NoNetwork}
	if spec.Env == nil {
		spec.Env = os.Environ()
	}
	if spec.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		spec.Dir = wd
	}
	ex := cfg.Executor
	if ex == nil {
		ex = local.New()
	}
	// The executor puts the process in a group of its own, so Stop reaches
	// every child it spawns (under bwrap, the sandbox's whole tree).
	proc, err := procio.Start(ex, spec)
	if err != nil {
		return nil, fmt.Errorf("acp: start %s: %w", cfg.Command[0], err)
	}
	a := &Agent{cfg: cfg, proc: proc, in: proc.Stdin(), exited: proc.Exited(), sessions: map[string]*session{}}
	a.conn = jsonrpc.New(proc.Stdout(), a.in, jsonrpc.Options{Handler: a.handle, OnNotify: a.notify})
	log := cfg.Logger.With("agent_pid", proc.Pid())
	// An agent that broke the protocol (a malformed or oversize line) is
	// not understood any more, and may live on: its group is killed
	// (procio), so that every call waiting on the exit fails now.
	proc.Watch(procio.Watch{
		Read:   func() error { return a.conn.Run(context.Background()) },
		Stderr: func(line string) { log.Debug("agent stderr", "line", line) },
		Broken: func(err error) { log.Warn("agent protocol ended", "err", err) },
	})

	ictx, cancel := context.WithTimeout(ctx, cfg.InitTimeout)
	defer cancel()
	err = a.call(ictx, MethodInitialize, InitializeParams{
		ProtocolVersion:    ProtocolVersion,
		ClientCapabilities: ClientCapabilities{FS: FSCapabilities{ReadTextFile: true, WriteTextFile: true}},
		// The schema requires a version; OpenCode rejects the handshake
		// without one.
		ClientInfo: &Implementation{Name: "jam", Version: version.Get().Version},
	}, &a.info)
	if err == nil && a.info.ProtocolVersion != ProtocolVersion {
		err = fmt.Errorf("acp: agent speaks protocol version %d, want %d", a.info.ProtocolVersion, ProtocolVersion)
	}
	if err != nil {
		_ = a.Stop(context.Background())
		return nil, fmt.Errorf("acp: initialize: %w", err)
	}
	return a, nil
}

// Manifest describes what this agent supports: the harness's, with
// resume, images and MCP servers as its handshake says.
func (a *Agent) Manifest() harness.Manifest {
	m := Harness{}.Manifest()
	m.Resume, m.Images = harness.ResumeNone, a.info.AgentCapabilities.PromptCapabilities.Image
	m.MCPServers = a.info.AgentCapabilities.MCPCapabilities.HTTP
	if a.info.AgentCapabilities.LoadSession {
		m.Resume = harness.ResumeInProcess
	}
	if a.info.AgentInfo != nil {
		m.Agent = strings.TrimSpace(a.info.AgentInfo.Name + " " + a.info.AgentInfo.Version)
	}
	return m
}

// Pid is the agent process's id.
func (a *Agent) Pid() int { return a.proc.Pid() }

// Exited is closed when the agent process has exited.
func (a *Agent) Exited() <-chan struct{} { return a.exited }

// call is a JSON-RPC call that also ends when the process exits.
func (a *Agent) call(ctx context.Context, method string, params, result any) error {
	return a.closed(a.conn.Call(ctx, method, params, result))
}

// closed turns the end of the stream into the process's exit. A write
// that failed is how a killed agent often shows first, before its output
// ends: its exit is given StopGrace to show too, so that the caller sees
// the process gone (and a turn is interrupted, not failed); an agent that
// only closed its input and lives on is reported as the write's failure.
func (a *Agent) closed(err error) error {
	switch {
	case errors.Is(err, jsonrpc.ErrClosed):
		<-a.exited
	case errors.Is(err, jsonrpc.ErrWrite):
		t := time.NewTimer(a.cfg.StopGrace)
		defer t.Stop()
		select {
		case <-a.exited:
		case <-t.C:
			return err
		}
	default:
		return err
	}
	return fmt.Errorf("%w: agent exited: %v", jam.ErrUnavailable, a.proc.Err())
}

// mcpServers are the servers a session is given: all of tools when the
// agent connects to MCP servers over HTTP (its handshake says so), else
// none, which is logged once per agent (names and addresses only; the
// headers are secrets).
func (a *Agent) mcpServers(tools []harness.MCPServer) []MCPServer {
	if len(tools) > 0 && !a.info.AgentCapabilities.MCPCapabilities.HTTP {
		a.noHTTPMCP.Do(func() {
			names := make([]string, 0, len(tools))
			for _, t := range tools {
				names = append(names, t.Name)
			}
			a.cfg.Logger.Warn("the agent cannot take HTTP MCP servers: its sessions open without them", "servers", names)
		})
		return MCPServers(nil)
	}
	return MCPServers(tools)
}

// NewSession opens a session working in dir, which must exist, given
// tools (see mcpServers).
func (a *Agent) NewSession(ctx context.Context, dir string, tools ...harness.MCPServer) (string, error) {
	root, err := sessionRoot(dir)
	if err != nil {
		return "", err
	}
	var res NewSessionResult
	if err := a.call(ctx, MethodSessionNew, NewSessionParams{Cwd: root, MCPServers: a.mcpServers(tools)}, &res); err != nil {
		return "", fmt.Errorf("acp: session/new: %w", err)
	}
	if res.SessionID == "" {
		return "", errors.New("acp: session/new returned no session id")
	}
	if err := a.openSession(res.SessionID, root); err != nil {
		return "", err
	}
	if err := a.selectModel(ctx, res.SessionID, res.SessionSetup); err != nil {
		a.forget(res.SessionID)
		return "", err
	}
	return res.SessionID, nil
}

// selectModel puts a session on the configured model, if any.
func (a *Agent) selectModel(ctx context.Context, id string, setup SessionSetup) error {
	if a.cfg.Model == "" {
		return nil
	}
	c, err := ChooseModel(setup, a.cfg.Model)
	if err != nil {
		a.cfg.Logger.Warn("session model not set", "session", id, "model", a.cfg.Model, "offered", c.Offered, "err", err)
		return fmt.Errorf("acp: session %s: %w", id, err)
	}
	switch c.Method {
	case "":
		return nil
	case MethodSessionSetConfigOption:
		var res SetConfigOptionResult
		if err := a.call(ctx, c.Method, SetConfigOptionParams{SessionID: id, ConfigID: c.ConfigID, Value: a.cfg.Model}, &res); err != nil {
			return fmt.Errorf("acp: %s %s=%s: %w", c.Method, c.ConfigID, a.cfg.Model, err)
		}
		// The answer is the session's whole configuration: it must now
		// run the model (an agent that kept another one says so here).
		if len(res.ConfigOptions) > 0 {
			after, err := ChooseModel(SessionSetup{ConfigOptions: res.ConfigOptions}, a.cfg.Model)
			if err == nil && after.Method != "" {
				return fmt.Errorf("%w: acp: the agent kept another model after %s %s=%s", jam.ErrInvalid, c.Method, c.ConfigID, a.cfg.Model)
			}
		}
	case MethodSessionSetModel:
		if err := a.call(ctx, c.Method, SetModelParams{SessionID: id, ModelID: a.cfg.Model}, nil); err != nil {
			return fmt.Errorf("acp: %s %s: %w", c.Method, a.cfg.Model, err)
		}
	}
	a.cfg.Logger.Debug("session model set", "session", id, "model", a.cfg.Model, "method", c.Method)
	return nil
}

// forget drops a session jam will not use.
func (a *Agent) forget(id string) {
	a.mu.Lock()
	s := a.sessions[id]
	delete(a.sessions, id)
	a.mu.Unlock()
	if s != nil {
		_ = s.fs.close()
	}
}

// closeSessions closes every session's directory, once no request can use
// them.
func (a *Agent) closeSessions() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.sessions {
		_ = s.fs.close()
	}
}

// LoadSession resumes a session the agent keeps (Manifest().Resume),
// given tools (see mcpServers); the history it replays reaches OnUpdate.
func (a *Agent) LoadSession(ctx context.Context, id, dir string, tools ...harness.MCPServer) error {
	if !a.info.AgentCapabilities.LoadSession {
		return fmt.Errorf("%w: the agent cannot resume sessions", jam.ErrNotImplemented)
	}
	root, err := sessionRoot(dir)
	if err != nil {
		return err
	}
	if err := a.openSession(id, root); err != nil {
		return err
	}
	var res LoadSessionResult
	if err := a.call(ctx, MethodSessionLoad, LoadSessionParams{SessionID: id, Cwd: root, MCPServers: a.mcpServers(tools)}, &res); err != nil {
		a.forget(id)
		return fmt.Errorf("acp: session/load: %w", err)
	}
	if err := a.selectModel(ctx, id, res.SessionSetup); err != nil {
		a.forget(id)
		return err
	}
	return nil
}

// TurnResult is how a turn ended.
type TurnResult struct {
	StopReason string
	// Usage is the tokens the agent reported with the answer, and the
	// turn's cost when usage_update reported the session's in US
	// dollars (the cumulative cost's growth over the turn); zero when it
	// reported nothing.
	Usage harness.Usage
	// Text is the agent's answer: its message chunks, in order, at most
	// MaxAnswerBytes of them (cut at a UTF-8 boundary).
	Text string
	// Omitted counts the bytes of the answer beyond Text, not kept.
	Omitted int
}

// Prompt runs one turn. When ctx ends first, the turn is cancelled
// (session/cancel) and Prompt waits for the agent to stop, at most
// StopGrace; the result then says cancelled.
func (a *Agent) Prompt(ctx context.Context, sessionID, text string) (TurnResult, error) {
	var b harness.Answer
	var cost float64
	costed := false
	a.mu.Lock()
	s, ok := a.sessions[sessionID]
	if ok {
		s.cancelled = false
		base, baseSeen := s.cost, s.costSeen
		s.collect = func(u Update) {
			switch {
			case u.SessionUpdate.SessionUpdate == UpdateAgentMessageChunk && u.Content != nil && u.Content.Type == "text":
				b.Add(u.Content.Text)
			case u.SessionUpdate.SessionUpdate == UpdateUsage && u.Cost != nil && strings.EqualFold(u.Cost.Currency, "USD"):
				s.cost, s.costSeen = u.Cost.Amount, true
				cost, costed = u.Cost.Amount, true
				if baseSeen {
					cost -= base
				}
			}
		}
	}
	a.mu.Unlock()
	if !ok {
		return TurnResult{}, fmt.Errorf("%w: session %s is not open on this agent", jam.ErrNotFound, sessionID)
	}
	defer func() {
		a.mu.Lock()
		s.collect = nil
		a.mu.Unlock()
	}()
	// The request is on the wire before any cancel can follow it, so the
	// agent never sees a cancel for a prompt it has not received yet.
	pending, err := a.conn.Send(MethodSessionPrompt, PromptParams{SessionID: sessionID, Prompt: []ContentBlock{{Type: "text", Text: text}}})
	if err != nil {
		return TurnResult{}, fmt.Errorf("acp: session/prompt: %w", a.closed(err))
	}
	done := make(chan struct{})
	var res PromptResult
	go func() {
		defer close(done)
		// The wait itself is not bound to ctx: a cancelled turn still
		// gets its answer (stopReason cancelled).
		err = a.closed(pending.Wait(context.WithoutCancel(ctx), &res))
	}()
	select {
	case <-done:
	case <-ctx.Done():
		_ = a.Cancel(sessionID)
		t := time.NewTimer(a.cfg.StopGrace)
		select {
		case <-done:
			t.Stop()
		case <-t.C:
			return TurnResult{StopReason: StopCancelled}, fmt.Errorf("acp: the agent did not stop its turn after cancel: %w", ctx.Err())
		}
	}
	if err != nil {
		return TurnResult{}, fmt.Errorf("acp: session/prompt: %w", err)
	}
	a.mu.Lock()
	out := TurnResult{StopReason: res.StopReason, Text: b.Text(), Omitted: b.Omitted()}
	if costed && cost > 0 {
		out.Usage.CostUSD = cost
	}
	if u := res.Usage; u != nil {
		out.Usage.InputTokens, out.Usage.OutputTokens = u.InputTokens, u.OutputTokens
		out.Usage.CachedTokens, out.Usage.ReasoningTokens = u.CachedReadTokens, u.ThoughtTokens
	}
	a.mu.Unlock()
	return out, nil
}

// Cancel asks the agent to stop the session's running turn; pending
// permission requests of the session are answered "cancelled".
func (a *Agent) Cancel(sessionID string) error {
	a.mu.Lock()
	if s, ok := a.sessions[sessionID]; ok {
		s.cancelled = true
	}
	a.mu.Unlock()
	return a.conn.Notify(MethodSessionCancel, CancelParams{SessionID: sessionID})
}

// Stop ends the agent: stdin closes (a well-behaved agent exits), then
// the process group gets SIGTERM, then SIGKILL, StopGrace apart. It waits
// for the agent's goroutines. Safe to call more than once.
func (a *Agent) Stop(ctx context.Context) error {
	_ = a.in.Close()
	err := a.proc.Stop(ctx, a.cfg.StopGrace)
	a.closeSessions()
	return err
}

// notify routes a notification from the agent.
func (a *Agent) notify(method string, params json.RawMessage) {
	if method != MethodSessionUpdate {
		return
	}
	var n SessionNotification
	if err := json.Unmarshal(params, &n); err != nil {
		a.cfg.Logger.Warn("undecodable session/update", "err", err)
		return
	}
	su, err := DecodeSessionUpdate(n.Update)
	u := Update{SessionID: n.SessionID, SessionUpdate: su, Raw: n.Update}
	if err != nil {
		a.cfg.Logger.Warn("undecodable session/update", "err", err)
		return
	}
	a.mu.Lock()
	var collect func(Update)
	if s, ok := a.sessions[n.SessionID]; ok {
		collect = s.collect
	}
	if collect != nil {
		collect(u) // under mu: Prompt reads the text under mu
	}
	a.mu.Unlock()
	if a.cfg.OnUpdate != nil {
		a.cfg.OnUpdate(u)
	}
}

// read answers fs/read_text_file, encoded.
func read(sfs *sessionFS, p ReadTextFileParams) (json.RawMessage, error) {
	content, err := sfs.read(p.Path)
	if err != nil {
		return nil, err
	}
	content = sliceLines(content, p.Line, p.Limit)
	if n := jsonLen(content); n > maxReadEncoded {
		return nil, refusal(jsonrpc.CodeInvalidParams, ReasonTooLarge, "path %q would be %d bytes of JSON, over the %d the file service sends", p.Path, n, maxReadEncoded)
	}
	return json.Marshal(ReadTextFileResult{Content: content})
}

// readSlots returns the slots of the reads in flight.
func (a *Agent) readSlots() chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reads == nil {
		a.reads = make(chan struct{}, maxReadsInFlight)
	}
	return a.reads
}

// handle answers a request from the agent.
func (a *Agent) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodRequestPermission:
		var p RequestPermissionParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(err)
		}
		a.mu.Lock()
		s, ok := a.sessions[p.SessionID]
		cancelled := ok && s.cancelled
		a.mu.Unlock()
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown session"}
		}
		if cancelled {
			return RequestPermissionResult{Outcome: PermissionOutcome{Outcome: "cancelled"}}, nil
		}
		return RequestPermissionResult{Outcome: choose(a.cfg.Approve(ctx, approvalRequest(p)), p.Options)}, nil
	case MethodReadTextFile:
		var p ReadTextFileParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(err)
		}
		sfs, err := a.sessionFS(p.SessionID)
		if err != nil {
			return nil, err
		}
		// A read holds a slot from before it reads until its answer is
		// written, whether or not the agent reads its answers.
		slots := a.readSlots()
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		release := sync.OnceFunc(func() { <-slots })
		res, err := read(sfs, p)
		if err != nil {
			release()
			return nil, err
		}
		return &jsonrpc.Encoded{JSON: res, Written: release}, nil
	case MethodWriteTextFile:
		var p WriteTextFileParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(err)
		}
		sfs, err := a.sessionFS(p.SessionID)
		if err != nil {
			return nil, err
		}
		if err := sfs.write(p.Path, p.Content); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
}

// approvalRequest is a permission request in neutral terms; a tool call
// that does not decode leaves its fields empty.
func approvalRequest(p RequestPermissionParams) harness.ApprovalRequest {
	var tc struct {
		ToolCallID string `json:"toolCallId"`
		Title      string `json:"title"`
		Kind       string `json:"kind"`
	}
	_ = json.Unmarshal(p.ToolCall, &tc)
	return harness.ApprovalRequest{Thread: harness.Thread(p.SessionID), ToolCallID: tc.ToolCallID, Title: tc.Title, ToolKind: tc.Kind}
}

// choose picks the option of the decision's kind.
func choose(d harness.Decision, options []PermissionOption) PermissionOutcome {
	kinds := []string{RejectOnce, RejectAlways}
	if d == harness.AllowOnce {
		kinds = []string{AllowOnce, AllowAlways}
	}
	for _, k := range kinds {
		for _, o := range options {
			if o.Kind == k {
				return PermissionOutcome{Outcome: "selected", OptionID: o.OptionID}
			}
		}
	}
	// No option of an acceptable kind: decline to choose.
	return PermissionOutcome{Outcome: "cancelled"}
}

func invalidParams(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}
