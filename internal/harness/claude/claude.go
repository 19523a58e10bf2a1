// Package claude drives Claude Code as a harness: one long-lived
// `claude -p --input-format stream-json --output-format stream-json
// --verbose --include-partial-messages --permission-prompt-tool stdio
// --permission-mode default` process per session, started in the
// session's working directory.
//
// The protocol (Claude Code's stream-json, as its Agent SDK speaks it):
// one JSON object per line both ways, not JSON-RPC. jam writes user
// messages and control requests (initialize, interrupt, get_usage); the
// CLI writes, per turn, system/init, stream_event (raw API events:
// text_delta and thinking_delta stream the answer), assistant messages
// (tool_use blocks), user messages (tool_result blocks) and one result
// that ends the turn, and control requests of its own (can_use_tool).
//
// Invariants:
//   - one thread per process: a fresh process is started with
//     --session-id and a UUID jam picks, so the thread is known before the
//     first turn; a process started with LaunchSpec.Resume runs --resume
//     and serves that thread only. Open returns the fresh thread once;
//     Resume succeeds only for the launched thread (jam.ErrNotImplemented
//     otherwise), so the runtime starts a process per session and names
//     the thread at launch (Manifest: Sessions one, Resume at_launch);
//   - Launch sends control_request initialize and fails unless it is
//     answered within the handshake timeout (a --resume of a thread the
//     CLI does not have exits before it answers); the process is then
//     reaped and its group gone;
//   - a turn's output is the output between its system/init and its
//     result: a result or output a turn left behind (it was cancelled and
//     did not stop in time) is recognised by its init and result and
//     reaches nobody;
//   - every can_use_tool request is answered through LaunchSpec.Approver:
//     allow with the request's input unchanged, or deny with a message;
//     any other control request the CLI makes is answered with an error
//     at once;
//   - a line that is not a JSON object with a type, or longer than
//     MaxLine, is a protocol error: the group is killed, the running turn
//     fails and Exited closes; unknown types and fields are ignored;
//   - the Outcome's usage is the result's (cache writes counted as input,
//     cache reads as cached tokens), and its cost is the growth of the
//     CLI's reported total_cost_usd over the turn (the CLI reports the
//     session's cumulative cost; get_usage gives it at launch), never
//     estimated; a turn whose start total is unknown reports no cost;
//   - a process given MCP servers (LaunchSpec.MCP) reads them from a file
//     of mode 0600, {"mcpServers":{NAME:{"type":"http","url","headers"}}},
//     in LaunchSpec.PrivateDir (else a temporary directory, shown to its
//     sandbox read-only), named by --mcp-config with --strict-mcp-config
//     (no other server is read); --allowedTools mcp__NAME runs their
//     tools without an approval request (they are jam's own). The file is
//     removed, and a temporary directory with it, once the process has
//     exited; the headers are never in argv;
//   - errors hide LaunchSpec.Secrets and the MCP servers' header values.
package claude

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/procio"
	"github.com/jamhq/jam/internal/jam"
)

// Name is the harness's kind.
const Name = "claude"

// MaxAnswerBytes bounds the answer a turn keeps (Outcome.Text); the rest
// is counted in Outcome.Omitted.
const MaxAnswerBytes = harness.MaxAnswerBytes

// Defaults.
const (
	defaultHandshake = 2 * time.Minute
	stopGrace        = 3 * time.Second
	// interruptGrace is how long a cancelled turn waits for its result.
	interruptGrace = 10 * time.Second
)

// Harness is the Claude Code harness.
type Harness struct{}

var _ harness.Harness = Harness{}

// Name implements harness.Harness.
func (Harness) Name() string { return Name }

// Manifest implements harness.Harness.
func (Harness) Manifest() harness.Manifest {
	return harness.Manifest{Harness: Name, Version: harness.ManifestVersion, Sessions: harness.SessionsOne,
		Resume: harness.ResumeAtLaunch, Interrupt: true, Approvals: true, MCPServers: true}
}

// ProtocolArgs are the flags the adapter appends to the person's command.
func ProtocolArgs(model string, resume harness.Thread, fresh string) []string {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--include-partial-messages", "--permission-prompt-tool", "stdio", "--permission-mode", "default"}
	if model != "" {
		args = append(args, "--model", model)
	}
	if resume != "" {
		return append(args, "--resume", string(resume))
	}
	return append(args, "--session-id", fresh)
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// MCPArgs are the flags that give the process the MCP servers of the
// configuration file at path: that file's only, their tools allowed
// without asking.
func MCPArgs(path string, servers []harness.MCPServer) []string {
	allowed := make([]string, 0, len(servers))
	for _, s := range servers {
		allowed = append(allowed, "mcp__"+s.Name)
	}
	return []string{"--mcp-config", path, "--strict-mcp-config", "--allowedTools", strings.Join(allowed, ",")}
}

// MCPConfig is the --mcp-config file's content for servers.
func MCPConfig(servers []harness.MCPServer) ([]byte, error) {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	m := make(map[string]server, len(servers))
	for _, s := range servers {
		if s.Name == "" || s.URL == "" {
			return nil, fmt.Errorf("%w: claude: an MCP server needs a name and a URL", jam.ErrInvalid)
		}
		if _, dup := m[s.Name]; dup {
			return nil, fmt.Errorf("%w: claude: two MCP servers named %q", jam.ErrInvalid, s.Name)
		}
		m[s.Name] = server{Type: "http", URL: s.URL, Headers: s.Headers}
	}
	return json.Marshal(map[string]any{"mcpServers": m})
}

// writeMCPConfig writes the servers' configuration into dir (a temporary
// directory when ""), and returns its path and what removes it.
func writeMCPConfig(dir string, servers []harness.MCPServer) (path string, remove func(), err error) {
	b, err := MCPConfig(servers)
	if err != nil {
		return "", nil, err
	}
	made := dir == ""
	if made {
		if dir, err = os.MkdirTemp("", "jam-claude-"); err != nil {
			return "", nil, fmt.Errorf("claude: MCP configuration: %w", err)
		}
	}
	remove = func() {
		if made {
			_ = os.RemoveAll(dir)
		} else if path != "" {
			_ = os.Remove(path)
		}
	}
	f, err := os.CreateTemp(dir, "mcp-*.json") // mode 0600
	if err == nil {
		path = f.Name()
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		remove()
		return "", nil, fmt.Errorf("claude: MCP configuration: %w", err)
	}
	return path, remove, nil
}

// Launch implements harness.Harness.
func (Harness) Launch(ctx context.Context, spec harness.LaunchSpec) (harness.Process, error) {
	for _, s := range spec.MCP {
		spec.Secrets = append(slices.Clip(spec.Secrets), s.Secrets()...)
	}
	p, err := launch(ctx, spec)
	return p, harness.RedactEnv(err, spec.Secrets)
}

func launch(ctx context.Context, spec harness.LaunchSpec) (*process, error) {
	if len(spec.Argv) == 0 || spec.Logger == nil || spec.Executor == nil {
		return nil, errors.New("claude: command, executor and logger are required")
	}
	if spec.Resume != "" && strings.HasPrefix(string(spec.Resume), "-") {
		return nil, fmt.Errorf("%w: claude: thread %q", jam.ErrInvalid, spec.Resume)
	}
	timeout := spec.HandshakeTimeout
	if timeout == 0 {
		timeout = defaultHandshake
	}
	thread, resumed := spec.Resume, spec.Resume != ""
	fresh := ""
	if !resumed {
		fresh = newUUID()
		thread = harness.Thread(fresh)
	}
	argv := append(append([]string{}, spec.Argv...), ProtocolArgs(spec.Model, spec.Resume, fresh)...)
	readOnly := spec.ReadOnly
	cleanup := func() {}
	if len(spec.MCP) > 0 {
		path, remove, err := writeMCPConfig(spec.PrivateDir, spec.MCP)
		if err != nil {
			return nil, err
		}
		cleanup = remove
		argv = append(argv, MCPArgs(path, spec.MCP)...)
		if spec.PrivateDir == "" {
			readOnly = append(slices.Clip(readOnly), filepath.Dir(path))
		}
	}
	ex := spec.Executor
	proc, err := procio.Start(ex, executor.Spec{Argv: argv, Dir: spec.Dir, Env: spec.Env, Writable: spec.Writable,
		ReadOnly: readOnly, NoNetwork: spec.NoNetwork})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("claude: start %s: %w", spec.Argv[0], err)
	}
	p := &process{spec: spec, proc: proc, in: proc.Stdin(), thread: thread, resumed: resumed, exited: proc.Exited(),
		pending: map[string]chan controlResponse{}, approvals: map[string]context.CancelFunc{},
		log: spec.Logger.With("harness", Name, "agent_pid", proc.Pid())}
	p.approveCtx, p.approveStop = context.WithCancel(context.Background())
	// Not understood any more, and may live on: its group is killed
	// (procio).
	proc.Watch(procio.Watch{
		Read: func() error { return p.read(proc.Stdout()) },
		Stderr: func(line string) {
			p.log.Debug("agent stderr", "line", line)
			p.stderr.add(line)
		},
		Broken: func(err error) { p.log.Warn("agent protocol ended", "err", harness.RedactEnv(err, spec.Secrets)) },
		Exit: func() {
			p.approveStop()
			cleanup()
		},
	})

	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := p.control(hctx, subtypeInitialize, nil); err != nil {
		_ = p.Stop(context.Background())
		return nil, fmt.Errorf("claude: initialize: %w", err)
	}
	// The session's cost so far: a resumed session's total goes on.
	if res, err := p.control(hctx, subtypeGetUsage, nil); err == nil {
		var u struct {
			Session struct {
				TotalCostUSD *float64 `json:"total_cost_usd"`
			} `json:"session"`
		}
		if json.Unmarshal(res, &u) == nil && u.Session.TotalCostUSD != nil {
			p.cost, p.costKnown = *u.Session.TotalCostUSD, true
		}
	} else if errors.Is(err, jam.ErrUnavailable) {
		_ = p.Stop(context.Background())
		return nil, fmt.Errorf("claude: get_usage: %w", err)
	}
	if !p.costKnown && !resumed {
		p.costKnown = true // a new session starts at zero
	}
	return p, nil
}

// process is one Claude Code process.
type process struct {
	spec    harness.LaunchSpec
	proc    *procio.Proc
	in      io.WriteCloser
	log     *slog.Logger
	thread  harness.Thread
	resumed bool
	exited  <-chan struct{} // closed when the process has exited (proc.Err says why)
	wg      sync.WaitGroup  // the approvals in flight
	stderr  tail

	// approveCtx ends when the process exits: approvals in flight stop.
	approveCtx  context.Context
	approveStop context.CancelFunc

	writeMu sync.Mutex // serializes lines to stdin

	turnMu sync.Mutex // one Prompt at a time

	mu        sync.Mutex
	opened    bool                            // guarded by mu: Open returned the thread
	agent     string                          // guarded by mu: claude_code_version
	model     string                          // guarded by mu: the model system/init names
	cur       *turn                           // guarded by mu: the running turn
	skipInit  int                             // guarded by mu: inits of abandoned turns still to come
	owed      int                             // guarded by mu: results of abandoned turns still to come
	cost      float64                         // guarded by mu: the session's cumulative cost
	costKnown bool                            // guarded by mu
	seq       int                             // guarded by mu: control request ids
	pending   map[string]chan controlResponse // guarded by mu: by request id
	approvals map[string]context.CancelFunc   // guarded by mu: can_use_tool in flight
}

// turn is a running Prompt.
type turn struct {
	updates     func(harness.Update)
	started     bool // its system/init was read
	interrupted bool
	text        harness.Answer
	todo        map[string]bool // TodoWrite calls, reported as plans
	done        chan message    // its result
	costBase    float64
	costKnown   bool
}

// tail keeps the CLI's last lines of stderr, for the errors of a failed
// launch ("No conversation found with session ID: …").
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, clip(s, 300))
	if len(t.lines) > 5 {
		t.lines = t.lines[1:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "; ")
}

// Manifest implements harness.Process.
func (p *process) Manifest() harness.Manifest {
	m := Harness{}.Manifest()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.agent != "" {
		m.Agent = "claude-code " + p.agent
	}
	return m
}

// Pid implements harness.Process.
func (p *process) Pid() int { return p.proc.Pid() }

// Exited implements harness.Process.
func (p *process) Exited() <-chan struct{} { return p.exited }

// launchedWith reports whether tools are among the MCP servers the
// process was started with: a process takes its servers at launch only.
func (p *process) launchedWith(tools []harness.MCPServer) error {
	for _, t := range tools {
		if !slices.ContainsFunc(p.spec.MCP, func(s harness.MCPServer) bool { return s.Name == t.Name && s.URL == t.URL }) {
			return fmt.Errorf("%w: claude takes MCP servers at launch (LaunchSpec.MCP); %q was not given then", jam.ErrInvalid, t.Name)
		}
	}
	return nil
}

// Open implements harness.Process: the thread the process was started
// with (--session-id), once. A process holds one thread; tools must be
// among the servers it was launched with.
func (p *process) Open(_ context.Context, _ string, tools ...harness.MCPServer) (harness.Thread, error) {
	if err := p.launchedWith(tools); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed {
		return "", fmt.Errorf("%w: claude: this process was started on thread %s (Resume it); it holds one thread", jam.ErrInvalid, p.thread)
	}
	if p.opened {
		return "", fmt.Errorf("%w: claude: a process holds one thread, and %s is open", jam.ErrInvalid, p.thread)
	}
	p.opened = true
	return p.thread, nil
}

// Resume implements harness.Process: only the thread the process was
// started on; tools must be among the servers it was launched with.
func (p *process) Resume(_ context.Context, thread harness.Thread, _ string, tools ...harness.MCPServer) error {
	if err := p.launchedWith(tools); err != nil {
		return err
	}
	if thread != p.thread {
		return fmt.Errorf("%w: claude resumes a thread at launch (--resume); this process runs %s, not %s", jam.ErrNotImplemented, p.thread, thread)
	}
	p.mu.Lock()
	p.opened = true
	p.mu.Unlock()
	return nil
}

// Steer implements harness.Process: not offered.
func (p *process) Steer(context.Context, harness.Thread, harness.Input) error {
	return fmt.Errorf("%w: the claude harness does not steer a running turn", jam.ErrNotImplemented)
}

// gone is the error of a process that exited.
func (p *process) gone() error {
	msg := fmt.Sprintf("claude exited: %v", p.proc.Err())
	if s := p.stderr.String(); s != "" {
		msg += " (stderr: " + s + ")"
	}
	return harness.RedactEnv(fmt.Errorf("%w: %s", jam.ErrUnavailable, msg), p.spec.Secrets)
}

// write sends one line.
func (p *process) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	select {
	case <-p.exited:
		return p.gone()
	default:
	}
	if _, err := p.in.Write(b); err != nil {
		select {
		case <-p.exited:
			return p.gone()
		case <-time.After(stopGrace):
			return fmt.Errorf("claude: write: %w", err)
		}
	}
	return nil
}

// control sends a control request and waits for its response.
func (p *process) control(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	p.mu.Lock()
	p.seq++
	id := "jam-" + strconv.Itoa(p.seq)
	ch := make(chan controlResponse, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	req := map[string]any{"subtype": subtype}
	for k, v := range fields {
		req[k] = v
	}
	if err := p.write(map[string]any{"type": typeControlRequest, "request_id": id, "request": req}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Subtype != subtypeSuccess {
			return nil, fmt.Errorf("claude: %s: %s", subtype, clip(r.Error, 300))
		}
		return r.Response, nil
	case <-p.exited:
		return nil, p.gone()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Prompt implements harness.Process.
func (p *process) Prompt(ctx context.Context, thread harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	if thread != p.thread {
		return harness.Outcome{}, fmt.Errorf("%w: thread %s is not this process's (%s)", jam.ErrNotFound, thread, p.thread)
	}
	p.turnMu.Lock()
	defer p.turnMu.Unlock()
	select {
	case <-p.exited:
		return harness.Outcome{}, p.gone()
	default:
	}
	t := &turn{updates: updates, todo: map[string]bool{}, done: make(chan message, 1)}
	p.mu.Lock()
	t.costBase, t.costKnown = p.cost, p.costKnown
	p.cur = t
	p.mu.Unlock()
	finished := false
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cur = nil
		if !finished {
			// The CLI may still send this turn's init, output and
			// result: they are for nobody.
			if !t.started {
				p.skipInit++
			}
			p.owed++
		}
	}()
	err := p.write(map[string]any{"type": typeUser, "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": in.Text}}}})
	if err != nil {
		return harness.Outcome{}, err
	}
	var r message
	select {
	case r = <-t.done:
	case <-p.exited:
		return harness.Outcome{}, p.gone()
	case <-ctx.Done():
		p.interrupt(t)
		timer := time.NewTimer(interruptGrace)
		defer timer.Stop()
		select {
		case r = <-t.done:
		case <-p.exited:
			return harness.Outcome{}, p.gone()
		case <-timer.C:
			return harness.Outcome{StopReason: harness.StopCancelled}, fmt.Errorf("claude: the turn did not stop after interrupt: %w", ctx.Err())
		}
	}
	finished = true
	p.mu.Lock()
	interrupted, model := t.interrupted, p.model
	text, omitted := t.text.Text(), t.text.Omitted()
	p.mu.Unlock()
	out := outcome(r, interrupted || ctx.Err() != nil, t.costBase, t.costKnown, model)
	if text == "" && r.Result != "" && out.StopReason != harness.StopFailed {
		// Nothing was streamed (no partial messages): the result's text.
		var a harness.Answer
		a.Add(r.Result)
		text, omitted = a.Text(), a.Omitted()
	}
	if out.StopReason != harness.StopFailed {
		out.Text, out.Omitted = text, omitted
	}
	return out, nil
}

// interrupt asks the CLI to stop t.
func (p *process) interrupt(t *turn) {
	p.mu.Lock()
	if t.interrupted {
		p.mu.Unlock()
		return
	}
	t.interrupted = true
	p.seq++
	id := "jam-" + strconv.Itoa(p.seq)
	p.mu.Unlock()
	// The answer is not waited for: the result ends the turn.
	if err := p.write(map[string]any{"type": typeControlRequest, "request_id": id, "request": map[string]any{"subtype": subtypeInterrupt}}); err != nil {
		p.log.Debug("interrupt not sent", "err", err)
	}
}

// Interrupt implements harness.Process.
func (p *process) Interrupt(_ context.Context, thread harness.Thread) error {
	if thread != p.thread {
		return fmt.Errorf("%w: thread %s is not this process's", jam.ErrNotFound, thread)
	}
	p.mu.Lock()
	t := p.cur
	p.mu.Unlock()
	if t != nil {
		p.interrupt(t)
	}
	return nil
}

// Stop implements harness.Process: stdin closes, then the group gets
// SIGTERM, then SIGKILL. Safe to call more than once.
func (p *process) Stop(ctx context.Context) error {
	p.writeMu.Lock()
	_ = p.in.Close()
	p.writeMu.Unlock()
	err := p.proc.Stop(ctx, stopGrace)
	p.wg.Wait()
	return err
}

// read reads the CLI's output until it ends; a protocol error ends it.
func (p *process) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, MaxLine)
		if len(strings.TrimSpace(string(line))) > 0 {
			m, derr := decodeLine(line)
			if derr != nil {
				return derr
			}
			p.dispatch(m)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// dispatch handles one message, on the reading goroutine.
func (p *process) dispatch(m message) {
	switch m.Type {
	case typeControlResponse:
		p.mu.Lock()
		ch := p.pending[m.Response.RequestID]
		p.mu.Unlock()
		if ch != nil {
			ch <- *m.Response
		}
		return
	case typeControlRequest:
		p.controlRequest(m)
		return
	case typeControlCancel:
		p.mu.Lock()
		if cancel := p.approvals[m.RequestID]; cancel != nil {
			cancel()
		}
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.cur
	switch m.Type {
	case typeSystem:
		if m.Subtype != subtypeInit {
			return
		}
		if m.ClaudeCodeVersion != "" {
			p.agent = m.ClaudeCodeVersion
		}
		if m.Model != "" {
			p.model = m.Model
		}
		if p.skipInit > 0 {
			p.skipInit--
			return
		}
		if t != nil {
			t.started = true
		}
	case typeResult:
		if m.TotalCostUSD != nil {
			p.cost, p.costKnown = *m.TotalCostUSD, true
		}
		if p.owed > 0 {
			p.owed--
			return
		}
		if t != nil {
			// A result without an init ended the turn before it started
			// (it failed at once): it is still this turn's.
			t.started = true
			select {
			case t.done <- m:
			default:
			}
		}
	case typeStreamEvent, typeAssistant, typeUser:
		if t == nil || !t.started || m.ParentToolUseID != nil {
			return
		}
		p.turnOutput(t, m)
	}
}

// turnOutput passes a running turn's output on, under p.mu.
func (p *process) turnOutput(t *turn, m message) {
	emit := func(u harness.Update) {
		if t.updates != nil {
			t.updates(u)
		}
	}
	switch m.Type {
	case typeStreamEvent:
		e := m.Event
		if e == nil || e.Type != "content_block_delta" || e.Delta == nil {
			return
		}
		switch e.Delta.Type {
		case "text_delta":
			if e.Delta.Text != "" {
				t.text.Add(e.Delta.Text)
				emit(harness.Update{Kind: harness.UpdateText, Text: e.Delta.Text})
			}
		case "thinking_delta":
			if e.Delta.Thinking != "" {
				emit(harness.Update{Kind: harness.UpdateThinking, Text: e.Delta.Thinking})
			}
		}
	case typeAssistant:
		if m.Message == nil {
			return
		}
		for _, b := range m.Message.Content {
			if b.Type != "tool_use" || b.ID == "" {
				continue
			}
			if b.Name == "TodoWrite" {
				if plan, ok := todoPlan(b.Input); ok {
					t.todo[b.ID] = true
					emit(harness.Update{Kind: harness.UpdatePlan, Plan: plan})
					continue
				}
			}
			emit(harness.Update{Kind: harness.UpdateToolStart, ToolCallID: b.ID, Title: toolTitle(b.Name, b.Input, ""),
				ToolKind: toolKind(b.Name), Status: harness.ToolInProgress})
		}
	case typeUser:
		if m.Message == nil {
			return
		}
		for _, b := range m.Message.Content {
			if b.Type != "tool_result" || b.ToolUseID == "" || t.todo[b.ToolUseID] {
				continue
			}
			status := harness.ToolCompleted
			if b.IsError {
				status = harness.ToolFailed
			}
			emit(harness.Update{Kind: harness.UpdateToolEnd, ToolCallID: b.ToolUseID, Status: status})
		}
	}
}

// controlRequest answers a control request of the CLI: can_use_tool
// through the Approver (on a goroutine of its own, so the reading goes
// on), anything else with an error at once.
func (p *process) controlRequest(m message) {
	var req canUseTool
	if err := json.Unmarshal(m.Request, &req); err != nil || req.Subtype != subtypeCanUseTool {
		sub := req.Subtype
		if sub == "" {
			sub = "a request without a subtype"
		}
		p.answer(m.RequestID, nil, "jam does not handle "+clip(sub, 100))
		return
	}
	ctx, cancel := context.WithCancel(p.approveCtx)
	p.mu.Lock()
	p.approvals[m.RequestID] = cancel
	p.mu.Unlock()
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.approvals, m.RequestID)
			p.mu.Unlock()
			cancel()
		}()
		d := p.spec.Approver()(ctx, harness.ApprovalRequest{Thread: p.thread, ToolCallID: req.ToolUseID,
			Title: toolTitle(req.ToolName, req.Input, req.Description), ToolKind: toolKind(req.ToolName)})
		if ctx.Err() != nil {
			return // withdrawn, or the process is gone
		}
		if d == harness.AllowOnce {
			input := req.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			p.answer(m.RequestID, map[string]any{"behavior": "allow", "updatedInput": input}, "")
			return
		}
		p.answer(m.RequestID, map[string]any{"behavior": "deny", "message": "jam's permission policy rejected this tool call"}, "")
	})
}

// answer writes a control response: success with response, or an error.
func (p *process) answer(id string, response any, errText string) {
	r := map[string]any{"subtype": subtypeSuccess, "request_id": id, "response": response}
	if errText != "" {
		r = map[string]any{"subtype": subtypeError, "request_id": id, "error": errText}
	}
	if err := p.write(map[string]any{"type": typeControlResponse, "response": r}); err != nil {
		p.log.Debug("control response not sent", "err", err)
	}
}
