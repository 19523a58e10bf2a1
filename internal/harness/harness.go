package harness

import (
	"context"
	"log/slog"
	"time"

	"github.com/jamhq/jam/internal/executor"
)

// Harness is one kind of coding-agent CLI jam can drive.
type Harness interface {
	// Name is the harness's kind, as the harness configuration key
	// spells it ("acp").
	Name() string
	// Manifest is what processes of this harness can do, before one is
	// started; a running Process's own Manifest may say less (an ACP
	// agent that cannot load sessions).
	Manifest() Manifest
	// Launch starts a process and performs its handshake, within
	// spec.HandshakeTimeout.
	Launch(ctx context.Context, spec LaunchSpec) (Process, error)
}

// LaunchSpec is how to start one process.
type LaunchSpec struct {
	// Argv is the command. Required.
	Argv []string
	// Executor starts the process (the lease's sandbox). Required.
	Executor executor.Executor
	// Dir is the process's working directory; Env its whole
	// environment.
	Dir string
	Env []string
	// Writable and ReadOnly are the paths the sandbox shows the process;
	// NoNetwork cuts it off the network.
	Writable, ReadOnly []string
	NoNetwork          bool
	// Secrets are values hidden in every error the process returns
	// (RedactEnv): the template's environment values.
	Secrets []string
	// Logger receives the CLI's stderr and protocol trouble. Required.
	Logger *slog.Logger
	// HandshakeTimeout bounds the handshake; 0 is the harness's default.
	HandshakeTimeout time.Duration
	// Model, when set, is the model every thread runs on.
	Model string
	// Policy answers approval requests when Approve is nil; "" is
	// PolicyReject.
	Policy Policy
	// Approve, when set, answers every approval request.
	Approve Approval
	// Resume, for a harness whose Manifest says ResumeAtLaunch, is the
	// thread the process is started on.
	Resume Thread
	// MCP, for a harness whose process serves one thread (Sessions one),
	// are the MCP servers that thread is given; a harness whose process
	// holds many threads takes them at Open and Resume instead. Their
	// header values are secrets, hidden like Secrets.
	MCP []MCPServer
	// PrivateDir is a directory made for this process alone, readable
	// inside its sandbox and never its worktree, where the adapter may
	// put files only the process reads (Claude Code's MCP
	// configuration); "" lets the adapter make a temporary one, removed
	// when the process exits.
	PrivateDir string
}

// Approver is the callback that answers the process's approval requests:
// Approve if set, else the Policy.
func (s LaunchSpec) Approver() Approval {
	if s.Approve != nil {
		return s.Approve
	}
	p := s.Policy
	if p == "" {
		p = PolicyReject
	}
	return p.Approve
}

// Thread is a provider's own id of a conversation (an ACP session, a
// Codex thread, a Claude Code session).
type Thread string

// Input is what a turn, or a steer, gives the agent.
type Input struct {
	Text string
}

// Process is one running CLI process.
//
// A thread given MCP servers (tools at Open and Resume, or
// LaunchSpec.MCP for a process that serves one thread) can call their
// tools, when the Manifest says MCPServers; an adapter whose CLI cannot
// take them opens the thread without them and logs so once. The servers'
// headers are secrets: an adapter passes them to the CLI only through its
// protocol or a file only the process reads, never in argv, never logs
// them, and hides them in its errors.
type Process interface {
	// Manifest is what this process can do.
	Manifest() Manifest
	// Open starts a new thread working in dir, given tools.
	Open(ctx context.Context, dir string, tools ...MCPServer) (Thread, error)
	// Resume makes an earlier thread live again in this process, working
	// in dir, given tools; jam.ErrNotImplemented when the Manifest's
	// Resume is not ResumeInProcess.
	Resume(ctx context.Context, thread Thread, dir string, tools ...MCPServer) error
	// Prompt runs one turn on thread. While it runs, the turn's streamed
	// output goes to updates (which may be nil), in order, from Prompt's
	// own goroutines, never after Prompt returns. When ctx ends first,
	// the CLI is asked to stop the turn and the Outcome says
	// StopCancelled.
	Prompt(ctx context.Context, thread Thread, in Input, updates func(Update)) (Outcome, error)
	// Interrupt asks the CLI to stop thread's running turn; the running
	// Prompt returns StopCancelled. Nothing happens without one.
	Interrupt(ctx context.Context, thread Thread) error
	// Steer adds input to thread's running turn; jam.ErrNotImplemented
	// unless the Manifest says Steer.
	Steer(ctx context.Context, thread Thread, in Input) error
	// Exited is closed when the process has exited.
	Exited() <-chan struct{}
	// Pid is the process id (its group's), for the lease record.
	Pid() int
	// Stop ends the process and its group.
	Stop(ctx context.Context) error
}
