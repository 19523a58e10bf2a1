package acp

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/jamhq/jam/internal/harness"
)

// ProtocolVersion is the ACP version spoken.
const ProtocolVersion = 1

// Method names of the Agent Client Protocol.
const (
	MethodInitialize        = "initialize"
	MethodSessionNew        = "session/new"
	MethodSessionLoad       = "session/load"
	MethodSessionPrompt     = "session/prompt"
	MethodSessionCancel     = "session/cancel"
	MethodSessionUpdate     = "session/update"
	MethodRequestPermission = "session/request_permission"
	MethodReadTextFile      = "fs/read_text_file"
	MethodWriteTextFile     = "fs/write_text_file"

	// MethodSessionSetConfigOption sets a session configuration option.
	MethodSessionSetConfigOption = "session/set_config_option"
	// MethodSessionSetModel is the unstable model selection of agents
	// that predate configuration options.
	MethodSessionSetModel = "session/set_model"
)

// Stop reasons of session/prompt.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// Permission option kinds.
const (
	AllowOnce    = "allow_once"
	AllowAlways  = "allow_always"
	RejectOnce   = "reject_once"
	RejectAlways = "reject_always"
)

// InitializeParams is the client's side of the handshake.
type InitializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
}

// ClientCapabilities says what the client serves.
type ClientCapabilities struct {
	FS       FSCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

// FSCapabilities says which file methods the client serves.
type FSCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// Implementation names a client or an agent.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"` // required by the schema
	Title   string `json:"title,omitempty"`
}

// InitializeResult is the agent's side of the handshake.
type InitializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []json.RawMessage `json:"authMethods,omitempty"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
}

// AgentCapabilities says what the agent supports.
type AgentCapabilities struct {
	LoadSession        bool               `json:"loadSession"`
	PromptCapabilities PromptCapabilities `json:"promptCapabilities"`
	MCPCapabilities    MCPCapabilities    `json:"mcpCapabilities"`
}

// MCPCapabilities says which MCP transports, beyond stdio, the agent
// connects to.
type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// MCPServer is an MCP server a session is given: ACP's McpServerHttp
// (type "http", streamable HTTP).
type MCPServer struct {
	Type    string       `json:"type"`
	Name    string       `json:"name"`
	URL     string       `json:"url"`
	Headers []HTTPHeader `json:"headers"`
}

// HTTPHeader is one header of an MCP server's requests.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MCPServerHTTP is the type of an MCP server reached over streamable
// HTTP.
const MCPServerHTTP = "http"

// MCPServers encodes the seam's MCP servers for session/new and
// session/load; never nil (the schema requires the list), headers sorted
// by name.
func MCPServers(tools []harness.MCPServer) []MCPServer {
	out := make([]MCPServer, 0, len(tools))
	for _, t := range tools {
		hs := make([]HTTPHeader, 0, len(t.Headers))
		for _, name := range slices.Sorted(maps.Keys(t.Headers)) {
			hs = append(hs, HTTPHeader{Name: name, Value: t.Headers[name]})
		}
		out = append(out, MCPServer{Type: MCPServerHTTP, Name: t.Name, URL: t.URL, Headers: hs})
	}
	return out
}

// PromptCapabilities says which content a prompt may carry.
type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

// NewSessionParams opens a session in a working directory.
type NewSessionParams struct {
	Cwd        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

// NewSessionResult names the new session.
type NewSessionResult struct {
	SessionID string `json:"sessionId"`
	SessionSetup
}

// LoadSessionResult is what a resumed session offers.
type LoadSessionResult struct {
	SessionSetup
}

// LoadSessionParams resumes a session.
type LoadSessionParams struct {
	SessionID  string      `json:"sessionId"`
	Cwd        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

// ContentBlock is one piece of prompt or message content.
type ContentBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// PromptParams is one turn's input.
type PromptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

// PromptResult ends a turn. Usage is reported by some agents only.
type PromptResult struct {
	StopReason string       `json:"stopReason"`
	Usage      *PromptUsage `json:"usage,omitempty"`
}

// PromptUsage is the tokens a turn used, as an agent reports them.
type PromptUsage struct {
	TotalTokens       int64 `json:"totalTokens,omitempty"`
	InputTokens       int64 `json:"inputTokens,omitempty"`
	OutputTokens      int64 `json:"outputTokens,omitempty"`
	ThoughtTokens     int64 `json:"thoughtTokens,omitempty"`
	CachedReadTokens  int64 `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens int64 `json:"cachedWriteTokens,omitempty"`
}

// Cost is an amount of money; usage_update carries the session's
// cumulative cost.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// CancelParams cancels a session's running prompt.
type CancelParams struct {
	SessionID string `json:"sessionId"`
}

// SessionNotification carries one session/update.
type SessionNotification struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

// SessionUpdate is the part of an update jam reads; the raw update is
// kept alongside.
type SessionUpdate struct {
	SessionUpdate string        `json:"sessionUpdate"`
	Content       *ContentBlock `json:"content,omitempty"`
	ToolCallID    string        `json:"toolCallId,omitempty"`
	Title         string        `json:"title,omitempty"`
	Kind          string        `json:"kind,omitempty"`
	Status        string        `json:"status,omitempty"`
	Entries       []PlanEntry   `json:"entries,omitempty"`
	// Used and Size (context tokens) and Cost come with usage_update.
	Used int64 `json:"used,omitempty"`
	Size int64 `json:"size,omitempty"`
	Cost *Cost `json:"cost,omitempty"`
}

// DecodeSessionUpdate reads an update. Its content is a content block in
// message chunks but a list of tool call contents in tool_call and
// tool_call_update; only the block form is kept, and a list leaves
// Content nil rather than failing the whole update.
func DecodeSessionUpdate(raw json.RawMessage) (SessionUpdate, error) {
	var w struct {
		SessionUpdate
		Content json.RawMessage `json:"content,omitempty"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return SessionUpdate{}, err
	}
	u := w.SessionUpdate
	if c := bytes.TrimSpace(w.Content); len(c) > 0 && c[0] == '{' {
		if err := json.Unmarshal(c, &u.Content); err != nil {
			return SessionUpdate{}, err
		}
	}
	return u, nil
}

// PlanEntry is one step of a plan update.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// Update kinds jam reads.
const (
	UpdateAgentMessageChunk = "agent_message_chunk"
	UpdateAgentThoughtChunk = "agent_thought_chunk"
	UpdateUserMessageChunk  = "user_message_chunk"
	UpdateToolCall          = "tool_call"
	UpdateToolCallUpdate    = "tool_call_update"
	UpdatePlan              = "plan"
	UpdateUsage             = "usage_update"
)

// RequestPermissionParams asks the client to allow a tool call.
type RequestPermissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  json.RawMessage    `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// RequestPermissionResult answers a permission request.
type RequestPermissionResult struct {
	Outcome PermissionOutcome `json:"outcome"`
}

// PermissionOutcome is "selected" with an option id, or "cancelled".
type PermissionOutcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

// ReadTextFileParams reads a file of the session's working directory.
type ReadTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      *int   `json:"line,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// ReadTextFileResult is the file's content.
type ReadTextFileResult struct {
	Content string `json:"content"`
}

// WriteTextFileParams writes a file of the session's working directory.
type WriteTextFileParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}
