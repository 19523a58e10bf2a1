package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the daemon_runs table.
const (
	daemonRunInsert = `INSERT INTO daemon_runs (node, pid, version, started_at) VALUES (?, ?, ?, ?)
RETURNING id`
	// The (node, id) index serves this as a single descending seek.
	daemonRunSelectPrevious = `SELECT id, node, pid, version, started_at, stopped_at FROM daemon_runs
WHERE node = ? AND id < ? ORDER BY id DESC LIMIT 1`
	daemonRunStop          = `UPDATE daemon_runs SET stopped_at = ? WHERE id = ? AND stopped_at IS NULL`
	daemonRunSelectStopped = `SELECT stopped_at FROM daemon_runs WHERE id = ?`
)

// DaemonRunStart implements [store.Store]. The insert and the lookup of the
// previous run share a transaction, so two daemons starting on one node
// each see the other's run, never the same predecessor twice.
func (s *Store) DaemonRunStart(ctx context.Context, p store.DaemonRunStartParams) (store.DaemonRunStartResult, error) {
	if err := p.Validate(); err != nil {
		return store.DaemonRunStartResult{}, fmt.Errorf("daemon run start %s: %w", p.Node, err)
	}
	res := store.DaemonRunStartResult{Run: store.DaemonRun{
		Node:      p.Node,
		PID:       p.PID,
		Version:   p.Version,
		StartedAt: fromMicros(p.At.UnixMicro()),
	}}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, daemonRunInsert, p.Node, p.PID, p.Version, p.At.UnixMicro()).Scan(&res.Run.ID)
		if err != nil {
			return err
		}
		prev, err := scanDaemonRun(tx.QueryRowContext(ctx, daemonRunSelectPrevious, p.Node, res.Run.ID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
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

// DaemonRunStop implements [store.Store]. Stopping a stopped run is
// ErrConflict: it means two processes believe they own the run.
func (s *Store) DaemonRunStop(ctx context.Context, id int64, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("daemon run stop %d: %w: time is zero", id, jam.ErrInvalid)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, daemonRunStop, at.UnixMicro(), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil || n == 1 {
			return err
		}
		// Nothing updated: tell a missing run from a stopped one.
		var stopped sql.NullInt64
		err = tx.QueryRowContext(ctx, daemonRunSelectStopped, id).Scan(&stopped)
		if errors.Is(err, sql.ErrNoRows) {
			return jam.ErrNotFound
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: run stopped at %s", jam.ErrConflict, fromMicros(stopped.Int64).Format(time.RFC3339Nano))
	})
	if err != nil {
		return fmt.Errorf("daemon run stop %d: %w", id, err)
	}
	return nil
}

func scanDaemonRun(row scanner) (store.DaemonRun, error) {
	var r store.DaemonRun
	var started int64
	var stopped sql.NullInt64
	if err := row.Scan(&r.ID, &r.Node, &r.PID, &r.Version, &started, &stopped); err != nil {
		return store.DaemonRun{}, err
	}
	r.StartedAt = fromMicros(started)
	if stopped.Valid {
		r.StoppedAt = fromMicros(stopped.Int64)
	}
	return r, nil
}
