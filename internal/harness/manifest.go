package harness

// ManifestVersion versions Manifest: a change of a field's meaning bumps
// it.
const ManifestVersion = 1

// Sessions says how many threads one process holds.
type Sessions string

// Session counts.
const (
	// SessionsOne: a process serves one thread (Claude Code); the
	// runtime gives each session a process of its own.
	SessionsOne Sessions = "one"
	// SessionsMany: a process holds many threads (ACP, Codex).
	SessionsMany Sessions = "many"
)

// Resume says how a thread survives a new process.
type Resume string

// Resume kinds.
const (
	// ResumeInProcess: a new process loads the thread (ACP session/load,
	// Codex thread/resume).
	ResumeInProcess Resume = "in_process"
	// ResumeAtLaunch: the thread is named when the process starts
	// (claude --resume); LaunchSpec.Resume.
	ResumeAtLaunch Resume = "at_launch"
	// ResumeNone: a new process starts new threads.
	ResumeNone Resume = "none"
)

// Manifest says what a harness, and a process of it, can do.
type Manifest struct {
	Harness string `json:"harness"`
	Version int    `json:"version"`
	// Agent names the CLI behind the process and its version, as its
	// handshake says ("" before launch).
	Agent    string   `json:"agent,omitempty"`
	Sessions Sessions `json:"sessions"`
	Resume   Resume   `json:"resume"`
	// Steer: input can reach a running turn (Process.Steer).
	Steer bool `json:"steer"`
	// Interrupt: a running turn can be stopped (Process.Interrupt).
	Interrupt bool `json:"interrupt"`
	// InterruptNeedsTurn: the CLI stops a turn by its own turn id (Codex
	// turn/interrupt), which the adapter keeps while Prompt runs.
	InterruptNeedsTurn bool `json:"interrupt_needs_turn_id"`
	// Images: an Input may carry images.
	Images bool `json:"images"`
	// MCPServers: threads can be given MCP servers.
	MCPServers bool `json:"mcp_servers"`
	// Approvals: the CLI asks before it acts, through Approval.
	Approvals bool `json:"approvals"`
}
