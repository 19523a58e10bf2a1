package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the jobs aggregate.

// Bounds of a job.
const (
	MaxJobKindLen    = 64
	MaxJobKeyLen     = 256
	MaxJobPayload    = 64 << 10
	MaxJobResult     = 64 << 10
	MaxJobError      = 4 << 10
	MaxJobAttempts   = 100
	MaxJobOwnerLen   = 128
	MaxJobClaimKinds = 32
	MaxJobLease      = 24 * time.Hour
	DefaultJobLimit  = 100
	MaxJobLimit      = 500
)

var jobStates = []JobState{JobQueued, JobRunning, JobSucceeded, JobFailed, JobDead, JobCancelled}

// ValidateJobKind accepts [a-z][a-z0-9_.]{0,63}.
func ValidateJobKind(kind string) error {
	ok := len(kind) >= 1 && len(kind) <= MaxJobKindLen && kind[0] >= 'a' && kind[0] <= 'z'
	for i := 1; ok && i < len(kind); i++ {
		c := kind[i]
		ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'
	}
	if !ok {
		return fmt.Errorf("%w: job kind %q is not [a-z][a-z0-9_.]{0,%d}", jam.ErrInvalid, kind, MaxJobKindLen-1)
	}
	return nil
}

// ValidateJobState accepts a known state.
func ValidateJobState(s JobState) error { return oneOf("job state", s, jobStates) }

// ValidateJobRef checks the (workspace, job) pair a lookup takes.
func ValidateJobRef(ws jam.WorkspaceID, id jam.JobID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.JobID](string(id))
	return err
}

// validateJSONBlob accepts nil, or valid JSON of at most max bytes.
func validateJSONBlob(field string, b []byte, maxLen int) error {
	if len(b) > maxLen {
		return fmt.Errorf("%w: %s is %d bytes (at most %d)", jam.ErrInvalid, field, len(b), maxLen)
	}
	if b != nil && !json.Valid(b) {
		return fmt.Errorf("%w: %s is not JSON", jam.ErrInvalid, field)
	}
	return nil
}

// Canonical validates a job to enqueue and returns it in stored form:
// queued, no attempt, no claim, RunAfter defaulted to CreatedAt,
// UpdatedAt CreatedAt, times at microsecond precision in UTC.
func (j Job) Canonical() (Job, error) {
	err := ValidateJobRef(j.WorkspaceID, j.ID)
	if err == nil {
		err = ValidateJobKind(j.Kind)
	}
	if err == nil && len(j.IdempotencyKey) > MaxJobKeyLen {
		err = fmt.Errorf("%w: idempotency key is %d bytes (at most %d)", jam.ErrInvalid, len(j.IdempotencyKey), MaxJobKeyLen)
	}
	if err == nil {
		err = ValidateText("idempotency key", j.IdempotencyKey)
	}
	if err == nil {
		err = validateJSONBlob("job payload", j.Payload, MaxJobPayload)
	}
	if err == nil && (j.MaxAttempts < 1 || j.MaxAttempts > MaxJobAttempts) {
		err = fmt.Errorf("%w: max attempts %d is outside 1 to %d", jam.ErrInvalid, j.MaxAttempts, MaxJobAttempts)
	}
	if err == nil {
		err = ValidateTime("created at", j.CreatedAt)
	}
	if err != nil {
		return Job{}, err
	}
	j.CreatedAt = j.CreatedAt.UTC().Truncate(time.Microsecond)
	if j.RunAfter.IsZero() {
		j.RunAfter = j.CreatedAt
	}
	j.RunAfter = j.RunAfter.UTC().Truncate(time.Microsecond)
	j.UpdatedAt = j.CreatedAt
	j.State, j.Attempt, j.Owner, j.Generation, j.LeaseUntil = JobQueued, 0, "", 0, time.Time{}
	j.Result, j.Error = nil, ""
	return j, nil
}

// Validate checks a claim.
func (p JobClaimParams) Validate() error {
	err := ValidateWorkspaceID(p.WorkspaceID)
	if err == nil && (len(p.Kinds) == 0 || len(p.Kinds) > MaxJobClaimKinds) {
		err = fmt.Errorf("%w: a claim names %d kinds (1 to %d)", jam.ErrInvalid, len(p.Kinds), MaxJobClaimKinds)
	}
	for _, k := range p.Kinds {
		if err != nil {
			break
		}
		err = ValidateJobKind(k)
	}
	if err == nil {
		err = validateJobOwner(p.Owner)
	}
	if err == nil && (p.Lease <= 0 || p.Lease > MaxJobLease) {
		err = fmt.Errorf("%w: lease %s is outside (0, %s]", jam.ErrInvalid, p.Lease, MaxJobLease)
	}
	if err == nil && p.Lease < time.Microsecond {
		err = fmt.Errorf("%w: lease %s is below a microsecond", jam.ErrInvalid, p.Lease)
	}
	if err == nil {
		err = ValidateTime("claim time", p.At)
	}
	return err
}

func validateJobOwner(owner string) error {
	if len(owner) > MaxJobOwnerLen {
		return fmt.Errorf("%w: job owner is %d bytes (at most %d)", jam.ErrInvalid, len(owner), MaxJobOwnerLen)
	}
	return ValidateRequiredText("job owner", owner)
}

func validateGeneration(g int64) error {
	if g < 1 {
		return fmt.Errorf("%w: generation %d is below 1 (a claim's generation)", jam.ErrInvalid, g)
	}
	return nil
}

// ValidateJobHeartbeat checks the arguments of Jobs.JobHeartbeat.
func ValidateJobHeartbeat(ws jam.WorkspaceID, id jam.JobID, generation int64, leaseUntil time.Time) error {
	err := ValidateJobRef(ws, id)
	if err == nil {
		err = validateGeneration(generation)
	}
	if err == nil {
		err = ValidateTime("lease until", leaseUntil)
	}
	return err
}

// Validate checks a completion.
func (p JobCompleteParams) Validate() error {
	err := ValidateJobRef(p.WorkspaceID, p.ID)
	if err == nil {
		err = validateGeneration(p.Generation)
	}
	if err == nil {
		err = validateJSONBlob("job result", p.Result, MaxJobResult)
	}
	if err == nil {
		err = ValidateTime("completion time", p.At)
	}
	return err
}

// Canonical validates a failure and returns it with a zero RetryAt
// defaulted to At.
func (p JobFailParams) Canonical() (JobFailParams, error) {
	err := ValidateJobRef(p.WorkspaceID, p.ID)
	if err == nil {
		err = validateGeneration(p.Generation)
	}
	if err == nil && len(p.Error) > MaxJobError {
		err = fmt.Errorf("%w: job error is %d bytes (at most %d)", jam.ErrInvalid, len(p.Error), MaxJobError)
	}
	if err == nil {
		err = ValidateText("job error", p.Error)
	}
	if err == nil {
		err = ValidateTime("failure time", p.At)
	}
	if err != nil {
		return JobFailParams{}, err
	}
	if p.RetryAt.IsZero() {
		p.RetryAt = p.At
	}
	return p, nil
}

// ValidateJobExpireOwner checks the arguments of Jobs.JobExpireOwner.
func ValidateJobExpireOwner(ws jam.WorkspaceID, owner string, at time.Time) error {
	err := ValidateWorkspaceID(ws)
	if err == nil {
		err = validateJobOwner(owner)
	}
	if err == nil {
		err = ValidateTime("expiry time", at)
	}
	return err
}

// ValidateJobMove checks the arguments of Jobs.JobCancel and Jobs.JobRetry.
func ValidateJobMove(ws jam.WorkspaceID, id jam.JobID, at time.Time) error {
	err := ValidateJobRef(ws, id)
	if err == nil {
		err = ValidateTime("time", at)
	}
	return err
}

// Bound validates p and returns its limit (the default for 0).
func (p JobListParams) Bound() (int, error) {
	if err := ValidateWorkspaceID(p.WorkspaceID); err != nil {
		return 0, err
	}
	if p.State != "" {
		if err := ValidateJobState(p.State); err != nil {
			return 0, err
		}
	}
	if p.Kind != "" {
		if err := ValidateJobKind(p.Kind); err != nil {
			return 0, err
		}
	}
	switch {
	case p.Limit == 0:
		return DefaultJobLimit, nil
	case p.Limit < 0 || p.Limit > MaxJobLimit:
		return 0, fmt.Errorf("%w: limit %d is outside 1 to %d", jam.ErrInvalid, p.Limit, MaxJobLimit)
	}
	return p.Limit, nil
}
