package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Helpers shared by the messaging tables (account.go, peer.go, binding.go,
// spool.go, queue.go, settled.go, reply.go). Every id is validated before it
// reaches SQL, and UUIDs are stored in their canonical lower-case form, so
// a lookup with an upper-case UUID finds the row written with a lower-case
// one.

// validatePeerKey rejects a zero or malformed peer key.
func validatePeerKey(k jam.PeerKey) error {
	if k.IsZero() {
		return fmt.Errorf("%w: peer key is empty", jam.ErrInvalid)
	}
	return k.Validate()
}

// validateProfile checks a profile name with the peer key's rules for its
// first half.
func validateProfile(profile string) error {
	return jam.PeerKey{Profile: profile, Scope: "_"}.Validate()
}

// parseUUID returns the canonical form of a required UUID.
func parseUUID[T jam.UUID](v T) (T, error) {
	return jam.ParseUUID[T](string(v))
}

// parseMessageID returns the canonical form of a required queued message
// id: a Band UUID or a local notice id.
func parseMessageID(v jam.PlatformMessageID) (jam.PlatformMessageID, error) {
	return jam.ParseMessageID(string(v))
}

// validateSealed rejects an empty sealed blob: the store only ever holds
// sealed material, and sealing never yields zero bytes.
func validateSealed(field string, b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	return nil
}

func validateTime(field string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("%w: %s is zero", jam.ErrInvalid, field)
	}
	return nil
}

// validateRequiredText rejects an empty or non-storable string.
func validateRequiredText(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", jam.ErrInvalid, field)
	}
	return validateText(field, v)
}

// validateBandURL accepts an absolute http or https URL.
func validateBandURL(v string) error {
	if err := validateRequiredText("band url", v); err != nil {
		return err
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: band url %q is not an absolute http(s) URL", jam.ErrInvalid, v)
	}
	return nil
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
