package daemon

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// children starts delegations' child sessions and tells their parents
// (delegation.Children).
type children struct {
	m *messaging
}

// Start creates d's child session and queues its first turn.
func (c children) Start(ctx context.Context, d store.Delegation) (jam.SessionID, error) {
	return "", fmt.Errorf("%w: child sessions are not wired yet", jam.ErrUnavailable)
}

// Notify queues text as a local notice for parent's next turn.
func (c children) Notify(ctx context.Context, parent jam.SessionID, text string) error {
	return fmt.Errorf("%w: parent notices are not wired yet", jam.ErrUnavailable)
}
