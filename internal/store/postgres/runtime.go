package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The owned runtimes (migrations 0006, 0009-0012, 0014-0016): templates,
// sessions and worktrees here; turns, session messages and executions in
// runtime_turn.go; leases in runtime_lease.go; output, usage and
// retention in their own runtime_*.go files. Each method behaves as the
// SQLite dialect's of the same name, with the same errors; where SQLite's
// single writer made an order of concurrent writes, a lock or a predicate
// of the write makes it here, named at each method.

// With the runtime aggregates every aggregate of the seam is
// implemented: the dialect is a whole store.
var _ store.Store = (*Store)(nil)

var (
	_ store.Templates = (*Store)(nil)
	_ store.Sessions  = (*Store)(nil)
	_ store.Worktrees = (*Store)(nil)
)

// SQL of templates, sessions and worktrees. Text keys are ordered with
// COLLATE "C", byte order, as SQLite orders them, whatever the
// database's collation.
const (
	templateColumns    = `id, workspace_id, profile, scope, desired, desired_generation, effective, effective_generation, pending_change, created_at, updated_at`
	templateInsert     = `INSERT INTO runtime_templates (` + templateColumns + `) VALUES ($1, $2, $3, $4, $5, 1, '{}', 0, 'created', $6, $6)`
	templateSelect     = `SELECT ` + templateColumns + ` FROM runtime_templates WHERE workspace_id = $1 AND id = $2`
	templateOfPeer     = `SELECT ` + templateColumns + ` FROM runtime_templates WHERE workspace_id = $1 AND profile = $2 AND scope = $3`
	templateAll        = `SELECT ` + templateColumns + ` FROM runtime_templates WHERE workspace_id = $1 ORDER BY profile COLLATE "C", scope COLLATE "C"`
	templateSetDesired = `UPDATE runtime_templates SET desired = $1, desired_generation = desired_generation + 1,
  pending_change = CASE WHEN pending_change = '' THEN $2 ELSE pending_change || '; ' || $2 END, updated_at = $3
WHERE workspace_id = $4 AND id = $5`
	templateSetApplied = `UPDATE runtime_templates SET effective = desired, effective_generation = desired_generation,
  pending_change = '', updated_at = $1 WHERE workspace_id = $2 AND id = $3 AND desired_generation = $4`

	sessionColumns = `id, workspace_id, template_id, profile, scope, room_id, lifecycle, provider_thread, created_at, updated_at, overrides, role`
	sessionInsert  = `INSERT INTO runtime_sessions (` + sessionColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11)`
	sessionSelect  = `SELECT ` + sessionColumns + ` FROM runtime_sessions WHERE workspace_id = $1 AND id = $2`
	// sessionLock reads a session and locks its row until the transaction
	// ends: the appends of its turns and messages, which number them
	// MAX(seq)+1, and its lifecycle moves take turns on it.
	sessionLock   = sessionSelect + ` FOR UPDATE`
	sessionOfRoom = `SELECT ` + sessionColumns + ` FROM runtime_sessions
WHERE workspace_id = $1 AND profile = $2 AND scope = $3 AND room_id = $4 AND lifecycle IN ('open', 'archived')
ORDER BY lifecycle = 'open' DESC, created_at DESC LIMIT 1`
	sessionAll       = `SELECT ` + sessionColumns + ` FROM runtime_sessions WHERE workspace_id = $1 ORDER BY created_at, id COLLATE "C"`
	sessionSetThread = `UPDATE runtime_sessions SET provider_thread = $1, updated_at = $2 WHERE workspace_id = $3 AND id = $4`
	sessionSetLife   = `UPDATE runtime_sessions SET lifecycle = $1, updated_at = $2 WHERE workspace_id = $3 AND id = $4 AND lifecycle = $5`

	worktreeColumns = `id, workspace_id, session_id, repo, path, branch, state, created_at, updated_at`
	worktreeUpsert  = `INSERT INTO worktrees (` + worktreeColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET path = excluded.path, branch = excluded.branch, state = excluded.state, updated_at = excluded.updated_at`
	worktreeOfSession = `SELECT ` + worktreeColumns + ` FROM worktrees WHERE workspace_id = $1 AND session_id = $2`
	worktreeByID      = `SELECT ` + worktreeColumns + ` FROM worktrees WHERE workspace_id = $1 AND id = $2`
	worktreeAll       = `SELECT ` + worktreeColumns + ` FROM worktrees WHERE workspace_id = $1 ORDER BY created_at, id COLLATE "C"`
	worktreeSetState  = `UPDATE worktrees SET state = $1, updated_at = $2 WHERE workspace_id = $3 AND id = $4 AND state = $5`
)

// notFoundAs maps pgx.ErrNoRows to jam.ErrNotFound with a description,
// and classifies any other error with mapErr.
func notFoundAs(err error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s", jam.ErrNotFound, what)
	}
	return mapErr(err)
}

// TemplatePut implements [store.Templates]. A new template's pending
// change is "created": nothing has run with it yet. A second template of
// a peer (or a taken id) is refused by the table's unique constraints.
func (s *Store) TemplatePut(ctx context.Context, t store.Template) (store.Template, error) {
	err := t.Validate()
	var desired string
	if err == nil {
		desired, err = encodeConfig(t.Desired)
	}
	if err != nil {
		return store.Template{}, fmt.Errorf("template put: %w", err)
	}
	if _, err := s.pool.Exec(ctx, templateInsert, t.ID, t.WorkspaceID, t.Peer.Profile, t.Peer.Scope, desired, micros(t.CreatedAt)); err != nil {
		if pgCode(err) == codeUniqueViolation {
			return store.Template{}, fmt.Errorf("template put: %w: peer %s already has a template", jam.ErrAlreadyExists, t.Peer)
		}
		return store.Template{}, fmt.Errorf("template put: %w", mapErr(err))
	}
	return s.TemplateGet(ctx, t.WorkspaceID, t.ID)
}

// encodeConfig validates and encodes a template configuration.
func encodeConfig(c store.TemplateConfig) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(c)
	return string(b), err
}

// TemplateGet implements [store.Templates].
func (s *Store) TemplateGet(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID) (store.Template, error) {
	t, err := scanTemplate(s.pool.QueryRow(ctx, templateSelect, ws, id))
	if err != nil {
		return store.Template{}, fmt.Errorf("template %s: %w", id, notFoundAs(err, "no such template"))
	}
	return t, nil
}

// TemplateForPeer implements [store.Templates].
func (s *Store) TemplateForPeer(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.Template, error) {
	t, err := scanTemplate(s.pool.QueryRow(ctx, templateOfPeer, ws, key.Profile, key.Scope))
	if err != nil {
		return store.Template{}, fmt.Errorf("template of %s: %w", key, notFoundAs(err, "the agent has no runtime template"))
	}
	return t, nil
}

// TemplateList implements [store.Templates].
func (s *Store) TemplateList(ctx context.Context, ws jam.WorkspaceID) ([]store.Template, error) {
	out, err := queryAll(ctx, s.pool, scanTemplate, templateAll, ws)
	if err != nil {
		return nil, fmt.Errorf("template list: %w", mapErr(err))
	}
	return out, nil
}

// TemplateConfigure implements [store.Templates]. The generation is
// bumped by the update itself, so concurrent changes each get their own.
func (s *Store) TemplateConfigure(ctx context.Context, p store.TemplateConfigureParams) (store.Template, error) {
	err := p.Validate()
	var desired string
	if err == nil {
		desired, err = encodeConfig(p.Desired)
	}
	if err != nil {
		return store.Template{}, fmt.Errorf("template configure: %w", err)
	}
	n, err := rowsAffected(ctx, s.pool, templateSetDesired, desired, p.Change, micros(p.At), p.WorkspaceID, p.ID)
	if err == nil && n == 0 {
		err = fmt.Errorf("%w: no such template", jam.ErrNotFound)
	}
	if err != nil {
		return store.Template{}, fmt.Errorf("template configure %s: %w", p.ID, mapErr(err))
	}
	return s.TemplateGet(ctx, p.WorkspaceID, p.ID)
}

// TemplateApplied implements [store.Templates]: the generation is a
// predicate of the update, so a change committed meanwhile makes it
// change nothing (jam.ErrConflict).
func (s *Store) TemplateApplied(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID, generation int64, at time.Time) (store.Template, error) {
	if err := store.ValidateTime("time", at); err != nil {
		return store.Template{}, fmt.Errorf("template applied %s: %w", id, err)
	}
	n, err := rowsAffected(ctx, s.pool, templateSetApplied, micros(at), ws, id, generation)
	if err != nil {
		return store.Template{}, fmt.Errorf("template applied %s: %w", id, mapErr(err))
	}
	if n == 0 {
		if _, err := s.TemplateGet(ctx, ws, id); err != nil {
			return store.Template{}, err
		}
		return store.Template{}, fmt.Errorf("template applied %s: %w: generation %d is no longer the desired one", id, jam.ErrConflict, generation)
	}
	return s.TemplateGet(ctx, ws, id)
}

func scanTemplate(row scanner) (store.Template, error) {
	var t store.Template
	var desired, effective string
	var created, updated int64
	err := row.Scan(&t.ID, &t.WorkspaceID, &t.Peer.Profile, &t.Peer.Scope, &desired, &t.DesiredGeneration, &effective, &t.EffectiveGeneration, &t.PendingChange, &created, &updated)
	if err != nil {
		return store.Template{}, err
	}
	if err := json.Unmarshal([]byte(desired), &t.Desired); err != nil {
		return store.Template{}, fmt.Errorf("decode desired configuration: %w", err)
	}
	if err := json.Unmarshal([]byte(effective), &t.Effective); err != nil {
		return store.Template{}, fmt.Errorf("decode effective configuration: %w", err)
	}
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	return t, nil
}

// SessionCreate implements [store.Sessions]. One open session per (peer,
// room) is the partial unique index runtime_sessions_open.
func (s *Store) SessionCreate(ctx context.Context, ss store.Session) (store.Session, error) {
	ss, err := ss.Canonical()
	var overrides string
	if err == nil {
		overrides, err = encodeOverrides(ss.Overrides)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("session create: %w", err)
	}
	_, err = s.pool.Exec(ctx, sessionInsert, ss.ID, ss.WorkspaceID, ss.TemplateID, ss.Peer.Profile, ss.Peer.Scope, ss.Room, ss.Lifecycle, ss.ProviderThread, micros(ss.CreatedAt), overrides, string(ss.Role))
	if err != nil {
		if pgCode(err) == codeUniqueViolation {
			return store.Session{}, fmt.Errorf("session create: %w: %s already has an open session in room %s", jam.ErrAlreadyExists, ss.Peer, ss.Room)
		}
		return store.Session{}, fmt.Errorf("session create: %w", mapErr(err))
	}
	return s.SessionGet(ctx, ss.WorkspaceID, ss.ID)
}

// SessionGet implements [store.Sessions].
func (s *Store) SessionGet(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID) (store.Session, error) {
	ss, err := scanSession(s.pool.QueryRow(ctx, sessionSelect, ws, id))
	if err != nil {
		return store.Session{}, fmt.Errorf("session %s: %w", id, notFoundAs(err, "no such session"))
	}
	return ss, nil
}

// SessionForRoom implements [store.Sessions].
func (s *Store) SessionForRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (store.Session, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err != nil {
		return store.Session{}, fmt.Errorf("session for room: %w", err)
	}
	ss, err := scanSession(s.pool.QueryRow(ctx, sessionOfRoom, ws, key.Profile, key.Scope, room))
	if err != nil {
		return store.Session{}, fmt.Errorf("session of %s in %s: %w", key, room, notFoundAs(err, "no open session"))
	}
	return ss, nil
}

// SessionList implements [store.Sessions].
func (s *Store) SessionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Session, error) {
	out, err := queryAll(ctx, s.pool, scanSession, sessionAll, ws)
	if err != nil {
		return nil, fmt.Errorf("session list: %w", mapErr(err))
	}
	return out, nil
}

// SessionSetThread implements [store.Sessions].
func (s *Store) SessionSetThread(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID, thread string, at time.Time) error {
	if err := store.ValidateSessionThread(thread, at); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	n, err := rowsAffected(ctx, s.pool, sessionSetThread, thread, micros(at), ws, id)
	if err == nil && n == 0 {
		err = fmt.Errorf("%w: no such session", jam.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", id, mapErr(err))
	}
	return nil
}

// SessionSetLifecycle implements [store.Sessions]: From is a predicate of
// the update, so of two concurrent moves from one state one wins and the
// other is jam.ErrConflict.
func (s *Store) SessionSetLifecycle(ctx context.Context, p store.SessionSetLifecycleParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("session %s: %w", p.ID, err)
	}
	n, err := rowsAffected(ctx, s.pool, sessionSetLife, p.To, micros(p.At), p.WorkspaceID, p.ID, p.From)
	if err != nil {
		return fmt.Errorf("session %s: %w", p.ID, mapErr(err))
	}
	if n == 1 {
		return nil
	}
	cur, err := s.SessionGet(ctx, p.WorkspaceID, p.ID)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: session %s is %s, not %s", jam.ErrConflict, p.ID, cur.Lifecycle, p.From)
}

func scanSession(row scanner) (store.Session, error) {
	var ss store.Session
	var created, updated int64
	var overrides string
	err := row.Scan(&ss.ID, &ss.WorkspaceID, &ss.TemplateID, &ss.Peer.Profile, &ss.Peer.Scope, &ss.Room, &ss.Lifecycle, &ss.ProviderThread, &created, &updated, &overrides, &ss.Role)
	if err != nil {
		return ss, err
	}
	ss.CreatedAt, ss.UpdatedAt = fromMicros(created), fromMicros(updated)
	if err := json.Unmarshal([]byte(overrides), &ss.Overrides); err != nil {
		return ss, fmt.Errorf("decode session overrides: %w", err)
	}
	return ss, nil
}

// encodeOverrides checks a session's overrides and gives their JSON.
func encodeOverrides(o store.SessionOverrides) (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	b, err := json.Marshal(o)
	return string(b), err
}

// WorktreePut implements [store.Worktrees]. One worktree per session is
// the unique constraint on session_id.
func (s *Store) WorktreePut(ctx context.Context, w store.Worktree) (store.Worktree, error) {
	if err := w.Validate(); err != nil {
		return store.Worktree{}, fmt.Errorf("worktree put: %w", err)
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	_, err := s.pool.Exec(ctx, worktreeUpsert, w.ID, w.WorkspaceID, w.SessionID, w.Repo, w.Path, w.Branch, w.State, micros(w.CreatedAt), micros(w.UpdatedAt))
	if err != nil {
		if pgCode(err) == codeUniqueViolation {
			return store.Worktree{}, fmt.Errorf("worktree put: %w: session %s already has a worktree", jam.ErrAlreadyExists, w.SessionID)
		}
		return store.Worktree{}, fmt.Errorf("worktree put: %w", mapErr(err))
	}
	return s.WorktreeForSession(ctx, w.WorkspaceID, w.SessionID)
}

// WorktreeForSession implements [store.Worktrees].
func (s *Store) WorktreeForSession(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (store.Worktree, error) {
	w, err := scanWorktree(s.pool.QueryRow(ctx, worktreeOfSession, ws, session))
	if err != nil {
		return store.Worktree{}, fmt.Errorf("worktree of %s: %w", session, notFoundAs(err, "no worktree"))
	}
	return w, nil
}

// WorktreeList implements [store.Worktrees].
func (s *Store) WorktreeList(ctx context.Context, ws jam.WorkspaceID) ([]store.Worktree, error) {
	out, err := queryAll(ctx, s.pool, scanWorktree, worktreeAll, ws)
	if err != nil {
		return nil, fmt.Errorf("worktree list: %w", mapErr(err))
	}
	return out, nil
}

// WorktreeSetState implements [store.Worktrees]: From is a predicate of
// the update.
func (s *Store) WorktreeSetState(ctx context.Context, p store.WorktreeSetStateParams) (store.Worktree, error) {
	if err := p.Validate(); err != nil {
		return store.Worktree{}, fmt.Errorf("worktree %s: %w", p.ID, err)
	}
	n, err := rowsAffected(ctx, s.pool, worktreeSetState, p.To, micros(p.At), p.WorkspaceID, p.ID, p.From)
	if err != nil {
		return store.Worktree{}, fmt.Errorf("worktree %s: %w", p.ID, mapErr(err))
	}
	w, gerr := scanWorktree(s.pool.QueryRow(ctx, worktreeByID, p.WorkspaceID, p.ID))
	if gerr != nil {
		return store.Worktree{}, fmt.Errorf("worktree %s: %w", p.ID, notFoundAs(gerr, "no such worktree"))
	}
	if n == 0 {
		return store.Worktree{}, fmt.Errorf("worktree %s %s→%s: %w: it is %s", p.ID, p.From, p.To, jam.ErrConflict, w.State)
	}
	return w, nil
}

func scanWorktree(row scanner) (store.Worktree, error) {
	var w store.Worktree
	var created, updated int64
	err := row.Scan(&w.ID, &w.WorkspaceID, &w.SessionID, &w.Repo, &w.Path, &w.Branch, &w.State, &created, &updated)
	w.CreatedAt, w.UpdatedAt = fromMicros(created), fromMicros(updated)
	return w, err
}
