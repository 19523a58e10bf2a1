package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// queueCountOfPeer counts a peer's queue rows, routed and unrouted,
// through the lane index's prefix.
const queueCountOfPeer = `SELECT COUNT(*) FROM queue WHERE workspace_id = ? AND profile = ? AND scope = ?`

// queueCap bounds the queue rows of one peer (Config.MaxQueuedPerPeer).
// Counting a peer's rows on every move would cost a scan of its rows per
// lane batch, so it keeps per peer how many more rows may arrive before
// it counts again: every row a move queues spends one, and rows leaving
// the queue are not credited (the next count sees them), so the estimate
// only ever runs out early, never late: the bound is exact. Moves run on the one writer
// connection, one transaction at a time, so a count and the inserts that
// follow it cannot interleave with another move's.
type queueCap struct {
	max  int
	mu   sync.Mutex
	room map[queueCapKey]int // guarded by mu
}

type queueCapKey struct {
	ws  jam.WorkspaceID
	key jam.PeerKey
}

// queued checks, inside a move's transaction, the rows it queued
// (moved; already inserted) against the bound, per peer: when a peer's
// estimate does not cover them it counts the peer's rows, and a peer now
// over the bound refuses the whole transaction with an error wrapping
// jam.ErrUnavailable, so its entries stay in the spool until the agent
// takes some.
func (c *queueCap) queued(ctx context.Context, tx *sql.Tx, moved []store.SpoolMoved) error {
	perPeer := map[queueCapKey]int{}
	for _, m := range moved {
		if m.Outcome == store.MoveQueued {
			perPeer[queueCapKey{m.Row.WorkspaceID, m.Row.Peer}]++
		}
	}
	for k, added := range perPeer {
		c.mu.Lock()
		room := c.room[k]
		if room >= added {
			c.room[k] = room - added
			c.mu.Unlock()
			continue
		}
		c.mu.Unlock()
		var n int
		if err := tx.QueryRowContext(ctx, queueCountOfPeer, k.ws, k.key.Profile, k.key.Scope).Scan(&n); err != nil {
			return err
		}
		if n > c.max {
			return fmt.Errorf("%w: %s has %d messages queued, the most one agent's queue holds is %d; the next ones wait in the spool until it takes some",
				jam.ErrUnavailable, k.key, n-added, c.max)
		}
		c.mu.Lock()
		c.room[k] = c.max - n
		c.mu.Unlock()
	}
	return nil
}
