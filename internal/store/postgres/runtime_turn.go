package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var (
	_ store.Turns           = (*Store)(nil)
	_ store.SessionMessages = (*Store)(nil)
	_ store.Executions      = (*Store)(nil)
)

// SQL of turns, their journal, session messages and executions.
const (
	turnColumns = `id, workspace_id, session_id, seq, routing, source_message_id, state, reason, lease_id, lease_generation, created_at, updated_at, message_id, detail`
	// turnInsert numbers the turn after the session's last; its caller
	// holds the session's row lock (sessionLock), so no two appends of
	// one session read the same MAX.
	turnInsert = `INSERT INTO turns (` + turnColumns + `)
SELECT $1, $2, $3, COALESCE(MAX(seq), 0) + 1, $4, $5, 'queued', '', '', 0, $6, $6, $7, ''::bytea FROM turns WHERE session_id = $3
RETURNING seq`
	turnSelect    = `SELECT ` + turnColumns + ` FROM turns WHERE workspace_id = $1 AND id = $2`
	turnSessionOf = `SELECT session_id FROM turns WHERE workspace_id = $1 AND id = $2`
	turnOfSession = `SELECT ` + turnColumns + ` FROM turns WHERE workspace_id = $1 AND session_id = $2 ORDER BY seq`

	// The fenced moves of a turn. Each puts the whole fence in the
	// UPDATE's predicate, so the row lock the UPDATE takes decides a race
	// with any other move of the turn: the turn is in From and, for an
	// active turn, bound to the lease id and generation the caller
	// holds. Where the lease must be live, the CTE reads it FOR SHARE: a
	// LeaseEnd or the LeaseAcquire that replaces it waits until this
	// transaction ends, and a lease ended first fails the predicate
	// (READ COMMITTED rechecks a locked row's newest version). Zero rows
	// is one of the seam's errors; TurnTransition re-reads the turn and
	// the lease to tell which.
	//
	// turnStart binds a queued turn to a live lease and returns the
	// lease's pid for the execution it starts.
	turnStart = `WITH fence AS (
    SELECT pid FROM leases WHERE workspace_id = $1 AND id = $7 AND generation = $8 AND state = 'live' FOR SHARE
)
UPDATE turns SET state = $4, reason = $5, detail = $6, lease_id = $7, lease_generation = $8, updated_at = $9
FROM fence WHERE turns.workspace_id = $1 AND turns.id = $2 AND turns.state = $3
RETURNING turns.session_id, fence.pid`
	// turnMoveLive moves an active turn on its lease, which must be live.
	turnMoveLive = `WITH fence AS (
    SELECT pid FROM leases WHERE workspace_id = $1 AND id = $7 AND generation = $8 AND state = 'live' FOR SHARE
)
UPDATE turns SET state = $4, reason = $5, detail = $6, updated_at = $9
FROM fence WHERE turns.workspace_id = $1 AND turns.id = $2 AND turns.state = $3 AND turns.lease_id = $7 AND turns.lease_generation = $8
RETURNING turns.session_id, fence.pid`
	// turnMoveBound moves an active turn bound to the lease, live or not:
	// the move to interrupted the supervisor records after the lease
	// died.
	turnMoveBound = `UPDATE turns SET state = $4, reason = $5, detail = $6, updated_at = $9
WHERE workspace_id = $1 AND id = $2 AND state = $3 AND lease_id = $7 AND lease_generation = $8
RETURNING session_id, 0::BIGINT`
	// turnMoveIdle moves a turn that is not active (queued to cancelled):
	// no lease is involved and the turn keeps the one it names.
	turnMoveIdle = `UPDATE turns SET state = $4, reason = $5, detail = $6, updated_at = $7
WHERE workspace_id = $1 AND id = $2 AND state = $3
RETURNING session_id, lease_id, lease_generation`

	journalInsert = `INSERT INTO turn_journal (workspace_id, session_id, turn_id, from_state, to_state, reason, lease_generation, at, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ''::bytea) RETURNING seq`
	// journalSetDetail writes an entry's sealed detail, which is bound to
	// the sequence its insert returned.
	journalSetDetail = `UPDATE turn_journal SET detail = $1 WHERE seq = $2`
	journalOfTurn    = `SELECT seq, turn_id, from_state, to_state, reason, lease_generation, at, detail FROM turn_journal
WHERE workspace_id = $1 AND turn_id = $2 ORDER BY seq`

	messageColumns = `id, workspace_id, session_id, seq, requested, routing, text, source_message_id, turn_id, created_at, consumed_at`
	// messageInsert numbers the message after the session's last, under
	// the session's row lock as turnInsert.
	messageInsert = `INSERT INTO session_messages (` + messageColumns + `)
SELECT $1, $2, $3, COALESCE(MAX(seq), 0) + 1, $4, $5, $6, $7, $8, $9, NULL FROM session_messages WHERE session_id = $3
RETURNING seq`
	messageSelect    = `SELECT ` + messageColumns + ` FROM session_messages WHERE workspace_id = $1 AND id = $2`
	messageOfSession = `SELECT ` + messageColumns + ` FROM session_messages WHERE workspace_id = $1 AND session_id = $2 ORDER BY seq`
	messageSetTurn   = `UPDATE session_messages SET turn_id = $1 WHERE id = $2`
	messageConsume   = `UPDATE session_messages SET turn_id = $1, consumed_at = $2
WHERE workspace_id = $3 AND session_id = $4 AND id = $5 AND routing = 'note' AND turn_id = ''`
	// turnLockForSteer reads the turn a steer message reaches and locks
	// it against moves until the message is recorded.
	turnLockForSteer = `SELECT session_id, state FROM turns WHERE workspace_id = $1 AND id = $2 FOR SHARE`

	executionColumns = `id, workspace_id, session_id, turn_id, lease_id, lease_generation, pid, state, outcome, reason, started_at, ended_at,
  input_tokens, output_tokens, cached_tokens, reasoning_tokens, cost_micros, cost_estimated, model`
	executionInsert = `INSERT INTO executions (` + executionColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', '', '', $8, NULL, 0, 0, 0, 0, NULL, FALSE, '')`
	executionEnd    = `UPDATE executions SET state = 'ended', outcome = $1, reason = $2, ended_at = $3,
  input_tokens = $4, output_tokens = $5, cached_tokens = $6, reasoning_tokens = $7, cost_micros = $8, cost_estimated = $9, model = $10
WHERE workspace_id = $11 AND turn_id = $12 AND state = 'running'`
	executionOfTurn = `SELECT ` + executionColumns + ` FROM executions WHERE workspace_id = $1 AND turn_id = $2 ORDER BY started_at, id COLLATE "C"`
)

// TurnEnqueue implements [store.Turns]: the session's row is locked for
// the transaction, so concurrent enqueues of one session number their
// turns one after the other.
func (s *Store) TurnEnqueue(ctx context.Context, t store.Turn) (store.Turn, error) {
	t, err := t.Canonical()
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn enqueue: %w", err)
	}
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := scanSession(tx.QueryRow(ctx, sessionLock, t.WorkspaceID, t.SessionID)); err != nil {
			return notFoundAs(err, "no such session")
		}
		if t.MessageID != "" {
			m, err := s.scanMessage(tx.QueryRow(ctx, messageSelect, t.WorkspaceID, t.MessageID))
			if err != nil {
				return notFoundAs(err, "no such session message")
			}
			if m.SessionID != t.SessionID || m.Routing != jam.RoutingQueue {
				return fmt.Errorf("%w: message %s is not a queue message of session %s", jam.ErrInvalid, m.ID, t.SessionID)
			}
			if _, err := tx.Exec(ctx, messageSetTurn, t.ID, m.ID); err != nil {
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

// insertTurn appends a queued turn to its session and journals it; the
// caller holds the session's row lock.
func insertTurn(ctx context.Context, tx pgx.Tx, t *store.Turn) error {
	at := micros(t.CreatedAt)
	if err := tx.QueryRow(ctx, turnInsert, t.ID, t.WorkspaceID, t.SessionID, t.Routing, t.SourceMessageID, at, t.MessageID).Scan(&t.Seq); err != nil {
		if pgCode(err) == codeUniqueViolation {
			return fmt.Errorf("%w: turn %s", jam.ErrAlreadyExists, t.ID)
		}
		return err
	}
	var seq int64
	return tx.QueryRow(ctx, journalInsert, t.WorkspaceID, t.SessionID, t.ID, "", jam.TurnQueued, "", 0, at).Scan(&seq)
}

// MessageAccept implements [store.SessionMessages]: the session's row is
// locked for the transaction (numbering, and no lifecycle move in
// between), and a steer message's turn is read FOR SHARE, so it is still
// running when the message commits.
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
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		ss, err := scanSession(tx.QueryRow(ctx, sessionLock, m.WorkspaceID, m.SessionID))
		if err != nil {
			return notFoundAs(err, "no such session")
		}
		if ss.Lifecycle != jam.SessionOpen {
			return fmt.Errorf("%w: session %s is %s", jam.ErrConflict, ss.ID, ss.Lifecycle)
		}
		if m.Routing == jam.RoutingSteer {
			var session jam.SessionID
			var state jam.TurnState
			if err := tx.QueryRow(ctx, turnLockForSteer, m.WorkspaceID, m.TurnID).Scan(&session, &state); err != nil {
				return notFoundAs(err, "no such turn")
			}
			if session != m.SessionID || state != jam.TurnRunning {
				return fmt.Errorf("%w: turn %s of session %s is not running", jam.ErrConflict, m.TurnID, m.SessionID)
			}
		}
		if err := tx.QueryRow(ctx, messageInsert, m.ID, m.WorkspaceID, m.SessionID, m.Requested, m.Routing, s.seal(m.Text, messageAAD(m.WorkspaceID, m.ID)), m.SourceMessageID,
			m.TurnID, micros(m.CreatedAt)).Scan(&m.Seq); err != nil {
			if pgCode(err) == codeUniqueViolation {
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

// MessageGet implements [store.SessionMessages].
func (s *Store) MessageGet(ctx context.Context, ws jam.WorkspaceID, id jam.MessageID) (store.SessionMessage, error) {
	m, err := s.scanMessage(s.pool.QueryRow(ctx, messageSelect, ws, id))
	if err != nil {
		return store.SessionMessage{}, fmt.Errorf("message %s: %w", id, notFoundAs(err, "no such session message"))
	}
	return m, nil
}

// MessageList implements [store.SessionMessages].
func (s *Store) MessageList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.SessionMessage, error) {
	out, err := queryAll(ctx, s.pool, s.scanMessage, messageOfSession, ws, session)
	if err != nil {
		return nil, fmt.Errorf("message list: %w", mapErr(err))
	}
	return out, nil
}

// scanMessage scans a session message and opens its text.
func (s *Store) scanMessage(row scanner) (store.SessionMessage, error) {
	var m store.SessionMessage
	var created int64
	var consumed *int64
	var text []byte
	if err := row.Scan(&m.ID, &m.WorkspaceID, &m.SessionID, &m.Seq, &m.Requested, &m.Routing, &text, &m.SourceMessageID, &m.TurnID, &created, &consumed); err != nil {
		return m, err
	}
	m.CreatedAt, m.ConsumedAt = fromMicros(created), fromNullMicros(consumed)
	var err error
	if m.Text, err = s.open(text, messageAAD(m.WorkspaceID, m.ID)); err != nil {
		return m, fmt.Errorf("session message %s: %w", m.ID, err)
	}
	return m, nil
}

// TurnGet implements [store.Turns].
func (s *Store) TurnGet(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) (store.Turn, error) {
	t, err := s.scanTurn(s.pool.QueryRow(ctx, turnSelect, ws, id))
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn %s: %w", id, notFoundAs(err, "no such turn"))
	}
	return t, nil
}

// TurnList implements [store.Turns].
func (s *Store) TurnList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]store.Turn, error) {
	out, err := queryAll(ctx, s.pool, s.scanTurn, turnOfSession, ws, session)
	if err != nil {
		return nil, fmt.Errorf("turn list: %w", mapErr(err))
	}
	return out, nil
}

// TurnTransition implements [store.Turns]. The fence is the predicate of
// the turn's UPDATE (see turnStart and its siblings), evaluated on the
// row the UPDATE locks, so a stale lease cannot move a turn its
// replacement holds, whichever connection or daemon it writes from. When
// the update changes nothing, the turn and the lease are read again in
// the same transaction to say why: no turn (jam.ErrNotFound), a turn not
// in From (jam.ErrConflict), a turn bound to another lease or
// generation, or a lease no longer live (jam.ErrLeaseLost).
func (s *Store) TurnTransition(ctx context.Context, p store.TurnTransitionParams) (store.Turn, error) {
	if err := p.Validate(); err != nil {
		return store.Turn{}, fmt.Errorf("turn %s: %w", p.ID, err)
	}
	detail := store.BoundTurnDetail(p.Detail)
	var usage store.ExecutionUsage
	if p.Usage != nil {
		usage = *p.Usage
	}
	var cost *int64
	if usage.CostKnown {
		cost = &usage.CostMicros
	}
	starts := p.From == jam.TurnQueued && p.To == jam.TurnPreparing
	sealedDetail := s.seal(detail, turnDetailAAD(p.WorkspaceID, p.ID))
	at := micros(p.At)
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var session jam.SessionID
		var pid int64
		leaseID, gen := p.LeaseID, p.LeaseGeneration
		var err error
		switch {
		case starts:
			err = tx.QueryRow(ctx, turnStart, p.WorkspaceID, p.ID, p.From, p.To, p.Reason, sealedDetail, p.LeaseID, p.LeaseGeneration, at).Scan(&session, &pid)
		case p.From.Active() && p.To != jam.TurnInterrupted:
			err = tx.QueryRow(ctx, turnMoveLive, p.WorkspaceID, p.ID, p.From, p.To, p.Reason, sealedDetail, p.LeaseID, p.LeaseGeneration, at).Scan(&session, &pid)
		case p.From.Active():
			err = tx.QueryRow(ctx, turnMoveBound, p.WorkspaceID, p.ID, p.From, p.To, p.Reason, sealedDetail, p.LeaseID, p.LeaseGeneration, at).Scan(&session, &pid)
		default:
			err = tx.QueryRow(ctx, turnMoveIdle, p.WorkspaceID, p.ID, p.From, p.To, p.Reason, sealedDetail, at).Scan(&session, &leaseID, &gen)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return s.whyNoMove(ctx, tx, p, starts)
		}
		if err != nil {
			if pgCode(err) == codeUniqueViolation {
				return errOtherTurnActive
			}
			return err
		}
		for _, n := range p.ConsumeNotes {
			k, err := rowsAffected(ctx, tx, messageConsume, p.ID, at, p.WorkspaceID, session, n)
			if err != nil {
				return err
			}
			if k == 0 {
				return fmt.Errorf("%w: %s is not a pending note of session %s", jam.ErrConflict, n, session)
			}
		}
		// The attempt starts and ends with the turn. A turn recorded
		// before executions were has none to end.
		switch {
		case starts:
			if _, err := tx.Exec(ctx, executionInsert, p.Execution, p.WorkspaceID, session, p.ID, leaseID, gen, pid, at); err != nil {
				if pgCode(err) == codeUniqueViolation {
					return fmt.Errorf("%w: execution %s", jam.ErrAlreadyExists, p.Execution)
				}
				return err
			}
		case p.From.Active() && p.To.Terminal():
			if _, err := tx.Exec(ctx, executionEnd, p.To, p.Reason, at,
				usage.InputTokens, usage.OutputTokens, usage.CachedTokens, usage.ReasoningTokens, cost, usage.CostEstimated, usage.Model,
				p.WorkspaceID, p.ID); err != nil {
				return err
			}
		}
		var seq int64
		if err := tx.QueryRow(ctx, journalInsert, p.WorkspaceID, session, p.ID, p.From, p.To, p.Reason, gen, at).Scan(&seq); err != nil || detail == "" {
			return err
		}
		_, err = tx.Exec(ctx, journalSetDetail, s.seal(detail, journalDetailAAD(p.WorkspaceID, seq)), seq)
		return err
	})
	if errors.Is(err, errOtherTurnActive) {
		// The violation aborted the transaction; a turn's session never
		// changes, so it is read after.
		var session jam.SessionID
		if serr := s.pool.QueryRow(ctx, turnSessionOf, p.WorkspaceID, p.ID).Scan(&session); serr == nil {
			err = fmt.Errorf("%w: another turn of session %s is active", jam.ErrConflict, session)
		}
	}
	if err != nil {
		return store.Turn{}, fmt.Errorf("turn %s %s→%s: %w", p.ID, p.From, p.To, err)
	}
	return s.TurnGet(ctx, p.WorkspaceID, p.ID)
}

// errOtherTurnActive is a move to an active state refused by
// turns_one_active: the session has another active turn.
var errOtherTurnActive = fmt.Errorf("%w: another turn of the session is active", jam.ErrConflict)

// whyNoMove says why a fenced move of a turn changed nothing, from the
// turn and the lease as they are now, with the errors (and their order)
// of the SQLite dialect, which reads before it writes.
func (s *Store) whyNoMove(ctx context.Context, tx pgx.Tx, p store.TurnTransitionParams, starts bool) error {
	t, err := s.scanTurn(tx.QueryRow(ctx, turnSelect, p.WorkspaceID, p.ID))
	if err != nil {
		return notFoundAs(err, "no such turn")
	}
	if t.State != p.From {
		return fmt.Errorf("%w: the turn is %s, not %s", jam.ErrConflict, t.State, p.From)
	}
	if !starts && p.From.Active() && (p.LeaseID != t.LeaseID || p.LeaseGeneration != t.LeaseGeneration) {
		return fmt.Errorf("%w: the turn runs on %s generation %d, not %s generation %d", jam.ErrLeaseLost, t.LeaseID, t.LeaseGeneration, p.LeaseID, p.LeaseGeneration)
	}
	if starts || (p.From.Active() && p.To != jam.TurnInterrupted) {
		l, err := scanLease(tx.QueryRow(ctx, leaseByID, p.WorkspaceID, p.LeaseID))
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && (l.State != store.LeaseLive || l.Generation != p.LeaseGeneration)) {
			return fmt.Errorf("%w: lease %s generation %d is not live", jam.ErrLeaseLost, p.LeaseID, p.LeaseGeneration)
		}
		if err != nil {
			return err
		}
	}
	// Everything matches now: the turn or the lease changed between the
	// update and this read. The caller may read the turn and try again.
	return fmt.Errorf("%w: the turn or its lease changed meanwhile", jam.ErrConflict)
}

// ExecutionList implements [store.Executions].
func (s *Store) ExecutionList(ctx context.Context, ws jam.WorkspaceID, turn jam.TurnID) ([]store.Execution, error) {
	out, err := queryAll(ctx, s.pool, scanExecution, executionOfTurn, ws, turn)
	if err != nil {
		return nil, fmt.Errorf("execution list %s: %w", turn, mapErr(err))
	}
	return out, nil
}

func scanExecution(row scanner) (store.Execution, error) {
	var e store.Execution
	var started int64
	var ended, cost *int64
	u := &e.Usage
	err := row.Scan(&e.ID, &e.WorkspaceID, &e.SessionID, &e.TurnID, &e.LeaseID, &e.LeaseGeneration, &e.Pid, &e.State, &e.Outcome, &e.Reason, &started, &ended,
		&u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.ReasoningTokens, &cost, &u.CostEstimated, &u.Model)
	e.StartedAt, e.EndedAt = fromMicros(started), fromNullMicros(ended)
	if cost != nil {
		u.CostMicros, u.CostKnown = *cost, true
	}
	return e, err
}

// TurnJournal implements [store.Turns].
func (s *Store) TurnJournal(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]store.TurnJournalEntry, error) {
	out, err := queryAll(ctx, s.pool, func(row scanner) (store.TurnJournalEntry, error) {
		var e store.TurnJournalEntry
		var at int64
		var detail []byte
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
		return nil, fmt.Errorf("turn journal %s: %w", id, mapErr(err))
	}
	return out, nil
}

// scanTurn scans a turn and opens its detail.
func (s *Store) scanTurn(row scanner) (store.Turn, error) {
	var t store.Turn
	var created, updated int64
	var detail []byte
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
