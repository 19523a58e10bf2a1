package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// msgBundle is the fixture of the messaging cases: a store with two
// workspaces, an account in each, and peer "p/a" in the first.
type msgBundle struct {
	st     store.Store
	minter *jam.Minter
	ws     jam.WorkspaceID
	other  jam.WorkspaceID
	acct   store.Account
	peer   store.Peer
}

func newUUID[T jam.UUID]() T {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return T(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
}

func setupMessaging(t *testing.T, open func(t *testing.T) store.Store) *msgBundle {
	t.Helper()
	b := &msgBundle{st: open(t), minter: jam.NewMinter(nil, nil)}
	for i, ws := range []*jam.WorkspaceID{&b.ws, &b.other} {
		w, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{
			ID: jam.New[jam.WorkspaceID](b.minter), Name: fmt.Sprintf("ws%d", i), At: epoch,
		})
		require.NoError(t, err)
		*ws = w.ID
	}
	b.acct = b.putAccount(t, b.ws, "p")
	b.putAccount(t, b.other, "p")
	b.peer = b.putPeer(t, b.ws, b.acct, "a")
	return b
}

func (b *msgBundle) putAccount(t *testing.T, ws jam.WorkspaceID, profile string) store.Account {
	t.Helper()
	a, err := b.st.AccountPut(t.Context(), store.Account{
		ID: jam.New[jam.AccountID](b.minter), WorkspaceID: ws, Profile: profile, BandURL: "https://band.example",
		UserID: newUUID[jam.IdentityID](), Handle: "owner", KeySealed: []byte("sealed-key"), CreatedAt: epoch,
	})
	require.NoError(t, err)
	return a
}

func (b *msgBundle) putPeer(t *testing.T, ws jam.WorkspaceID, acct store.Account, scope string) store.Peer {
	t.Helper()
	p, err := b.st.PeerPut(t.Context(), store.Peer{
		WorkspaceID: ws, Key: jam.PeerKey{Profile: acct.Profile, Scope: scope}, AccountID: acct.ID,
		AgentID: newUUID[jam.IdentityID](), Handle: scope, Name: "Agent " + scope, KeySealed: []byte("sealed-agent-key"), CreatedAt: epoch,
	})
	require.NoError(t, err)
	return p
}

func (b *msgBundle) binding(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, alias string) store.Binding {
	return store.Binding{
		ID: jam.New[jam.BindingID](b.minter), WorkspaceID: ws, Peer: key, Room: room, Alias: alias,
		SessionID: jam.New[jam.SessionID](b.minter), Mode: jam.RuntimeAttached, CreatedAt: epoch,
	}
}

func (b *msgBundle) putBinding(t *testing.T, bnd store.Binding) int {
	t.Helper()
	moved, err := b.st.BindingPut(t.Context(), bnd)
	require.NoError(t, err)
	return moved
}

func entry(ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) store.SpoolEntry {
	return store.SpoolEntry{
		WorkspaceID: ws, Peer: key, Room: room, MessageID: newUUID[jam.PlatformMessageID](),
		Sealed: []byte("sealed-message"), ReceivedAt: epoch,
	}
}

// spool appends entries that must all be new and returns them with their
// sequences.
func (b *msgBundle) spool(t *testing.T, entries ...store.SpoolEntry) []store.SpoolEntry {
	t.Helper()
	res, err := b.st.SpoolAppend(t.Context(), entries)
	require.NoError(t, err)
	out := make([]store.SpoolEntry, len(entries))
	for i, e := range entries {
		require.True(t, res.Appended[i], "entry %d", i)
		e.Seq = res.Seqs[i]
		out[i] = e
	}
	return out
}

// queue spools and moves one message of (peer, room), returning its row.
func (b *msgBundle) queue(t *testing.T, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) store.QueueRow {
	t.Helper()
	e := b.spool(t, entry(ws, key, room))[0]
	row, err := b.st.SpoolMove(t.Context(), e.Seq, moveRow(e))
	require.NoError(t, err)
	return row
}

// moveRow is the row the engine passes to SpoolMove for e.
func moveRow(e store.SpoolEntry) store.QueueRow {
	return store.QueueRow{
		WorkspaceID: e.WorkspaceID, Peer: e.Peer, Room: e.Room, MessageID: e.MessageID,
		SenderID: newUUID[jam.IdentityID](), Sealed: []byte("rendered-" + string(e.MessageID)), State: store.QueueQueued,
	}
}

func (b *msgBundle) list(t *testing.T, p store.QueueListParams) []jam.PlatformMessageID {
	t.Helper()
	rows, err := b.st.QueueList(t.Context(), p)
	require.NoError(t, err)
	ids := make([]jam.PlatformMessageID, len(rows))
	for i, r := range rows {
		ids[i] = r.MessageID
		if i > 0 {
			require.Less(t, rows[i-1].Seq, r.Seq, "rows must come in seq order")
		}
	}
	return ids
}

func ids(rows ...store.QueueRow) []jam.PlatformMessageID {
	out := make([]jam.PlatformMessageID, len(rows))
	for i, r := range rows {
		out[i] = r.MessageID
	}
	return out
}

// messagingInvalid runs the rows of the messaging invalid-parameter table
// whose names start with one of prefixes, as subtest name.
func messagingInvalid(t *testing.T, setup func(t *testing.T) *msgBundle, name string, prefixes ...string) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		st, ws, key := b.st, b.ws, b.peer.Key
		room, msg := newUUID[jam.RoomID](), newUUID[jam.PlatformMessageID]()
		acct := func(mut func(a *store.Account)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				a := b.acct
				mut(&a)
				_, err := st.AccountPut(ctx, a)
				return err
			}
		}
		peer := func(mut func(p *store.Peer)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				p := b.peer
				mut(&p)
				_, err := st.PeerPut(ctx, p)
				return err
			}
		}
		bind := func(mut func(bnd *store.Binding)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				bnd := b.binding(ws, key, room, "x")
				mut(&bnd)
				_, err := st.BindingPut(ctx, bnd)
				return err
			}
		}
		spool := func(mut func(e *store.SpoolEntry)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				e := entry(ws, key, room)
				mut(&e)
				_, err := st.SpoolAppend(ctx, []store.SpoolEntry{e})
				return err
			}
		}
		move := func(seq int64, mut func(r *store.QueueRow)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				r := store.QueueRow{WorkspaceID: ws, Sealed: []byte("x")}
				mut(&r)
				_, err := st.SpoolMove(ctx, seq, r)
				return err
			}
		}
		reply := func(mut func(r *store.ReplyIntent)) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				r := store.ReplyIntent{WorkspaceID: ws, Peer: key, Room: room, MessageID: msg, Sealed: []byte("x"),
					Parts: 1, State: store.ReplyPending, CreatedAt: epoch}
				mut(&r)
				return st.ReplyIntentPut(ctx, r)
			}
		}
		list := func(p store.QueueListParams) func(ctx context.Context) error {
			return func(ctx context.Context) error { _, err := st.QueueList(ctx, p); return err }
		}
		mark := func(state string, at time.Time) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				return st.QueueMark(ctx, store.QueueMarkParams{WorkspaceID: ws, Peer: key, MessageID: msg, State: state, At: at})
			}
		}
		const badWS = jam.WorkspaceID("ws_nope")
		badKey := jam.PeerKey{Profile: "p", Scope: "no/slash"}
		tests := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"account bad id", acct(func(a *store.Account) { a.ID = "acct_x" })},
			{"account bad workspace", acct(func(a *store.Account) { a.WorkspaceID = badWS })},
			{"account bad profile", acct(func(a *store.Account) { a.Profile = "a b" })},
			{"account empty profile", acct(func(a *store.Account) { a.Profile = "" })},
			{"account bad url", acct(func(a *store.Account) { a.BandURL = "band.example" })},
			{"account bad user", acct(func(a *store.Account) { a.UserID = "u" })},
			{"account empty key", acct(func(a *store.Account) { a.KeySealed = nil })},
			{"account bad connection", acct(func(a *store.Account) { a.ConnectionID = "con_x"; a.KeySealed = nil })},
			{"account connection of another kind", acct(func(a *store.Account) { a.ConnectionID = jam.ConnectionID(a.ID) })},
			{"account zero time", acct(func(a *store.Account) { a.CreatedAt = time.Time{} })},
			{"account handle with NUL", acct(func(a *store.Account) { a.Handle = "a\x00" })},
			{"account get bad profile", func(ctx context.Context) error { _, err := st.AccountGet(ctx, ws, ""); return err }},
			{"account list bad workspace", func(ctx context.Context) error { _, err := st.AccountList(ctx, badWS); return err }},
			{"peer bad key", peer(func(p *store.Peer) { p.Key = badKey })},
			{"peer zero key", peer(func(p *store.Peer) { p.Key = jam.PeerKey{} })},
			{"peer bad account", peer(func(p *store.Peer) { p.AccountID = "" })},
			{"peer bad agent", peer(func(p *store.Peer) { p.AgentID = "" })},
			{"peer empty key", peer(func(p *store.Peer) { p.KeySealed = []byte{} })},
			{"peer bad connection", peer(func(p *store.Peer) { p.ConnectionID = "acct_x" })},
			{"peer name not UTF-8", peer(func(p *store.Peer) { p.Name = "\xff" })},
			{"peer zero time", peer(func(p *store.Peer) { p.CreatedAt = time.Time{} })},
			{"peer get zero key", func(ctx context.Context) error { _, err := st.PeerGet(ctx, ws, jam.PeerKey{}); return err }},
			{"binding bad id", bind(func(bnd *store.Binding) { bnd.ID = "sess_x" })},
			{"binding bad room", bind(func(bnd *store.Binding) { bnd.Room = "r" })},
			{"binding empty alias", bind(func(bnd *store.Binding) { bnd.Alias = "" })},
			{"binding bad session", bind(func(bnd *store.Binding) { bnd.SessionID = "" })},
			{"binding bad mode", bind(func(bnd *store.Binding) { bnd.Mode = "remote" })},
			{"binding zero time", bind(func(bnd *store.Binding) { bnd.CreatedAt = time.Time{} })},
			{"binding get bad id", func(ctx context.Context) error { _, err := st.BindingGet(ctx, ws, "bind_x"); return err }},
			{"binding for bad room", func(ctx context.Context) error { _, err := st.BindingForRoom(ctx, ws, key, "r"); return err }},
			{"binding list bad key", func(ctx context.Context) error { _, err := st.BindingList(ctx, ws, badKey); return err }},
			{"binding delete bad id", func(ctx context.Context) error { return st.BindingDelete(ctx, ws, "") }},
			{"spool bad workspace", spool(func(e *store.SpoolEntry) { e.WorkspaceID = "" })},
			{"spool bad peer", spool(func(e *store.SpoolEntry) { e.Peer = badKey })},
			{"spool bad room", spool(func(e *store.SpoolEntry) { e.Room = "" })},
			{"spool bad message", spool(func(e *store.SpoolEntry) { e.MessageID = "m" })},
			{"spool empty sealed", spool(func(e *store.SpoolEntry) { e.Sealed = nil })},
			{"spool zero time", spool(func(e *store.SpoolEntry) { e.ReceivedAt = time.Time{} })},
			{"spool next zero limit", func(ctx context.Context) error { _, err := st.SpoolNext(ctx, ws, key, room, 0); return err }},
			{"spool next bad room", func(ctx context.Context) error { _, err := st.SpoolNext(ctx, ws, key, "r", 1); return err }},
			{"move zero seq", move(0, func(*store.QueueRow) {})},
			{"move bad workspace", move(1, func(r *store.QueueRow) { r.WorkspaceID = "" })},
			{"move empty sealed", move(1, func(r *store.QueueRow) { r.Sealed = nil })},
			{"move bad sender", move(1, func(r *store.QueueRow) { r.SenderID = "s" })},
			{"move bad state", move(1, func(r *store.QueueRow) { r.State = store.QueueDelivered })},
			{"move bad room", move(1, func(r *store.QueueRow) { r.Room = "r" })},
			{"drop zero seq", func(ctx context.Context) error { return st.SpoolDrop(ctx, 0, epoch) }},
			{"drop zero time", func(ctx context.Context) error { return st.SpoolDrop(ctx, 1, time.Time{}) }},
			{"queue get bad message", func(ctx context.Context) error { _, err := st.QueueGet(ctx, ws, key, ""); return err }},
			{"queue list bad workspace", list(store.QueueListParams{WorkspaceID: ""})},
			{"queue list binding and unrouted", list(store.QueueListParams{WorkspaceID: ws, Binding: jam.New[jam.BindingID](b.minter), Unrouted: true})},
			{"queue list bad binding", list(store.QueueListParams{WorkspaceID: ws, Binding: "bind_x"})},
			{"queue list negative limit", list(store.QueueListParams{WorkspaceID: ws, Limit: -1})},
			{"queue list negative after", list(store.QueueListParams{WorkspaceID: ws, After: -1})},
			{"queue list unrouted and delivered", list(store.QueueListParams{WorkspaceID: ws, Unrouted: true, Delivered: true})},
			{"queue list bad room", list(store.QueueListParams{WorkspaceID: ws, Room: "r"})},
			{"queue mark bad state", mark(store.QueueQueued, epoch)},
			{"queue mark zero time", mark(store.QueueClaimed, time.Time{})},
			{"queue settle zero time", func(ctx context.Context) error { return st.QueueSettle(ctx, ws, key, msg, time.Time{}) }},
			{"prune zero time", func(ctx context.Context) error { _, err := st.QueuePruneUnrouted(ctx, time.Time{}, 1); return err }},
			{"prune negative keep", func(ctx context.Context) error { _, err := st.QueuePruneUnrouted(ctx, epoch, -1); return err }},
			{"reply zero parts", reply(func(r *store.ReplyIntent) { r.Parts = 0 })},
			{"reply posted beyond parts", reply(func(r *store.ReplyIntent) {
				r.Posted, r.PostedIDs = 2, []jam.PlatformMessageID{msg, msg}
			})},
			{"reply ids mismatch", reply(func(r *store.ReplyIntent) { r.Posted = 1 })},
			{"reply bad posted id", reply(func(r *store.ReplyIntent) { r.Posted, r.PostedIDs = 1, []jam.PlatformMessageID{"x"} })},
			{"reply posted early", reply(func(r *store.ReplyIntent) { r.State = store.ReplyPosted })},
			{"reply bad state", reply(func(r *store.ReplyIntent) { r.State = "sent" })},
			{"reply empty sealed", reply(func(r *store.ReplyIntent) { r.Sealed = nil })},
			{"reply zero time", reply(func(r *store.ReplyIntent) { r.CreatedAt = time.Time{} })},
			{"reply get bad message", func(ctx context.Context) error { _, err := st.ReplyIntentGet(ctx, ws, key, "m"); return err }},
		}
		for _, tt := range tests {
			if !hasPrefix(tt.name, prefixes) {
				continue
			}
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.ErrorIs(t, tt.call(t.Context()), jam.ErrInvalid)
			})
		}
	})
}

func bindingIDs(bs []store.Binding) []jam.BindingID {
	out := make([]jam.BindingID, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

func requireBinding(t *testing.T, want, got store.Binding) {
	t.Helper()
	requireTime(t, want.CreatedAt, got.CreatedAt)
	want.CreatedAt, got.CreatedAt = time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

func requireSpoolEntry(t *testing.T, want, got store.SpoolEntry) {
	t.Helper()
	requireTime(t, want.ReceivedAt, got.ReceivedAt)
	want.ReceivedAt, got.ReceivedAt = time.Time{}, time.Time{}
	require.Equal(t, want, got)
}

func requireQueueRow(t *testing.T, want, got store.QueueRow) {
	t.Helper()
	for _, p := range [][2]*time.Time{{&want.ReceivedAt, &got.ReceivedAt}, {&want.ClaimedAt, &got.ClaimedAt}, {&want.DeliveredAt, &got.DeliveredAt}} {
		require.Equal(t, p[0].IsZero(), p[1].IsZero())
		if !p[0].IsZero() {
			requireTime(t, *p[0], *p[1])
		}
		*p[0], *p[1] = time.Time{}, time.Time{}
	}
	require.Equal(t, want, got)
}

func requireReplyIntent(t *testing.T, want, got store.ReplyIntent) {
	t.Helper()
	requireTime(t, want.CreatedAt, got.CreatedAt)
	requireTime(t, want.UpdatedAt, got.UpdatedAt)
	want.CreatedAt, got.CreatedAt, want.UpdatedAt, got.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(want.PostedIDs) == 0 {
		want.PostedIDs = nil
	}
	require.Equal(t, want, got)
}
