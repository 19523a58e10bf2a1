package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of owned runtimes (migration 0006).
const (
	templateColumns    = `id, workspace_id, profile, scope, desired, desired_generation, effective, effective_generation, pending_change, created_at, updated_at`
	templateInsert     = `INSERT INTO runtime_templates (` + templateColumns + `) VALUES (?, ?, ?, ?, ?, 1, '{}', 0, 'created', ?, ?)`
	templateSelect     = `SELECT ` + templateColumns + ` FROM runtime_templates WHERE workspace_id = ? AND id = ?`
	templateOfPeer     = `SELECT ` + templateColumns + ` FROM runtime_templates WHERE workspace_id = ? AND profile = ? AND scope = ?`
	templateAll        = `SELECT ` + templateColumns + ` FROM runtime_templates WHERE workspace_id = ? ORDER BY profile, scope`
	templateSetDesired = `UPDATE runtime_templates SET desired = ?, desired_generation = desired_generation + 1,
  pending_change = CASE WHEN pending_change = '' THEN ? ELSE pending_change || '; ' || ? END, updated_at = ?
WHERE workspace_id = ? AND id = ?`
	templateSetApplied = `UPDATE runtime_templates SET effective = desired, effective_generation = desired_generation,
  pending_change = '', updated_at = ? WHERE workspace_id = ? AND id = ? AND desired_generation = ?`

	// overrides: migration 0012.
	sessionColumns = `id, workspace_id, template_id, profile, scope, room_id, lifecycle, provider_thread, created_at, updated_at, overrides, role`
	sessionInsert  = `INSERT INTO runtime_sessions (` + sessionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sessionSelect  = `SELECT ` + sessionColumns + ` FROM runtime_sessions WHERE workspace_id = ? AND id = ?`
	sessionOfRoom  = `SELECT ` + sessionColumns + ` FROM runtime_sessions
WHERE workspace_id = ? AND profile = ? AND scope = ? AND room_id = ? AND lifecycle IN ('open', 'archived')
ORDER BY lifecycle = 'open' DESC, created_at DESC LIMIT 1`
	sessionAll       = `SELECT ` + sessionColumns + ` FROM runtime_sessions WHERE workspace_id = ? ORDER BY created_at, id`
	sessionSetThread = `UPDATE runtime_sessions SET provider_thread = ?, updated_at = ? WHERE workspace_id = ? AND id = ?`
	sessionSetLife   = `UPDATE runtime_sessions SET lifecycle = ?, updated_at = ? WHERE workspace_id = ? AND id = ? AND lifecycle = ?`

	// detail: migration 0014.
	turnColumns = `id, workspace_id, session_id, seq, routing, source_message_id, state, reason, lease_id, lease_generation, created_at, updated_at, message_id, detail`
	turnInsert  = `INSERT INTO turns (` + turnColumns + `)
SELECT ?, ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, 'queued', '', '', 0, ?, ?, ?, '' FROM turns WHERE session_id = ?
RETURNING seq`
	turnSelect    = `SELECT ` + turnColumns + ` FROM turns WHERE workspace_id = ? AND id = ?`
	turnOfSession = `SELECT ` + turnColumns + ` FROM turns WHERE workspace_id = ? AND session_id = ? ORDER BY seq`
	// turnMove is a turn's move, fenced in its WHERE: the turn is in the
	// move's from state (?10); an active turn (?11) runs on the writer's
	// lease and generation; and where the move needs it (?12: a start, or
	// an active turn's move other than to interrupted) that lease is the
	// live one. A start (?4) binds the turn to the lease. No row is a
	// refused move, which turnRefused tells apart. PostgreSQL: the same
	// statement under READ COMMITTED re-checks the turn's predicate on the
	// row version it locks; the lease subquery must lock the lease row
	// (FOR SHARE), so that a concurrent LeaseAcquire ending it is waited
	// for and seen.
	turnMove = `UPDATE turns SET state = ?1, reason = ?2, detail = ?3,
  lease_id = CASE WHEN ?4 THEN ?5 ELSE lease_id END,
  lease_generation = CASE WHEN ?4 THEN ?6 ELSE lease_generation END,
  updated_at = ?7
WHERE workspace_id = ?8 AND id = ?9 AND state = ?10
  AND (NOT ?11 OR (lease_id = ?5 AND lease_generation = ?6))
  AND (NOT ?12 OR EXISTS (SELECT 1 FROM leases l
                          WHERE l.workspace_id = ?8 AND l.id = ?5 AND l.generation = ?6 AND l.state = 'live'))
RETURNING session_id, lease_id, lease_generation`
	journalInsert = `INSERT INTO turn_journal (workspace_id, session_id, turn_id, from_state, to_state, reason, lease_generation, at, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, '') RETURNING seq`
	// journalSetDetail writes an entry's sealed detail, which is bound to
	// the sequence its insert returned.
	journalSetDetail = `UPDATE turn_journal SET detail = ? WHERE seq = ?`
	messageColumns   = `id, workspace_id, session_id, seq, requested, routing, text, source_message_id, turn_id, created_at, consumed_at`
	messageInsert    = `INSERT INTO session_messages (` + messageColumns + `)
SELECT ?, ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ?, ?, NULL FROM session_messages WHERE session_id = ?
RETURNING seq`
	messageSelect    = `SELECT ` + messageColumns + ` FROM session_messages WHERE workspace_id = ? AND id = ?`
	messageOfSession = `SELECT ` + messageColumns + ` FROM session_messages WHERE workspace_id = ? AND session_id = ? ORDER BY seq`
	messageSetTurn   = `UPDATE session_messages SET turn_id = ? WHERE id = ?`
	messageConsume   = `UPDATE session_messages SET turn_id = ?, consumed_at = ?
WHERE workspace_id = ? AND session_id = ? AND id = ? AND routing = 'note' AND turn_id = ''`
	journalOfTurn = `SELECT seq, turn_id, from_state, to_state, reason, lease_generation, at, detail FROM turn_journal
WHERE workspace_id = ? AND turn_id = ? ORDER BY seq`

	// Executions (migration 0010).
	// usage: migration 0016.
	executionColumns = `id, workspace_id, session_id, turn_id, lease_id, lease_generation, pid, state, outcome, reason, started_at, ended_at,
  input_tokens, output_tokens, cached_tokens, reasoning_tokens, cost_micros, cost_estimated, model`
	executionInsert = `INSERT INTO executions (` + executionColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', '', '', ?, NULL, 0, 0, 0, 0, NULL, FALSE, '')`
	executionEnd    = `UPDATE executions SET state = 'ended', outcome = ?, reason = ?, ended_at = ?,
  input_tokens = ?, output_tokens = ?, cached_tokens = ?, reasoning_tokens = ?, cost_micros = ?, cost_estimated = ?, model = ?
WHERE workspace_id = ? AND turn_id = ? AND state = 'running'`
	executionOfTurn = `SELECT ` + executionColumns + ` FROM executions WHERE workspace_id = ? AND turn_id = ? ORDER BY started_at, id`

	leaseColumns = `id, workspace_id, holder, generation, state, reason, pid, started_at, ended_at`
	leaseLiveOf  = `SELECT ` + leaseColumns + ` FROM leases WHERE workspace_id = ? AND holder = ? AND state = 'live'`
	leaseByID    = `SELECT ` + leaseColumns + ` FROM leases WHERE workspace_id = ? AND id = ?`
	leaseNextGen = `SELECT COALESCE(MAX(generation), 0) + 1 FROM leases WHERE workspace_id = ? AND holder = ?`
	leaseInsert  = `INSERT INTO leases (` + leaseColumns + `) VALUES (?, ?, ?, ?, 'live', '', ?, ?, NULL)`
	leaseEnd     = `UPDATE leases SET state = 'ended', reason = ?, ended_at = ? WHERE workspace_id = ? AND id = ? AND state = 'live'`

	worktreeColumns = `id, workspace_id, session_id, repo, path, branch, state, created_at, updated_at`
	worktreeUpsert  = `INSERT INTO worktrees (` + worktreeColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET path = excluded.path, branch = excluded.branch, state = excluded.state, updated_at = excluded.updated_at`
	worktreeOfSession = `SELECT ` + worktreeColumns + ` FROM worktrees WHERE workspace_id = ? AND session_id = ?`
	worktreeByID      = `SELECT ` + worktreeColumns + ` FROM worktrees WHERE workspace_id = ? AND id = ?`
	worktreeAll       = `SELECT ` + worktreeColumns + ` FROM worktrees WHERE workspace_id = ? ORDER BY created_at, id`
	worktreeSetState  = `UPDATE worktrees SET state = ?, updated_at = ? WHERE workspace_id = ? AND id = ? AND state = ?`
)

// notFoundAs maps sql.ErrNoRows to jam.ErrNotFound with a description.
func notFoundAs(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %s", jam.ErrNotFound, what)
	}
	return err
}

// oneRow turns "no row changed" into jam.ErrNotFound.
func oneRow(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", jam.ErrNotFound, what)
	}
	return nil
}

func isUniqueViolation(err error) bool {
	return isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) || isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// TemplatePut implements [store.Runtime]. A new template's pending change
// is "created": nothing has run with it yet.
func (s *Store) TemplatePut(ctx context.Context, t store.Template) (store.Template, error) {
	err := t.Validate()
	var desired string
	if err == nil {
		desired, err = encodeConfig(t.Desired)
	}
	if err != nil {
		return store.Template{}, fmt.Errorf("template put: %w", err)
	}
	at := t.CreatedAt.UnixMicro()
	if _, err := s.writer.ExecContext(ctx, templateInsert, t.ID, t.WorkspaceID, t.Peer.Profile, t.Peer.Scope, desired, at, at); err != nil {
		if isUniqueViolation(err) {
			return store.Template{}, fmt.Errorf("template put: %w: peer %s already has a template", jam.ErrAlreadyExists, t.Peer)
		}
		return store.Template{}, fmt.Errorf("template put: %w", err)
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

// TemplateGet implements [store.Runtime].
func (s *Store) TemplateGet(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID) (store.Template, error) {
	t, err := scanTemplate(s.reader.QueryRowContext(ctx, templateSelect, ws, id))
	if err != nil {
		return store.Template{}, fmt.Errorf("template %s: %w", id, notFoundAs(err, "no such template"))
	}
	return t, nil
}

// TemplateForPeer implements [store.Runtime].
func (s *Store) TemplateForPeer(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (store.Template, error) {
	t, err := scanTemplate(s.reader.QueryRowContext(ctx, templateOfPeer, ws, key.Profile, key.Scope))
	if err != nil {
		return store.Template{}, fmt.Errorf("template of %s: %w", key, notFoundAs(err, "the agent has no runtime template"))
	}
	return t, nil
}

// TemplateList implements [store.Runtime].
func (s *Store) TemplateList(ctx context.Context, ws jam.WorkspaceID) ([]store.Template, error) {
	out, err := queryAll(ctx, s.reader, scanTemplate, templateAll, ws)
	if err != nil {
		return nil, fmt.Errorf("template list: %w", err)
	}
	return out, nil
}

// TemplateConfigure implements [store.Runtime].
func (s *Store) TemplateConfigure(ctx context.Context, p store.TemplateConfigureParams) (store.Template, error) {
	err := p.Validate()
	var desired string
	if err == nil {
		desired, err = encodeConfig(p.Desired)
	}
	if err != nil {
		return store.Template{}, fmt.Errorf("template configure: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, templateSetDesired, desired, p.Change, p.Change, p.At.UnixMicro(), p.WorkspaceID, p.ID)
	if err == nil {
		err = oneRow(res, "no such template")
	}
	if err != nil {
		return store.Template{}, fmt.Errorf("template configure %s: %w", p.ID, err)
	}
	return s.TemplateGet(ctx, p.WorkspaceID, p.ID)
}

// TemplateApplied implements [store.Runtime].
func (s *Store) TemplateApplied(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID, generation int64, at time.Time) (store.Template, error) {
	if err := store.ValidateTime("time", at); err != nil {
		return store.Template{}, fmt.Errorf("template applied %s: %w", id, err)
	}
	res, err := s.writer.ExecContext(ctx, templateSetApplied, at.UnixMicro(), ws, id, generation)
	if err != nil {
		return store.Template{}, fmt.Errorf("template applied %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
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

// SessionCreate implements [store.Runtime].
func (s *Store) SessionCreate(ctx context.Context, ss store.Session) (store.Session, error) {
	ss, err := ss.Canonical()
	var overrides string
	if err == nil {
		overrides, err = encodeOverrides(ss.Overrides)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("session create: %w", err)
	}
	at := ss.CreatedAt.UnixMicro()
	_, err = s.writer.ExecContext(ctx, sessionInsert, ss.ID, ss.WorkspaceID, ss.TemplateID, ss.Peer.Profile, ss.Peer.Scope, ss.Room, ss.Lifecycle, ss.ProviderThread, at, at, overrides, ss.Role)
	if err != nil {
		if isUniqueViolation(err) {
			return store.Session{}, fmt.Errorf("session create: %w: %s already has an open session in room %s", jam.ErrAlreadyExists, ss.Peer, ss.Room)
		}
		return store.Session{}, fmt.Errorf("session create: %w", err)
	}
	return s.SessionGet(ctx, ss.WorkspaceID, ss.ID)
}

// SessionGet implements [store.Runtime].
func (s *Store) SessionGet(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID) (store.Session, error) {
	ss, err := scanSession(s.reader.QueryRowContext(ctx, sessionSelect, ws, id))
	if err != nil {
		return store.Session{}, fmt.Errorf("session %s: %w", id, notFoundAs(err, "no such session"))
	}
	return ss, nil
}

// SessionForRoom implements [store.Runtime].
func (s *Store) SessionForRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (store.Session, error) {
	room, err := store.ValidateLane(ws, key, room)
	if err != nil {
		return store.Session{}, fmt.Errorf("session for room: %w", err)
	}
	ss, err := scanSession(s.reader.QueryRowContext(ctx, sessionOfRoom, ws, key.Profile, key.Scope, room))
	if err != nil {
		return store.Session{}, fmt.Errorf("session of %s in %s: %w", key, room, notFoundAs(err, "no open session"))
	}
	return ss, nil
}

// SessionList implements [store.Runtime].
func (s *Store) SessionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Session, error) {
	out, err := queryAll(ctx, s.reader, scanSession, sessionAll, ws)
	if err != nil {
		return nil, fmt.Errorf("session list: %w", err)
	}
	return out, nil
}

// SessionSetThread implements [store.Runtime].
func (s *Store) SessionSetThread(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID, thread string, at time.Time) error {
	if err := store.ValidateSessionThread(thread, at); err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	res, err := s.writer.ExecContext(ctx, sessionSetThread, thread, at.UnixMicro(), ws, id)
	if err == nil {
		err = oneRow(res, "no such session")
	}
	if err != nil {
		return fmt.Errorf("session %s: %w", id, err)
	}
	return nil
}

// SessionSetLifecycle implements [store.Runtime].
func (s *Store) SessionSetLifecycle(ctx context.Context, p store.SessionSetLifecycleParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("session %s: %w", p.ID, err)
	}
	res, err := s.writer.ExecContext(ctx, sessionSetLife, p.To, p.At.UnixMicro(), p.WorkspaceID, p.ID, p.From)
	if err != nil {
		return fmt.Errorf("session %s: %w", p.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
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

// TurnEnqueue implements [store.Runtime].
func (s *Store) TurnEnqueue(ctx context.Context, t store.Turn) (store.Turn, error) {
	t, err := t.Canonical()
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn enqueue: %w", err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		if _, err := scanSession(tx.QueryRowContext(ctx, sessionSelect, t.WorkspaceID, t.SessionID)); err != nil {
			return notFoundAs(err, "no such session")
		}
		if t.MessageID != "" {
			m, err := s.scanMessage(tx.QueryRowContext(ctx, messageSelect, t.WorkspaceID, t.MessageID))
			if err != nil {
				return notFoundAs(err, "no such session message")
			}
			if m.SessionID != t.SessionID || m.Routing != jam.RoutingQueue {
				return fmt.Errorf("%w: message %s is not a queue message of session %s", jam.ErrInvalid, m.ID, t.SessionID)
			}
			if _, err := tx.ExecContext(ctx, messageSetTurn, t.ID, m.ID); err != nil {
				return err
			}
		}
		return insertTurn(ctx, tx, &t)
	})
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn enqueue: %w", err)
	}
	return s.TurnGet(ctx, t.WorkspaceID, t.ID)
}

// insertTurn appends a queued turn to its session and journals it.
func insertTurn(ctx context.Context, tx *sql.Tx, t *store.Turn) error {
	at := t.CreatedAt.UnixMicro()
	if err := tx.QueryRowContext(ctx, turnInsert, t.ID, t.WorkspaceID, t.SessionID, t.Routing, t.SourceMessageID, at, at, t.MessageID, t.SessionID).Scan(&t.Seq); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: turn %s", jam.ErrAlreadyExists, t.ID)
		}
		return err
	}
	var seq int64
	return tx.QueryRowContext(ctx, journalInsert, t.WorkspaceID, t.SessionID, t.ID, "", jam.TurnQueued, "", 0, at).Scan(&seq)
}

// MessageAccept implements store.Runtime.
func (s *Store) MessageAccept(ctx context.Context, p store.MessageAcceptParams) (store.SessionMessage, store.Turn, error) {
	m, err := p.Message.Canonical()
	t := p.Turn
	switch m.Routing {
	case jam.RoutingQueue:
		t.WorkspaceID, t.SessionID, t.Routing, t.MessageID, t.SourceMessageID = m.WorkspaceID, m.SessionID, jam.RoutingQueue, m.ID, m.SourceMessageID
		if t.CreatedAt.IsZero() {
			t.CreatedAt = m.CreatedAt
		}
		if err == nil {
			t, err = t.Canonical()
		}
		m.TurnID = t.ID
	case jam.RoutingSteer:
		if err == nil {
			_, err = jam.ParseID[jam.TurnID](string(p.SteeredTurn))
		}
		m.TurnID = p.SteeredTurn
	case jam.RoutingNote:
		m.TurnID = ""
	}
	if err != nil {
		return store.SessionMessage{}, store.Turn{}, fmt.Errorf("message accept: %w", err)
	}
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		ss, err := scanSession(tx.QueryRowContext(ctx, sessionSelect, m.WorkspaceID, m.SessionID))
		if err != nil {
			return notFoundAs(err, "no such session")
		}
		if ss.Lifecycle != jam.SessionOpen {
			return fmt.Errorf("%w: session %s is %s", jam.ErrConflict, ss.ID, ss.Lifecycle)
		}
		if m.Routing == jam.RoutingSteer {
			st, err := s.scanTurn(tx.QueryRowContext(ctx, turnSelect, m.WorkspaceID, m.TurnID))
			if err != nil {
				return notFoundAs(err, "no such turn")
			}
			if st.SessionID != m.SessionID || st.State != jam.TurnRunning {
				return fmt.Errorf("%w: turn %s of session %s is not running", jam.ErrConflict, st.ID, m.SessionID)
			}
		}
		at := m.CreatedAt.UnixMicro()
		if err := tx.QueryRowContext(ctx, messageInsert, m.ID, m.WorkspaceID, m.SessionID, m.Requested, m.Routing, s.seal(m.Text, messageAAD(m.WorkspaceID, m.ID)), m.SourceMessageID,
			m.TurnID, at, m.SessionID).Scan(&m.Seq); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("%w: message %s", jam.ErrAlreadyExists, m.ID)
			}
			return err
		}
		if m.Routing == jam.RoutingQueue {
			return insertTurn(ctx, tx, &t)
		}
		return nil
	})
	if err != nil {
		return store.SessionMessage{}, store.Turn{}, fmt.Errorf("message accept: %w", err)
	}
	m, err = s.MessageGet(ctx, m.WorkspaceID, m.ID)
	if err != nil || m.Routing != jam.RoutingQueue {
		return m, store.Turn{}, err
	}
	t, err = s.TurnGet(ctx, m.WorkspaceID, t.ID)
	return m, t, err
}

// MessageGet implements store.Runtime.
func (s *Store) MessageGet(ctx context.Context, ws jam.WorkspaceID, id jam.MessageID) (store.SessionMessage, error) {
	m, err := s.scanMessage(s.reader.QueryRowContext(ctx, messageSelect, ws, id))
	if err != nil {
		return store.SessionMessage{}, fmt.Errorf("message %s: %w", id, notFoundAs(err, "no such session message"))
	}
	return m, nil
}

// MessageList implements store.Runtime.
func (s *Store) MessageList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.SessionMessage, error) {
	out, err := queryAll(ctx, s.reader, s.scanMessage, messageOfSession, ws, session)
	if err != nil {
		return nil, fmt.Errorf("message list: %w", err)
	}
	return out, nil
}

// scanMessage scans a session message and opens its text.
func (s *Store) scanMessage(row scanner) (store.SessionMessage, error) {
	var m store.SessionMessage
	var created int64
	var consumed sql.NullInt64
	var text any
	if err := row.Scan(&m.ID, &m.WorkspaceID, &m.SessionID, &m.Seq, &m.Requested, &m.Routing, &text, &m.SourceMessageID, &m.TurnID, &created, &consumed); err != nil {
		return m, err
	}
	m.CreatedAt = fromMicros(created)
	if consumed.Valid {
		m.ConsumedAt = fromMicros(consumed.Int64)
	}
	var err error
	if m.Text, err = s.open(text, messageAAD(m.WorkspaceID, m.ID)); err != nil {
		return m, fmt.Errorf("session message %s: %w", m.ID, err)
	}
	return m, nil
}

func (s *Store) TurnGet(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) (store.Turn, error) {
	t, err := s.scanTurn(s.reader.QueryRowContext(ctx, turnSelect, ws, id))
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn %s: %w", id, notFoundAs(err, "no such turn"))
	}
	return t, nil
}

// TurnList implements [store.Runtime].
func (s *Store) TurnList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.Turn, error) {
	out, err := queryAll(ctx, s.reader, s.scanTurn, turnOfSession, ws, session)
	if err != nil {
		return nil, fmt.Errorf("turn list: %w", err)
	}
	return out, nil
}

// TurnTransition implements [store.Runtime].
func (s *Store) TurnTransition(ctx context.Context, p store.TurnTransitionParams) (store.Turn, error) {
	if err := p.Validate(); err != nil {
		return store.Turn{}, fmt.Errorf("turn %s: %w", p.ID, err)
	}
	detail := store.BoundTurnDetail(p.Detail)
	var usage store.ExecutionUsage
	if p.Usage != nil {
		usage = *p.Usage
	}
	var cost sql.NullInt64
	if usage.CostKnown {
		cost = sql.NullInt64{Int64: usage.CostMicros, Valid: true}
	}
	starts := p.From == jam.TurnQueued && p.To == jam.TurnPreparing
	active := p.From.Active()
	needsLive := starts || (active && p.To != jam.TurnInterrupted)
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		var session jam.SessionID
		var leaseID jam.LeaseID
		var gen int64
		err := tx.QueryRowContext(ctx, turnMove, p.To, p.Reason, s.seal(detail, turnDetailAAD(p.WorkspaceID, p.ID)),
			starts, p.LeaseID, p.LeaseGeneration, p.At.UnixMicro(), p.WorkspaceID, p.ID, p.From, active, needsLive).Scan(&session, &leaseID, &gen)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return s.turnRefused(ctx, tx, p, active)
		case isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE):
			return fmt.Errorf("%w: another turn of the session is active", jam.ErrConflict)
		case err != nil:
			return err
		}
		var bound store.Lease
		if starts {
			if bound, err = scanLease(tx.QueryRowContext(ctx, leaseByID, p.WorkspaceID, leaseID)); err != nil {
				return err
			}
		}
		for _, n := range p.ConsumeNotes {
			res, err := tx.ExecContext(ctx, messageConsume, p.ID, p.At.UnixMicro(), p.WorkspaceID, session, n)
			if err != nil {
				return err
			}
			if k, err := res.RowsAffected(); err != nil {
				return err
			} else if k == 0 {
				return fmt.Errorf("%w: %s is not a pending note of session %s", jam.ErrConflict, n, session)
			}
		}
		// The attempt starts and ends with the turn. A turn recorded
		// before executions were has none to end.
		switch {
		case starts:
			if _, err := tx.ExecContext(ctx, executionInsert, p.Execution, p.WorkspaceID, session, p.ID, leaseID, gen, bound.Pid, p.At.UnixMicro()); err != nil {
				if isUniqueViolation(err) {
					return fmt.Errorf("%w: execution %s", jam.ErrAlreadyExists, p.Execution)
				}
				return err
			}
		case active && p.To.Terminal():
			if _, err := tx.ExecContext(ctx, executionEnd, p.To, p.Reason, p.At.UnixMicro(),
				usage.InputTokens, usage.OutputTokens, usage.CachedTokens, usage.ReasoningTokens, cost, usage.CostEstimated, usage.Model,
				p.WorkspaceID, p.ID); err != nil {
				return err
			}
		}
		var seq int64
		if err := tx.QueryRowContext(ctx, journalInsert, p.WorkspaceID, session, p.ID, p.From, p.To, p.Reason, gen, p.At.UnixMicro()).Scan(&seq); err != nil || detail == "" {
			return err
		}
		_, err = tx.ExecContext(ctx, journalSetDetail, s.seal(detail, journalDetailAAD(p.WorkspaceID, seq)), seq)
		return err
	})
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn %s %s→%s: %w", p.ID, p.From, p.To, err)
	}
	return s.TurnGet(ctx, p.WorkspaceID, p.ID)
}

// turnRefused tells why turnMove changed no row, reading the turn inside
// the same transaction: no such turn (jam.ErrNotFound), not in the move's
// from state (jam.ErrConflict), or an active turn on another lease or
// generation, or a lease that is not live (jam.ErrLeaseLost). It decides
// nothing: the move was refused by its WHERE.
func (s *Store) turnRefused(ctx context.Context, tx *sql.Tx, p store.TurnTransitionParams, active bool) error {
	t, err := s.scanTurn(tx.QueryRowContext(ctx, turnSelect, p.WorkspaceID, p.ID))
	if err != nil {
		return notFoundAs(err, "no such turn")
	}
	if t.State != p.From {
		return fmt.Errorf("%w: the turn is %s, not %s", jam.ErrConflict, t.State, p.From)
	}
	if active && (p.LeaseID != t.LeaseID || p.LeaseGeneration != t.LeaseGeneration) {
		return fmt.Errorf("%w: the turn runs on %s generation %d, not %s generation %d", jam.ErrLeaseLost, t.LeaseID, t.LeaseGeneration, p.LeaseID, p.LeaseGeneration)
	}
	return fmt.Errorf("%w: lease %s generation %d is not live", jam.ErrLeaseLost, p.LeaseID, p.LeaseGeneration)
}

// ExecutionList implements [store.Runtime].
func (s *Store) ExecutionList(ctx context.Context, ws jam.WorkspaceID, turn jam.TurnID) ([]store.Execution, error) {
	out, err := queryAll(ctx, s.reader, scanExecution, executionOfTurn, ws, turn)
	if err != nil {
		return nil, fmt.Errorf("execution list %s: %w", turn, err)
	}
	return out, nil
}

func scanExecution(row scanner) (store.Execution, error) {
	var e store.Execution
	var started int64
	var ended, cost sql.NullInt64
	u := &e.Usage
	err := row.Scan(&e.ID, &e.WorkspaceID, &e.SessionID, &e.TurnID, &e.LeaseID, &e.LeaseGeneration, &e.Pid, &e.State, &e.Outcome, &e.Reason, &started, &ended,
		&u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.ReasoningTokens, &cost, &u.CostEstimated, &u.Model)
	e.StartedAt, e.EndedAt = fromMicros(started), fromNullMicros(ended)
	u.CostMicros, u.CostKnown = cost.Int64, cost.Valid
	return e, err
}

// TurnJournal implements [store.Runtime].
func (s *Store) TurnJournal(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]store.TurnJournalEntry, error) {
	out, err := queryAll(ctx, s.reader, func(row scanner) (store.TurnJournalEntry, error) {
		var e store.TurnJournalEntry
		var at int64
		var detail any
		if err := row.Scan(&e.Seq, &e.TurnID, &e.From, &e.To, &e.Reason, &e.LeaseGeneration, &at, &detail); err != nil {
			return e, err
		}
		e.At = fromMicros(at)
		var err error
		if e.Detail, err = s.open(detail, journalDetailAAD(ws, e.Seq)); err != nil {
			return e, fmt.Errorf("journal entry %d: %w", e.Seq, err)
		}
		return e, nil
	}, journalOfTurn, ws, id)
	if err != nil {
		return nil, fmt.Errorf("turn journal %s: %w", id, err)
	}
	return out, nil
}

// scanTurn scans a turn and opens its detail.
func (s *Store) scanTurn(row scanner) (store.Turn, error) {
	var t store.Turn
	var created, updated int64
	var detail any
	if err := row.Scan(&t.ID, &t.WorkspaceID, &t.SessionID, &t.Seq, &t.Routing, &t.SourceMessageID, &t.State, &t.Reason, &t.LeaseID, &t.LeaseGeneration, &created, &updated, &t.MessageID, &detail); err != nil {
		return t, err
	}
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	var err error
	if t.Detail, err = s.open(detail, turnDetailAAD(t.WorkspaceID, t.ID)); err != nil {
		return t, fmt.Errorf("turn %s: %w", t.ID, err)
	}
	return t, nil
}

// LeaseAcquire implements [store.Runtime].
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("lease acquire: %w", err)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		old, err := scanLease(tx.QueryRowContext(ctx, leaseLiveOf, p.WorkspaceID, p.Holder))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if _, err := tx.ExecContext(ctx, leaseEnd, jam.ReasonLeaseReplaced, p.At.UnixMicro(), p.WorkspaceID, old.ID); err != nil {
				return err
			}
		}
		var gen int64
		if err := tx.QueryRowContext(ctx, leaseNextGen, p.WorkspaceID, p.Holder).Scan(&gen); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, leaseInsert, p.ID, p.WorkspaceID, p.Holder, gen, p.Pid, p.At.UnixMicro())
		if isUniqueViolation(err) {
			return fmt.Errorf("%w: lease %s", jam.ErrAlreadyExists, p.ID)
		}
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease acquire: %w", err)
	}
	l, err := scanLease(s.reader.QueryRowContext(ctx, leaseByID, p.WorkspaceID, p.ID))
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease acquire: %w", err)
	}
	return l, nil
}

// LeaseEnd implements [store.Runtime].
func (s *Store) LeaseEnd(ctx context.Context, ws jam.WorkspaceID, id jam.LeaseID, reason string, at time.Time) error {
	if err := store.ValidateLeaseEnd(reason, at); err != nil {
		return fmt.Errorf("lease end %s: %w", id, err)
	}
	res, err := s.writer.ExecContext(ctx, leaseEnd, reason, at.UnixMicro(), ws, id)
	if err != nil {
		return fmt.Errorf("lease end %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, err := scanLease(s.reader.QueryRowContext(ctx, leaseByID, ws, id)); err != nil {
			return fmt.Errorf("lease end %s: %w", id, notFoundAs(err, "no such lease"))
		}
		return fmt.Errorf("lease end %s: %w: already ended", id, jam.ErrConflict)
	}
	return nil
}

// LeaseLive implements [store.Runtime].
func (s *Store) LeaseLive(ctx context.Context, ws jam.WorkspaceID, holder string) (store.Lease, error) {
	l, err := scanLease(s.reader.QueryRowContext(ctx, leaseLiveOf, ws, holder))
	if err != nil {
		return store.Lease{}, fmt.Errorf("live lease of %s: %w", holder, notFoundAs(err, "no live lease"))
	}
	return l, nil
}

func scanLease(row scanner) (store.Lease, error) {
	var l store.Lease
	var started int64
	var ended sql.NullInt64
	err := row.Scan(&l.ID, &l.WorkspaceID, &l.Holder, &l.Generation, &l.State, &l.Reason, &l.Pid, &started, &ended)
	l.StartedAt, l.EndedAt = fromMicros(started), fromNullMicros(ended)
	return l, err
}

// WorktreePut implements [store.Runtime].
func (s *Store) WorktreePut(ctx context.Context, w store.Worktree) (store.Worktree, error) {
	err := w.Validate()
	if err != nil {
		return store.Worktree{}, fmt.Errorf("worktree put: %w", err)
	}
	if w.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	_, err = s.writer.ExecContext(ctx, worktreeUpsert, w.ID, w.WorkspaceID, w.SessionID, w.Repo, w.Path, w.Branch, w.State, w.CreatedAt.UnixMicro(), w.UpdatedAt.UnixMicro())
	if err != nil {
		if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
			return store.Worktree{}, fmt.Errorf("worktree put: %w: session %s already has a worktree", jam.ErrAlreadyExists, w.SessionID)
		}
		return store.Worktree{}, fmt.Errorf("worktree put: %w", err)
	}
	return s.WorktreeForSession(ctx, w.WorkspaceID, w.SessionID)
}

// WorktreeForSession implements [store.Runtime].
func (s *Store) WorktreeForSession(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (store.Worktree, error) {
	w, err := scanWorktree(s.reader.QueryRowContext(ctx, worktreeOfSession, ws, session))
	if err != nil {
		return store.Worktree{}, fmt.Errorf("worktree of %s: %w", session, notFoundAs(err, "no worktree"))
	}
	return w, nil
}

// WorktreeList implements [store.Runtime].
func (s *Store) WorktreeList(ctx context.Context, ws jam.WorkspaceID) ([]store.Worktree, error) {
	out, err := queryAll(ctx, s.reader, scanWorktree, worktreeAll, ws)
	if err != nil {
		return nil, fmt.Errorf("worktree list: %w", err)
	}
	return out, nil
}

// WorktreeSetState implements [store.Runtime].
func (s *Store) WorktreeSetState(ctx context.Context, p store.WorktreeSetStateParams) (store.Worktree, error) {
	if err := p.Validate(); err != nil {
		return store.Worktree{}, fmt.Errorf("worktree %s: %w", p.ID, err)
	}
	res, err := s.writer.ExecContext(ctx, worktreeSetState, p.To, p.At.UnixMicro(), p.WorkspaceID, p.ID, p.From)
	if err != nil {
		return store.Worktree{}, fmt.Errorf("worktree %s: %w", p.ID, err)
	}
	w, gerr := scanWorktree(s.reader.QueryRowContext(ctx, worktreeByID, p.WorkspaceID, p.ID))
	if gerr != nil {
		return store.Worktree{}, fmt.Errorf("worktree %s: %w", p.ID, notFoundAs(gerr, "no such worktree"))
	}
	if n, _ := res.RowsAffected(); n == 0 {
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
