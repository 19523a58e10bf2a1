package engine

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/store"
)

// breakingSealer fails to open the content of the messages named in
// broken, as a damaged record would.
type breakingSealer struct {
	Sealer
	mu     sync.Mutex
	broken map[string]bool // guarded by mu: message ids
}

func (s *breakingSealer) Open(sealed, aad []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.broken {
		if strings.HasSuffix(string(aad), "|"+id) {
			return nil, errors.New("message authentication failed")
		}
	}
	return s.Sealer.Open(sealed, aad)
}

func (s *breakingSealer) breakMessage(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.broken[id] = true
}

// TestEngine_unreadableRecordsAreQuarantined breaks one spooled message
// and, once the others are delivered, one queued row: each is quarantined
// with its reason and reported, its spool capacity is returned, and the
// room's other messages are delivered in order and listed.
func TestEngine_unreadableRecordsAreQuarantined(t *testing.T) {
	t.Parallel()
	var bs *breakingSealer
	b := setupWith(t, true, func(s Sealer) Sealer {
		bs = &breakingSealer{Sealer: s, broken: map[string]bool{}}
		return bs
	})
	ctx := t.Context()
	bad := "0190a1b2-0000-4000-8000-000000000002"
	bs.breakMessage(bad)
	first := b.inbound(t, 1, "one")
	require.Equal(t, bad, b.inbound(t, 2, "two"))
	third := b.inbound(t, 3, "three")

	b.waitEvent(t, EventQuarantined, bad)
	require.Equal(t, first, string(b.delivered(t).Row.MessageID))
	require.Equal(t, third, string(b.delivered(t).Row.MessageID), "the message after the damaged one is delivered")
	b.waitEvent(t, EventDelivered, third)
	entries, bytes := b.sp.Usage(b.ws, b.peer)
	require.Zero(t, entries, "the quarantined entry's capacity is returned")
	require.Zero(t, bytes)

	// A queued row that stops opening is quarantined when it is listed.
	bs.breakMessage(third)
	pg, err := b.eng.Inbox(ctx, InboxParams{WorkspaceID: b.ws})
	items := pg.Items
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, first, string(items[0].MessageID))
	b.waitEvent(t, EventQuarantined, third)
	_, err = b.eng.Message(ctx, b.ws, b.peer, items[0].MessageID)
	require.NoError(t, err)

	recs, err := b.st.QuarantineList(ctx, b.ws, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, store.QuarantineFromSpool, recs[0].Source)
	require.Equal(t, bad, string(recs[0].MessageID))
	require.Equal(t, "open: message authentication failed", recs[0].Reason)
	require.Equal(t, store.QuarantineFromQueue, recs[1].Source)
	require.Equal(t, third, string(recs[1].MessageID))
}
