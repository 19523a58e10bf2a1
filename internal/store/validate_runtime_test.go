package store_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestEventCanonical(t *testing.T) {
	t.Parallel()
	e := store.EventRecord{WorkspaceID: ws, Kind: "message.queued", Room: jam.RoomID(upperOfA), CreatedAt: now}
	got, err := e.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.RoomID(uuidA), got.Room)
	require.JSONEq(t, store.EmptyEventPayload, string(got.Payload), "an empty payload is stored as {}")
	runTable(t, e, canonical(store.EventRecord.Canonical), []vcase[store.EventRecord]{
		{"missingWorkspace", func(e *store.EventRecord) { e.WorkspaceID = "" }, "workspace id is empty", nil},
		{"emptyKind", func(e *store.EventRecord) { e.Kind = "" }, "event kind is empty", nil},
		{"kindLong", func(e *store.EventRecord) { e.Kind = tooLong(store.MaxEventKindLen) }, "event kind is longer than 64 bytes", nil},
		{"kindNUL", func(e *store.EventRecord) { e.Kind = withNUL }, "is not allowed", nil},
		{"badPeer", func(e *store.EventRecord) { e.Peer = jam.PeerKey{Profile: "p", Scope: "a/b"} }, "character '/' is not allowed", nil},
		{"badRoom", func(e *store.EventRecord) { e.Room = "lobby" }, `room id "lobby"`, nil},
		{"badMessage", func(e *store.EventRecord) { e.MessageID = "m1" }, `"m1"`, nil},
		{"payloadArray", func(e *store.EventRecord) { e.Payload = json.RawMessage(`[1]`) }, "event payload is not a JSON object", nil},
		{"payloadBroken", func(e *store.EventRecord) { e.Payload = json.RawMessage(`{"a":`) }, "event payload is not a JSON object", nil},
		{"payloadUTF8", func(e *store.EventRecord) { e.Payload = json.RawMessage("{\"a\":\"" + badUTF8 + "\"}") }, "event payload is not a JSON object", nil},
		{"payloadLong", func(e *store.EventRecord) {
			e.Payload = json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxEventPayloadLen) + `"}`)
		}, "over 262144", nil},
		{"zeroTime", func(e *store.EventRecord) { e.CreatedAt = time.Time{} }, "created at is zero", nil},
	})
}

func TestRoomCacheCanonical(t *testing.T) {
	t.Parallel()
	item := store.RoomCacheItem{MessageID: jam.PlatformMessageID(uuidB), Seq: 2, InsertedAt: now, Sealed: sealed}
	att := store.AttentionItem{MessageID: jam.PlatformMessageID(uuidB), SenderID: jam.IdentityID(uuidC), Kind: "mention", MessageAt: now, StagedAt: now}
	p := store.RoomCacheApplyParams{WorkspaceID: ws, AccountID: acct, Room: jam.RoomID(upperOfA), Seq: 2,
		Upserts: []store.RoomCacheItem{item}, Deletes: []jam.PlatformMessageID{jam.PlatformMessageID(uuidC)}, Attention: []store.AttentionItem{att}, At: now}
	got, err := p.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.RoomID(uuidA), got.Room)
	require.Equal(t, store.AttentionItem{WorkspaceID: ws, AccountID: acct, Room: jam.RoomID(uuidA), MessageID: att.MessageID, SenderID: att.SenderID,
		Kind: "mention", MessageAt: now, StagedAt: now}, got.Attention[0], "an attention item is scoped to the write")
	withItem := func(f func(*store.RoomCacheItem)) func(*store.RoomCacheApplyParams) {
		return func(p *store.RoomCacheApplyParams) { it := item; f(&it); p.Upserts = []store.RoomCacheItem{it} }
	}
	withAtt := func(f func(*store.AttentionItem)) func(*store.RoomCacheApplyParams) {
		return func(p *store.RoomCacheApplyParams) { a := att; f(&a); p.Attention = []store.AttentionItem{a} }
	}
	runTable(t, p, canonical(store.RoomCacheApplyParams.Canonical), []vcase[store.RoomCacheApplyParams]{
		{"missingWorkspace", func(p *store.RoomCacheApplyParams) { p.WorkspaceID = "" }, "workspace id is empty", nil},
		{"missingAccount", func(p *store.RoomCacheApplyParams) { p.AccountID = "" }, `lacks the prefix "acct_"`, nil},
		{"missingRoom", func(p *store.RoomCacheApplyParams) { p.Room = "" }, "room id", nil},
		{"seqZero", func(p *store.RoomCacheApplyParams) { p.Seq = 0 }, "sequence 0 is not positive", nil},
		{"zeroTime", func(p *store.RoomCacheApplyParams) { p.At = time.Time{} }, "at is zero", nil},
		{"tooMany", func(p *store.RoomCacheApplyParams) {
			p.Upserts, p.Deletes = nil, make([]jam.PlatformMessageID, store.MaxRoomCacheApplyItems+1)
		}, "upserts and deletes, over", nil},
		{"itemBadID", withItem(func(it *store.RoomCacheItem) { it.MessageID = "m1" }), `"m1"`, nil},
		{"itemTwice", func(p *store.RoomCacheApplyParams) { p.Upserts = []store.RoomCacheItem{item, item} }, "is written twice", nil},
		{"upsertAndDelete", func(p *store.RoomCacheApplyParams) { p.Deletes = []jam.PlatformMessageID{item.MessageID} }, "is written twice", nil},
		{"itemSeqAhead", withItem(func(it *store.RoomCacheItem) { it.Seq = 3 }), "sequence 3 is outside 1..2", nil},
		{"itemZeroTime", withItem(func(it *store.RoomCacheItem) { it.InsertedAt = time.Time{} }), "inserted at is zero", nil},
		{"itemUnsealed", withItem(func(it *store.RoomCacheItem) { it.Sealed = nil }), "sealed message is empty", nil},
		{"deleteBadID", func(p *store.RoomCacheApplyParams) { p.Deletes = []jam.PlatformMessageID{"m1"} }, `"m1"`, nil},
		{"attOtherAccount", withAtt(func(a *store.AttentionItem) { a.AccountID = jam.New[jam.AccountID](minter) }), "attention item of another account", nil},
		{"attOtherRoom", withAtt(func(a *store.AttentionItem) { a.Room = jam.RoomID(uuidC) }), "attention item of room " + uuidC, nil},
		{"attBadMessage", withAtt(func(a *store.AttentionItem) { a.MessageID = "" }), "message id", nil},
		{"attBadSender", withAtt(func(a *store.AttentionItem) { a.SenderID = "" }), "is not a UUID", nil},
		{"attEmptyKind", withAtt(func(a *store.AttentionItem) { a.Kind = "" }), "attention kind is empty", nil},
		{"attKindNUL", withAtt(func(a *store.AttentionItem) { a.Kind = withNUL }), "attention kind contains a NUL byte", nil},
		{"attZeroMessageAt", withAtt(func(a *store.AttentionItem) { a.MessageAt = time.Time{} }), "message at is zero", nil},
		{"attZeroStagedAt", withAtt(func(a *store.AttentionItem) { a.StagedAt = time.Time{} }), "staged at is zero", nil},
	})

	m := store.RoomSystemMessage{WorkspaceID: ws, AccountID: acct, Room: jam.RoomID(uuidA), MessageID: jam.PlatformMessageID(uuidB),
		ParticipantID: jam.IdentityID(uuidC), InsertedAt: now, Sealed: sealed, CreatedAt: now}
	runTable(t, m, canonical(store.RoomSystemMessage.Canonical), []vcase[store.RoomSystemMessage]{
		{"missingAccount", func(m *store.RoomSystemMessage) { m.AccountID = "" }, `lacks the prefix "acct_"`, nil},
		{"missingRoom", func(m *store.RoomSystemMessage) { m.Room = "" }, "room id", nil},
		{"missingMessage", func(m *store.RoomSystemMessage) { m.MessageID = "" }, "message id", nil},
		{"missingParticipant", func(m *store.RoomSystemMessage) { m.ParticipantID = "" }, "is not a UUID", nil},
		{"zeroInserted", func(m *store.RoomSystemMessage) { m.InsertedAt = time.Time{} }, "inserted at is zero", nil},
		{"unsealed", func(m *store.RoomSystemMessage) { m.Sealed = nil }, "sealed message is empty", nil},
		{"zeroCreated", func(m *store.RoomSystemMessage) { m.CreatedAt = time.Time{} }, "created at is zero", nil},
	})
}

func TestTemplateSessionValidate(t *testing.T) {
	t.Parallel()
	cfg := store.TemplateConfig{Harness: "acp", Command: []string{"agent"}, Placement: jam.PlacementShared, Permission: "allow"}
	runTable(t, cfg, store.TemplateConfig.Validate, []vcase[store.TemplateConfig]{
		{"noHarness", func(c *store.TemplateConfig) { c.Harness = "" }, "needs a harness and a command", nil},
		{"noCommand", func(c *store.TemplateConfig) { c.Command = nil }, "needs a harness and a command", nil},
		{"emptyProgram", func(c *store.TemplateConfig) { c.Command = []string{""} }, "needs a harness and a command", nil},
		{"badPlacement", func(c *store.TemplateConfig) { c.Placement = "anywhere" }, `unknown placement "anywhere"`, nil},
		{"badPermission", func(c *store.TemplateConfig) { c.Permission = "prompt" }, `permission "prompt" (want allow, reject or ask)`, nil},
		{"modelNUL", func(c *store.TemplateConfig) { c.Model = withNUL }, "runtime configuration contains a NUL byte", nil},
		{"argUTF8", func(c *store.TemplateConfig) { c.Command = []string{"agent", badUTF8} }, "runtime configuration is not valid UTF-8", nil},
	})
	tpl := store.Template{ID: jam.New[jam.TemplateID](minter), WorkspaceID: ws, Peer: peer, Desired: cfg, CreatedAt: now}
	runTable(t, tpl, store.Template.Validate, []vcase[store.Template]{
		{"missingWorkspace", func(t *store.Template) { t.WorkspaceID = "" }, "workspace id is empty", nil},
		{"zeroPeer", func(t *store.Template) { t.Peer = jam.PeerKey{} }, "peer key is empty", nil},
		{"missingID", func(t *store.Template) { t.ID = "" }, "lacks the prefix", nil},
		{"badConfig", func(t *store.Template) { t.Desired.Permission = "" }, "permission", nil},
		{"zeroTime", func(t *store.Template) { t.CreatedAt = time.Time{} }, "created at is zero", nil},
	})
	runTable(t, store.TemplateConfigureParams{Desired: cfg, Change: "model=x", At: now}, store.TemplateConfigureParams.Validate, []vcase[store.TemplateConfigureParams]{
		{"badConfig", func(p *store.TemplateConfigureParams) { p.Desired.Harness = "" }, "needs a harness", nil},
		{"zeroTime", func(p *store.TemplateConfigureParams) { p.At = time.Time{} }, "time is zero", nil},
		{"emptyChange", func(p *store.TemplateConfigureParams) { p.Change = "" }, "change is empty", nil},
		{"changeNUL", func(p *store.TemplateConfigureParams) { p.Change = withNUL }, "change contains a NUL byte", nil},
	})

	ss := store.Session{ID: jam.New[jam.SessionID](minter), WorkspaceID: ws, TemplateID: tpl.ID, Peer: peer, Room: jam.RoomID(upperOfA), CreatedAt: now}
	got, err := ss.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.RoomID(uuidA), got.Room)
	require.Equal(t, jam.SessionOpen, got.Lifecycle, "a session starts open")
	require.Equal(t, jam.RoleDeveloper, got.Role, "a session without a role is a developer")
	ss.Role = jam.RoleReview
	got, err = ss.Canonical()
	require.NoError(t, err)
	require.Equal(t, jam.RoleReview, got.Role)
	runTable(t, ss, canonical(store.Session.Canonical), []vcase[store.Session]{
		{"missingWorkspace", func(s *store.Session) { s.WorkspaceID = "" }, "workspace id is empty", nil},
		{"missingRoom", func(s *store.Session) { s.Room = "" }, "room id", nil},
		{"missingID", func(s *store.Session) { s.ID = "" }, "lacks the prefix", nil},
		{"missingTemplate", func(s *store.Session) { s.TemplateID = "" }, "lacks the prefix", nil},
		{"zeroTime", func(s *store.Session) { s.CreatedAt = time.Time{} }, "created at is zero", nil},
		{"threadNUL", func(s *store.Session) { s.ProviderThread = withNUL }, "provider thread contains a NUL byte", nil},
		{"badLifecycle", func(s *store.Session) { s.Lifecycle = "paused" }, `unknown session lifecycle "paused"`, nil},
		{"badRole", func(s *store.Session) { s.Role = "reviewer" }, `unknown session role "reviewer"`, nil},
		{"roleCase", func(s *store.Session) { s.Role = "Review" }, `unknown session role "Review"`, nil},
		{"overrideNoProgram", func(s *store.Session) { s.Overrides.Command = []string{""} }, "an overriding command needs a program", nil},
		{"overrideRelativeRepo", func(s *store.Session) { s.Overrides.Repo = "src/app" }, `overriding repository "src/app" is not an absolute path`, nil},
		{"overrideUTF8", func(s *store.Session) { s.Overrides.Repo = "/" + badUTF8 }, "session overrides is not valid UTF-8", nil},
	})
	runTable(t, store.SessionSetLifecycleParams{From: jam.SessionOpen, To: jam.SessionArchived, At: now}, store.SessionSetLifecycleParams.Validate,
		[]vcase[store.SessionSetLifecycleParams]{
			{"badFrom", func(p *store.SessionSetLifecycleParams) { p.From = "x" }, `unknown session lifecycle "x"`, nil},
			{"badTo", func(p *store.SessionSetLifecycleParams) { p.To = "" }, `unknown session lifecycle ""`, nil},
			{"fromClosed", func(p *store.SessionSetLifecycleParams) { p.From = jam.SessionClosed }, "a closed session stays closed", nil},
			{"zeroTime", func(p *store.SessionSetLifecycleParams) { p.At = time.Time{} }, "time is zero", nil},
		})
}

func TestMessageTurnValidate(t *testing.T) {
	t.Parallel()
	m := store.SessionMessage{ID: jam.New[jam.MessageID](minter), Requested: jam.RoutingSteer, Routing: jam.RoutingQueue, Text: "hi", CreatedAt: now}
	runTable(t, m, canonical(store.SessionMessage.Canonical), []vcase[store.SessionMessage]{
		{"missingID", func(m *store.SessionMessage) { m.ID = "" }, "lacks the prefix", nil},
		{"badRouting", func(m *store.SessionMessage) { m.Routing = "push" }, `unknown routing "push"`, nil},
		{"badRequested", func(m *store.SessionMessage) { m.Requested = "" }, `unknown requested routing ""`, nil},
		{"badSource", func(m *store.SessionMessage) { m.SourceMessageID = "m1" }, `"m1"`, nil},
		{"textUTF8", func(m *store.SessionMessage) { m.Text = badUTF8 }, "text is not valid UTF-8", nil},
		{"textNUL", func(m *store.SessionMessage) { m.Text = withNUL }, "text contains a NUL byte", nil},
		{"noText", func(m *store.SessionMessage) { m.Text = "" }, "a message needs text", nil},
		{"zeroTime", func(m *store.SessionMessage) { m.CreatedAt = time.Time{} }, "created at is zero", nil},
		{"queueAsSteer", func(m *store.SessionMessage) { m.Requested, m.Routing = jam.RoutingQueue, jam.RoutingSteer }, "a queue message cannot take effect as steer", nil},
	})
	banded, err := store.SessionMessage{ID: m.ID, Requested: jam.RoutingQueue, Routing: jam.RoutingQueue, SourceMessageID: jam.PlatformMessageID(upperOfA), CreatedAt: now}.Canonical()
	require.NoError(t, err, "a Band message needs no text")
	require.Equal(t, jam.PlatformMessageID(uuidA), banded.SourceMessageID)

	turn := store.Turn{ID: jam.New[jam.TurnID](minter), Routing: jam.RoutingQueue, MessageID: m.ID, CreatedAt: now}
	runTable(t, turn, canonical(store.Turn.Canonical), []vcase[store.Turn]{
		{"missingID", func(t *store.Turn) { t.ID = "" }, "lacks the prefix", nil},
		{"badRouting", func(t *store.Turn) { t.Routing = "" }, `unknown routing ""`, nil},
		{"badSource", func(t *store.Turn) { t.SourceMessageID = "m1" }, `"m1"`, nil},
		{"badMessage", func(t *store.Turn) { t.MessageID = "msg_x" }, `"msg_x"`, nil},
		{"zeroTime", func(t *store.Turn) { t.CreatedAt = time.Time{} }, "created at is zero", nil},
	})

	usage := &store.ExecutionUsage{InputTokens: 1, Model: "m"}
	tr := store.TurnTransitionParams{From: jam.TurnRunning, To: jam.TurnSucceeded, Reason: "done", Detail: "ok", Usage: usage, At: now}
	runTable(t, tr, store.TurnTransitionParams.Validate, []vcase[store.TurnTransitionParams]{
		{"badMove", func(p *store.TurnTransitionParams) { p.From, p.To = jam.TurnSucceeded, jam.TurnRunning }, "succeeded cannot move to running", nil},
		{"unknownState", func(p *store.TurnTransitionParams) { p.To = "done" }, "cannot move to done", nil},
		{"zeroTime", func(p *store.TurnTransitionParams) { p.At = time.Time{} }, "time is zero", nil},
		{"reasonNUL", func(p *store.TurnTransitionParams) { p.Reason = withNUL }, "reason contains a NUL byte", nil},
		{"detailNotTerminal", func(p *store.TurnTransitionParams) { p.From, p.To, p.Usage = jam.TurnPreparing, jam.TurnRunning, nil }, "only a move to a terminal state carries a detail", nil},
		{"notesNotRunning", func(p *store.TurnTransitionParams) { p.ConsumeNotes = []jam.MessageID{m.ID} }, "notes are consumed by a turn moving to running", nil},
		{"usageNotTerminal", func(p *store.TurnTransitionParams) { p.From, p.To, p.Detail = jam.TurnPreparing, jam.TurnRunning, "" }, "only a move to a terminal state carries usage", nil},
		{"usageNegative", func(p *store.TurnTransitionParams) { p.Usage = &store.ExecutionUsage{InputTokens: -1} }, "", nil},
		{"usageModelUTF8", func(p *store.TurnTransitionParams) { p.Usage = &store.ExecutionUsage{Model: badUTF8} }, "model is not valid UTF-8", nil},
		{"startWithoutExecution", func(p *store.TurnTransitionParams) {
			p.From, p.To, p.Detail, p.Usage = jam.TurnQueued, jam.TurnPreparing, "", nil
		}, "execution: ", nil},
	})
	require.NoError(t, store.TurnTransitionParams{From: jam.TurnQueued, To: jam.TurnPreparing, Execution: jam.New[jam.ExecutionID](minter), At: now}.Validate())

	out := store.TurnOutputAppendParams{WorkspaceID: ws, TurnID: turn.ID, Batch: 1, Updates: []store.OutputUpdate{{Kind: "text", Text: "x"}}, At: now}
	runTable(t, out, store.TurnOutputAppendParams.Validate, []vcase[store.TurnOutputAppendParams]{
		{"missingWorkspace", func(p *store.TurnOutputAppendParams) { p.WorkspaceID = "" }, "lacks the prefix", nil},
		{"missingTurn", func(p *store.TurnOutputAppendParams) { p.TurnID = "" }, "lacks the prefix", nil},
		{"batchZero", func(p *store.TurnOutputAppendParams) { p.Batch = 0 }, "batch 0 (batches are numbered from 1)", nil},
		{"emptyBatch", func(p *store.TurnOutputAppendParams) { p.Updates = nil }, "batch 1 is empty", nil},
		{"noKind", func(p *store.TurnOutputAppendParams) { p.Updates = []store.OutputUpdate{{Text: "x"}} }, "update 0 has no kind", nil},
		{"zeroTime", func(p *store.TurnOutputAppendParams) { p.At = time.Time{} }, "at is zero", nil},
	})
}

func TestLeaseWorktreeValidate(t *testing.T) {
	t.Parallel()
	runTable(t, store.LeaseAcquireParams{WorkspaceID: ws, ID: jam.New[jam.LeaseID](minter), Holder: "node", At: now}, store.LeaseAcquireParams.Validate,
		[]vcase[store.LeaseAcquireParams]{
			{"missingID", func(p *store.LeaseAcquireParams) { p.ID = "" }, "lacks the prefix", nil},
			{"emptyHolder", func(p *store.LeaseAcquireParams) { p.Holder = "" }, "holder is empty", nil},
			{"holderNUL", func(p *store.LeaseAcquireParams) { p.Holder = withNUL }, "holder contains a NUL byte", nil},
			{"zeroTime", func(p *store.LeaseAcquireParams) { p.At = time.Time{} }, "time is zero", nil},
		})
	w := store.Worktree{ID: jam.New[jam.WorktreeID](minter), WorkspaceID: ws, SessionID: jam.New[jam.SessionID](minter), Path: "/w", State: store.WorktreeActive, CreatedAt: now}
	runTable(t, w, store.Worktree.Validate, []vcase[store.Worktree]{
		{"missingID", func(w *store.Worktree) { w.ID = "" }, "lacks the prefix", nil},
		{"missingSession", func(w *store.Worktree) { w.SessionID = "" }, "lacks the prefix", nil},
		{"emptyPath", func(w *store.Worktree) { w.Path = "" }, "path is empty", nil},
		{"pathNUL", func(w *store.Worktree) { w.Path = withNUL }, "path contains a NUL byte", nil},
		{"repoUTF8", func(w *store.Worktree) { w.Repo = badUTF8 }, "repository is not valid UTF-8", nil},
		{"branchNUL", func(w *store.Worktree) { w.Branch = withNUL }, "branch contains a NUL byte", nil},
		{"zeroTime", func(w *store.Worktree) { w.CreatedAt = time.Time{} }, "created at is zero", nil},
		{"badState", func(w *store.Worktree) { w.State = "" }, `worktree state ""`, nil},
	})
	runTable(t, store.WorktreeSetStateParams{From: store.WorktreeActive, To: store.WorktreeArchived, At: now}, store.WorktreeSetStateParams.Validate,
		[]vcase[store.WorktreeSetStateParams]{
			{"zeroTime", func(p *store.WorktreeSetStateParams) { p.At = time.Time{} }, "time is zero", nil},
			{"badFrom", func(p *store.WorktreeSetStateParams) { p.From = "x" }, `worktree state "x"`, nil},
			{"badTo", func(p *store.WorktreeSetStateParams) { p.To = "deleted" }, `worktree state "deleted"`, nil},
		})
}
