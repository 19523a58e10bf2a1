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
// placement, permission, handshake_timeout, sandbox, network, read_only
// (paths separated by ":"), env.NAME: an empty value unsets the variable).
type AgentConfigRequest struct {
	Set map[string]string `json:"set"`
}

// SessionOverrides are the keys of an owned agent's runtime configuration
// that one room's session sets differently from the agent's template.
// Repo is per session (the room's worktree is of that repository); Command
// is per process, so only a dedicated placement can honour it.
type SessionOverrides struct {
	Command []string `json:"command,omitempty"`
	Repo    string   `json:"repo,omitempty"`
}

// Session is an owned agent's conversation in one room.
type Session struct {
	ID        string `json:"id"`
	Agent     string `json:"agent"`
	Room      string `json:"room"`
	Template  string `json:"template"`
	Lifecycle string `json:"lifecycle"`
	// Role is what the session does: developer, or a delegation child's
	// role (review, test, …).
	Role           string `json:"role,omitempty"`
	ProviderThread string `json:"provider_thread,omitempty"`
	Worktree       string `json:"worktree,omitempty"`
	Branch         string `json:"branch,omitempty"`
	// WorktreeState is active, archived or removed; turns wait while it
	// is not active.
	WorktreeState string `json:"worktree_state,omitempty"`
	// CurrentTurn is the active turn, else the oldest queued one.
	CurrentTurn      string    `json:"current_turn,omitempty"`
	CurrentTurnState string    `json:"current_turn_state,omitempty"`
	Created          time.Time `json:"created_at"`
	// Overrides are the session's own configuration keys; absent when it
	// runs the template's configuration as is.
	Overrides *SessionOverrides `json:"overrides,omitempty"`
}

// Sessions is the body of GET /v1/sessions.
type Sessions struct {
	Sessions []Session `json:"sessions"`
}

// Turn is one turn of a session.
type Turn struct {
	ID     string `json:"id"`
	Seq    int64  `json:"seq"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Detail says in words why the turn ended as it did (the error's
	// text: the command was not found, the handshake timed out), at most
	// 2 KiB; Reason is its stable code.
	Detail  string `json:"detail,omitempty"`
	Message string `json:"message,omitempty"`
	// Input is the session message the turn answers (msg_…).
	Input           string    `json:"input,omitempty"`
	Lease           string    `json:"lease,omitempty"`
	LeaseGeneration int64     `json:"lease_generation,omitempty"`
	Created         time.Time `json:"created_at"`
	Updated         time.Time `json:"updated_at"`
	// Started is when the turn started running; Ended when it ended.
	Started time.Time `json:"started_at,omitzero"`
	Ended   time.Time `json:"ended_at,omitzero"`
	// Session is the turn's session, and Executions its attempts, oldest
	// first; both only in the single-turn read (GET /v1/turns/{turn}).
	Session    string      `json:"session,omitempty"`
	Executions []Execution `json:"executions,omitempty"`
	// Usage is what the turn used: its last ended attempt's usage; only
	// in the single-turn read, and absent when nothing was reported.
	Usage *ExecutionUsage `json:"usage,omitempty"`
}

// Execution is one attempt of a turn on a lease: the process (pid) that
// ran it, and how it ended. State is running or ended; Outcome is the
// terminal state the turn ended in, with Reason.
type Execution struct {
	ID              string    `json:"id"`
	Lease           string    `json:"lease"`
	LeaseGeneration int64     `json:"lease_generation"`
	Pid             int       `json:"pid"`
	State           string    `json:"state"`
	Outcome         string    `json:"outcome,omitempty"`
	Reason          string    `json:"reason,omitempty"`
	Started         time.Time `json:"started_at"`
	Ended           time.Time `json:"ended_at,omitzero"`
	// Usage is what the attempt used; absent while it runs and when
	// nothing was reported.
	Usage *ExecutionUsage `json:"usage,omitempty"`
}

// Turns is the body of GET /v1/sessions/{session}/turns.
type Turns struct {
	Turns []Turn `json:"turns"`
}

// TurnUpdate is one piece of a running turn's streamed output: kind
// "text" (the answer) or "thought" with text, "tool_call",
// "tool_call_update" or "tool_call_end" (its status says how it ended)
// with the tool call's fields, "plan" with the whole plan, or "usage"
// with the turn's usage so far. It mirrors the harness's update, which is
// also the stored form (a test pins the two alike).
type TurnUpdate struct {
	Kind       string      `json:"kind"`
	Text       string      `json:"text,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	Title      string      `json:"title,omitempty"`
	ToolKind   string      `json:"tool_kind,omitempty"`
	Status     string      `json:"status,omitempty"`
	Plan       []PlanEntry `json:"plan,omitempty"`
	Usage      *Usage      `json:"usage,omitempty"`
}

// Usage is what a turn used: tokens, and its cost in US dollars when the
// agent reports it (cost_estimated: computed from a price table).
type Usage struct {
	InputTokens     int64   `json:"input_tokens,omitempty"`
	OutputTokens    int64   `json:"output_tokens,omitempty"`
	CachedTokens    int64   `json:"cached_tokens,omitempty"`
	ReasoningTokens int64   `json:"reasoning_tokens,omitempty"`
	CostUSD         float64 `json:"cost_usd,omitempty"`
	CostEstimated   bool    `json:"cost_estimated,omitempty"`
}

// PlanEntry is one step of an agent's plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority,omitempty"`
	Status   string `json:"status,omitempty"`
}

// TurnOutput is the body of GET /v1/turns/{turn}/output: what the turn
// streamed, as kept in the store (across restarts, up to a bound per
// turn); Kept is false when the turn streamed nothing. Batches is how many
// turn.update events it covers: apply only events with a higher batch.
type TurnOutput struct {
	Turn    string       `json:"turn"`
	Kept    bool         `json:"kept"`
	Batches int          `json:"batches"`
	Updates []TurnUpdate `json:"updates"`
	// Truncated: some of the output was not kept (beyond the bound).
	Truncated bool `json:"truncated,omitempty"`
}

// Worktree is a session's working tree. State is active (checked out),
// archived (directory removed, branch kept) or removed.
type Worktree struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Agent   string `json:"agent"`
	Room    string `json:"room"`
	Repo    string `json:"repo,omitempty"`
	Path    string `json:"path"`
	Branch  string `json:"branch,omitempty"`
	State   string `json:"state"`
	// Changes counts uncommitted changes of an active worktree.
	Changes int       `json:"changes"`
	Updated time.Time `json:"updated_at"`
}

// Worktrees is the body of GET /v1/worktrees.
type Worktrees struct {
	Worktrees []Worktree `json:"worktrees"`
}

// WorktreeRemoveRequest is the body of POST /v1/worktrees/{session}/remove.
type WorktreeRemoveRequest struct {
	// Force discards uncommitted changes.
	Force bool `json:"force,omitempty"`
}

// WorktreeRestoreRequest is the body of POST
// /v1/worktrees/{session}/restore.
type WorktreeRestoreRequest struct {
	// Checkpoint is the Seq of the session's checkpoint to restore; 0
	// means its latest (or, for a session without checkpoints, its kept
	// branch).
	Checkpoint int `json:"checkpoint,omitempty"`
}

// SessionMessage is one accepted piece of input to a session. Routing is
// what took effect: note (context for the next turn), queue (a turn
// answers it) or steer (it reached the running turn); Requested is what
// was asked for when it differs. Turn is the turn it belongs to: the one
// that answers it, the running one it reached, or the one that consumed a
// note. Source is the Band message it came from, if any (its text stays
// with Band).
type SessionMessage struct {
	ID        string    `json:"id"`
	Session   string    `json:"session"`
	Seq       int64     `json:"seq"`
	Routing   string    `json:"routing"`
	Requested string    `json:"requested,omitempty"`
	Text      string    `json:"text,omitempty"`
	Source    string    `json:"source,omitempty"`
	Turn      string    `json:"turn,omitempty"`
	Created   time.Time `json:"created_at"`
	Consumed  time.Time `json:"consumed_at,omitzero"`
}

// SessionMessages is the body of GET /v1/sessions/{session}/messages.
type SessionMessages struct {
	Messages []SessionMessage `json:"messages"`
}

// SessionSendRequest is the body of POST /v1/sessions/{session}/messages.
// Routing is note, queue (the default) or steer.
type SessionSendRequest struct {
	Text    string `json:"text"`
	Routing string `json:"routing,omitempty"`
}

// SessionSendResult answers a SessionSendRequest. RoutingEffective is
// what happened: a steer the agent's harness cannot take is queued. Turn
// is the turn that answers a queued message.
type SessionSendResult struct {
	Message          SessionMessage `json:"message"`
	RoutingEffective string         `json:"routing_effective"`
	Turn             string         `json:"turn,omitempty"`
}
