package daemon_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
)

// ownerClient returns a Band client for the embedded hub's owner.
func ownerClient(t *testing.T, st wire.Status) *band.Client {
	t.Helper()
	key, err := os.ReadFile(st.Band.OwnerKeyFile)
	require.NoError(t, err)
	h := band.NewHTTP(band.HTTPConfig{})
	t.Cleanup(h.CloseIdle)
	c, err := band.NewClient(h, st.Band.URL, band.APIKey(strings.TrimSpace(string(key))))
	require.NoError(t, err)
	return c
}

// TestPipeline_attachedAgentDrainsRooms is the end-to-end path of an
// attached agent on the embedded hub: the owner posts messages mentioning
// the agent across several rooms; the agent drains them with inbox, reply
// and ack; every message is settled exactly once and each room's messages
// arrive in posting order.
func TestPipeline_attachedAgentDrainsRooms(t *testing.T) {
	t.Parallel()
	const rooms, perRoom = 10, 100
	if testing.Short() {
		t.Skip("posts 1,000 messages")
	}
	cfg := testConfig(t)
	r := start(t, cfg)
	st := r.waitReady(t)
	ctx := t.Context()
	c := r.client
	owner := ownerClient(t, st)

	agent, err := c.AgentAdd(ctx, wire.AgentAddRequest{Name: "coder"})
	require.NoError(t, err)
	require.Equal(t, "local/coder", agent.Peer)

	var roomIDs []string
	for i := range rooms {
		room, err := c.RoomCreate(ctx, wire.RoomCreateRequest{Title: fmt.Sprintf("room %d", i), Agents: []string{"coder"}})
		require.NoError(t, err)
		roomIDs = append(roomIDs, room.ID)
		// Bind every room but the last: its messages stay unrouted.
		if i < rooms-1 {
			_, err := c.Bind(ctx, wire.BindRequest{Agent: "coder", Room: room.ID})
			require.NoError(t, err)
		}
	}

	// The owner posts from one goroutine per room, in order within a room.
	posted := make([][]string, rooms)
	var wg sync.WaitGroup
	for i, room := range roomIDs {
		wg.Go(func() {
			for n := range perRoom {
				sent, err := owner.SendChatMessage(ctx, room, fmt.Sprintf("@%s task %d-%d", agent.Handle, i, n), []protocol.Mention{{ID: agent.AgentID}})
				if err != nil {
					t.Errorf("post: %v", err)
					return
				}
				posted[i] = append(posted[i], sent.ID)
			}
		})
	}

	// The agent drains the bound rooms as messages arrive.
	bound := (rooms - 1) * perRoom
	seen := map[string]int{}
	order := map[string][]string{}
	settled := 0
	// A guard, not a measure: under the race detector on a loaded 2-core
	// machine the drain takes minutes (the benchmarks measure speed).
	deadline := time.Now().Add(10 * time.Minute)
	for settled < bound {
		require.True(t, time.Now().Before(deadline), "drained %d of %d", settled, bound)
		inbox, err := c.WaitInbox(ctx, wire.WaitRequest{Agent: "coder", TimeoutMS: 5000})
		require.NoError(t, err)
		for _, m := range inbox.Messages {
			if seen[m.ID] > 0 {
				continue // listed again before our settle finished
			}
			seen[m.ID]++
			order[m.Room] = append(order[m.Room], m.ID)
			require.True(t, strings.Contains(m.Content, "@"+agent.Handle), "tokens are rendered as handles: %q", m.Content)
			if len(order[m.Room])%2 == 0 {
				_, err = c.Reply(ctx, m.ID, wire.ReplyRequest{Text: "done " + m.ID})
			} else {
				err = c.Ack(ctx, m.ID, wire.AckRequest{})
			}
			require.NoError(t, err)
			settled++
		}
	}
	wg.Wait()

	for i, room := range roomIDs[:rooms-1] {
		require.Equal(t, posted[i], order[room], "room %d: the agent saw messages in posting order", i)
	}
	unrouted, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: "coder", Unrouted: true, Limit: wire.MaxInboxLimit})
	require.NoError(t, err)
	require.Len(t, unrouted.Messages, perRoom, "the unbound room's messages wait in the unrouted bucket")
	for _, m := range unrouted.Messages {
		require.Equal(t, roomIDs[rooms-1], m.Room)
	}

	// On the hub, every bound message is processed, with no reply twice.
	for i, room := range roomIDs[:rooms-1] {
		replies := map[string]int{}
		processed := 0
		cursor := ""
		for {
			page, err := owner.ChatMessages(ctx, room, cursor, 100)
			require.NoError(t, err)
			for _, m := range page.Messages {
				if m.SenderID == agent.AgentID {
					replies[m.Content]++
					continue
				}
				if m.Metadata.DeliveryStatus[agent.AgentID].Status == protocol.DeliveryProcessed {
					processed++
				}
			}
			if !page.HasMore {
				break
			}
			cursor = page.NextCursor
		}
		require.Equal(t, perRoom, processed, "room %d: every message settled", i)
		require.Len(t, replies, perRoom/2, "room %d: one reply per replied message", i)
		for content, n := range replies {
			require.Equal(t, 1, n, "reply %q posted once", content)
		}
	}
}
