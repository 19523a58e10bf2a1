package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.DaemonRuns = (*Store)(nil)

// SQL of the daemon_runs table.
const (
	// The node's runs are serialized by a transaction-level advisory lock
	// on the node's name, so two daemons starting on one node at once
	// each see the other's run, never the same predecessor twice: an
	// identity value is handed out at insert, not at commit, so without
	// the lock both could insert before either reads.
	daemonRunLockNode = `SELECT pg_advisory_xact_lock(hashtextextended('jam.daemon_runs/' || $1, 0))`
	daemonRunInsert   = `INSERT INTO daemon_runs (node, pid, version, started_at) VALUES ($1, $2, $3, $4)
RETURNING id`
	// The (node, id) index serves this as a single descending seek.
	daemonRunSelectPrevious = `SELECT id, node, pid, version, started_at, stopped_at FROM daemon_runs
WHERE node = $1 AND id < $2 ORDER BY id DESC LIMIT 1`
	daemonRunStop          = `UPDATE daemon_runs SET stopped_at = $1 WHERE id = $2 AND stopped_at IS NULL`
	daemonRunSelectStopped = `SELECT stopped_at FROM daemon_runs WHERE id = $1`
)

// DaemonRunStart implements [store.DaemonRuns]: the lock of the node,
// the insert and the lookup of the previous run share one READ COMMITTED
// transaction.
func (s *Store) DaemonRunStart(ctx context.Context, p store.DaemonRunStartParams) (store.DaemonRunStartResult, error) {
	if err := p.Validate(); err != nil {
		return store.DaemonRunStartResult{}, fmt.Errorf("daemon run start %s: %w", p.Node, err)
	}
	var res store.DaemonRunStartResult
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		res = store.DaemonRunStartResult{Run: store.DaemonRun{
			Node:      p.Node,
			PID:       p.PID,
			Version:   p.Version,
			StartedAt: fromMicros(micros(p.At)),
		}}
		if _, err := tx.Exec(ctx, daemonRunLockNode, p.Node); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, daemonRunInsert, p.Node, p.PID, p.Version, micros(p.At)).Scan(&res.Run.ID); err != nil {
			return err
		}
		prev, err := scanDaemonRun(tx.QueryRow(ctx, daemonRunSelectPrevious, p.Node, res.Run.ID))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return err
		}
		res.Previous = &prev
		return nil
	})
	if err != nil {
		return store.DaemonRunStartResult{}, fmt.Errorf("daemon run start %s: %w", p.Node, err)
	}
	return res, nil
}

// DaemonRunStop implements [store.DaemonRuns]. The update's predicate
// (stopped_at IS NULL) decides a race of two stops in SQL; stopping a
// stopped run is jam.ErrConflict: two processes believe they own it.
func (s *Store) DaemonRunStop(ctx context.Context, id int64, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("daemon run stop %d: %w: time is zero", id, jam.ErrInvalid)
	}
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		n, err := rowsAffected(ctx, tx, daemonRunStop, micros(at), id)
		if err != nil || n == 1 {
			return err
		}
		// Nothing updated: tell a missing run from a stopped one.
		var stopped *int64
		err = tx.QueryRow(ctx, daemonRunSelectStopped, id).Scan(&stopped)
		if errors.Is(err, pgx.ErrNoRows) {
			return jam.ErrNotFound
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: run stopped at %s", jam.ErrConflict, fromNullMicros(stopped).Format(time.RFC3339Nano))
	})
	if err != nil {
		return fmt.Errorf("daemon run stop %d: %w", id, err)
	}
	return nil
}

func scanDaemonRun(row scanner) (store.DaemonRun, error) {
	var r store.DaemonRun
	var started int64
	var stopped *int64
	if err := row.Scan(&r.ID, &r.Node, &r.PID, &r.Version, &started, &stopped); err != nil {
		return store.DaemonRun{}, err
	}
	r.StartedAt = fromMicros(started)
	r.StoppedAt = fromNullMicros(stopped)
	return r, nil
}
