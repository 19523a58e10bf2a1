package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/harness"
)

// MaxLine bounds one line of the CLI's output; a longer one is a protocol
// error.
const MaxLine = 8 << 20

// Message types and subtypes jam reads.
const (
	typeSystem          = "system"
	typeStreamEvent     = "stream_event"
	typeAssistant       = "assistant"
	typeUser            = "user"
	typeResult          = "result"
	typeControlRequest  = "control_request"
	typeControlResponse = "control_response"
	typeControlCancel   = "control_cancel_request"

	subtypeInit                 = "init"
	subtypeSuccess              = "success"
	subtypeError                = "error"
	subtypeErrorMaxTurns        = "error_max_turns"
	subtypeErrorDuringExecution = "error_during_execution"
	subtypeCanUseTool           = "can_use_tool"
	subtypeInterrupt            = "interrupt"
	subtypeInitialize           = "initialize"
	subtypeGetUsage             = "get_usage"
)

// ProtocolError is a line the CLI wrote that is not its protocol: not a
// JSON object, without a type, a known message whose fields have the wrong
// types, or longer than MaxLine.
type ProtocolError struct {
	Line   string // the line's start
	Reason string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("claude: protocol error: %s: %q", e.Reason, e.Line)
}

// message is one line of the CLI's output, as far as jam reads it.
// Unknown types and fields are kept out: a newer CLI adds them.
type message struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// ParentToolUseID is set on the output of a sub-agent.
	ParentToolUseID *string `json:"parent_tool_use_id"`

	// system init
	SessionID         string `json:"session_id"`
	Model             string `json:"model"`
	ClaudeCodeVersion string `json:"claude_code_version"`

	// stream_event
	Event *streamEvent `json:"event"`

	// assistant, user
	Message *apiMessage `json:"message"`

	// result
	IsError        bool                  `json:"is_error"`
	Result         string                `json:"result"`
	StopReason     *string               `json:"stop_reason"`
	TotalCostUSD   *float64              `json:"total_cost_usd"`
	Usage          *resultUsage          `json:"usage"`
	ModelUsage     map[string]modelUsage `json:"modelUsage"`
	APIErrorStatus *int                  `json:"api_error_status"`
	Errors         []string              `json:"errors"`

	// control_request, control_cancel_request
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	// control_response
	Response *controlResponse `json:"response"`
}

type streamEvent struct {
	Type  string `json:"type"`
	Delta *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

type apiMessage struct {
	Content contentBlocks `json:"content"`
}

// contentBlocks is a message's content: a list of blocks, or a string
// (a user message's text).
type contentBlocks []contentBlock

func (c *contentBlocks) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*c = contentBlocks{{Type: "text", Text: s}}
		return nil
	}
	var blocks []contentBlock
	if err := json.Unmarshal(b, &blocks); err != nil {
		return err
	}
	*c = blocks
	return nil
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

type resultUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokensDetails      *struct {
		ThinkingTokens int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

type modelUsage struct {
	OutputTokens int64 `json:"outputTokens"`
}

type controlResponse struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response"`
	Error     string          `json:"error"`
}

// canUseTool is a can_use_tool control request.
type canUseTool struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	ToolUseID   string          `json:"tool_use_id"`
	Description string          `json:"description"`
}

// clip is the start of s, at most n bytes, cut at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// decodeLine decodes one line of the CLI's output. Blank lines are
// skipped by the reader; any line here must be a JSON object with a
// string type, and a message of a type jam reads must have its fields'
// types. Other types are returned with their type only.
func decodeLine(line []byte) (message, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return message{}, &ProtocolError{Line: clip(string(line), 200), Reason: "not a JSON object"}
	}
	if head.Type == nil || *head.Type == "" {
		return message{}, &ProtocolError{Line: clip(string(line), 200), Reason: "no type"}
	}
	switch *head.Type {
	case typeSystem, typeStreamEvent, typeAssistant, typeUser, typeResult, typeControlRequest, typeControlResponse, typeControlCancel:
	default:
		return message{Type: *head.Type}, nil
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, &ProtocolError{Line: clip(string(line), 200), Reason: fmt.Sprintf("a %s message that does not decode (%v)", *head.Type, err)}
	}
	switch m.Type {
	case typeControlRequest:
		if m.RequestID == "" || len(m.Request) == 0 {
			return message{}, &ProtocolError{Line: clip(string(line), 200), Reason: "a control request without request_id or request"}
		}
	case typeControlResponse:
		if m.Response == nil || m.Response.RequestID == "" {
			return message{}, &ProtocolError{Line: clip(string(line), 200), Reason: "a control response without request_id"}
		}
	}
	return m, nil
}

// readLine reads one line of at most max bytes, without its newline;
// longer is a *ProtocolError.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 {
			return nil, &ProtocolError{Line: clip(string(append(buf, chunk...)), 200), Reason: fmt.Sprintf("a line longer than %d bytes", max)}
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(buf, []byte("\n")), err
	}
}

// toolKind maps Claude Code's tool names onto the neutral kinds.
func toolKind(name string) string {
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		return "execute"
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return "edit"
	case "Read", "NotebookRead":
		return "read"
	case "Glob", "Grep", "LS", "ToolSearch":
		return "search"
	case "WebFetch", "WebSearch":
		return "fetch"
	case "Task", "Agent":
		return "think"
	}
	return "other"
}

// toolTitle is a tool call's title: what its input says it does (the
// description, the command, the path, the pattern), else the tool's name.
func toolTitle(name string, input json.RawMessage, description string) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	for _, k := range []string{"description", "command", "file_path", "notebook_path", "path", "pattern", "url", "query", "prompt"} {
		if s, ok := in[k].(string); ok && strings.TrimSpace(s) != "" {
			if k == "description" || k == "command" || k == "prompt" {
				return clip(s, 200)
			}
			return clip(name+" "+s, 200)
		}
	}
	if description != "" {
		return clip(description, 200)
	}
	return name
}

// todoPlan reads a TodoWrite call's input as a plan; false when it is not
// the simple form ({"todos":[{"content","status"}]}).
func todoPlan(input json.RawMessage) ([]harness.PlanEntry, bool) {
	var in struct {
		Todos []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	if err := json.Unmarshal(input, &in); err != nil || in.Todos == nil {
		return nil, false
	}
	plan := make([]harness.PlanEntry, 0, len(in.Todos))
	for _, t := range in.Todos {
		if t.Content == "" {
			return nil, false
		}
		plan = append(plan, harness.PlanEntry{Content: t.Content, Status: t.Status})
	}
	return plan, true
}

// outcome maps a result onto the neutral Outcome; interrupted says jam
// stopped the turn. costBase is the process's cumulative cost before the
// turn (the CLI reports the session's), known says whether it is known.
func outcome(r message, interrupted bool, costBase float64, known bool, model string) harness.Outcome {
	out := harness.Outcome{Model: model}
	if out.Model == "" && len(r.ModelUsage) == 1 {
		for k := range r.ModelUsage {
			out.Model = k
		}
	}
	if u := r.Usage; u != nil {
		// Cache writes are input the model read (billed at a higher
		// rate): counted as input. Cache reads are the cached tokens.
		out.Usage.InputTokens = u.InputTokens + u.CacheCreationInputTokens
		out.Usage.OutputTokens = u.OutputTokens
		out.Usage.CachedTokens = u.CacheReadInputTokens
		if u.OutputTokensDetails != nil {
			out.Usage.ReasoningTokens = u.OutputTokensDetails.ThinkingTokens
		}
	}
	if r.TotalCostUSD != nil && known && *r.TotalCostUSD > costBase {
		out.Usage.CostUSD = *r.TotalCostUSD - costBase
	}
	stop := ""
	if r.StopReason != nil {
		stop = *r.StopReason
	}
	switch {
	case interrupted:
		out.StopReason, out.ProviderReason = harness.StopCancelled, r.Subtype
	case r.Subtype == subtypeSuccess && !r.IsError:
		out.StopReason, out.ProviderReason = harness.StopCompleted, stop
		switch stop {
		case "max_tokens":
			out.StopReason = harness.StopMaxTokens
		case "refusal":
			out.StopReason = harness.StopRefused
		}
		if out.ProviderReason == "" {
			out.ProviderReason = r.Subtype
		}
	case r.Subtype == subtypeErrorMaxTurns:
		out.StopReason, out.ProviderReason = harness.StopMaxTurns, r.Subtype
	default:
		// An API error (is_error with api_error_status, under subtype
		// success), an error during execution jam did not ask for, or an
		// error subtype jam does not know: the turn failed, and the
		// reason says why in the CLI's words.
		out.StopReason = harness.StopFailed
		why := strings.TrimSpace(r.Result)
		if why == "" {
			why = strings.Join(r.Errors, "; ")
		}
		if why == "" {
			why = r.Subtype
		}
		if r.APIErrorStatus != nil && !strings.Contains(why, fmt.Sprint(*r.APIErrorStatus)) {
			why = fmt.Sprintf("API error %d: %s", *r.APIErrorStatus, why)
		}
		out.ProviderReason = clip(why, maxReason)
	}
	return out
}

// maxReason bounds a failed turn's reason.
const maxReason = 1024
