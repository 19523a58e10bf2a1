package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jamhq/jam/internal/store"
)

// Runtime retention SQL. A turn is over in one of the terminal states of
// jam.TurnState; the statements name them literally.
//
// The doomed turns are selected by one statement that every delete of a
// batch repeats inside the same transaction, so each sees the same set:
// ranked newest first within the session, past ?1, terminal, at most ?2
// of them in id order.
const (
	retentionTerminal = `('succeeded', 'failed', 'cancelled', 'interrupted')`
	retentionDoomed   = `SELECT id FROM (
    SELECT id, state, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY seq DESC) AS n FROM turns
) AS ranked
WHERE n > ?1 AND state IN ` + retentionTerminal + `
ORDER BY id LIMIT ?2`
	retentionOutputOfDoomed     = `DELETE FROM turn_output WHERE turn_id IN (` + retentionDoomed + `)`
	retentionExecutionsOfDoomed = `DELETE FROM executions WHERE turn_id IN (` + retentionDoomed + `)`
	retentionJournalOfDoomed    = `DELETE FROM turn_journal WHERE turn_id IN (` + retentionDoomed + `)`
	retentionDoomedTurns        = `DELETE FROM turns WHERE id IN (` + retentionDoomed + `)`

	// The output of terminal turns past ?1 stored bytes, counted per
	// session newest turn first; a turn's stored bytes are the running
	// total of its last batch.
	retentionOutputBeyond = `DELETE FROM turn_output WHERE turn_id IN (
    SELECT id FROM (
        SELECT t.id, t.state,
               SUM((SELECT o.stored_bytes FROM turn_output o WHERE o.turn_id = t.id ORDER BY o.batch DESC LIMIT 1))
                   OVER (PARTITION BY t.session_id ORDER BY t.seq DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS total
        FROM turns t
    ) AS ranked
    WHERE total > ?1 AND state IN ` + retentionTerminal + `
)`

	// Session messages past the newest ?1 of their session that are
	// over: they name a turn, that turn is not live, and no kept turn
	// answers them. A note not yet consumed names no turn.
	retentionMessages = `DELETE FROM session_messages WHERE id IN (
    SELECT m.id FROM (
        SELECT id, session_id, turn_id, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY seq DESC) AS n
        FROM session_messages
    ) AS m
    WHERE m.n > ?1 AND m.turn_id <> ''
      AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = m.turn_id AND t.state NOT IN ` + retentionTerminal + `)
      AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = m.session_id AND t.message_id = m.id)
)`
)

// retentionTurnBatch bounds the turns one transaction of RuntimePrune
// deletes (Store.pruneBatch), so that a first prune of a large history
// does not hold the writer for long.
const retentionTurnBatch = 500

// RuntimePrune implements [store.RuntimeRetention].
func (s *Store) RuntimePrune(ctx context.Context, p store.RuntimePruneParams) (store.RuntimePruned, error) {
	if err := p.Validate(); err != nil {
		return store.RuntimePruned{}, fmt.Errorf("runtime prune: %w", err)
	}
	var out store.RuntimePruned
	for {
		var n int
		err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
			counts := []*int{&out.Output, &out.Executions, &out.Journal, &n}
			for i, q := range []string{retentionOutputOfDoomed, retentionExecutionsOfDoomed, retentionJournalOfDoomed, retentionDoomedTurns} {
				k, err := execCount(ctx, tx, q, p.KeepTurns, s.pruneBatch)
				if err != nil {
					return err
				}
				*counts[i] += k
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("runtime prune turns: %w", err)
		}
		out.Turns += n
		if n < s.pruneBatch {
			break
		}
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		k, err := execCount(ctx, tx, retentionOutputBeyond, p.MaxOutputBytes)
		if err != nil {
			return err
		}
		out.Output += k
		k, err = execCount(ctx, tx, retentionMessages, p.KeepMessages)
		out.Messages += k
		return err
	})
	if err != nil {
		return out, fmt.Errorf("runtime prune output and messages: %w", err)
	}
	return out, nil
}

// execCount runs one statement in tx and returns the rows it changed.
func execCount(ctx context.Context, tx *sql.Tx, q string, args ...any) (int, error) {
	res, err := tx.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
