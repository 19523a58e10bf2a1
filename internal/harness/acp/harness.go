package acp

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
)

// Name is the ACP harness's kind.
const Name = "acp"

// Harness is the ACP harness: harness.Harness over Start and Agent. The
// zero Harness is the plain kind acp, which runs its command as given;
// a named kind (Copilot, OpenCode) is one ACP agent's CLI, whose Args,
// the CLI's own way of speaking ACP, go after the command.
type Harness struct {
	// Kind is the harness's name; "" is Name.
	Kind string
	// Args are appended to every command.
	Args []string
	// ModelFlag, when set, is the CLI's own option that puts it on a
	// model (copilot --model): a configured model goes on the command
	// line after Args instead of into each session's configuration, for
	// an agent that offers no model selection over ACP.
	ModelFlag string
}

// The ACP agents jam knows by name: the command names their executable
// (and the person's own options), and these arguments make it speak ACP.
var (
	// Copilot is `copilot --acp`, kept from updating itself.
	// Its ACP sessions offer no model selection (with the person's own
	// provider key), so a model goes on its command line.
	Copilot = Harness{Kind: "copilot", Args: []string{"--acp", "--no-auto-update"}, ModelFlag: "--model"}
	// OpenCode is `opencode acp`.
	OpenCode = Harness{Kind: "opencode", Args: []string{"acp"}}
)

var _ harness.Harness = Harness{}

// Name implements harness.Harness.
func (h Harness) Name() string {
	if h.Kind == "" {
		return Name
	}
	return h.Kind
}

// Manifest implements harness.Harness: many sessions per process,
// cancel (session/cancel), approvals (session/request_permission), no
// steer (ACP cannot add input to a running prompt, so steering messages
// queue for the next turn); resume in process where the agent loads
// sessions, and MCP servers where it connects to them over HTTP, which
// its handshake says (Agent.Manifest).
func (h Harness) Manifest() harness.Manifest {
	return harness.Manifest{Harness: h.Name(), Version: harness.ManifestVersion, Sessions: harness.SessionsMany,
		Resume: harness.ResumeInProcess, Interrupt: true, Approvals: true, MCPServers: true}
}

// Launch implements harness.Harness: it starts the agent and performs the
// handshake; the process's errors hide spec.Secrets.
func (h Harness) Launch(ctx context.Context, spec harness.LaunchSpec) (harness.Process, error) {
	p := &process{prompts: map[string]func(harness.Update){}, secrets: spec.Secrets, kind: h.Name()}
	argv := append(slices.Clip(spec.Argv), h.Args...)
	model := spec.Model
	if h.ModelFlag != "" && model != "" {
		argv, model = append(argv, h.ModelFlag, model), ""
	}
	a, err := Start(ctx, Config{Command: argv, Dir: spec.Dir, Env: spec.Env, Executor: spec.Executor,
		Writable: spec.Writable, ReadOnly: spec.ReadOnly, NoNetwork: spec.NoNetwork, Model: model,
		Approve: spec.Approver(), OnUpdate: p.route, Logger: spec.Logger, InitTimeout: spec.HandshakeTimeout})
	if err != nil {
		return nil, harness.RedactEnv(err, spec.Secrets)
	}
	p.Agent = a
	return p, nil
}

// process adapts an Agent to harness.Process. The agent reports every
// session/update to route, which passes it to the Prompt running on that
// session, if any.
type process struct {
	*Agent
	// secrets are hidden in the errors the process returns.
	secrets []string
	// kind is the harness's name, which the manifest says.
	kind string

	mu      sync.Mutex
	prompts map[string]func(harness.Update) // guarded by mu: by session
	// costs is each session's cumulative cost in US dollars as its last
	// usage_update said, and bases what it was when the running prompt
	// began; both guarded by mu.
	costs, bases map[string]float64
}

// startPrompt routes the session's updates to updates until endPrompt,
// and marks the session's cost so far as the turn's base.
func (p *process) startPrompt(id string, updates func(harness.Update)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prompts[id] = updates
	if p.bases == nil {
		p.bases = map[string]float64{}
	}
	p.bases[id] = p.costs[id]
}

// endPrompt stops routing the session's updates.
func (p *process) endPrompt(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.prompts, id)
}

// Manifest implements harness.Process: the agent's, under the harness's
// name.
func (p *process) Manifest() harness.Manifest {
	m := p.Agent.Manifest()
	m.Harness = p.kind
	return m
}

// Open implements harness.Process (session/new, with the MCP servers
// when the agent takes them over HTTP).
func (p *process) Open(ctx context.Context, dir string, tools ...harness.MCPServer) (harness.Thread, error) {
	id, err := p.Agent.NewSession(ctx, dir, tools...)
	return harness.Thread(id), harness.RedactEnv(err, withTools(p.secrets, tools))
}

// Resume implements harness.Process (session/load, with the MCP servers
// when the agent takes them over HTTP).
func (p *process) Resume(ctx context.Context, thread harness.Thread, dir string, tools ...harness.MCPServer) error {
	return harness.RedactEnv(p.Agent.LoadSession(ctx, string(thread), dir, tools...), withTools(p.secrets, tools))
}

// withTools is secrets and the tools' header values.
func withTools(secrets []string, tools []harness.MCPServer) []string {
	if len(tools) == 0 {
		return secrets
	}
	out := slices.Clone(secrets)
	for _, t := range tools {
		out = append(out, t.Secrets()...)
	}
	return out
}

// Prompt implements harness.Process (session/prompt).
func (p *process) Prompt(ctx context.Context, thread harness.Thread, in harness.Input, updates func(harness.Update)) (harness.Outcome, error) {
	id := string(thread)
	if updates != nil {
		p.startPrompt(id, updates)
		// Updates reach the caller only while Prompt runs: an update that
		// arrives after is for nobody.
		defer p.endPrompt(id)
	}
	res, err := p.Agent.Prompt(ctx, id, in.Text)
	if err != nil {
		return harness.Outcome{}, harness.RedactEnv(err, p.secrets)
	}
	return harness.Outcome{StopReason: stopReason(res.StopReason), ProviderReason: res.StopReason, Usage: res.Usage,
		Text: res.Text, Omitted: res.Omitted}, nil
}

// stopReason maps ACP's stop reasons.
func stopReason(s string) harness.StopReason {
	switch s {
	case StopEndTurn:
		return harness.StopCompleted
	case StopCancelled:
		return harness.StopCancelled
	case StopRefusal:
		return harness.StopRefused
	case StopMaxTokens:
		return harness.StopMaxTokens
	case StopMaxTurnRequests:
		return harness.StopMaxTurns
	}
	return harness.StopOther
}

// Interrupt implements harness.Process (session/cancel).
func (p *process) Interrupt(_ context.Context, thread harness.Thread) error {
	return p.Agent.Cancel(string(thread))
}

// Steer implements harness.Process: ACP has no way to add input to a
// running prompt (the manifest says so), so the runtime never calls it.
func (p *process) Steer(context.Context, harness.Thread, harness.Input) error {
	return fmt.Errorf("%w: the ACP harness cannot steer a running turn", jam.ErrNotImplemented)
}

// route passes an update to its session's running Prompt. It runs on the
// agent's reading goroutine, in order; the callback does not block.
func (p *process) route(u Update) {
	if u.SessionUpdate.SessionUpdate == UpdateUsage {
		p.routeUsage(u)
		return
	}
	hu, ok := neutralUpdate(u)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.prompts[u.SessionID]; f != nil {
		f(hu)
	}
}

// routeUsage records a usage_update's cumulative cost and passes the
// running prompt, if any, its turn's cost so far.
func (p *process) routeUsage(u Update) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.prompts[u.SessionID]
	if f != nil {
		if hu, ok := turnUsageUpdate(u.SessionUpdate, p.bases[u.SessionID]); ok {
			f(hu)
		}
	}
	if c := u.SessionUpdate.Cost; c != nil && strings.EqualFold(c.Currency, "USD") && validCost(c.Amount) {
		if p.costs == nil {
			p.costs = map[string]float64{}
		}
		p.costs[u.SessionID] = c.Amount
	}
}

// turnUsageUpdate maps a usage_update (OpenCode sends them) to the turn's
// usage so far: the growth of the session's cumulative cost in US dollars
// since the turn began (base). Its used and size are the context
// window's, not the turn's tokens (those come with the prompt's result);
// a cost in another currency, or none, or no growth, is not reported.
func turnUsageUpdate(su SessionUpdate, base float64) (harness.Update, bool) {
	c := su.Cost
	if su.SessionUpdate != UpdateUsage || c == nil || !strings.EqualFold(c.Currency, "USD") || !validCost(c.Amount) || c.Amount-base <= 0 {
		return harness.Update{}, false
	}
	return harness.Update{Kind: harness.UpdateUsage, Usage: &harness.Usage{CostUSD: c.Amount - base}}, true
}

// validCost reports whether an amount is a finite, non-negative cost.
func validCost(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// neutralUpdate maps an ACP session/update to the harness's form; false
// for updates that are not a turn's output (a replayed user message, kinds
// jam does not read; usage_update, which routeUsage maps). A tool_call_update with a final status (completed,
// failed) ends the tool call.
func neutralUpdate(u Update) (harness.Update, bool) {
	su := u.SessionUpdate
	switch su.SessionUpdate {
	case UpdateAgentMessageChunk, UpdateAgentThoughtChunk:
		if su.Content == nil || su.Content.Type != "text" || su.Content.Text == "" {
			return harness.Update{}, false
		}
		kind := harness.UpdateText
		if su.SessionUpdate == UpdateAgentThoughtChunk {
			kind = harness.UpdateThinking
		}
		return harness.Update{Kind: kind, Text: su.Content.Text}, true
	case UpdateToolCall, UpdateToolCallUpdate:
		kind := harness.UpdateToolStart
		if su.SessionUpdate == UpdateToolCallUpdate {
			kind = harness.UpdateToolUpdate
			if su.Status == harness.ToolCompleted || su.Status == harness.ToolFailed {
				kind = harness.UpdateToolEnd
			}
		}
		return harness.Update{Kind: kind, ToolCallID: su.ToolCallID, Title: su.Title, ToolKind: su.Kind, Status: su.Status}, true
	case UpdatePlan:
		plan := make([]harness.PlanEntry, 0, len(su.Entries))
		for _, e := range su.Entries {
			plan = append(plan, harness.PlanEntry{Content: e.Content, Priority: e.Priority, Status: e.Status})
		}
		return harness.Update{Kind: harness.UpdatePlan, Plan: plan}, true
	}
	return harness.Update{}, false
}
