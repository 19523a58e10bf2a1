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

var _ store.TurnOutputs = (*Store)(nil)

// SQL of turn output (migration 0011).
const (
	// outputTurnFence reads the turn a batch belongs to, to fence the
	// write on its lease, and locks the turn's row until the batch is
	// stored: the turn cannot move meanwhile, and the appends of one
	// turn take turns, so each reads the usage the previous one left and
	// the turn's bounds hold across connections.
	outputTurnFence = `SELECT state, lease_id, lease_generation FROM turns WHERE workspace_id = $1 AND id = $2 FOR UPDATE`
	outputLast      = `SELECT batch, text_bytes, stored_bytes, truncated FROM turn_output WHERE turn_id = $1 ORDER BY batch DESC LIMIT 1`
	outputInsert    = `INSERT INTO turn_output (workspace_id, turn_id, batch, updates, text_bytes, stored_bytes, truncated, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`
	outputOfTurn = `SELECT batch, updates, truncated, at FROM turn_output WHERE workspace_id = $1 AND turn_id = $2 ORDER BY batch`
)

// TurnOutputAppend implements [store.TurnOutputs]: the fence, the
// turn's running totals, the bound (store.BoundTurnOutput) and the
// insert of the sealed batch share one READ COMMITTED transaction that
// holds the turn's row lock.
func (s *Store) TurnOutputAppend(ctx context.Context, p store.TurnOutputAppendParams) (store.TurnOutputBatch, error) {
	if err := p.Validate(); err != nil {
		return store.TurnOutputBatch{}, fmt.Errorf("turn output %s: %w", p.TurnID, err)
	}
	var kept store.TurnOutputBatch
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		kept = store.TurnOutputBatch{TurnID: p.TurnID, Batch: p.Batch, At: p.At.UTC().Truncate(time.Microsecond)}
		var state jam.TurnState
		var lease jam.LeaseID
		var gen int64
		if err := tx.QueryRow(ctx, outputTurnFence, p.WorkspaceID, p.TurnID).Scan(&state, &lease, &gen); err != nil {
			return notFoundAs(err, "no such turn")
		}
		if (state != jam.TurnRunning && state != jam.TurnCancelling) || lease != p.LeaseID || gen != p.LeaseGeneration {
			return fmt.Errorf("%w: turn is %s on lease %s generation %d", jam.ErrLeaseLost, state, lease, gen)
		}
		var last int
		var used store.OutputUsage
		err := tx.QueryRow(ctx, outputLast, p.TurnID).Scan(&last, &used.Text, &used.Bytes, &used.Truncated)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if p.Batch <= last {
			return fmt.Errorf("%w: batch %d is not after the last stored batch %d", jam.ErrConflict, p.Batch, last)
		}
		was := used.Truncated
		kept.Updates, used = store.BoundTurnOutput(p.Updates, used)
		kept.Truncated = used.Truncated
		if len(kept.Updates) == 0 && was {
			return nil // nothing more to say about a turn already cut short
		}
		raw, err := json.Marshal(kept.Updates)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, outputInsert, p.WorkspaceID, p.TurnID, p.Batch, s.seal(string(raw), outputAAD(p.WorkspaceID, p.TurnID, p.Batch)), used.Text, used.Bytes, used.Truncated, micros(p.At))
		return err
	})
	if err != nil {
		return store.TurnOutputBatch{}, fmt.Errorf("turn output %s batch %d: %w", p.TurnID, p.Batch, err)
	}
	return kept, nil
}

// TurnOutput implements [store.TurnOutputs].
func (s *Store) TurnOutput(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]store.TurnOutputBatch, error) {
	out, err := queryAll(ctx, s.pool, func(row scanner) (store.TurnOutputBatch, error) {
		b := store.TurnOutputBatch{TurnID: id}
		var stored []byte
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
		return nil, fmt.Errorf("turn output %s: %w", id, mapErr(err))
	}
	return out, nil
}
