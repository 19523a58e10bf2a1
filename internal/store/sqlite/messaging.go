package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Helpers shared by the messaging tables (account.go, peer.go, binding.go,
// spool.go, queue.go, settled.go, reply.go). Every id is validated, by
// the validators of package store, before it reaches SQL, and UUIDs are
// stored in their canonical lower-case form, so a lookup with an
// upper-case UUID finds the row written with a lower-case one.

// parseUUID returns the canonical form of a required UUID.
func parseUUID[T jam.UUID](v T) (T, error) {
	return jam.ParseUUID[T](string(v))
}

// parseMessageID returns the canonical form of a required queued message
// id: a Band UUID or a local notice id.
func parseMessageID(v jam.PlatformMessageID) (jam.PlatformMessageID, error) {
	return jam.ParseMessageID(string(v))
}

// toNullMicros stores a zero time as NULL.
func toNullMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

// fromNullMicros reverses toNullMicros.
func fromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// queryAll runs a query and scans every row with scan.
func queryAll[T any](ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
