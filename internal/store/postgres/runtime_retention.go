package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/store"
)

var _ store.RuntimeRetention = (*Store)(nil)

// Runtime retention SQL, the SQLite dialect's statements. A turn is over
// in one of the terminal states of jam.TurnState; the statements name
// them literally.
//
// The doomed turns are selected by one statement that every delete of a
// batch repeats inside the same transaction; the transaction is
// REPEATABLE READ, so each statement sees the same snapshot and the same
// set: ranked newest first within the session, past $1, terminal, at
// most $2 of them in id order. A row another transaction changes
// meanwhile makes the delete fail with a serialization failure, and the
// batch runs again (inTx).
const (
	retentionTerminal = `('succeeded', 'failed', 'cancelled', 'interrupted')`
	retentionDoomed   = `SELECT id FROM (
    SELECT id, state, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY seq DESC) AS n FROM turns
) AS ranked
WHERE n > $1 AND state IN ` + retentionTerminal + `
ORDER BY id COLLATE "C" LIMIT $2`
	retentionOutputOfDoomed     = `DELETE FROM turn_output WHERE turn_id IN (` + retentionDoomed + `)`
	retentionExecutionsOfDoomed = `DELETE FROM executions WHERE turn_id IN (` + retentionDoomed + `)`
	retentionJournalOfDoomed    = `DELETE FROM turn_journal WHERE turn_id IN (` + retentionDoomed + `)`
	retentionDoomedTurns        = `DELETE FROM turns WHERE id IN (` + retentionDoomed + `)`

	// The output of terminal turns past $1 stored bytes, counted per
	// session newest turn first; a turn's stored bytes are the running
	// total of its last batch.
	retentionOutputBeyond = `DELETE FROM turn_output WHERE turn_id IN (
    SELECT id FROM (
        SELECT t.id, t.state,
               SUM((SELECT o.stored_bytes FROM turn_output o WHERE o.turn_id = t.id ORDER BY o.batch DESC LIMIT 1))
                   OVER (PARTITION BY t.session_id ORDER BY t.seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total
        FROM turns t
    ) AS ranked
    WHERE total > $1 AND state IN ` + retentionTerminal + `
)`

	// Session messages past the newest $1 of their session that are
	// over: they name a turn, that turn is not live, and no kept turn
	// answers them. A note not yet consumed names no turn.
	retentionMessages = `DELETE FROM session_messages WHERE id IN (
    SELECT m.id FROM (
        SELECT id, session_id, turn_id, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY seq DESC) AS n
        FROM session_messages
    ) AS m
    WHERE m.n > $1 AND m.turn_id <> ''
      AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = m.turn_id AND t.state NOT IN ` + retentionTerminal + `)
      AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = m.session_id AND t.message_id = m.id)
)`
)

// retentionTurnBatch bounds the turns one transaction of RuntimePrune
// deletes, so that a first prune of a large history holds its locks
// briefly.
const retentionTurnBatch = 500

// RuntimePrune implements [store.RuntimeRetention].
func (s *Store) RuntimePrune(ctx context.Context, p store.RuntimePruneParams) (store.RuntimePruned, error) {
	return s.runtimePrune(ctx, p, retentionTurnBatch)
}

// runtimePrune is RuntimePrune with the turns of one transaction bounded
// by batch.
func (s *Store) runtimePrune(ctx context.Context, p store.RuntimePruneParams, batch int) (store.RuntimePruned, error) {
	if err := p.Validate(); err != nil {
		return store.RuntimePruned{}, fmt.Errorf("runtime prune: %w", err)
	}
	var out store.RuntimePruned
	for {
		var got store.RuntimePruned
		var n int
		err := s.inTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
			got, n = store.RuntimePruned{}, 0
			counts := []*int{&got.Output, &got.Executions, &got.Journal, &n}
			for i, q := range []string{retentionOutputOfDoomed, retentionExecutionsOfDoomed, retentionJournalOfDoomed, retentionDoomedTurns} {
				k, err := rowsAffected(ctx, tx, q, p.KeepTurns, batch)
				if err != nil {
					return err
				}
				*counts[i] += int(k)
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("runtime prune turns: %w", err)
		}
		out.Output += got.Output
		out.Executions += got.Executions
		out.Journal += got.Journal
		out.Turns += n
		if n < batch {
			break
		}
	}
	var got store.RuntimePruned
	err := s.inTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		got = store.RuntimePruned{}
		k, err := rowsAffected(ctx, tx, retentionOutputBeyond, p.MaxOutputBytes)
		if err != nil {
			return err
		}
		got.Output = int(k)
		k, err = rowsAffected(ctx, tx, retentionMessages, p.KeepMessages)
		got.Messages = int(k)
		return err
	})
	if err != nil {
		return out, fmt.Errorf("runtime prune output and messages: %w", err)
	}
	out.Output += got.Output
	out.Messages += got.Messages
	return out, nil
}
