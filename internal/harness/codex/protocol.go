package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/harness"
)

// Client methods (jam to Codex).
const (
	MethodInitialize    = "initialize"
	MethodInitialized   = "initialized"
	MethodThreadStart   = "thread/start"
	MethodThreadResume  = "thread/resume"
	MethodTurnStart     = "turn/start"
	MethodTurnInterrupt = "turn/interrupt"
	MethodTurnSteer     = "turn/steer"
)

// Server notifications the adapter reads; every other one is ignored.
const (
	NotifyTurnStarted      = "turn/started"
	NotifyTurnCompleted    = "turn/completed"
	NotifyItemStarted      = "item/started"
	NotifyItemCompleted    = "item/completed"
	NotifyAgentDelta       = "item/agentMessage/delta"
	NotifyReasoningDelta   = "item/reasoning/textDelta"
	NotifyReasoningSummary = "item/reasoning/summaryTextDelta"
	NotifyPlanUpdated      = "turn/plan/updated"
	NotifyTokenUsage       = "thread/tokenUsage/updated"
	NotifyError            = "error"
)

// Server requests the adapter answers through the Approval callback; every
// other one gets a JSON-RPC error at once.
const (
	RequestCommandApproval = "item/commandExecution/requestApproval"
	RequestFileApproval    = "item/fileChange/requestApproval"
	// RequestMCPElicitation is an MCP server's elicitation, which Codex
	// also uses to ask before an MCP tool call (its _meta says
	// codex_approval_kind mcp_tool_call); only those are approvals, and
	// every other elicitation is declined.
	RequestMCPElicitation = "mcpServer/elicitation/request"
)

// ApprovalKindMCPToolCall is the codex_approval_kind of an elicitation
// that asks before an MCP tool call.
const ApprovalKindMCPToolCall = "mcp_tool_call"

// Elicitation actions.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
)

// elicitationResult answers an elicitation.
type elicitationResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// Turn statuses (turn/completed's turn.status).
const (
	TurnCompleted   = "completed"
	TurnInterrupted = "interrupted"
	TurnFailed      = "failed"
)

// Approval decisions.
const (
	DecisionAccept  = "accept"
	DecisionDecline = "decline"
)

// Item types the adapter maps.
const (
	ItemAgentMessage     = "agentMessage"
	ItemCommandExecution = "commandExecution"
	ItemFileChange       = "fileChange"
	ItemMCPToolCall      = "mcpToolCall"
	ItemWebSearch        = "webSearch"
)

// clientInfo is initialize's clientInfo.
type clientInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

type initializeParams struct {
	ClientInfo   clientInfo `json:"clientInfo"`
	Capabilities struct {
		ExperimentalAPI    bool `json:"experimentalApi"`
		RequestAttestation bool `json:"requestAttestation"`
	} `json:"capabilities"`
}

type initializeResult struct {
	UserAgent string `json:"userAgent"`
}

type threadStartParams struct {
	Cwd            string `json:"cwd"`
	Model          string `json:"model,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy"`
	Sandbox        string `json:"sandbox"`
	// Config overrides the thread's configuration, key by dotted key as
	// -c spells it (MCPConfig).
	Config map[string]any `json:"config,omitempty"`
}

// mcpServerConfig is a streamable HTTP MCP server in Codex's
// configuration (mcp_servers.NAME).
type mcpServerConfig struct {
	URL         string            `json:"url"`
	HTTPHeaders map[string]string `json:"http_headers,omitempty"`
}

// MCPConfig is the configuration overrides that give a thread servers:
// mcp_servers.NAME with url and http_headers; nil for none.
func MCPConfig(servers []harness.MCPServer) map[string]any {
	if len(servers) == 0 {
		return nil
	}
	m := make(map[string]any, len(servers))
	for _, s := range servers {
		m["mcp_servers."+s.Name] = mcpServerConfig{URL: s.URL, HTTPHeaders: s.Headers}
	}
	return m
}

type threadResumeParams struct {
	ThreadID       string `json:"threadId"`
	Cwd            string `json:"cwd"`
	Model          string `json:"model,omitempty"`
	ApprovalPolicy string `json:"approvalPolicy"`
	Sandbox        string `json:"sandbox"`
	// ExcludeTurns keeps the answer small: a long thread's whole history
	// would otherwise come back on one line.
	ExcludeTurns bool `json:"excludeTurns"`
	// Config is as thread/start's.
	Config map[string]any `json:"config,omitempty"`
}

// threadResult is the answer to thread/start and thread/resume.
type threadResult struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	Model string `json:"model"`
}

type userInput struct {
	Type         string `json:"type"`
	Text         string `json:"text"`
	TextElements []any  `json:"text_elements"`
}

type turnStartParams struct {
	ThreadID string      `json:"threadId"`
	Input    []userInput `json:"input"`
}

type turnStartResult struct {
	Turn struct {
		ID string `json:"id"`
	} `json:"turn"`
}

type turnInterruptParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// turnSteerParams adds input to the running turn, which must be
// ExpectedTurnID.
type turnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	Input          []userInput `json:"input"`
	ExpectedTurnID string      `json:"expectedTurnId"`
}

type approvalResult struct {
	Decision string `json:"decision"`
}

// EventKind is the kind of a decoded notification.
type EventKind int

// Event kinds.
const (
	EventIgnored EventKind = iota
	EventTurnStarted
	EventTurnCompleted
	EventItemStarted
	EventItemCompleted
	EventText
	EventThinking
	EventPlan
	EventUsage
	EventError
)

// Item is a thread item as item/started and item/completed carry it: the
// fields the adapter reads.
type Item struct {
	Type string
	ID   string
	// Text is an agentMessage's whole text.
	Text string
	// Title says what a tool item does (its command, the files it
	// changes, its MCP tool, its query); ToolKind is its kind in ACP's
	// vocabulary; Status is Codex's own (inProgress, completed, failed,
	// declined).
	Title, ToolKind, Status string
}

// IsTool says whether the item is a tool call jam reports.
func (it Item) IsTool() bool { return it.ToolKind != "" }

// Event is a decoded notification from the app-server.
type Event struct {
	Kind             EventKind
	ThreadID, TurnID string
	// Text is a delta (EventText, EventThinking).
	Text string
	Item Item
	// Status and ErrorMessage end a turn (EventTurnCompleted); an
	// EventError has ErrorMessage and WillRetry.
	Status       string
	ErrorMessage string
	WillRetry    bool
	Plan         []harness.PlanEntry
	// Last is the usage of the model's last response (EventUsage); Total
	// is the thread's running total.
	Last, Total harness.Usage
}

type wireItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Text    string `json:"text"`
	Command string `json:"command"`
	Status  string `json:"status"`
	Changes []struct {
		Path string `json:"path"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Query  string `json:"query"`
}

type wireBreakdown struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

func (b *wireBreakdown) usage() (harness.Usage, error) {
	if b == nil {
		return harness.Usage{}, errors.New("token usage without its breakdown")
	}
	if b.InputTokens < 0 || b.CachedInputTokens < 0 || b.OutputTokens < 0 || b.ReasoningOutputTokens < 0 {
		return harness.Usage{}, errors.New("negative token count")
	}
	if b.CachedInputTokens > b.InputTokens {
		return harness.Usage{}, errors.New("more cached input tokens than input tokens")
	}
	// Codex counts cached input inside inputTokens (OpenAI's way); jam's
	// InputTokens is the input not read from cache, so a price table
	// charges each token once.
	return harness.Usage{InputTokens: b.InputTokens - b.CachedInputTokens, CachedTokens: b.CachedInputTokens, OutputTokens: b.OutputTokens,
		ReasoningTokens: b.ReasoningOutputTokens}, nil
}

type wireTurnError struct {
	Message           string `json:"message"`
	AdditionalDetails string `json:"additionalDetails"`
}

func (e *wireTurnError) text() string {
	if e == nil {
		return ""
	}
	if e.AdditionalDetails != "" && e.AdditionalDetails != e.Message {
		return strings.TrimSpace(e.Message + ": " + e.AdditionalDetails)
	}
	return e.Message
}

// wireEvent holds every notification field the adapter reads.
type wireEvent struct {
	ThreadID string    `json:"threadId"`
	TurnID   string    `json:"turnId"`
	Delta    string    `json:"delta"`
	Item     *wireItem `json:"item"`
	Turn     *struct {
		ID     string         `json:"id"`
		Status string         `json:"status"`
		Error  *wireTurnError `json:"error"`
	} `json:"turn"`
	Plan []struct {
		Step   string `json:"step"`
		Status string `json:"status"`
	} `json:"plan"`
	TokenUsage *struct {
		Last  *wireBreakdown `json:"last"`
		Total *wireBreakdown `json:"total"`
	} `json:"tokenUsage"`
	Error     *wireTurnError `json:"error"`
	WillRetry bool           `json:"willRetry"`
}

// DecodeEvent decodes a notification's params. Methods the adapter does
// not read are EventIgnored without looking at their params; unknown
// fields are ignored. A notification the adapter reads whose params do not
// decode, or lack what the method needs (a thread id, a turn, an item), is
// an error.
func DecodeEvent(method string, params json.RawMessage) (Event, error) {
	kind := EventIgnored
	switch method {
	case NotifyTurnStarted:
		kind = EventTurnStarted
	case NotifyTurnCompleted:
		kind = EventTurnCompleted
	case NotifyItemStarted:
		kind = EventItemStarted
	case NotifyItemCompleted:
		kind = EventItemCompleted
	case NotifyAgentDelta:
		kind = EventText
	case NotifyReasoningDelta, NotifyReasoningSummary:
		kind = EventThinking
	case NotifyPlanUpdated:
		kind = EventPlan
	case NotifyTokenUsage:
		kind = EventUsage
	case NotifyError:
		kind = EventError
	default:
		return Event{}, nil
	}
	var w wireEvent
	if err := json.Unmarshal(params, &w); err != nil {
		return Event{}, fmt.Errorf("codex: %s: %w", method, err)
	}
	ev := Event{Kind: kind, ThreadID: w.ThreadID, TurnID: w.TurnID}
	if ev.ThreadID == "" {
		return Event{}, fmt.Errorf("codex: %s without a thread id", method)
	}
	switch kind {
	case EventTurnStarted, EventTurnCompleted:
		if w.Turn == nil || w.Turn.ID == "" {
			return Event{}, fmt.Errorf("codex: %s without a turn", method)
		}
		ev.TurnID, ev.Status, ev.ErrorMessage = w.Turn.ID, w.Turn.Status, w.Turn.Error.text()
	case EventItemStarted, EventItemCompleted:
		if w.Item == nil || w.Item.Type == "" {
			return Event{}, fmt.Errorf("codex: %s without an item", method)
		}
		ev.Item = item(*w.Item)
	case EventText, EventThinking:
		ev.Text = w.Delta
	case EventPlan:
		ev.Plan = make([]harness.PlanEntry, 0, len(w.Plan))
		for _, s := range w.Plan {
			ev.Plan = append(ev.Plan, harness.PlanEntry{Content: s.Step, Status: planStatus(s.Status)})
		}
	case EventUsage:
		if w.TokenUsage == nil {
			return Event{}, fmt.Errorf("codex: %s without tokenUsage", method)
		}
		var err error
		if ev.Last, err = w.TokenUsage.Last.usage(); err == nil {
			ev.Total, err = w.TokenUsage.Total.usage()
		}
		if err != nil {
			return Event{}, fmt.Errorf("codex: %s: %w", method, err)
		}
	case EventError:
		if w.Error == nil {
			return Event{}, fmt.Errorf("codex: %s without its error", method)
		}
		ev.ErrorMessage, ev.WillRetry = w.Error.text(), w.WillRetry
	}
	return ev, nil
}

// item maps a thread item; tool items get a kind and a title.
func item(w wireItem) Item {
	it := Item{Type: w.Type, ID: w.ID, Text: w.Text, Status: w.Status}
	switch w.Type {
	case ItemCommandExecution:
		it.ToolKind, it.Title = "execute", w.Command
	case ItemFileChange:
		paths := make([]string, 0, len(w.Changes))
		for _, c := range w.Changes {
			paths = append(paths, c.Path)
		}
		it.ToolKind, it.Title = "edit", strings.TrimSpace("Edit "+strings.Join(paths, ", "))
	case ItemMCPToolCall:
		it.ToolKind, it.Title = "other", strings.Trim(w.Server+"."+w.Tool, ".")
	case ItemWebSearch:
		it.ToolKind, it.Title = "fetch", strings.TrimSpace("Search the web: "+w.Query)
	}
	return it
}

// ToolStatus maps an item's status onto the harness's: completed, failed
// (failed, and declined: the person refused it), in_progress otherwise.
func ToolStatus(s string) string {
	switch s {
	case "completed":
		return harness.ToolCompleted
	case "failed", "declined":
		return harness.ToolFailed
	}
	return harness.ToolInProgress
}

// planStatus maps a plan step's status.
func planStatus(s string) string {
	if s == "inProgress" {
		return harness.ToolInProgress
	}
	return s
}

// Approval is a decoded approval request: the fields the neutral request
// needs.
type Approval struct {
	ThreadID, TurnID, ItemID string
	// Title is the command, else the reason Codex gives; for an MCP tool
	// call, SERVER.TOOL (as the tool item's title says).
	Title    string
	ToolKind string
	// Elicitation says the request is an elicitation (answered with an
	// action, not a decision); MCPToolCall that it asks before an MCP
	// tool call, the only elicitation that is an approval.
	Elicitation, MCPToolCall bool
}

// DecodeApproval decodes the params of an approval request (method is
// RequestCommandApproval or RequestFileApproval); one without a thread id
// is an error.
func DecodeApproval(method string, params json.RawMessage) (Approval, error) {
	var w struct {
		ThreadID   string `json:"threadId"`
		TurnID     string `json:"turnId"`
		ItemID     string `json:"itemId"`
		Command    string `json:"command"`
		Reason     string `json:"reason"`
		ServerName string `json:"serverName"`
		Meta       struct {
			Kind     string `json:"codex_approval_kind"`
			ToolName string `json:"tool_name"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(params, &w); err != nil {
		return Approval{}, fmt.Errorf("codex: %s: %w", method, err)
	}
	if w.ThreadID == "" {
		return Approval{}, fmt.Errorf("codex: %s without a thread id", method)
	}
	a := Approval{ThreadID: w.ThreadID, TurnID: w.TurnID, ItemID: w.ItemID, Title: w.Command, ToolKind: "execute"}
	switch method {
	case RequestFileApproval:
		a.ToolKind = "edit"
	case RequestMCPElicitation:
		a.Elicitation, a.MCPToolCall = true, w.Meta.Kind == ApprovalKindMCPToolCall
		a.Title, a.ToolKind = w.ServerName+"."+w.Meta.ToolName, "other"
	}
	if a.Title == "" {
		a.Title = w.Reason
	}
	return a, nil
}
