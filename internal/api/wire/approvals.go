package wire

import "time"

// Approval is a question an owned agent's turn asks the person (the agent's
// permission policy is ask): the turn waits for the answer, or is denied
// at Deadline.
type Approval struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Turn    string `json:"turn"`
	// Agent is the asking agent's handle.
	Agent string `json:"agent"`
	Room  string `json:"room"`
	// Title says what the agent wants to do; ToolKind is its kind
	// ("execute", "edit", …) when the agent says.
	Title    string    `json:"title"`
	ToolKind string    `json:"tool_kind,omitempty"`
	Created  time.Time `json:"created_at"`
	Deadline time.Time `json:"deadline"`
}

// Approvals lists the pending approvals, oldest first.
type Approvals struct {
	Approvals []Approval `json:"approvals"`
}

// ApproveRequest answers an approval: allow (this once), always (this and
// every later request of the session for the same kind of tool) or deny.
type ApproveRequest struct {
	Decision string `json:"decision"`
}

// ApprovalAnswer is how an approval was answered.
type ApprovalAnswer struct {
	Approval Approval `json:"approval"`
	Decision string   `json:"decision"`
	By       string   `json:"by"`
}
