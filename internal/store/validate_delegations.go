package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the delegations aggregate.

// Bounds of a delegation and its result.
const (
	MaxDelegationInstructions = 32 << 10
	MaxDelegationContract     = 64 << 10
	MaxDelegationResult       = 256 << 10
	MaxDelegationAttempts     = 10
	MaxDelegationErrorLen     = 4 << 10
	DefaultDelegationLimit    = 100
	MaxDelegationLimit        = 500
)

// ReasonAttemptsExhausted is the Reason of a delegation failed by its
// last invalid submission.
const ReasonAttemptsExhausted = "attempts_exhausted"

var (
	delegationStates = []DelegationState{DelegationPending, DelegationRunning, DelegationSubmitted, DelegationFailed, DelegationCancelled}
	contractNames    = []string{ContractReview, ContractTest, ContractCustom}
)

// ValidateDelegationRef checks the (workspace, delegation) pair a lookup
// takes.
func ValidateDelegationRef(ws jam.WorkspaceID, id jam.DelegationID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.DelegationID](string(id))
	return err
}

// Validate checks the pinned inputs.
func (in DelegationInputs) Validate() error {
	if in.ChangeSetID != "" {
		if _, err := jam.ParseID[jam.ChangeSetID](string(in.ChangeSetID)); err != nil {
			return err
		}
	}
	return validateCommit("input commit", in.Commit, true)
}

// validateJSONObject accepts a JSON object of at most maxLen bytes in
// valid UTF-8.
func validateJSONObject(field string, b []byte, maxLen int) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	if err := validateJSONBlob(field, b, maxLen); err != nil {
		return err
	}
	if !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) {
		return fmt.Errorf("%w: %s is not a JSON object", jam.ErrInvalid, field)
	}
	return ValidateText(field, string(b))
}

// Canonical validates a delegation to create and returns it in stored
// form: pending, no child, no attempt, Generation 1, UpdatedAt CreatedAt,
// times at microsecond precision in UTC. State must be "" or pending.
func (d Delegation) Canonical() (Delegation, error) {
	if d.State == "" {
		d.State = DelegationPending
	}
	err := ValidateDelegationRef(d.WorkspaceID, d.ID)
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(d.Parent))
	}
	if err == nil && d.Child != "" {
		err = fmt.Errorf("%w: a delegation is created without a child (DelegationSetChild sets it)", jam.ErrInvalid)
	}
	if err == nil && d.State != DelegationPending {
		err = fmt.Errorf("%w: a delegation is created pending, not %q", jam.ErrInvalid, clipText(string(d.State)))
	}
	if err == nil {
		err = oneOf("role", d.Role, jam.SessionRoles)
	}
	if err == nil {
		_, err = jam.ParsePeerKey(d.Agent)
	}
	if err == nil && d.Instructions == "" {
		err = fmt.Errorf("%w: instructions are empty", jam.ErrInvalid)
	}
	if err == nil {
		err = validateBounded("instructions", d.Instructions, MaxDelegationInstructions)
	}
	if err == nil {
		err = d.Inputs.Validate()
	}
	if err == nil {
		err = validateJSONObject("contract", d.Contract, MaxDelegationContract)
	}
	if err == nil {
		err = oneOf("contract name", d.ContractName, contractNames)
	}
	if err == nil && (d.Reason != "" || d.Error != "") {
		err = fmt.Errorf("%w: a pending delegation has no failure", jam.ErrInvalid)
	}
	if err == nil && d.Attempts != 0 {
		err = fmt.Errorf("%w: a delegation is created with no attempt", jam.ErrInvalid)
	}
	if err == nil && (d.MaxAttempts < 1 || d.MaxAttempts > MaxDelegationAttempts) {
		err = fmt.Errorf("%w: max attempts %d is outside 1 to %d", jam.ErrInvalid, d.MaxAttempts, MaxDelegationAttempts)
	}
	if err == nil {
		err = ValidateTime("created at", d.CreatedAt)
	}
	if err != nil {
		return Delegation{}, err
	}
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Microsecond)
	d.UpdatedAt = d.CreatedAt
	d.Generation = 1
	return d, nil
}

// Encode is the stored form of the inputs: a JSON object.
func (in DelegationInputs) Encode() string {
	b, _ := json.Marshal(in) // two strings: never fails
	return string(b)
}

// DecodeDelegationInputs reverses DelegationInputs.Encode.
func DecodeDelegationInputs(s string) (DelegationInputs, error) {
	var in DelegationInputs
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return DelegationInputs{}, fmt.Errorf("delegation inputs: %w", err)
	}
	return in, nil
}

// Validate checks p.
func (p DelegationSetChildParams) Validate() error {
	err := ValidateDelegationRef(p.WorkspaceID, p.ID)
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(p.Child))
	}
	if err == nil {
		err = ValidateTime("update time", p.At)
	}
	return err
}

// Validate checks p.
func (p DelegationAttemptParams) Validate() error {
	err := ValidateDelegationRef(p.WorkspaceID, p.ID)
	if err == nil {
		err = validateGeneration(p.Generation)
	}
	if err == nil {
		err = ValidateTime("update time", p.At)
	}
	return err
}

// Canonical validates p and returns the result it stores: the bytes as
// given, their digest, At at microsecond precision in UTC.
func (p DelegationSubmitParams) Canonical() (DelegationResult, error) {
	err := ValidateDelegationRef(p.WorkspaceID, p.ID)
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(p.Child))
	}
	if err == nil {
		err = validateJSONObject("result", p.Result, MaxDelegationResult)
	}
	if err == nil {
		err = ValidateTime("submit time", p.At)
	}
	if err != nil {
		return DelegationResult{}, err
	}
	sum := sha256.Sum256(p.Result)
	return DelegationResult{DelegationID: p.ID, WorkspaceID: p.WorkspaceID, Result: p.Result, Digest: hex.EncodeToString(sum[:]),
		At: p.At.UTC().Truncate(time.Microsecond)}, nil
}

// Validate checks p.
func (p DelegationEndParams) Validate() error {
	err := ValidateDelegationRef(p.WorkspaceID, p.ID)
	if err == nil && p.Reason == "" {
		err = fmt.Errorf("%w: a reason is required", jam.ErrInvalid)
	}
	if err == nil {
		err = validateFailure(p.Reason, p.Error, MaxDelegationErrorLen)
	}
	if err == nil {
		err = ValidateTime("update time", p.At)
	}
	return err
}

// Bound validates p and returns its limit (the default for 0).
func (p DelegationListParams) Bound() (int, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
		return 0, err
	}
	if p.Parent != "" {
		if _, err := jam.ParseID[jam.SessionID](string(p.Parent)); err != nil {
			return 0, err
		}
	}
	if p.Child != "" {
		if _, err := jam.ParseID[jam.SessionID](string(p.Child)); err != nil {
			return 0, err
		}
	}
	if p.ChangeSet != "" {
		if _, err := jam.ParseID[jam.ChangeSetID](string(p.ChangeSet)); err != nil {
			return 0, err
		}
	}
	if p.State != "" {
		if err := oneOf("delegation state", p.State, delegationStates); err != nil {
			return 0, err
		}
	}
	return listBound(p.Limit, DefaultDelegationLimit, MaxDelegationLimit)
}

// Refusal says why a conditional write of d, as stored, changed nothing
// (wrapping jam.ErrConflict, or jam.ErrAlreadyExists for a second
// result): what names the write, want the states it applies from.
func (d Delegation) Refusal(what string, generation int64, want ...DelegationState) error {
	if what == "submit" && d.State == DelegationSubmitted {
		return fmt.Errorf("%w: delegation %s has its result already", jam.ErrAlreadyExists, d.ID)
	}
	if what == "submit" && d.State == DelegationRunning {
		return fmt.Errorf("%w: submit: the submitting session is not the child of delegation %s", jam.ErrConflict, d.ID)
	}
	for _, s := range want {
		if d.State == s {
			return fmt.Errorf("%w: %s: generation %d, the delegation is at %d (%s)", jam.ErrConflict, what, generation, d.Generation, d.State)
		}
	}
	return fmt.Errorf("%w: %s: the delegation is %s (want %v)", jam.ErrConflict, what, d.State, want)
}
