package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// microsPerDay is one UTC day in the store's time unit.
const microsPerDay = 24 * 60 * 60 * 1000 * 1000

// The usage report (migration 0016) sums in the query: the rows it reads
// are its groups, never the executions. PostgreSQL's SUM of a BIGINT is
// a NUMERIC; each is cast back to BIGINT, the type the SQLite dialect
// reports. Keys are grouped and ordered in byte order (COLLATE "C"), as
// SQLite orders them.
const (
	usageSums = `COUNT(DISTINCT e.turn_id),
  COALESCE(SUM(e.input_tokens), 0)::BIGINT, COALESCE(SUM(e.output_tokens), 0)::BIGINT, COALESCE(SUM(e.cached_tokens), 0)::BIGINT, COALESCE(SUM(e.reasoning_tokens), 0)::BIGINT,
  COALESCE(SUM(e.cost_micros), 0)::BIGINT, COUNT(e.cost_micros),
  COALESCE(SUM(CASE WHEN e.cost_estimated THEN 1 ELSE 0 END), 0)::BIGINT,
  COALESCE(SUM(CASE WHEN e.cost_micros IS NULL AND e.input_tokens + e.output_tokens + e.cached_tokens + e.reasoning_tokens > 0 THEN 1 ELSE 0 END), 0)::BIGINT`
	usageFrom = ` FROM executions e LEFT JOIN runtime_sessions s ON s.workspace_id = e.workspace_id AND s.id = e.session_id
WHERE e.workspace_id = $1 AND e.started_at >= $2 AND e.state = 'ended'`
	usageTotal = `SELECT ` + usageSums + usageFrom
)

// usageKeys are the two key columns of each grouping: text keys, or the
// day as the number of UTC days since the epoch.
var usageKeys = map[store.UsageBy]string{
	store.UsageByAgent:   `COALESCE(s.profile, '') COLLATE "C", COALESCE(s.scope, '') COLLATE "C"`,
	store.UsageByRoom:    `COALESCE(s.room_id, '') COLLATE "C", ''`,
	store.UsageBySession: `e.session_id COLLATE "C", ''`,
	store.UsageByDay:     fmt.Sprintf(`e.started_at / %d, ''`, microsPerDay),
}

// usageGroupQuery is the report's query for a grouping's keys.
func usageGroupQuery(keys string) string {
	return `SELECT ` + keys + `, ` + usageSums + usageFrom + ` GROUP BY 1, 2 ORDER BY 1, 2 LIMIT $3`
}

// UsageReport implements [store.Executions]: the groups and the total
// are read in one REPEATABLE READ transaction, one snapshot, so they sum
// the same executions.
func (s *Store) UsageReport(ctx context.Context, q store.UsageQuery) (store.UsageReport, error) {
	keys, ok := usageKeys[q.By]
	if !ok {
		return store.UsageReport{}, fmt.Errorf("usage report: %w: group by %q (want agent, room, session or day)", jam.ErrInvalid, q.By)
	}
	var since int64
	if !q.Since.IsZero() {
		since = micros(q.Since)
	}
	var r store.UsageReport
	err := s.inTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
		r = store.UsageReport{}
		rows, err := queryAll(ctx, tx, func(row scanner) (store.UsageRow, error) {
			var k1 any
			var k2 string
			var u store.UsageRow
			if err := row.Scan(append([]any{&k1, &k2}, sumDest(&u.UsageSum)...)...); err != nil {
				return u, err
			}
			switch q.By {
			case store.UsageByAgent:
				u.Peer = jam.PeerKey{Profile: fmt.Sprint(k1), Scope: k2}
			case store.UsageByRoom:
				u.Room = jam.RoomID(fmt.Sprint(k1))
			case store.UsageBySession:
				u.Session = jam.SessionID(fmt.Sprint(k1))
			case store.UsageByDay:
				day, ok := k1.(int64)
				if !ok {
					return u, fmt.Errorf("day %v is not a number", k1)
				}
				u.Day = time.UnixMicro(day * microsPerDay).UTC()
			}
			return u, nil
		}, usageGroupQuery(keys), q.WorkspaceID, since, store.UsageMaxRows+1)
		if err != nil {
			return err
		}
		if len(rows) > store.UsageMaxRows {
			rows, r.Truncated = rows[:store.UsageMaxRows], true
		}
		r.Rows = rows
		if err := tx.QueryRow(ctx, usageTotal, q.WorkspaceID, since).Scan(sumDest(&r.Total)...); err != nil {
			return fmt.Errorf("total: %w", err)
		}
		return nil
	})
	if err != nil {
		return store.UsageReport{}, fmt.Errorf("usage report: %w", err)
	}
	return r, nil
}

// sumDest is where a row's sums scan to, in usageSums' order.
func sumDest(u *store.UsageSum) []any {
	return []any{&u.Turns, &u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.ReasoningTokens, &u.CostMicros, &u.Costed, &u.Estimated, &u.Unpriced}
}
