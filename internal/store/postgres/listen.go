package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
)

// eventsChannel is the LISTEN/NOTIFY channel EventAppend notifies, once
// per workspace of a batch, in its transaction: the server delivers a
// notification when (and only if) the transaction commits. Where the
// SQLite dialect's broker wakes its subscribers in process, another
// daemon sharing the database learns of new events this way.
const (
	eventsChannel = "jam_events"
	eventsNotify  = `SELECT pg_notify('` + eventsChannel + `', w) FROM unnest($1::text[]) AS w`
	eventsListen  = `LISTEN ` + eventsChannel
)

// EventListener receives a notification for every committed EventAppend
// of any handle on the database, naming a workspace that has new events.
// It holds one connection of its own, outside the pool, until Close.
// Notifications say "look again", not what changed: a listener reads the
// events with EventList after the last sequence it saw, and one that
// falls behind loses nothing but wake-ups.
type EventListener struct {
	conn *pgx.Conn
}

// ListenEvents starts listening: notifications of batches that commit
// after it returns are delivered to Wait.
func (s *Store) ListenEvents(ctx context.Context) (*EventListener, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("listen for events: %w", mapErr(err))
	}
	conn := pc.Hijack() // the pool forgets it; Close closes it
	if _, err := conn.Exec(ctx, eventsListen); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("listen for events: %w", mapErr(err))
	}
	return &EventListener{conn: conn}, nil
}

// Wait blocks until a notification arrives or ctx ends, and returns the
// workspace it names. After an error other than ctx's the listener's
// connection is gone: Close it and listen again.
func (l *EventListener) Wait(ctx context.Context) (jam.WorkspaceID, error) {
	n, err := l.conn.WaitForNotification(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("wait for events: %w", mapErr(err))
	}
	return jam.WorkspaceID(n.Payload), nil
}

// Close ends the listener and closes its connection.
func (l *EventListener) Close() error {
	return l.conn.Close(context.Background())
}
