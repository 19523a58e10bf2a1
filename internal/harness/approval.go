package harness

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
)

// ApprovalRequest is a CLI asking before it acts (runs a command, edits a
// file), in neutral terms.
type ApprovalRequest struct {
	Thread     Thread
	ToolCallID string
	// Title says what the tool call does; ToolKind is its kind ("edit",
	// "execute", …) when the CLI says.
	Title    string
	ToolKind string
}

// Decision answers an ApprovalRequest.
type Decision string

// Decisions.
const (
	// AllowOnce allows this one request.
	AllowOnce Decision = "allow_once"
	// Reject refuses it.
	Reject Decision = "reject"
)

// Approval answers approval requests. Each adapter calls it on a
// goroutine of the one request, never its reading loop, so it may wait
// (for a person, under PolicyAsk); ctx ends with the request (the turn was
// cancelled, or the process is gone).
type Approval func(ctx context.Context, req ApprovalRequest) Decision

// Policy is the harness-neutral permission policy of an agent: each
// adapter maps it onto its CLI's own approval mechanism.
type Policy string

// Policies.
const (
	// PolicyAllow allows each request once.
	PolicyAllow Policy = "allow"
	// PolicyReject rejects each request.
	PolicyReject Policy = "reject"
	// PolicyAsk asks the person (the daemon's Approve); a process
	// started without one rejects.
	PolicyAsk Policy = "ask"
)

// Policies lists the policies, for validation.
var Policies = []Policy{PolicyAllow, PolicyReject, PolicyAsk}

// ParsePolicy parses a policy name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicyAllow, PolicyReject, PolicyAsk:
		return p, nil
	}
	return "", fmt.Errorf("%w: permission policy %q (want allow, reject or ask)", jam.ErrInvalid, s)
}

// Approve implements Approval: AllowOnce under PolicyAllow, Reject under
// anything else (PolicyAsk included: asking is the daemon's, through
// LaunchSpec.Approve).
func (p Policy) Approve(context.Context, ApprovalRequest) Decision {
	if p == PolicyAllow {
		return AllowOnce
	}
	return Reject
}
