package harness

// UpdateKind is the kind of a streamed Update. The values are stored (a
// turn's output) and on the wire: never renamed.
type UpdateKind string

// Update kinds.
const (
	// UpdateText is part of the agent's answer.
	UpdateText UpdateKind = "text"
	// UpdateThinking is part of the agent's thinking aloud.
	UpdateThinking UpdateKind = "thought"
	// UpdateToolStart starts a tool call.
	UpdateToolStart UpdateKind = "tool_call"
	// UpdateToolUpdate reports progress of a tool call.
	UpdateToolUpdate UpdateKind = "tool_call_update"
	// UpdateToolEnd ends a tool call; its Status says how.
	UpdateToolEnd UpdateKind = "tool_call_end"
	// UpdatePlan replaces the agent's plan.
	UpdatePlan UpdateKind = "plan"
	// UpdateUsage reports the turn's usage so far.
	UpdateUsage UpdateKind = "usage"
	// UpdateApproval records how an approval request of the turn was
	// answered: Title says what was asked and Status the decision (allow,
	// always, deny, timeout, cancelled), ToolCallID and ToolKind the call.
	// jam adds it; no CLI streams it.
	UpdateApproval UpdateKind = "approval"
)

// Tool call statuses.
const (
	ToolPending    = "pending"
	ToolInProgress = "in_progress"
	ToolCompleted  = "completed"
	ToolFailed     = "failed"
)

// Update is one piece of a running turn's streamed output, in the form
// the runtime stores and the wire mirrors.
type Update struct {
	Kind UpdateKind `json:"kind"`
	// Text is the chunk of an UpdateText or UpdateThinking.
	Text string `json:"text,omitempty"`
	// ToolCallID, Title, ToolKind ("read", "edit", "execute", …) and
	// Status (Tool*) describe a tool call.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Title      string `json:"title,omitempty"`
	ToolKind   string `json:"tool_kind,omitempty"`
	Status     string `json:"status,omitempty"`
	// Plan is the whole plan of an UpdatePlan.
	Plan []PlanEntry `json:"plan,omitempty"`
	// Usage is the usage of an UpdateUsage.
	Usage *Usage `json:"usage,omitempty"`
}

// PlanEntry is one step of the agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// Coalesces reports whether updates of kind merge with the one before of
// the same kind (streamed text).
func (k UpdateKind) Coalesces() bool { return k == UpdateText || k == UpdateThinking }
