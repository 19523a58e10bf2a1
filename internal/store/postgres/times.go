package postgres

import "time"

// Times are stored as BIGINT UTC microseconds, as in the SQLite dialect,
// so a row copied between dialects keeps its value unchanged.

// micros is the stored form of t.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros reverses micros; the result is in UTC.
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

// fromNullMicros reverses micros for a nullable column: nil is the zero
// time.
func fromNullMicros(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return fromMicros(*v)
}

// nullMicros stores a zero time as NULL.
func nullMicros(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := micros(t)
	return &v
}
