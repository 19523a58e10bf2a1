package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of turn output (migration 0011).
const (
	// outputTurnFence reads the turn a batch belongs to, to tell why a
	// fenced insert wrote nothing.
	outputTurnFence = `SELECT state, lease_id, lease_generation FROM turns WHERE workspace_id = ? AND id = ?`
	outputLast      = `SELECT batch, text_bytes, stored_bytes, truncated FROM turn_output WHERE turn_id = ? ORDER BY batch DESC LIMIT 1`
	// outputInsert writes a batch only while the turn is active on the
	// writer's lease and generation: the fence is the insert's own
	// predicate, so no row is a refused write. PostgreSQL: the subquery
	// locks the turn row (FOR SHARE), so a concurrent move of the turn is
	// waited for and seen under READ COMMITTED.
	outputInsert = `INSERT INTO turn_output (workspace_id, turn_id, batch, updates, text_bytes, stored_bytes, truncated, at)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
WHERE EXISTS (SELECT 1 FROM turns WHERE workspace_id = ?1 AND id = ?2 AND state IN ('running', 'cancelling')
              AND lease_id = ?9 AND lease_generation = ?10)`
	outputOfTurn = `SELECT batch, updates, truncated, at FROM turn_output WHERE workspace_id = ? AND turn_id = ? ORDER BY batch`
)

// TurnOutputAppend implements [store.Runtime].
func (s *Store) TurnOutputAppend(ctx context.Context, p store.TurnOutputAppendParams) (store.TurnOutputBatch, error) {
	if err := p.Validate(); err != nil {
		return store.TurnOutputBatch{}, fmt.Errorf("turn output %s: %w", p.TurnID, err)
	}
	kept := store.TurnOutputBatch{TurnID: p.TurnID, Batch: p.Batch, At: p.At.UTC().Truncate(time.Microsecond)}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		// fenced tells why a write was refused, or that the turn is
		// active on the writer's lease after all (nil).
		fenced := func() error {
			var state jam.TurnState
			var lease jam.LeaseID
			var gen int64
			if err := tx.QueryRowContext(ctx, outputTurnFence, p.WorkspaceID, p.TurnID).Scan(&state, &lease, &gen); err != nil {
				return notFoundAs(err, "no such turn")
			}
			if (state != jam.TurnRunning && state != jam.TurnCancelling) || lease != p.LeaseID || gen != p.LeaseGeneration {
				return fmt.Errorf("%w: turn is %s on lease %s generation %d", jam.ErrLeaseLost, state, lease, gen)
			}
			return nil
		}
		var last int
		var used store.OutputUsage
		err := tx.QueryRowContext(ctx, outputLast, p.TurnID).Scan(&last, &used.Text, &used.Bytes, &used.Truncated)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if p.Batch <= last {
			// A stale writer hears that it is stale, not that it is late.
			if err := fenced(); err != nil {
				return err
			}
			return fmt.Errorf("%w: batch %d is not after the last stored batch %d", jam.ErrConflict, p.Batch, last)
		}
		was := used.Truncated
		kept.Updates, used = store.BoundTurnOutput(p.Updates, used)
		kept.Truncated = used.Truncated
		if len(kept.Updates) == 0 && was {
			return fenced() // nothing more to say about a turn already cut short
		}
		raw, err := json.Marshal(kept.Updates)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, outputInsert, p.WorkspaceID, p.TurnID, p.Batch, s.seal(string(raw), outputAAD(p.WorkspaceID, p.TurnID, p.Batch)),
			used.Text, used.Bytes, used.Truncated, p.At.UnixMicro(), p.LeaseID, p.LeaseGeneration)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		if err := fenced(); err != nil {
			return err
		}
		return errors.New("the fenced insert wrote nothing on an active turn")
	})
	if err != nil {
		return store.TurnOutputBatch{}, fmt.Errorf("turn output %s batch %d: %w", p.TurnID, p.Batch, err)
	}
	return kept, nil
}

// TurnOutput implements [store.Runtime].
func (s *Store) TurnOutput(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]store.TurnOutputBatch, error) {
	out, err := queryAll(ctx, s.reader, func(row scanner) (store.TurnOutputBatch, error) {
		b := store.TurnOutputBatch{TurnID: id}
		var stored any
		var at int64
		if err := row.Scan(&b.Batch, &stored, &b.Truncated, &at); err != nil {
			return b, err
		}
		b.At = fromMicros(at)
		raw, err := s.open(stored, outputAAD(ws, id, b.Batch))
		if err != nil {
			return b, fmt.Errorf("output batch %d: %w", b.Batch, err)
		}
		if err := json.Unmarshal([]byte(raw), &b.Updates); err != nil {
			return b, fmt.Errorf("decode output batch %d: %w", b.Batch, err)
		}
		return b, nil
	}, outputOfTurn, ws, id)
	if err != nil {
		return nil, fmt.Errorf("turn output %s: %w", id, err)
	}
	return out, nil
}
