package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/jsonrpc"
	"github.com/jamhq/jam/internal/harness/procio"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/version"
)

// Name is the Codex harness's kind.
const Name = "codex"

// Subcommand is what the adapter appends to the person's command.
const Subcommand = "app-server"

// ApprovalPolicy is the approvalPolicy every thread runs with: Codex asks
// before every command it does not know to be safe, and jam's Approval
// callback (the permission policy) answers. Under "on-request" (with the
// Sandbox below) Codex 0.171 runs the model's exec_command without asking,
// so even the reject policy would not stop it (TestCodex_approvals fails).
const ApprovalPolicy = "untrusted"

// Sandbox is the sandbox mode every thread runs with: Codex's own sandbox
// off, jam's executor being the sandbox (see the package doc).
const Sandbox = "danger-full-access"

// maxTitles bounds the tool titles a turn keeps for its approvals.
const maxTitles = 1024

// MaxAnswerBytes bounds the answer text a turn keeps (Outcome.Text); the
// rest is counted in Outcome.Omitted.
const MaxAnswerBytes = harness.MaxAnswerBytes

// Defaults.
const (
	defaultHandshake = 2 * time.Minute
	stopGrace        = 2 * time.Second
	// interruptGrace bounds the wait for turn/completed after
	// turn/interrupt, and after an error Codex will not retry.
	interruptGrace = 10 * time.Second
)

// Harness is the Codex app-server harness.
type Harness struct{}

var _ harness.Harness = Harness{}

// Name implements harness.Harness.
func (Harness) Name() string { return Name }

// Manifest implements harness.Harness: many threads per process, resume in
// a new process (thread/resume), interrupt by turn id (turn/interrupt),
// approvals (command, file-change and MCP tool call requests), steer
// (turn/steer), MCP servers (thread/start and thread/resume config).
func (Harness) Manifest() harness.Manifest {
	return harness.Manifest{Harness: Name, Version: harness.ManifestVersion, Sessions: harness.SessionsMany,
		Resume: harness.ResumeInProcess, Steer: true, Interrupt: true, InterruptNeedsTurn: true, Approvals: true, MCPServers: true}
}

// Launch implements harness.Harness: it starts `<Argv…> app-server`
// through spec.Executor and performs the handshake (initialize, then
// initialized) within spec.HandshakeTimeout.
func (Harness) Launch(ctx context.Context, spec harness.LaunchSpec) (harness.Process, error) {
	if len(spec.Argv) == 0 || spec.Executor == nil || spec.Logger == nil {
		return nil, fmt.Errorf("%w: codex: command, executor and logger are required", jam.ErrInvalid)
	}
	timeout := spec.HandshakeTimeout
	if timeout == 0 {
		timeout = defaultHandshake
	}
	argv := append(slices.Clone(spec.Argv), Subcommand)
	ex := spec.Executor
	proc, err := procio.Start(ex, executor.Spec{Argv: argv, Dir: spec.Dir, Env: spec.Env, Writable: spec.Writable,
		ReadOnly: spec.ReadOnly, NoNetwork: spec.NoNetwork})
	if err != nil {
		return nil, harness.RedactEnv(fmt.Errorf("codex: start %s: %w", argv[0], err), spec.Secrets)
	}
	p := &process{spec: spec, approve: spec.Approver(), proc: proc, in: proc.Stdin(),
		exited: proc.Exited(), threads: map[string]*thread{}}
	p.conn = jsonrpc.New(proc.Stdout(), p.in, jsonrpc.Options{Member: jsonrpc.MemberOmitted, Handler: p.handle, OnNotify: p.notify})
	log := spec.Logger.With("agent_pid", proc.Pid())
	// A process that broke the protocol is not understood any more: its
	// group is killed (procio), so that every wait on it ends now.
	proc.Watch(procio.Watch{
		Read:   func() error { return p.conn.Run(context.Background()) },
		Stderr: func(line string) { log.Debug("codex stderr", "line", line) },
		Broken: func(err error) { log.Warn("codex protocol ended", "err", harness.RedactEnv(err, spec.Secrets)) },
	})

	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var params initializeParams
	params.ClientInfo = clientInfo{Name: "jam", Title: "jam", Version: version.Get().Version}
	var res initializeResult
	err = p.call(hctx, MethodInitialize, params, &res)
	if err == nil {
		err = p.conn.Notify(MethodInitialized, nil)
	}
	if err != nil {
		_ = p.Stop(context.Background())
		return nil, harness.RedactEnv(fmt.Errorf("codex: initialize: %w", err), spec.Secrets)
	}
	p.userAgent = res.UserAgent
	return p, nil
}

// process is one running `codex app-server`.
type process struct {
	spec      harness.LaunchSpec
	approve   harness.Approval
	proc      *procio.Proc
	in        io.WriteCloser
	conn      *jsonrpc.Conn
	userAgent string

	exited <-chan struct{} // closed when the process has exited (proc.Err says why)

	mu      sync.Mutex
	threads map[string]*thread // guarded by mu: opened or resumed here
}

// thread is one thread of the process.
type thread struct {
	model string
	turn  *turn // the running turn, if any
	// ended are the ids of the last turns that are over (at most
	// maxEnded): their late output reaches nobody, even before the next
	// turn's id is known.
	ended []string
}

// maxEnded bounds the ended turn ids a thread keeps.
const maxEnded = 16

func (t *thread) isEnded(id string) bool { return slices.Contains(t.ended, id) }

func (t *thread) end(id string) {
	if len(t.ended) == maxEnded {
		t.ended = t.ended[1:]
	}
	t.ended = append(t.ended, id)
}

// turn is a running turn. thread, updates, ctx and cancel are set at the
// start; cbMu guards over; process.mu guards the rest.
type turn struct {
	thread  string
	id      string // "" until turn/start answers
	updates func(harness.Update)
	// cbMu is held while updates is called; over, set under it before
	// Prompt returns, says no call may follow.
	cbMu sync.Mutex
	over bool
	// ctx ends when the turn is cancelled or over: approvals asked under
	// it see it end.
	ctx    context.Context
	cancel context.CancelFunc

	// titles are the tool items' titles, by item id: an approval that
	// gives no command or reason is titled by its item.
	titles map[string]string
	order  []string // the titled items' ids, in order

	answer   harness.Answer
	messages int // agentMessage items completed
	usage    harness.Usage
	failure  string // an error Codex will not retry
	failed   chan struct{}
	status   string
	reason   string
	done     chan struct{} // closed at turn/completed
}

var _ harness.Process = (*process)(nil)

// Manifest implements harness.Process.
func (p *process) Manifest() harness.Manifest {
	m := Harness{}.Manifest()
	m.Agent = p.userAgent
	return m
}

// Pid implements harness.Process.
func (p *process) Pid() int { return p.proc.Pid() }

// Exited implements harness.Process.
func (p *process) Exited() <-chan struct{} { return p.exited }

// call is a JSON-RPC call that also ends when the process exits.
func (p *process) call(ctx context.Context, method string, params, result any) error {
	return p.closed(p.conn.Call(ctx, method, params, result))
}

// closed turns the end of the stream into the process's exit.
func (p *process) closed(err error) error {
	switch {
	case errors.Is(err, jsonrpc.ErrClosed):
		<-p.exited
	case errors.Is(err, jsonrpc.ErrWrite):
		t := time.NewTimer(stopGrace)
		defer t.Stop()
		select {
		case <-p.exited:
		case <-t.C:
			return err
		}
	default:
		return err
	}
	return fmt.Errorf("%w: codex exited: %v", jam.ErrUnavailable, p.proc.Err())
}

func (p *process) redact(err error) error { return harness.RedactEnv(err, p.spec.Secrets) }

// redactTools hides the tools' header values in err.
func redactTools(err error, tools []harness.MCPServer) error {
	var secrets []string
	for _, t := range tools {
		secrets = append(secrets, t.Secrets()...)
	}
	return harness.RedactEnv(err, secrets)
}

// threadDir checks a thread's directory: absolute, and a directory.
func threadDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%w: codex: thread directory %q is not absolute", jam.ErrInvalid, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%w: codex: thread directory: %v", jam.ErrInvalid, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: codex: thread directory %q is not a directory", jam.ErrInvalid, dir)
	}
	return filepath.Clean(dir), nil
}

// Open implements harness.Process (thread/start, the MCP servers as
// configuration overrides).
func (p *process) Open(ctx context.Context, dir string, tools ...harness.MCPServer) (harness.Thread, error) {
	dir, err := threadDir(dir)
	if err != nil {
		return "", err
	}
	var res threadResult
	if err := p.call(ctx, MethodThreadStart, threadStartParams{Cwd: dir, Model: p.spec.Model, ApprovalPolicy: ApprovalPolicy,
		Sandbox: Sandbox, Config: MCPConfig(tools)}, &res); err != nil {
		return "", redactTools(p.redact(fmt.Errorf("codex: thread/start: %w", err)), tools)
	}
	if res.Thread.ID == "" {
		return "", errors.New("codex: thread/start returned no thread id")
	}
	p.keep(res.Thread.ID, res.Model)
	return harness.Thread(res.Thread.ID), nil
}

// Resume implements harness.Process (thread/resume, the MCP servers as
// configuration overrides): the thread works in dir from now on.
func (p *process) Resume(ctx context.Context, th harness.Thread, dir string, tools ...harness.MCPServer) error {
	dir, err := threadDir(dir)
	if err != nil {
		return err
	}
	var res threadResult
	if err := p.call(ctx, MethodThreadResume, threadResumeParams{ThreadID: string(th), Cwd: dir, Model: p.spec.Model,
		ApprovalPolicy: ApprovalPolicy, Sandbox: Sandbox, ExcludeTurns: true, Config: MCPConfig(tools)}, &res); err != nil {
		return redactTools(p.redact(fmt.Errorf("codex: thread/resume %s: %w", th, err)), tools)
	}
	if res.Thread.ID != "" && res.Thread.ID != string(th) {
		return fmt.Errorf("codex: thread/resume %s answered thread %s", th, res.Thread.ID)
	}
	p.keep(string(th), res.Model)
	return nil
}

func (p *process) keep(id, model string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.threads[id]; ok {
		t.model = model
		return
	}
	p.threads[id] = &thread{model: model}
}

// Prompt implements harness.Process (turn/start, then the turn's
// notifications until turn/completed). When ctx ends, or Interrupt is
// called, the turn is interrupted (turn/interrupt with its id) and Prompt
// waits for turn/completed, at most interruptGrace.
func (p *process) Prompt(ctx context.Context, th harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	id := string(th)
	// tctx ends when ctx does or Interrupt is called.
	tctx, tcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer tcancel()
	defer context.AfterFunc(ctx, tcancel)()
	tu := &turn{thread: id, updates: updates, ctx: tctx, cancel: tcancel, done: make(chan struct{}), failed: make(chan struct{}),
		titles: map[string]string{}}
	p.mu.Lock()
	t, ok := p.threads[id]
	switch {
	case !ok:
		p.mu.Unlock()
		return harness.Outcome{}, fmt.Errorf("%w: codex: thread %s is not open in this process", jam.ErrNotFound, th)
	case t.turn != nil:
		p.mu.Unlock()
		return harness.Outcome{}, fmt.Errorf("%w: codex: thread %s has a turn running", jam.ErrConflict, th)
	}
	t.turn = tu
	model := t.model
	p.mu.Unlock()
	// The turn leaves the thread before Prompt returns: what Codex says
	// about it afterwards reaches nobody.
	defer func() {
		tu.cbMu.Lock()
		tu.over = true
		tu.cbMu.Unlock()
		p.mu.Lock()
		t.turn = nil
		if tu.id != "" {
			t.end(tu.id)
		}
		p.mu.Unlock()
	}()

	pending, err := p.conn.Send(MethodTurnStart, turnStartParams{ThreadID: id,
		Input: []userInput{{Type: "text", Text: in.Text, TextElements: []any{}}}})
	if err != nil {
		return harness.Outcome{}, p.redact(fmt.Errorf("codex: turn/start: %w", p.closed(err)))
	}
	// The answer is awaited past a cancel (for interruptGrace more):
	// without the turn's id the turn cannot be interrupted.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	defer context.AfterFunc(tctx, func() { time.AfterFunc(interruptGrace, wcancel) })()
	var res turnStartResult
	if err := p.closed(pending.Wait(wctx, &res)); err != nil {
		return harness.Outcome{}, p.redact(fmt.Errorf("codex: turn/start: %w", err))
	}
	if res.Turn.ID == "" {
		return harness.Outcome{}, errors.New("codex: turn/start returned no turn id")
	}
	p.mu.Lock()
	tu.id = res.Turn.ID
	p.mu.Unlock()

	var grace <-chan time.Time
	stopping, failed := tctx.Done(), tu.failed
	for {
		select {
		case <-tu.done:
			return p.outcome(tu, model), nil
		case <-p.exited:
			return harness.Outcome{}, p.redact(fmt.Errorf("%w: codex exited during the turn: %v", jam.ErrUnavailable, p.proc.Err()))
		case <-failed:
			// Codex gave up: turn/completed should follow; it is given a
			// grace, after which the turn fails anyway.
			failed = nil
			if grace == nil {
				grace = time.After(interruptGrace)
			}
		case <-stopping:
			stopping = nil
			if err := p.interrupt(tu); err != nil {
				return harness.Outcome{StopReason: harness.StopCancelled}, p.redact(fmt.Errorf("codex: turn/interrupt: %w", err))
			}
			grace = time.After(interruptGrace)
		case <-grace:
			p.mu.Lock()
			failure := tu.failure
			p.mu.Unlock()
			if failure != "" && tctx.Err() == nil {
				return harness.Outcome{StopReason: harness.StopFailed, ProviderReason: failure, Model: model}, nil
			}
			return harness.Outcome{StopReason: harness.StopCancelled}, fmt.Errorf("codex: the turn did not stop after turn/interrupt: %w", context.Cause(tctx))
		}
	}
}

// outcome is how a finished turn ended.
func (p *process) outcome(tu *turn, model string) harness.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := harness.Outcome{ProviderReason: tu.status, Usage: tu.usage, Model: model, Text: tu.answer.Text(), Omitted: tu.answer.Omitted()}
	switch {
	case tu.failure != "":
		out.StopReason, out.ProviderReason = harness.StopFailed, tu.failure
	case tu.status == TurnCompleted:
		out.StopReason = harness.StopCompleted
	case tu.status == TurnInterrupted:
		out.StopReason = harness.StopCancelled
	case tu.status == TurnFailed:
		out.StopReason = harness.StopFailed
		if tu.reason != "" {
			out.ProviderReason = tu.reason
		}
	default:
		out.StopReason = harness.StopOther
	}
	return out
}

// interrupt sends turn/interrupt for a turn whose id is known.
func (p *process) interrupt(tu *turn) error {
	p.mu.Lock()
	params := turnInterruptParams{ThreadID: tu.thread, TurnID: tu.id}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), interruptGrace)
	defer cancel()
	return p.call(ctx, MethodTurnInterrupt, params, nil)
}

// Interrupt implements harness.Process: the running Prompt sends
// turn/interrupt with its turn's id (once turn/start has answered) and
// returns StopCancelled. Nothing happens without a running turn.
func (p *process) Interrupt(_ context.Context, th harness.Thread) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.threads[string(th)]; ok && t.turn != nil {
		t.turn.cancel()
	}
	return nil
}

// Steer implements harness.Process (turn/steer): the input joins the
// thread's running turn, named by the id the adapter kept (Codex refuses a
// steer for another turn); jam.ErrConflict when no turn runs, or its id is
// not known yet.
func (p *process) Steer(ctx context.Context, th harness.Thread, in harness.Input) error {
	p.mu.Lock()
	id := ""
	if t, ok := p.threads[string(th)]; ok && t.turn != nil {
		id = t.turn.id
	}
	p.mu.Unlock()
	if id == "" {
		return fmt.Errorf("%w: codex: no turn of thread %s is running", jam.ErrConflict, th)
	}
	err := p.call(ctx, MethodTurnSteer, turnSteerParams{ThreadID: string(th), ExpectedTurnID: id,
		Input: []userInput{{Type: "text", Text: in.Text, TextElements: []any{}}}}, nil)
	if err != nil {
		return p.redact(fmt.Errorf("codex: turn/steer: %w", err))
	}
	return nil
}

// Stop implements harness.Process: stdin closes, then the group gets
// SIGTERM, then SIGKILL. Safe to call more than once.
func (p *process) Stop(ctx context.Context) error {
	_ = p.in.Close()
	return p.proc.Stop(ctx, stopGrace)
}

// running is the turn a notification is for: the thread's running turn,
// when the notification names it (or names none, or comes before
// turn/start answered and is not of an ended turn). Called under mu.
func (p *process) running(threadID, turnID string) *turn {
	t, ok := p.threads[threadID]
	if !ok || t.turn == nil {
		return nil
	}
	tu := t.turn
	switch {
	case turnID == "" || turnID == tu.id:
		return tu
	case tu.id == "" && !t.isEnded(turnID):
		return tu
	}
	return nil
}

// notify handles a notification, on the reading goroutine, in order.
func (p *process) notify(method string, params json.RawMessage) {
	ev, err := DecodeEvent(method, params)
	if err != nil {
		p.spec.Logger.Warn("undecodable codex notification", "method", method, "err", p.redact(err))
		return
	}
	if ev.Kind == EventIgnored {
		return
	}
	var out []harness.Update
	p.mu.Lock()
	tu := p.running(ev.ThreadID, ev.TurnID)
	if tu != nil {
		out = p.apply(tu, ev)
	}
	p.mu.Unlock()
	if tu == nil || len(out) == 0 || tu.updates == nil {
		return
	}
	// Outside mu, so that the callback may call the process (Interrupt);
	// under the turn's own lock, which Prompt takes before it returns.
	tu.cbMu.Lock()
	defer tu.cbMu.Unlock()
	if tu.over {
		return
	}
	for _, u := range out {
		tu.updates(u)
	}
}

// apply applies a notification to its turn and returns the updates it
// makes. Called under mu.
func (p *process) apply(tu *turn, ev Event) []harness.Update {
	var out []harness.Update
	send := func(u harness.Update) { out = append(out, u) }
	switch ev.Kind {
	case EventText:
		if ev.Text != "" {
			send(harness.Update{Kind: harness.UpdateText, Text: ev.Text})
		}
	case EventThinking:
		if ev.Text != "" {
			send(harness.Update{Kind: harness.UpdateThinking, Text: ev.Text})
		}
	case EventItemStarted:
		if ev.Item.IsTool() {
			if len(tu.titles) < maxTitles {
				if _, ok := tu.titles[ev.Item.ID]; !ok {
					tu.order = append(tu.order, ev.Item.ID)
				}
				tu.titles[ev.Item.ID] = ev.Item.Title
			}
			send(harness.Update{Kind: harness.UpdateToolStart, ToolCallID: ev.Item.ID, Title: ev.Item.Title, ToolKind: ev.Item.ToolKind,
				Status: harness.ToolInProgress})
		}
	case EventItemCompleted:
		switch {
		case ev.Item.Type == ItemAgentMessage:
			if tu.messages > 0 {
				tu.answer.Add("\n\n")
			}
			tu.messages++
			tu.answer.Add(ev.Item.Text)
		case ev.Item.IsTool():
			send(harness.Update{Kind: harness.UpdateToolEnd, ToolCallID: ev.Item.ID, Title: ev.Item.Title, ToolKind: ev.Item.ToolKind,
				Status: ToolStatus(ev.Item.Status)})
		}
	case EventPlan:
		send(harness.Update{Kind: harness.UpdatePlan, Plan: ev.Plan})
	case EventUsage:
		// Each update reports the model's last response (last); a turn
		// with a tool call has several. The turn's usage is their sum,
		// not the thread's running total.
		tu.usage.InputTokens += ev.Last.InputTokens
		tu.usage.OutputTokens += ev.Last.OutputTokens
		tu.usage.CachedTokens += ev.Last.CachedTokens
		tu.usage.ReasoningTokens += ev.Last.ReasoningTokens
		u := tu.usage
		send(harness.Update{Kind: harness.UpdateUsage, Usage: &u})
	case EventError:
		if !ev.WillRetry && tu.failure == "" {
			tu.failure = ev.ErrorMessage
			if tu.failure == "" {
				tu.failure = "codex reported an error"
			}
			close(tu.failed)
		}
	case EventTurnCompleted:
		if tu.id == "" {
			tu.id = ev.TurnID
		}
		select {
		case <-tu.done:
		default:
			tu.status, tu.reason = ev.Status, ev.ErrorMessage
			close(tu.done)
		}
	}
	return out
}

// handle answers a server request: approvals through the callback, every
// other request with an error at once.
func (p *process) handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case RequestCommandApproval, RequestFileApproval, RequestMCPElicitation:
	default:
		p.spec.Logger.Debug("codex request refused", "method", method)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "jam does not answer " + method}
	}
	a, err := DecodeApproval(method, params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	answer := func(allow bool) any {
		switch {
		case a.Elicitation && allow:
			return elicitationResult{Action: ElicitAccept, Content: map[string]any{}}
		case a.Elicitation:
			return elicitationResult{Action: ElicitDecline}
		case allow:
			return approvalResult{Decision: DecisionAccept}
		}
		return approvalResult{Decision: DecisionDecline}
	}
	if a.Elicitation && !a.MCPToolCall {
		// A server's own question: jam has no one to ask.
		return answer(false), nil
	}
	p.mu.Lock()
	tu := p.running(a.ThreadID, a.TurnID)
	var tctx context.Context
	if tu != nil {
		tctx = tu.ctx
		if a.Title == "" {
			a.Title = tu.titles[a.ItemID]
		}
		if a.ItemID == "" && a.MCPToolCall {
			a.ItemID = tu.itemTitled(a.Title)
		}
	}
	p.mu.Unlock()
	if tu == nil || tctx.Err() != nil {
		// No turn of jam's asks (it is over, or cancelled): refuse.
		return answer(false), nil
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(tctx, cancel)
	defer stop()
	d := p.approve(actx, harness.ApprovalRequest{Thread: harness.Thread(a.ThreadID), ToolCallID: a.ItemID, Title: a.Title, ToolKind: a.ToolKind})
	return answer(d == harness.AllowOnce && actx.Err() == nil), nil
}

// itemTitled is the id of the turn's last tool item titled title, or
// "": an MCP tool call's approval names no item, but its item (titled
// SERVER.TOOL) has started. Called under process.mu.
func (tu *turn) itemTitled(title string) string {
	id := ""
	for _, it := range tu.order {
		if tu.titles[it] == title {
			id = it
		}
	}
	return id
}
