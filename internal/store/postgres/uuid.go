package postgres

import "github.com/jamhq/jam/internal/jam"

// parseUUID returns the canonical (lower-case) form of a required UUID,
// the form every UUID is stored in, so a lookup with an upper-case UUID
// finds the row written with a lower-case one.
func parseUUID[T jam.UUID](v T) (T, error) {
	return jam.ParseUUID[T](string(v))
}
