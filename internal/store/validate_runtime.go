package store

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the owned runtimes' records: templates, sessions,
// messages, turns, output, leases and worktrees.

// Validate checks a template to create (its desired configuration
// included).
func (t Template) Validate() error {
	err := ValidateScope(t.WorkspaceID, t.Peer)
	if err == nil {
		_, err = jam.ParseID[jam.TemplateID](string(t.ID))
	}
	if err == nil {
		err = t.Desired.Validate()
	}
	if err == nil {
		err = ValidateTime("created at", t.CreatedAt)
	}
	return err
}

// Validate checks a runtime configuration: a harness and a command, a
// known placement, allow, reject or ask as permission, storable text.
func (c TemplateConfig) Validate() error {
	if c.Harness == "" || len(c.Command) == 0 || c.Command[0] == "" {
		return fmt.Errorf("%w: a runtime configuration needs a harness and a command", jam.ErrInvalid)
	}
	if _, err := jam.ParseEnum("placement", string(c.Placement), jam.Placements); err != nil {
		return err
	}
	if c.Permission != "allow" && c.Permission != "reject" && c.Permission != "ask" {
		return fmt.Errorf("%w: permission %q (want allow, reject or ask)", jam.ErrInvalid, c.Permission)
	}
	for _, f := range append([]string{c.Harness, c.Model, c.Repo}, c.Command...) {
		if err := ValidateText("runtime configuration", f); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a change of a template's desired configuration.
func (p TemplateConfigureParams) Validate() error {
	err := p.Desired.Validate()
	if err == nil {
		err = ValidateTime("time", p.At)
	}
	if err == nil {
		err = ValidateRequiredText("change", p.Change)
	}
	return err
}

// Canonical checks a session to create and returns it with its room
// canonical, an empty lifecycle as jam.SessionOpen and an empty role as
// jam.RoleDeveloper.
func (ss Session) Canonical() (Session, error) {
	room, err := ValidateLane(ss.WorkspaceID, ss.Peer, ss.Room)
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(ss.ID))
	}
	if err == nil {
		_, err = jam.ParseID[jam.TemplateID](string(ss.TemplateID))
	}
	if err == nil {
		err = ValidateTime("created at", ss.CreatedAt)
	}
	if err == nil {
		err = ValidateText("provider thread", ss.ProviderThread)
	}
	if ss.Lifecycle == "" {
		ss.Lifecycle = jam.SessionOpen
	}
	if err == nil {
		_, err = jam.ParseEnum("session lifecycle", string(ss.Lifecycle), jam.SessionLifecycles)
	}
	if ss.Role == "" {
		ss.Role = jam.RoleDeveloper
	}
	if err == nil {
		_, err = jam.ParseSessionRole(string(ss.Role))
	}
	if err == nil {
		err = ss.Overrides.Validate()
	}
	if err != nil {
		return ss, err
	}
	ss.Room = room
	return ss, nil
}

// Validate checks a session's overrides: a command, when set, names a
// program; a repository is an absolute path; text is storable.
func (o SessionOverrides) Validate() error {
	if len(o.Command) > 0 && o.Command[0] == "" {
		return fmt.Errorf("%w: an overriding command needs a program", jam.ErrInvalid)
	}
	if o.Repo != "" && !filepath.IsAbs(o.Repo) {
		return fmt.Errorf("%w: overriding repository %q is not an absolute path", jam.ErrInvalid, o.Repo)
	}
	for _, f := range append([]string{o.Repo}, o.Command...) {
		if err := ValidateText("session overrides", f); err != nil {
			return err
		}
	}
	return nil
}

// ValidateSessionThread checks the provider thread recorded on a session.
func ValidateSessionThread(thread string, at time.Time) error {
	err := ValidateText("provider thread", thread)
	if err == nil {
		err = ValidateTime("time", at)
	}
	return err
}

// Validate checks a lifecycle move: known states, none out of closed.
func (p SessionSetLifecycleParams) Validate() error {
	_, err := jam.ParseEnum("session lifecycle", string(p.From), jam.SessionLifecycles)
	if err == nil {
		_, err = jam.ParseEnum("session lifecycle", string(p.To), jam.SessionLifecycles)
	}
	if err == nil && p.From == jam.SessionClosed {
		err = fmt.Errorf("%w: a closed session stays closed", jam.ErrInvalid)
	}
	if err == nil {
		err = ValidateTime("time", p.At)
	}
	return err
}

// Canonical checks a turn to enqueue and returns it with its source
// message id canonical.
func (t Turn) Canonical() (Turn, error) {
	_, err := jam.ParseID[jam.TurnID](string(t.ID))
	if err == nil {
		_, err = jam.ParseEnum("routing", string(t.Routing), jam.Routings)
	}
	if err == nil && t.SourceMessageID != "" {
		t.SourceMessageID, err = parseMessageID(t.SourceMessageID)
	}
	if err == nil && t.MessageID != "" {
		_, err = jam.ParseID[jam.MessageID](string(t.MessageID))
	}
	if err == nil {
		err = ValidateTime("created at", t.CreatedAt)
	}
	return t, err
}

// Canonical checks a session message to accept and returns it with its
// source message id canonical: known routings, text or a source message,
// and a requested routing that is the effective one or a steer taking
// effect as queue.
func (m SessionMessage) Canonical() (SessionMessage, error) {
	_, err := jam.ParseID[jam.MessageID](string(m.ID))
	if err == nil {
		_, err = jam.ParseEnum("routing", string(m.Routing), jam.Routings)
	}
	if err == nil {
		_, err = jam.ParseEnum("requested routing", string(m.Requested), jam.Routings)
	}
	if err == nil && m.SourceMessageID != "" {
		m.SourceMessageID, err = parseMessageID(m.SourceMessageID)
	}
	if err == nil {
		err = ValidateText("text", m.Text)
	}
	if err == nil && m.Text == "" && m.SourceMessageID == "" {
		err = fmt.Errorf("%w: a message needs text", jam.ErrInvalid)
	}
	if err == nil {
		err = ValidateTime("created at", m.CreatedAt)
	}
	if err == nil && m.Requested != m.Routing && (m.Requested != jam.RoutingSteer || m.Routing != jam.RoutingQueue) {
		err = fmt.Errorf("%w: a %s message cannot take effect as %s", jam.ErrInvalid, m.Requested, m.Routing)
	}
	return m, err
}

// Validate checks a turn move without reading the turn: a move the state
// machine allows, a time, storable reason, a detail and usage only with a
// move to a terminal state, notes consumed only by a move to running, an
// execution id with a move from queued to preparing. The fence (state,
// lease id and generation, live lease) is the dialect's to check, in the
// same transaction as the write.
func (p TurnTransitionParams) Validate() error {
	if !p.From.CanMoveTo(p.To) {
		return fmt.Errorf("%w: %s cannot move to %s", jam.ErrInvalid, p.From, p.To)
	}
	if err := ValidateTime("time", p.At); err != nil {
		return err
	}
	if err := ValidateText("reason", p.Reason); err != nil {
		return err
	}
	if p.Detail != "" && !p.To.Terminal() {
		return fmt.Errorf("%w: only a move to a terminal state carries a detail", jam.ErrInvalid)
	}
	if len(p.ConsumeNotes) > 0 && p.To != jam.TurnRunning {
		return fmt.Errorf("%w: notes are consumed by a turn moving to running", jam.ErrInvalid)
	}
	if p.Usage != nil {
		if !p.To.Terminal() {
			return fmt.Errorf("%w: only a move to a terminal state carries usage", jam.ErrInvalid)
		}
		if err := p.Usage.Validate(); err != nil {
			return err
		}
		if err := ValidateText("model", p.Usage.Model); err != nil {
			return err
		}
	}
	if p.From == jam.TurnQueued && p.To == jam.TurnPreparing {
		if _, err := jam.ParseID[jam.ExecutionID](string(p.Execution)); err != nil {
			return fmt.Errorf("execution: %w", err)
		}
	}
	return nil
}

// Validate checks a batch of turn output to store.
func (p TurnOutputAppendParams) Validate() error {
	if _, err := jam.ParseID[jam.WorkspaceID](string(p.WorkspaceID)); err != nil {
		return err
	}
	if _, err := jam.ParseID[jam.TurnID](string(p.TurnID)); err != nil {
		return err
	}
	if p.Batch < 1 {
		return fmt.Errorf("%w: batch %d (batches are numbered from 1)", jam.ErrInvalid, p.Batch)
	}
	if len(p.Updates) == 0 {
		return fmt.Errorf("%w: batch %d is empty", jam.ErrInvalid, p.Batch)
	}
	for i, u := range p.Updates {
		if u.Kind == "" {
			return fmt.Errorf("%w: update %d has no kind", jam.ErrInvalid, i)
		}
	}
	return ValidateTime("at", p.At)
}

// Validate checks a lease to acquire.
func (p LeaseAcquireParams) Validate() error {
	_, err := jam.ParseID[jam.LeaseID](string(p.ID))
	if err == nil {
		err = ValidateRequiredText("holder", p.Holder)
	}
	if err == nil {
		err = ValidateTime("time", p.At)
	}
	return err
}

// ValidateLeaseEnd checks the reason and time a lease ends with.
func ValidateLeaseEnd(reason string, at time.Time) error {
	err := ValidateText("reason", reason)
	if err == nil {
		err = ValidateTime("time", at)
	}
	return err
}

// Validate checks a worktree to record.
func (w Worktree) Validate() error {
	_, err := jam.ParseID[jam.WorktreeID](string(w.ID))
	if err == nil {
		_, err = jam.ParseID[jam.SessionID](string(w.SessionID))
	}
	if err == nil {
		err = ValidateRequiredText("path", w.Path)
	}
	if err == nil {
		err = ValidateText("repository", w.Repo)
	}
	if err == nil {
		err = ValidateText("branch", w.Branch)
	}
	if err == nil {
		err = ValidateTime("created at", w.CreatedAt)
	}
	if err == nil {
		err = ValidateWorktreeState(w.State)
	}
	return err
}

// Validate checks a worktree state move.
func (p WorktreeSetStateParams) Validate() error {
	err := ValidateTime("time", p.At)
	if err == nil {
		err = ValidateWorktreeState(p.From)
	}
	if err == nil {
		err = ValidateWorktreeState(p.To)
	}
	return err
}

// ValidateWorktreeState accepts WorktreeActive, WorktreeArchived and
// WorktreeRemoved.
func ValidateWorktreeState(state string) error {
	switch state {
	case WorktreeActive, WorktreeArchived, WorktreeRemoved:
		return nil
	}
	return fmt.Errorf("%w: worktree state %q", jam.ErrInvalid, state)
}
