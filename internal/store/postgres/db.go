package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// querier is what a statement runs on: the pool, a pooled connection or
// a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// txAttempts bounds how often inTx runs a transaction that the server
// aborted with a serialization failure or a deadlock.
const txAttempts = 5

// inTx runs fn in one transaction at the given isolation and commits if
// fn succeeds. A transaction the server aborts to keep concurrent ones
// serializable (40001) or to break a deadlock (40P01), at any statement
// or at commit, is run again from the start, up to txAttempts times with
// a short random backoff, so fn must be safe to repeat: it may only
// touch the database through tx and must reset whatever it collects.
// The error is classified by mapErr.
func (s *Store) inTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = s.tryTx(ctx, iso, fn)
		if err == nil || !retryable(err) || attempt == txAttempts || ctx.Err() != nil {
			return mapErr(err)
		}
		// 1-4 ms, then 2-8 ms, … : enough for the other transaction to
		// commit, short against a request.
		backoff := time.Duration(1<<(attempt-1)) * time.Millisecond
		backoff += rand.N(3 * backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return mapErr(errors.Join(err, ctx.Err()))
		case <-t.C:
		}
	}
}

func (s *Store) tryTx(ctx context.Context, iso pgx.TxIsoLevel, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit; fn's error is the one to report
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// rowsAffected runs one statement on q and returns how many rows it
// changed.
func rowsAffected(ctx context.Context, q querier, sql string, args ...any) (int64, error) {
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// queryAll runs a query on q and scans every row with scan.
func queryAll[T any](ctx context.Context, q querier, scan func(scanner) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
}
