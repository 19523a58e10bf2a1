package wire

import "time"

// AgentRuntimeStatus is an owned agent's configuration state: what it
// should run (desired) against what its process runs (effective).
type AgentRuntimeStatus struct {
	Template            string       `json:"template"`
	Desired             AgentRuntime `json:"desired"`
	DesiredGeneration   int64        `json:"desired_generation"`
	Effective           AgentRuntime `json:"effective"`
	EffectiveGeneration int64        `json:"effective_generation"`
	// PendingChange names the changes the running process does not have
	// yet; empty when none.
	PendingChange string `json:"pending_change,omitempty"`
}

// AgentConfigRequest is the body of POST /v1/agents/{agent}/config: keys
// of the runtime configuration to change (command, model, repo,
// placement, permission).
type AgentConfigRequest struct {
	Set map[string]string `json:"set"`
}

// Session is an owned agent's conversation in one room.
type Session struct {
	ID             string    `json:"id"`
	Agent          string    `json:"agent"`
	Room           string    `json:"room"`
	Template       string    `json:"template"`
	Lifecycle      string    `json:"lifecycle"`
	ProviderThread string    `json:"provider_thread,omitempty"`
	Worktree       string    `json:"worktree,omitempty"`
	Branch         string    `json:"branch,omitempty"`
	Created        time.Time `json:"created_at"`
}

// Sessions is the body of GET /v1/sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// Turn is one turn of a session.
type Turn struct {
	ID              string    `json:"id"`
	Seq             int64     `json:"seq"`
	State           string    `json:"state"`
	Reason          string    `json:"reason,omitempty"`
	Message         string    `json:"message,omitempty"`
	Lease           string    `json:"lease,omitempty"`
	LeaseGeneration int64     `json:"lease_generation,omitempty"`
	Created         time.Time `json:"created_at"`
	Updated         time.Time `json:"updated_at"`
}

// Turns is the body of GET /v1/sessions/{session}/turns.
type Turns struct {
	Turns []Turn `json:"turns"`
}
