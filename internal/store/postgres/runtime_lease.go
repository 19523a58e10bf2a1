package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Leases = (*Store)(nil)

// SQL of leases.
const (
	leaseColumns = `id, workspace_id, holder, generation, state, reason, pid, started_at, ended_at`
	leaseLiveOf  = `SELECT ` + leaseColumns + ` FROM leases WHERE workspace_id = $1 AND holder = $2 AND state = 'live'`
	leaseByID    = `SELECT ` + leaseColumns + ` FROM leases WHERE workspace_id = $1 AND id = $2`
	// leaseLockHolder serializes the acquires of one holder for the rest
	// of the transaction: each ends the live lease the previous one
	// started and takes the generation after it. Without it two acquires
	// could read the same live lease and the same MAX(generation), and
	// the loser would fail on a unique index instead of replacing the
	// winner. The schema still refuses a second live lease of a holder
	// (leases_one_live) and a generation taken twice.
	leaseLockHolder = `SELECT pg_advisory_xact_lock(hashtextextended('jam.leases/' || $1::text || '/' || $2::text, 0))`
	leaseNextGen    = `SELECT COALESCE(MAX(generation), 0) + 1 FROM leases WHERE workspace_id = $1 AND holder = $2`
	leaseInsert     = `INSERT INTO leases (` + leaseColumns + `) VALUES ($1, $2, $3, $4, 'live', '', $5, $6, NULL)`
	leaseEnd        = `UPDATE leases SET state = 'ended', reason = $1, ended_at = $2 WHERE workspace_id = $3 AND id = $4 AND state = 'live'`
)

// LeaseAcquire implements [store.Leases]: under the holder's
// transaction-scoped advisory lock, the live lease (if any) ends with
// reason lease_replaced and the new one starts with the next generation,
// in one READ COMMITTED transaction. Ending the old lease waits for the
// fenced turn writes that hold it (FOR SHARE, see turnStart): once the
// new lease is returned, no write under the old one can still commit.
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("lease acquire: %w", err)
	}
	at := micros(p.At)
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, leaseLockHolder, p.WorkspaceID, p.Holder); err != nil {
			return err
		}
		old, err := scanLease(tx.QueryRow(ctx, leaseLiveOf, p.WorkspaceID, p.Holder))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			if _, err := tx.Exec(ctx, leaseEnd, jam.ReasonLeaseReplaced, at, p.WorkspaceID, old.ID); err != nil {
				return err
			}
		}
		var gen int64
		if err := tx.QueryRow(ctx, leaseNextGen, p.WorkspaceID, p.Holder).Scan(&gen); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, leaseInsert, p.ID, p.WorkspaceID, p.Holder, gen, p.Pid, at)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == codeUniqueViolation {
			if pe.ConstraintName == "leases_pkey" {
				return fmt.Errorf("%w: lease %s", jam.ErrAlreadyExists, p.ID)
			}
			// A second live lease or a generation taken twice: only a
			// writer that bypasses the holder's lock gets here.
			return fmt.Errorf("%w: holder %s: %s", jam.ErrConflict, p.Holder, pe.ConstraintName)
		}
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease acquire: %w", err)
	}
	l, err := scanLease(s.pool.QueryRow(ctx, leaseByID, p.WorkspaceID, p.ID))
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease acquire: %w", mapErr(err))
	}
	return l, nil
}

// LeaseEnd implements [store.Leases]. state = 'live' is a predicate of
// the update: of two ends of one lease, the second is jam.ErrConflict.
func (s *Store) LeaseEnd(ctx context.Context, ws jam.WorkspaceID, id jam.LeaseID, reason string, at time.Time) error {
	if err := store.ValidateLeaseEnd(reason, at); err != nil {
		return fmt.Errorf("lease end %s: %w", id, err)
	}
	n, err := rowsAffected(ctx, s.pool, leaseEnd, reason, micros(at), ws, id)
	if err != nil {
		return fmt.Errorf("lease end %s: %w", id, mapErr(err))
	}
	if n == 0 {
		if _, err := scanLease(s.pool.QueryRow(ctx, leaseByID, ws, id)); err != nil {
			return fmt.Errorf("lease end %s: %w", id, notFoundAs(err, "no such lease"))
		}
		return fmt.Errorf("lease end %s: %w: already ended", id, jam.ErrConflict)
	}
	return nil
}

// LeaseLive implements [store.Leases].
func (s *Store) LeaseLive(ctx context.Context, ws jam.WorkspaceID, holder string) (store.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, leaseLiveOf, ws, holder))
	if err != nil {
		return store.Lease{}, fmt.Errorf("live lease of %s: %w", holder, notFoundAs(err, "no live lease"))
	}
	return l, nil
}

func scanLease(row scanner) (store.Lease, error) {
	var l store.Lease
	var started int64
	var ended *int64
	err := row.Scan(&l.ID, &l.WorkspaceID, &l.Holder, &l.Generation, &l.State, &l.Reason, &l.Pid, &started, &ended)
	l.StartedAt, l.EndedAt = fromMicros(started), fromNullMicros(ended)
	return l, err
}
