package store

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the operations and deliveries aggregate.

// Bounds of an operation, its evidence and a delivery.
const (
	MaxOperationKindLen    = 64
	MaxOperationSubjectLen = 128
	// MaxOperationText bounds an operation's progress line.
	MaxOperationText   = 512
	MaxOperationResult = 16 << 10
	MaxOperationError  = 4 << 10
	MaxOperationJobs   = 32
	// MaxEvidence bounds the evidence of one operation.
	MaxEvidence           = 256
	MaxEvidenceDetail     = 4 << 10
	DefaultOperationLimit = 100
	MaxOperationLimit     = 500
	DefaultDeliveryLimit  = 100
	MaxDeliveryLimit      = 500
	MaxDeliveryRemoteLen  = 2048
	MaxDeliveryBranchLen  = 255
	MaxDeliveryTitleLen   = 256
	MaxDeliveryErrorLen   = 4 << 10
	MaxDeliveryPRURLLen   = 2048
	MaxErrorCodeLen       = 64
)

var (
	operationStates = []OperationState{OperationPending, OperationRunning, OperationSucceeded, OperationFailed, OperationCancelled}
	evidenceEvents  = []EvidenceEvent{EvidenceStart, EvidenceEnd, EvidenceError, EvidenceNote}
	deliveryStates  = []DeliveryState{DeliveryPending, DeliveryBuilding, DeliveryPushing, DeliveryPushed, DeliveryPROpen, DeliveryMerged,
		DeliveryClosed, DeliveryFailed}
	prStates    = []string{"", "open", "closed", "merged"}
	checkStates = []string{"", "success", "pending", "failure"}
)

// validateName accepts [a-z][a-z0-9_.]{0,63}: an operation's kind, an
// evidence step.
func validateName(field, v string) error {
	ok := len(v) >= 1 && len(v) <= MaxOperationKindLen && v[0] >= 'a' && v[0] <= 'z'
	for i := 1; ok && i < len(v); i++ {
		c := v[i]
		ok = isLowerAlnum(c) || c == '_' || c == '.'
	}
	if !ok {
		return fmt.Errorf("%w: %s %q is not [a-z][a-z0-9_.]{0,%d}", jam.ErrInvalid, field, clipText(v), MaxOperationKindLen-1)
	}
	return nil
}

// ValidateErrorCode accepts "" or [a-z][a-z0-9_]{0,63}, a stable error
// code (a jam wire code).
func ValidateErrorCode(code string) error {
	if code == "" {
		return nil
	}
	ok := len(code) <= MaxErrorCodeLen && code[0] >= 'a' && code[0] <= 'z'
	for i := 1; ok && i < len(code); i++ {
		ok = isLowerAlnum(code[i]) || code[i] == '_'
	}
	if !ok {
		return fmt.Errorf("%w: error code %q is not [a-z][a-z0-9_]{0,%d}", jam.ErrInvalid, clipText(code), MaxErrorCodeLen-1)
	}
	return nil
}

// validateBounded accepts storable text of at most maxLen bytes.
func validateBounded(field, v string, maxLen int) error {
	if len(v) > maxLen {
		return fmt.Errorf("%w: %s is %d bytes (at most %d)", jam.ErrInvalid, field, len(v), maxLen)
	}
	return ValidateText(field, v)
}

// validateLine accepts storable text of at most maxLen bytes on one line:
// no line break and no other control character but a tab.
func validateLine(field, v string, maxLen int) error {
	if err := validateBounded(field, v, maxLen); err != nil {
		return err
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return fmt.Errorf("%w: %s is not one line (control character %#02x)", jam.ErrInvalid, field, c)
		}
	}
	return nil
}

// validateFailure checks an error code and message.
func validateFailure(code, msg string, maxLen int) error {
	if err := ValidateErrorCode(code); err != nil {
		return err
	}
	return validateBounded("error", msg, maxLen)
}

// ValidateOperationState accepts a known state.
func ValidateOperationState(s OperationState) error {
	return oneOf("operation state", s, operationStates)
}

// ValidateOperationRef checks the (workspace, operation) pair a lookup
// takes.
func ValidateOperationRef(ws jam.WorkspaceID, id jam.OperationID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.OperationID](string(id))
	return err
}

// Canonical validates an operation to create and returns it in stored
// form: pending when State is "", UpdatedAt CreatedAt, times at
// microsecond precision in UTC, no jobs as nil. An error code or message
// is refused unless the operation is failed.
func (o Operation) Canonical() (Operation, error) {
	if o.State == "" {
		o.State = OperationPending
	}
	err := ValidateOperationRef(o.WorkspaceID, o.ID)
	if err == nil {
		err = validateName("operation kind", o.Kind)
	}
	if err == nil {
		err = validateBounded("operation subject", o.Subject, MaxOperationSubjectLen)
	}
	if err == nil {
		err = ValidateOperationState(o.State)
	}
	if err == nil {
		err = validateLine("operation progress", o.Progress, MaxOperationText)
	}
	if err == nil {
		err = validateJSONBlob("operation result", o.Result, MaxOperationResult)
	}
	if err == nil {
		err = validateFailure(o.ErrorCode, o.Error, MaxOperationError)
	}
	if err == nil && o.State != OperationFailed && (o.ErrorCode != "" || o.Error != "") {
		err = fmt.Errorf("%w: an operation %s has no error", jam.ErrInvalid, o.State)
	}
	if err == nil {
		err = validateJobList(o.Jobs)
	}
	if err == nil {
		err = ValidateTime("created at", o.CreatedAt)
	}
	if err != nil {
		return Operation{}, err
	}
	o.CreatedAt = o.CreatedAt.UTC().Truncate(time.Microsecond)
	o.UpdatedAt = o.CreatedAt
	if len(o.Jobs) == 0 {
		o.Jobs = nil
	}
	return o, nil
}

// validateJobList accepts at most MaxOperationJobs distinct job ids.
func validateJobList(jobs []jam.JobID) error {
	if len(jobs) > MaxOperationJobs {
		return fmt.Errorf("%w: an operation names %d jobs (at most %d)", jam.ErrInvalid, len(jobs), MaxOperationJobs)
	}
	seen := make(map[jam.JobID]bool, len(jobs))
	for _, j := range jobs {
		if _, err := jam.ParseID[jam.JobID](string(j)); err != nil {
			return err
		}
		if seen[j] {
			return fmt.Errorf("%w: job %s is named twice", jam.ErrInvalid, j)
		}
		seen[j] = true
	}
	return nil
}

// Validate checks an update of an operation.
func (p OperationUpdateParams) Validate() error {
	err := ValidateOperationRef(p.WorkspaceID, p.ID)
	for _, s := range p.From {
		if err != nil {
			break
		}
		err = ValidateOperationState(s)
	}
	if err == nil && len(p.From) > len(operationStates) {
		err = fmt.Errorf("%w: From names %d states (at most %d)", jam.ErrInvalid, len(p.From), len(operationStates))
	}
	if err == nil && p.State != "" {
		err = ValidateOperationState(p.State)
	}
	if err == nil && p.Progress != nil {
		err = validateLine("operation progress", *p.Progress, MaxOperationText)
	}
	if err == nil {
		err = validateJSONBlob("operation result", p.Result, MaxOperationResult)
	}
	if err == nil {
		err = validateFailure(p.ErrorCode, p.Error, MaxOperationError)
	}
	if err == nil && p.AddJob != "" {
		_, err = jam.ParseID[jam.JobID](string(p.AddJob))
	}
	if err == nil {
		err = ValidateTime("update time", p.At)
	}
	return err
}

// FromStates is the states p applies from, as strings: From, or, when it
// is empty, every state that is not terminal.
func (p OperationUpdateParams) FromStates() []string {
	from := p.From
	if len(from) == 0 {
		from = []OperationState{OperationPending, OperationRunning}
	}
	out := make([]string, len(from))
	for i, s := range from {
		out[i] = string(s)
	}
	return out
}

// Refusal says why an update of o by p changed nothing (wrapping
// jam.ErrConflict): o's state is not one p applies from, or o names
// MaxOperationJobs jobs already and p adds another.
func (o Operation) Refusal(p OperationUpdateParams) error {
	from := p.FromStates()
	for _, s := range from {
		if string(o.State) == s {
			return fmt.Errorf("%w: operation %s names %d jobs, the most it may", jam.ErrConflict, o.ID, len(o.Jobs))
		}
	}
	return fmt.Errorf("%w: the operation is %s (the update applies from %s)", jam.ErrConflict, o.State, strings.Join(from, ", "))
}

// Canonical validates evidence to append and returns it in stored form:
// Seq 0 (the store assigns it), At at microsecond precision in UTC.
func (e Evidence) Canonical() (Evidence, error) {
	err := ValidateOperationRef(e.WorkspaceID, e.OperationID)
	if err == nil {
		err = validateName("evidence step", e.Step)
	}
	if err == nil {
		err = oneOf("evidence event", e.Event, evidenceEvents)
	}
	if err == nil {
		err = validateJSONBlob("evidence detail", e.Detail, MaxEvidenceDetail)
	}
	if err == nil && e.Detail != nil && !bytes.HasPrefix(bytes.TrimLeft(e.Detail, " \t\r\n"), []byte("{")) {
		err = fmt.Errorf("%w: evidence detail is not a JSON object", jam.ErrInvalid)
	}
	if err == nil && e.Detail != nil {
		err = ValidateText("evidence detail", string(e.Detail))
	}
	if err == nil {
		err = ValidateTime("evidence time", e.At)
	}
	if err != nil {
		return Evidence{}, err
	}
	e.Seq = 0
	e.At = e.At.UTC().Truncate(time.Microsecond)
	return e, nil
}

// Bound validates p and returns its limit (the default for 0).
func (p OperationListParams) Bound() (int, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
		return 0, err
	}
	if p.Kind != "" {
		if err := validateName("operation kind", p.Kind); err != nil {
			return 0, err
		}
	}
	if err := validateBounded("operation subject", p.Subject, MaxOperationSubjectLen); err != nil {
		return 0, err
	}
	return listBound(p.Limit, DefaultOperationLimit, MaxOperationLimit)
}

// listBound is a list's limit: the default for 0, else 1 to max.
func listBound(limit, def, max int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > max:
		return 0, fmt.Errorf("%w: limit %d is outside 1 to %d", jam.ErrInvalid, limit, max)
	}
	return limit, nil
}

// ValidateDeliveryState accepts a known state.
func ValidateDeliveryState(s DeliveryState) error { return oneOf("delivery state", s, deliveryStates) }

// ValidateDeliveryRef checks the (workspace, delivery) pair a lookup
// takes.
func ValidateDeliveryRef(ws jam.WorkspaceID, id jam.DeliveryID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.DeliveryID](string(id))
	return err
}

// ValidateDeliveryRemote accepts where a branch is pushed: an https or
// ssh URL or a local path, of at most MaxDeliveryRemoteLen bytes on one
// line, never holding a credential. A URL (anything with "://") must
// parse, may not carry a password in its userinfo, nor, over http(s), any
// userinfo at all (a token as the user name is a credential too), nor a
// query or a fragment. The error never repeats the remote: it may hold a
// secret.
func ValidateDeliveryRemote(v string) error {
	if v == "" {
		return fmt.Errorf("%w: remote is empty", jam.ErrInvalid)
	}
	if err := validateLine("remote", v, MaxDeliveryRemoteLen); err != nil {
		return err
	}
	if !strings.Contains(v, "://") {
		return nil
	}
	if strings.ContainsAny(v, "?#") {
		return fmt.Errorf("%w: the remote URL has a query or fragment", jam.ErrInvalid)
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || u.Scheme == "" || u.Opaque != "":
		return fmt.Errorf("%w: the remote is not a URL", jam.ErrInvalid)
	case u.User != nil && func() bool { _, ok := u.User.Password(); return ok }():
		return fmt.Errorf("%w: the remote URL holds a password; give the credential as a connection", jam.ErrInvalid)
	case u.User != nil && (u.Scheme == "http" || u.Scheme == "https"):
		return fmt.Errorf("%w: the remote URL holds userinfo; give the credential as a connection", jam.ErrInvalid)
	}
	return nil
}

// validateBranch accepts a branch name of at most MaxDeliveryBranchLen
// bytes without whitespace or control characters, not starting with "-".
func validateBranch(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	if err := validateBounded(field, v, MaxDeliveryBranchLen); err != nil {
		return err
	}
	if v[0] == '-' {
		return fmt.Errorf("%w: %s %q starts with a dash", jam.ErrInvalid, field, clipText(v))
	}
	for _, r := range v {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\ufeff' {
			return fmt.Errorf("%w: %s %q holds whitespace or a control character", jam.ErrInvalid, field, clipText(v))
		}
	}
	return nil
}

// ValidateRepo accepts OWNER/NAME: an owner of [A-Za-z0-9-]{1,39}, a name
// of [A-Za-z0-9._-]{1,100}.
func ValidateRepo(v string) error {
	owner, name, ok := strings.Cut(v, "/")
	ok = ok && len(owner) >= 1 && len(owner) <= 39 && len(name) >= 1 && len(name) <= 100
	for i := 0; ok && i < len(owner); i++ {
		c := owner[i]
		ok = isAlnum(c) || c == '-'
	}
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = isAlnum(c) || c == '.' || c == '_' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: repository %q is not OWNER/NAME", jam.ErrInvalid, clipText(v))
	}
	return nil
}

func isAlnum(c byte) bool { return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') }

// Canonical validates a delivery to create and returns it in stored
// form: pending when State is "", Generation 1, UpdatedAt CreatedAt,
// times at microsecond precision in UTC. A pull request (PR) needs Repo
// and Base; Repo, Base and Title are checked whenever they are given.
func (d Delivery) Canonical() (Delivery, error) {
	if d.State == "" {
		d.State = DeliveryPending
	}
	err := ValidateDeliveryRef(d.WorkspaceID, d.ID)
	if err == nil {
		_, err = jam.ParseID[jam.ChangeSetID](string(d.ChangeSetID))
	}
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(d.SessionID))
	}
	if err == nil {
		err = validateTurnRef(d.Turn)
	}
	if err == nil && d.ConnectionID != "" {
		_, err = jam.ParseID[jam.ConnectionID](string(d.ConnectionID))
	}
	if err == nil {
		err = ValidateDeliveryRemote(d.Remote)
	}
	if err == nil {
		err = validateBranch("branch", d.Branch)
	}
	if err == nil && (d.PR || d.Repo != "") {
		err = ValidateRepo(d.Repo)
	}
	if err == nil && (d.PR || d.Base != "") {
		err = validateBranch("base", d.Base)
	}
	if err == nil {
		err = validateLine("title", d.Title, MaxDeliveryTitleLen)
	}
	if err == nil {
		err = ValidateConnectionBaseURL(d.APIBaseURL)
	}
	if err == nil {
		_, err = jam.ParseID[jam.OperationID](string(d.Operation))
	}
	if err == nil {
		err = ValidateTime("created at", d.CreatedAt)
	}
	if err == nil {
		err = d.validateOutcome()
	}
	if err != nil {
		return Delivery{}, err
	}
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Microsecond)
	d.UpdatedAt = d.CreatedAt
	if !d.FollowedAt.IsZero() {
		d.FollowedAt = d.FollowedAt.UTC().Truncate(time.Microsecond)
	}
	d.Generation = 1
	return d, nil
}

// ValidateUpdate checks a delivery's update: its reference, its outcome
// fields, the Generation it is fenced by and UpdatedAt.
func (d Delivery) ValidateUpdate() error {
	err := ValidateDeliveryRef(d.WorkspaceID, d.ID)
	if err == nil {
		err = d.validateOutcome()
	}
	if err == nil {
		err = validateGeneration(d.Generation)
	}
	if err == nil {
		err = ValidateTime("updated at", d.UpdatedAt)
	}
	return err
}

// validateOutcome checks the outcome fields of a delivery.
func (d Delivery) validateOutcome() error {
	err := ValidateDeliveryState(d.State)
	if err == nil {
		err = validateCommit("commit", d.Commit, true)
	}
	if err == nil {
		err = validateCommit("remote sha", d.RemoteSHA, true)
	}
	if err == nil {
		err = validateCommit("pull request head sha", d.PRHeadSHA, true)
	}
	if err == nil && d.PRNumber < 0 {
		err = fmt.Errorf("%w: pull request number %d is negative", jam.ErrInvalid, d.PRNumber)
	}
	if err == nil {
		err = validateLine("pull request url", d.PRURL, MaxDeliveryPRURLLen)
	}
	if err == nil {
		err = oneOf("pull request state", d.PRState, prStates)
	}
	if err == nil {
		err = oneOf("checks state", d.Checks, checkStates)
	}
	if err == nil {
		err = validateFailure(d.ErrorCode, d.Error, MaxDeliveryErrorLen)
	}
	return err
}

// Refusal says why an update fenced by generation changed nothing
// (wrapping jam.ErrConflict): d, as stored, is at another generation.
func (d Delivery) Refusal(generation int64) error {
	return fmt.Errorf("%w: generation %d, the delivery is at %d (%s)", jam.ErrConflict, generation, d.Generation, d.State)
}

// Bound validates p and returns its limit (the default for 0).
func (p DeliveryListParams) Bound() (int, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
		return 0, err
	}
	if p.ChangeSetID != "" {
		if _, err := jam.ParseID[jam.ChangeSetID](string(p.ChangeSetID)); err != nil {
			return 0, err
		}
	}
	if p.State != "" {
		if err := ValidateDeliveryState(p.State); err != nil {
			return 0, err
		}
	}
	return listBound(p.Limit, DefaultDeliveryLimit, MaxDeliveryLimit)
}
