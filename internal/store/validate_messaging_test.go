package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestWorkspaceSettingDaemonRunValidate(t *testing.T) {
	t.Parallel()
	runTable(t, store.WorkspaceEnsureParams{ID: ws, Name: "home", At: now}, store.WorkspaceEnsureParams.Validate, []vcase[store.WorkspaceEnsureParams]{
		{"missingID", func(p *store.WorkspaceEnsureParams) { p.ID = "" }, "workspace id is empty", nil},
		{"emptyName", func(p *store.WorkspaceEnsureParams) { p.Name = "" }, "name is empty", nil},
		{"nameUTF8", func(p *store.WorkspaceEnsureParams) { p.Name = badUTF8 }, "name is not valid UTF-8", nil},
		{"nameNUL", func(p *store.WorkspaceEnsureParams) { p.Name = withNUL }, "name contains a NUL byte", nil},
		{"nameLong", func(p *store.WorkspaceEnsureParams) { p.Name = strings.Repeat("é", store.MaxWorkspaceNameLen+1) }, "name has 65 characters, limit 64", nil},
		{"zeroTime", func(p *store.WorkspaceEnsureParams) { p.At = time.Time{} }, "time is zero", nil},
	})
	// The limit counts characters, not bytes.
	require.NoError(t, store.WorkspaceEnsureParams{ID: ws, Name: strings.Repeat("é", store.MaxWorkspaceNameLen), At: now}.Validate())

	runTable(t, store.SettingPutParams{WorkspaceID: ws, Key: "k", Value: "v", At: now}, store.SettingPutParams.Validate, []vcase[store.SettingPutParams]{
		{"missingWorkspace", func(p *store.SettingPutParams) { p.WorkspaceID = "" }, "workspace id is empty", nil},
		{"emptyKey", func(p *store.SettingPutParams) { p.Key = "" }, "key is empty", nil},
		{"keyLong", func(p *store.SettingPutParams) { p.Key = tooLong(store.MaxSettingKeyLen) }, "key has 129 bytes, limit 128", nil},
		{"valueLong", func(p *store.SettingPutParams) { p.Value = tooLong(store.MaxSettingValueLen) }, "value has 65537 bytes, limit 65536", nil},
		{"valueUTF8", func(p *store.SettingPutParams) { p.Value = badUTF8 }, "value is not valid UTF-8", nil},
		{"valueNUL", func(p *store.SettingPutParams) { p.Value = withNUL }, "value contains a NUL byte", nil},
		{"zeroTime", func(p *store.SettingPutParams) { p.At = time.Time{} }, "time is zero", nil},
	})

	runTable(t, store.DaemonRunStartParams{Node: "n", PID: 1, Version: "v1", At: now}, store.DaemonRunStartParams.Validate, []vcase[store.DaemonRunStartParams]{
		{"emptyNode", func(p *store.DaemonRunStartParams) { p.Node = "" }, "node is empty", nil},
		{"nodeNUL", func(p *store.DaemonRunStartParams) { p.Node = withNUL }, "node contains a NUL byte", nil},
		{"versionUTF8", func(p *store.DaemonRunStartParams) { p.Version = badUTF8 }, "version is not valid UTF-8", nil},
		{"pidZero", func(p *store.DaemonRunStartParams) { p.PID = 0 }, "pid 0 is not positive", nil},
		{"zeroTime", func(p *store.DaemonRunStartParams) { p.At = time.Time{} }, "time is zero", nil},
	})
}

func TestAccountPeerBindingCanonical(t *testing.T) {
	t.Parallel()
	a := store.Account{ID: acct, WorkspaceID: ws, Profile: "team", BandURL: "https://band.example", UserID: jam.IdentityID(upperOfA),
		Handle: "h", KeySealed: sealed, CreatedAt: now}
	got, err := a.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.IdentityID(uuidA), got.UserID, "the user id comes back canonical")
	runTable(t, a, canonical(store.Account.Canonical), []vcase[store.Account]{
		{"missingWorkspace", func(a *store.Account) { a.WorkspaceID = "" }, "workspace id is empty", nil},
		{"missingID", func(a *store.Account) { a.ID = "" }, `lacks the prefix "acct_"`, nil},
		{"badProfile", func(a *store.Account) { a.Profile = "a/b" }, "character '/' is not allowed", nil},
		{"emptyBandURL", func(a *store.Account) { a.BandURL = "" }, "band url is empty", nil},
		{"relativeBandURL", func(a *store.Account) { a.BandURL = "band.example" }, "is not an absolute http(s) URL", nil},
		{"ftpBandURL", func(a *store.Account) { a.BandURL = "ftp://band.example" }, "is not an absolute http(s) URL", nil},
		{"bandURLNUL", func(a *store.Account) { a.BandURL = "https://b" + withNUL }, "band url contains a NUL byte", nil},
		{"missingUser", func(a *store.Account) { a.UserID = "" }, "is not a UUID", nil},
		{"handleUTF8", func(a *store.Account) { a.Handle = badUTF8 }, "handle is not valid UTF-8", nil},
		{"handleNUL", func(a *store.Account) { a.Handle = withNUL }, "handle contains a NUL byte", nil},
		{"unsealed", func(a *store.Account) { a.KeySealed = nil }, "sealed key is empty", nil},
		{"zeroTime", func(a *store.Account) { a.CreatedAt = time.Time{} }, "created at is zero", nil},
	})

	p := store.Peer{WorkspaceID: ws, Key: peer, AccountID: acct, AgentID: jam.IdentityID(uuidB), Handle: "h", Name: "n", KeySealed: sealed, CreatedAt: now}
	runTable(t, p, canonical(store.Peer.Canonical), []vcase[store.Peer]{
		{"missingWorkspace", func(p *store.Peer) { p.WorkspaceID = "" }, "workspace id is empty", nil},
		{"zeroKey", func(p *store.Peer) { p.Key = jam.PeerKey{} }, "peer key is empty", nil},
		{"badKey", func(p *store.Peer) { p.Key.Scope = "a/b" }, "character '/' is not allowed", nil},
		{"missingAccount", func(p *store.Peer) { p.AccountID = "" }, `lacks the prefix "acct_"`, nil},
		{"missingAgent", func(p *store.Peer) { p.AgentID = "" }, "is not a UUID", nil},
		{"handleNUL", func(p *store.Peer) { p.Handle = withNUL }, "handle contains a NUL byte", nil},
		{"nameUTF8", func(p *store.Peer) { p.Name = badUTF8 }, "name is not valid UTF-8", nil},
		{"unsealed", func(p *store.Peer) { p.KeySealed = []byte{} }, "sealed key is empty", nil},
		{"zeroTime", func(p *store.Peer) { p.CreatedAt = time.Time{} }, "created at is zero", nil},
	})

	b := store.Binding{ID: jam.New[jam.BindingID](minter), WorkspaceID: ws, Peer: peer, Room: jam.RoomID(upperOfA), Alias: "main",
		SessionID: jam.New[jam.SessionID](minter), Mode: jam.RuntimeOwned, CreatedAt: now}
	gotB, err := b.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.RoomID(uuidA), gotB.Room)
	runTable(t, b, canonical(store.Binding.Canonical), []vcase[store.Binding]{
		{"missingID", func(b *store.Binding) { b.ID = "" }, "lacks the prefix", nil},
		{"missingWorkspace", func(b *store.Binding) { b.WorkspaceID = "" }, "workspace id is empty", nil},
		{"zeroPeer", func(b *store.Binding) { b.Peer = jam.PeerKey{} }, "peer key is empty", nil},
		{"missingRoom", func(b *store.Binding) { b.Room = "" }, "room id", nil},
		{"emptyAlias", func(b *store.Binding) { b.Alias = "" }, "alias is empty", nil},
		{"aliasNUL", func(b *store.Binding) { b.Alias = withNUL }, "alias contains a NUL byte", nil},
		{"aliasUTF8", func(b *store.Binding) { b.Alias = badUTF8 }, "alias is not valid UTF-8", nil},
		{"missingSession", func(b *store.Binding) { b.SessionID = "" }, "lacks the prefix", nil},
		{"badMode", func(b *store.Binding) { b.Mode = "hosted" }, `unknown runtime mode "hosted"`, nil},
		{"zeroTime", func(b *store.Binding) { b.CreatedAt = time.Time{} }, "created at is zero", nil},
	})
}

func TestSpoolQueueCanonical(t *testing.T) {
	t.Parallel()
	e := store.SpoolEntry{Seq: 3, WorkspaceID: ws, Peer: peer, Room: jam.RoomID(uuidA), MessageID: jam.PlatformMessageID(strings.ToUpper(uuidB)),
		Sealed: sealed, ReceivedAt: now}
	gotE, err := e.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.PlatformMessageID(uuidB), gotE.MessageID)
	runTable(t, e, canonical(store.SpoolEntry.Canonical), []vcase[store.SpoolEntry]{
		{"missingWorkspace", func(e *store.SpoolEntry) { e.WorkspaceID = "" }, "workspace id is empty", nil},
		{"zeroPeer", func(e *store.SpoolEntry) { e.Peer = jam.PeerKey{} }, "peer key is empty", nil},
		{"missingRoom", func(e *store.SpoolEntry) { e.Room = "" }, "room id", nil},
		{"missingMessage", func(e *store.SpoolEntry) { e.MessageID = "" }, "message id", nil},
		{"unsealed", func(e *store.SpoolEntry) { e.Sealed = nil }, "sealed message is empty", nil},
		{"zeroTime", func(e *store.SpoolEntry) { e.ReceivedAt = time.Time{} }, "received at is zero", nil},
	})

	move := func(r store.QueueRow) error { _, err := store.ValidateSpoolMove(1, r); return err }
	runTable(t, store.QueueRow{WorkspaceID: ws, Sealed: sealed}, move, []vcase[store.QueueRow]{
		{"missingWorkspace", func(r *store.QueueRow) { r.WorkspaceID = "" }, "workspace id is empty", nil},
		{"badPeer", func(r *store.QueueRow) { r.Peer = jam.PeerKey{Profile: "p", Scope: "a/b"} }, "character '/' is not allowed", nil},
		{"badRoom", func(r *store.QueueRow) { r.Room = "lobby" }, `room id "lobby"`, nil},
		{"badMessage", func(r *store.QueueRow) { r.MessageID = "m1" }, "m1", nil},
		{"badSender", func(r *store.QueueRow) { r.SenderID = "bob" }, `"bob"`, nil},
		{"unsealed", func(r *store.QueueRow) { r.Sealed = nil }, "sealed message is empty", nil},
		{"badState", func(r *store.QueueRow) { r.State = store.QueueClaimed }, `a moved row starts "queued", not "claimed"`, nil},
	})
	_, err = store.ValidateSpoolMove(0, store.QueueRow{WorkspaceID: ws, Sealed: sealed})
	require.ErrorIs(t, err, jam.ErrInvalid)
	require.ErrorContains(t, err, "seq 0 is not positive")

	match := func(r store.QueueRow) error { return store.ValidateSpoolMatch(e, r) }
	runTable(t, store.QueueRow{Peer: e.Peer, Room: e.Room, MessageID: e.MessageID}, match, []vcase[store.QueueRow]{
		{"otherPeer", func(r *store.QueueRow) { r.Peer.Scope = "other" }, "row is for peer team/other", nil},
		{"otherRoom", func(r *store.QueueRow) { r.Room = jam.RoomID(uuidC) }, "row is for room " + uuidC, nil},
		{"otherMessage", func(r *store.QueueRow) { r.MessageID = jam.PlatformMessageID(uuidC) }, "row is message " + uuidC, nil},
	})
	require.NoError(t, store.ValidateSpoolMatch(e, store.QueueRow{}), "unset identity fields match")

	runTable(t, store.QueueListParams{WorkspaceID: ws}, canonical(store.QueueListParams.Canonical), []vcase[store.QueueListParams]{
		{"missingWorkspace", func(p *store.QueueListParams) { p.WorkspaceID = "" }, "workspace id is empty", nil},
		{"badPeer", func(p *store.QueueListParams) { p.Peer = jam.PeerKey{Profile: "p", Scope: "a/b"} }, "character '/' is not allowed", nil},
		{"unroutedBinding", func(p *store.QueueListParams) { p.Unrouted, p.Binding = true, jam.New[jam.BindingID](minter) }, "unrouted and binding", nil},
		{"badBinding", func(p *store.QueueListParams) { p.Binding = "b1" }, `id "b1"`, nil},
		{"badRoom", func(p *store.QueueListParams) { p.Room = "lobby" }, `room id "lobby"`, nil},
		{"negativeLimit", func(p *store.QueueListParams) { p.Limit = -1 }, "limit -1 is negative", nil},
		{"negativeAfter", func(p *store.QueueListParams) { p.After = -1 }, "after -1 is negative", nil},
		{"deliveredUnrouted", func(p *store.QueueListParams) { p.Delivered, p.Unrouted = true, true }, "unrouted and delivered are exclusive", nil},
	})
}

func TestReplyQuarantineValidate(t *testing.T) {
	t.Parallel()
	r := store.ReplyIntent{WorkspaceID: ws, Peer: peer, Room: jam.RoomID(uuidA), MessageID: jam.PlatformMessageID(uuidB), Sealed: sealed,
		Parts: 2, Posted: 1, PostedIDs: []jam.PlatformMessageID{jam.PlatformMessageID(strings.ToUpper(uuidC))}, State: store.ReplyPending, CreatedAt: now}
	got, err := r.Canonical()
	require.NoError(t, err)
	require.Equal(t, []jam.PlatformMessageID{jam.PlatformMessageID(uuidC)}, got.PostedIDs, "posted ids come back canonical")
	require.Equal(t, now, got.UpdatedAt, "UpdatedAt defaults to CreatedAt")
	runTable(t, r, canonical(store.ReplyIntent.Canonical), []vcase[store.ReplyIntent]{
		{"missingWorkspace", func(r *store.ReplyIntent) { r.WorkspaceID = "" }, "workspace id is empty", nil},
		{"zeroPeer", func(r *store.ReplyIntent) { r.Peer = jam.PeerKey{} }, "peer key is empty", nil},
		{"missingMessage", func(r *store.ReplyIntent) { r.MessageID = "" }, "message id", nil},
		{"missingRoom", func(r *store.ReplyIntent) { r.Room = "" }, "room id", nil},
		{"unsealed", func(r *store.ReplyIntent) { r.Sealed = nil }, "sealed reply is empty", nil},
		{"noParts", func(r *store.ReplyIntent) { r.Parts = 0 }, "parts 0 is not positive", nil},
		{"postedOverParts", func(r *store.ReplyIntent) { r.Posted = 3 }, "posted 3 is outside 0..2", nil},
		{"postedIDsShort", func(r *store.ReplyIntent) { r.PostedIDs = nil }, "0 posted ids for 1 posted parts", nil},
		{"badPostedID", func(r *store.ReplyIntent) { r.PostedIDs = []jam.PlatformMessageID{"m1"} }, "m1", nil},
		{"postedEarly", func(r *store.ReplyIntent) { r.State = store.ReplyPosted }, "posted with 1 of 2 parts", nil},
		{"badState", func(r *store.ReplyIntent) { r.State = "sent" }, `reply state "sent" is not "pending" or "posted"`, nil},
		{"zeroTime", func(r *store.ReplyIntent) { r.CreatedAt = time.Time{} }, "created at is zero", nil},
	})

	old := got
	advance := func(next store.ReplyIntent) error { return store.ValidateReplyAdvance(old, next) }
	runTable(t, old, advance, []vcase[store.ReplyIntent]{
		{"otherRoom", func(n *store.ReplyIntent) { n.Room = jam.RoomID(uuidC) }, "intent is for room", jam.ErrConflict},
		{"otherParts", func(n *store.ReplyIntent) { n.Parts = 3 }, "intent has 2 parts, not 3", jam.ErrConflict},
		{"fewerPosted", func(n *store.ReplyIntent) { n.Posted, n.PostedIDs = 0, nil }, "intent already posted", jam.ErrConflict},
		{"otherPostedID", func(n *store.ReplyIntent) { n.PostedIDs = []jam.PlatformMessageID{jam.PlatformMessageID(uuidA)} }, "intent already posted", jam.ErrConflict},
	})
	posted := old
	posted.Posted, posted.PostedIDs, posted.State = 2, []jam.PlatformMessageID{old.PostedIDs[0], jam.PlatformMessageID(uuidA)}, store.ReplyPosted
	require.NoError(t, store.ValidateReplyAdvance(old, posted), "posting the rest advances")
	err = store.ValidateReplyAdvance(posted, store.ReplyIntent{Room: posted.Room, Parts: 2, Posted: 2, PostedIDs: posted.PostedIDs, State: store.ReplyPending})
	require.ErrorIs(t, err, jam.ErrConflict)
	require.ErrorContains(t, err, "intent is already posted")

	for _, tt := range []struct {
		name, reason string
		at           time.Time
		want         string
	}{
		{"emptyReason", "", now, "reason is empty"},
		{"blankReason", " \t", now, "reason is empty"},
		{"zeroTime", "bad row", time.Time{}, "time is zero"},
	} {
		_, err := store.ValidateQuarantine(tt.reason, tt.at)
		require.ErrorIs(t, err, jam.ErrInvalid, tt.name)
		require.ErrorContains(t, err, tt.want, tt.name)
	}
	reason, err := store.ValidateQuarantine(badUTF8+withNUL+strings.Repeat("é", store.MaxQuarantineReasonLen), now)
	require.NoError(t, err)
	require.LessOrEqual(t, len(reason), store.MaxQuarantineReasonLen, "a long reason is cut")
	require.NoError(t, store.ValidateText("reason", reason), "the stored reason is storable text")
	require.True(t, strings.HasPrefix(reason, "a\uFFFDba"), "invalid UTF-8 is replaced and NUL dropped: %q", reason[:8])
}
