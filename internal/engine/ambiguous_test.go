package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// lostReply is a spool whose first push commits but whose answer is lost,
// as when a PostgreSQL connection dies after the commit and before its
// reply: the caller sees jam.ErrUnavailable for a write that is durable.
type lostReply struct {
	Spool
	lost atomic.Bool
}

func (s *lostReply) Push(ctx context.Context, e store.SpoolEntry) (int64, bool, error) {
	seq, appended, err := s.Spool.Push(ctx, e)
	if err == nil && s.lost.CompareAndSwap(false, true) {
		return 0, false, fmt.Errorf("spool append: %w: conn closed", jam.ErrUnavailable)
	}
	return seq, appended, err
}

// TestInbound_unansweredWriteThatCommittedIsDelivered: the engine retries
// a push the store did not answer, the retry finds the message already
// spooled (by the write whose answer was lost), and the message is still
// delivered: its lane is woken although no push reported it appended.
func TestInbound_unansweredWriteThatCommittedIsDelivered(t *testing.T) {
	t.Parallel()
	b := setupFull(t, true, nil, func(s Spool) Spool { return &lostReply{Spool: s} })
	id := b.inbound(t, 1, "@coder hello")
	b.waitEvent(t, EventDuplicate, id)
	d := b.delivered(t)
	require.Equal(t, id, string(d.Row.MessageID))
}
