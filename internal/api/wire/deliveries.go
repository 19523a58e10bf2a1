package wire

import (
	"encoding/json"
	"time"
)

// Operation is the person-visible record of a long action (deliver,
// merge, capture, worktree_archive, worktree_remove, worktree_restore), as
// GET /v1/operations/{operation} shows it.
type Operation struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Subject is the ID of what it acts on (a delivery's).
	Subject string `json:"subject,omitempty"`
	// State is pending, running, succeeded, failed or cancelled.
	State    string `json:"state"`
	Progress string `json:"progress,omitempty"`
	// Result is a succeeded operation's output; ErrorCode (a stable code
	// of the catalogue: credential_invalid, remote_unreachable,
	// gate_refused, conflict, ...) and Error say why it failed.
	Result    json.RawMessage `json:"result,omitempty"`
	ErrorCode string          `json:"error_code,omitempty"`
	Error     string          `json:"error,omitempty"`
	// Jobs are the jobs behind it (GET /v1/jobs/{job}).
	Jobs []string `json:"jobs"`
	// Evidence is every step's record, oldest first.
	Evidence []Evidence `json:"evidence"`
	Created  time.Time  `json:"created_at"`
	Updated  time.Time  `json:"updated_at"`
}

// Operations is the body of GET /v1/operations: newest first, each
// without its evidence (GET /v1/operations/{operation} has it).
type Operations struct {
	Operations []Operation `json:"operations"`
}

// OperationQuery selects operations: of one kind and one subject when not
// "", at most Limit (0: the daemon's default).
type OperationQuery struct {
	Kind    string
	Subject string
	Limit   int
}

// MaxOperationLimit bounds GET /v1/operations?limit=.
const MaxOperationLimit = 500

// Evidence is one append-only entry of an operation: a step's start, end,
// error or note, with what the step saw (a remote SHA, a pull request's
// number and URL, GitHub's request id, an error).
type Evidence struct {
	Seq    int             `json:"seq"`
	Step   string          `json:"step"`
	Event  string          `json:"event"`
	Detail json.RawMessage `json:"detail,omitempty"`
	At     time.Time       `json:"at"`
}

// Delivery is the intent and outcome of delivering one change set to a
// branch of a remote and, when asked, a draft pull request.
type Delivery struct {
	ID        string `json:"id"`
	ChangeSet string `json:"change_set"`
	Session   string `json:"session"`
	Turn      string `json:"turn,omitempty"`
	Remote    string `json:"remote"`
	Branch    string `json:"branch"`
	// Connection is the GitHub connection's id ("" for none).
	Connection string `json:"connection,omitempty"`
	PR         bool   `json:"pr"`
	Repo       string `json:"repo,omitempty"`
	Base       string `json:"base,omitempty"`
	Title      string `json:"title,omitempty"`
	Operation  string `json:"operation"`
	// State is pending, building, pushing, pushed, pr_open, merged, closed
	// or failed.
	State     string `json:"state"`
	Commit    string `json:"commit,omitempty"`
	RemoteSHA string `json:"remote_sha,omitempty"`
	PRNumber  int    `json:"pr_number,omitempty"`
	PRURL     string `json:"pr_url,omitempty"`
	// PRState (open, closed, merged), PRHeadSHA and Checks (success,
	// pending, failure) are as the pull request was last followed.
	PRState    string     `json:"pr_state,omitempty"`
	PRHeadSHA  string     `json:"pr_head_sha,omitempty"`
	Checks     string     `json:"checks,omitempty"`
	ErrorCode  string     `json:"error_code,omitempty"`
	Error      string     `json:"error,omitempty"`
	Created    time.Time  `json:"created_at"`
	Updated    time.Time  `json:"updated_at"`
	FollowedAt *time.Time `json:"followed_at,omitempty"`
}

// Deliveries is the body of GET /v1/deliveries: newest first.
type Deliveries struct {
	Deliveries []Delivery `json:"deliveries"`
}

// DeliveryQuery selects deliveries: of one change set and one state when
// not "", at most Limit (0: the daemon's default).
type DeliveryQuery struct {
	ChangeSet string
	State     string
	Limit     int
}

// MaxDeliveryLimit bounds GET /v1/deliveries?limit=.
const MaxDeliveryLimit = 500

// DeliverRequest is the body of POST /v1/deliveries.
type DeliverRequest struct {
	// ChangeSet is the change set's id (or a unique prefix of it).
	ChangeSet string `json:"change_set"`
	// Remote is an https or ssh URL or an absolute local path; never with a
	// credential in it.
	Remote string `json:"remote"`
	// Branch defaults to jam/<change set id>.
	Branch string `json:"branch,omitempty"`
	// Connection names the GitHub connection (NAME or github/NAME; "": the
	// only one, for an https remote).
	Connection string `json:"connection,omitempty"`
	// PR opens a draft pull request into Base (default: the repository's
	// default branch) titled Title
	// in Repo (OWNER/NAME; default: read from a GitHub https remote).
	PR    bool   `json:"pr,omitempty"`
	Repo  string `json:"repo,omitempty"`
	Base  string `json:"base,omitempty"`
	Title string `json:"title,omitempty"`
}

// MergeRequest is the body of POST /v1/deliveries/{delivery}/merge.
type MergeRequest struct {
	// Method is squash (default), merge or rebase.
	Method string `json:"method,omitempty"`
	// Approved is the person's explicit approval.
	Approved bool `json:"approved"`
	// RequireReview asks the review gate too: the delivered change set's
	// newest validated review must approve it.
	RequireReview bool `json:"require_review,omitempty"`
}
