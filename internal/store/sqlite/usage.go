package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// microsPerDay is one UTC day in the store's time unit.
const microsPerDay = 24 * 60 * 60 * 1000 * 1000

// The usage report (migration 0016) sums in the query: the rows it reads
// are its groups, never the executions.
const (
	usageSums = `COUNT(DISTINCT e.turn_id),
  COALESCE(SUM(e.input_tokens), 0), COALESCE(SUM(e.output_tokens), 0), COALESCE(SUM(e.cached_tokens), 0), COALESCE(SUM(e.reasoning_tokens), 0),
  COALESCE(SUM(e.cost_micros), 0), COUNT(e.cost_micros),
  COALESCE(SUM(CASE WHEN e.cost_estimated THEN 1 ELSE 0 END), 0),
  COALESCE(SUM(CASE WHEN e.cost_micros IS NULL AND e.input_tokens + e.output_tokens + e.cached_tokens + e.reasoning_tokens > 0 THEN 1 ELSE 0 END), 0)`
	usageFrom = ` FROM executions e LEFT JOIN runtime_sessions s ON s.workspace_id = e.workspace_id AND s.id = e.session_id
WHERE e.workspace_id = ? AND e.started_at >= ? AND e.state = 'ended'`
	usageTotal = `SELECT ` + usageSums + usageFrom
)

// usageKeys are the two key columns of each grouping.
var usageKeys = map[store.UsageBy]string{
	store.UsageByAgent:   `COALESCE(s.profile, ''), COALESCE(s.scope, '')`,
	store.UsageByRoom:    `COALESCE(s.room_id, ''), ''`,
	store.UsageBySession: `e.session_id, ''`,
	store.UsageByDay:     fmt.Sprintf(`e.started_at / %d, ''`, microsPerDay),
}

// usageGroupQuery is the report's query for a grouping's keys.
func usageGroupQuery(keys string) string {
	return `SELECT ` + keys + `, ` + usageSums + usageFrom + ` GROUP BY 1, 2 ORDER BY 1, 2 LIMIT ?`
}

// UsageReport implements [store.Runtime].
func (s *Store) UsageReport(ctx context.Context, q store.UsageQuery) (store.UsageReport, error) {
	keys, ok := usageKeys[q.By]
	if !ok {
		return store.UsageReport{}, fmt.Errorf("usage report: %w: group by %q (want agent, room, session or day)", jam.ErrInvalid, q.By)
	}
	var since int64
	if !q.Since.IsZero() {
		since = q.Since.UnixMicro()
	}
	var r store.UsageReport
	// One read transaction: the rows and the total see the same executions.
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return r, fmt.Errorf("usage report: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	query := usageGroupQuery(keys)
	rows, err := queryAll(ctx, tx, func(row scanner) (store.UsageRow, error) {
		var k1 any
		var k2 string
		var u store.UsageRow
		if err := row.Scan(append([]any{&k1, &k2}, sumDest(&u.UsageSum)...)...); err != nil {
			return u, err
		}
		switch q.By {
		case store.UsageByAgent:
			u.Peer = jam.PeerKey{Profile: asString(k1), Scope: k2}
		case store.UsageByRoom:
			u.Room = jam.RoomID(asString(k1))
		case store.UsageBySession:
			u.Session = jam.SessionID(asString(k1))
		case store.UsageByDay:
			day, ok := k1.(int64)
			if !ok {
				return u, fmt.Errorf("usage report: day %v is not a number", k1)
			}
			u.Day = time.UnixMicro(day * microsPerDay).UTC()
		}
		return u, nil
	}, query, q.WorkspaceID, since, store.UsageMaxRows+1)
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("usage report: %w", err)
	}
	if len(rows) > store.UsageMaxRows {
		rows, r.Truncated = rows[:store.UsageMaxRows], true
	}
	r.Rows = rows
	if err := tx.QueryRowContext(ctx, usageTotal, q.WorkspaceID, since).Scan(sumDest(&r.Total)...); err != nil {
		return store.UsageReport{}, fmt.Errorf("usage report total: %w", err)
	}
	return r, nil
}

// sumDest is where a row's sums scan to, in usageSums' order.
func sumDest(u *store.UsageSum) []any {
	return []any{&u.Turns, &u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.ReasoningTokens, &u.CostMicros, &u.Costed, &u.Estimated, &u.Unpriced}
}

// asString is a scanned text column as a string.
func asString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return fmt.Sprint(v)
}
