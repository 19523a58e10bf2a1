package wire

import (
	"encoding/json"
	"time"
)

// Delegation is a parent session's assignment of work to a child session
// of a named agent, with pinned inputs and a result contract; only the
// child's validated result counts as its verdict.
type Delegation struct {
	ID string `json:"id"`
	// Parent is the session that delegated; ParentRoom its room and
	// ParentAgent its agent's peer key (profile/scope).
	Parent      string `json:"parent"`
	ParentRoom  string `json:"parent_room"`
	ParentAgent string `json:"parent_agent"`
	// Child is the session doing the work, "" until it is started;
	// ChildRoom its room ("" as long).
	Child     string `json:"child"`
	ChildRoom string `json:"child_room"`
	// Role is the child's role (review, test, ...); Agent the peer key of
	// the child's agent.
	Role         string           `json:"role"`
	Agent        string           `json:"agent"`
	Instructions string           `json:"instructions"`
	Inputs       DelegationInputs `json:"inputs"`
	// Contract names the result contract: review, test or custom.
	Contract string `json:"contract"`
	// State is pending, running, submitted, failed or cancelled; Reason
	// the stable code of a failure or a cancel (start_failed,
	// attempts_exhausted, cancelled) and Error its message.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Attempts counts the results refused so far; at MaxAttempts the
	// delegation fails.
	Attempts    int `json:"attempts"`
	MaxAttempts int `json:"max_attempts"`
	// Verdict is the short word on a submitted result: approve or
	// request_changes for a review, passed or failed for a test; ""
	// otherwise (not submitted, a custom contract).
	Verdict string    `json:"verdict,omitempty"`
	Created time.Time `json:"created_at"`
	Updated time.Time `json:"updated_at"`
}

// DelegationInputs are a delegation's pinned subject: a change set, a git
// commit, both or neither.
type DelegationInputs struct {
	ChangeSet string `json:"change_set_id,omitempty"`
	Commit    string `json:"commit,omitempty"`
}

// Delegations is the body of GET /v1/delegations: newest first.
type Delegations struct {
	Delegations []Delegation `json:"delegations"`
}

// DelegationQuery selects delegations: of one parent session when Parent
// is not "", at most Limit (0: the daemon's default).
type DelegationQuery struct {
	Parent string
	Limit  int
}

// MaxDelegationLimit bounds GET /v1/delegations?limit=.
const MaxDelegationLimit = 500

// DelegationDetail is the body of GET /v1/delegations/{delegation}: the
// delegation, its contract's JSON Schema document, and once submitted its
// result.
type DelegationDetail struct {
	Delegation Delegation        `json:"delegation"`
	Schema     json.RawMessage   `json:"schema"`
	Result     *DelegationResult `json:"result,omitempty"`
}

// DelegationResult is a delegation's validated result, a JSON object,
// with the lower-case hex SHA-256 of its bytes as stored. The answer
// carries the object in compact form (encoding/json drops insignificant
// white space), so the digest matches the bytes of the answer's result
// only when the result was stored compact.
type DelegationResult struct {
	Result    json.RawMessage `json:"result"`
	Digest    string          `json:"digest"`
	Submitted time.Time       `json:"submitted_at"`
}
