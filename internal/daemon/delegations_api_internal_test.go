package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// startedChildren starts each delegation's child with StartFunc and
// takes every first turn and notice.
type startedChildren struct {
	StartFunc func(ctx context.Context) (jam.SessionID, error)
}

func (c startedChildren) Start(ctx context.Context, _ store.Delegation) (jam.SessionID, error) {
	return c.StartFunc(ctx)
}

func (startedChildren) Begin(context.Context, store.Delegation) error { return nil }

func (startedChildren) Notify(context.Context, jam.SessionID, string) error { return nil }

// delegationsBundle is a daemon with only a store and a delegation
// service: a parent session of local/coder, whose delegations' children
// are new sessions of local/reviewer, each in a room of its own (or,
// without child sessions, ids the store does not hold).
type delegationsBundle struct {
	d      *daemon
	svc    *delegation.Service
	parent store.Session
	// children are the child sessions started, in order.
	children []store.Session
}

func setupDelegations(t *testing.T, childSessions bool) *delegationsBundle {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "jam.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	m := jam.NewMinter(nil, nil)
	at := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	ws, err := st.WorkspaceEnsure(ctx, store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](m), Name: "default", At: at})
	require.NoError(t, err)
	acct, err := st.AccountPut(ctx, store.Account{ID: jam.New[jam.AccountID](m), WorkspaceID: ws.ID, Profile: "local", BandURL: "https://band.example",
		UserID: "6f9619ff-8b86-4011-b42d-00c04fc964ff", Handle: "owner", KeySealed: []byte("k"), CreatedAt: at})
	require.NoError(t, err)
	b := &delegationsBundle{}
	templates := map[string]store.Template{}
	for i, scope := range []string{"coder", "reviewer"} {
		p, err := st.PeerPut(ctx, store.Peer{WorkspaceID: ws.ID, Key: jam.PeerKey{Profile: "local", Scope: scope}, AccountID: acct.ID,
			AgentID: jam.IdentityID(fmt.Sprintf("%d0000000-2f3a-4b6c-8d7e-9f0a1b2c3d4e", i)), Handle: scope, Name: scope, KeySealed: []byte("k"), CreatedAt: at})
		require.NoError(t, err)
		templates[scope], err = st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](m), WorkspaceID: ws.ID, Peer: p.Key,
			Desired: store.TemplateConfig{Harness: "acp", Command: []string{"jam", "demo-agent"}, Placement: jam.PlacementShared, Permission: "allow"}, CreatedAt: at})
		require.NoError(t, err)
	}
	rooms := 0
	session := func(ctx context.Context, scope string) (store.Session, error) {
		rooms++
		tm := templates[scope]
		return st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](m), WorkspaceID: ws.ID, TemplateID: tm.ID, Peer: tm.Peer,
			Room: jam.RoomID(fmt.Sprintf("%08d-2f3a-4b6c-8d7e-9f0a1b2c3d4e", rooms)), CreatedAt: at})
	}
	b.parent, err = session(ctx, "coder")
	require.NoError(t, err)
	start := func(ctx context.Context) (jam.SessionID, error) {
		if !childSessions {
			return jam.New[jam.SessionID](m), nil
		}
		s, err := session(ctx, "reviewer")
		if err != nil {
			return "", err
		}
		b.children = append(b.children, s)
		return s.ID, nil
	}
	b.svc, err = delegation.New(delegation.Config{Minter: m}, st, startedChildren{StartFunc: start})
	require.NoError(t, err)
	b.d = &daemon{store: st, workspace: ws, log: slog.New(slog.DiscardHandler), msg: &messaging{delegations: b.svc}}
	return b
}

func (b *delegationsBundle) delegate(t *testing.T, role string) store.Delegation {
	t.Helper()
	v, err := b.svc.Create(t.Context(), delegation.CreateRequest{Workspace: b.d.workspace.ID, Parent: b.parent.ID, Role: role, Agent: "local/reviewer",
		Instructions: "Look at it.", Inputs: store.DelegationInputs{Commit: strings.Repeat("a", 40)}})
	require.NoError(t, err)
	return v
}

// TestDelegationsAPI: the daemon's delegation routes over a real store:
// rooms and the parent's agent come from the sessions, a submitted
// result's verdict and digest from the result, the schema from the
// contract, and the person cancels any delegation.
func TestDelegationsAPI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := setupDelegations(t, true)

	review := b.delegate(t, "review")
	child := b.children[0]
	const result = `{"verdict":"request_changes","findings":[{"path":"a.go","line":1,"severity":"major","message":"racy"}]}`
	_, err := b.svc.Submit(ctx, b.d.workspace.ID, child.ID, review.ID, json.RawMessage(result))
	require.NoError(t, err)

	detail, err := b.d.Delegation(ctx, string(review.ID))
	require.NoError(t, err)
	got := detail.Delegation
	require.Equal(t, wire.Delegation{ID: string(review.ID), Parent: string(b.parent.ID), ParentRoom: string(b.parent.Room), ParentAgent: "local/coder",
		Child: string(child.ID), ChildRoom: string(child.Room), Role: "review", Agent: "local/reviewer", Instructions: "Look at it.",
		Inputs: wire.DelegationInputs{Commit: strings.Repeat("a", 40)}, Contract: "review", State: "submitted", MaxAttempts: delegation.DefaultMaxAttempts,
		Verdict: "request_changes", Created: review.CreatedAt, Updated: got.Updated}, got)
	builtin, err := delegation.Builtin("review")
	require.NoError(t, err)
	require.JSONEq(t, string(builtin.Doc), string(detail.Schema))
	require.NotNil(t, detail.Result)
	require.JSONEq(t, result, string(detail.Result.Result))
	sum := sha256.Sum256([]byte(result))
	require.Equal(t, hex.EncodeToString(sum[:]), detail.Result.Digest)

	test := b.delegate(t, "test")
	cancelled, err := b.d.DelegationCancel(ctx, string(test.ID))
	require.NoError(t, err)
	require.Equal(t, "cancelled", cancelled.State)
	require.Equal(t, "cancelled", cancelled.Reason)
	require.Empty(t, cancelled.Verdict)
	_, err = b.d.DelegationCancel(ctx, string(review.ID))
	require.ErrorIs(t, err, jam.ErrConflict, "a submitted delegation stays submitted")

	list, err := b.d.Delegations(ctx, wire.DelegationQuery{})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{string(test.ID), string(review.ID)}, []string{list[0].ID, list[1].ID}, "newest first")
	require.Equal(t, "request_changes", list[1].Verdict, "the list carries the verdict")
	one, err := b.d.Delegations(ctx, wire.DelegationQuery{Parent: string(b.parent.ID), Limit: 1})
	require.NoError(t, err)
	require.Len(t, one, 1)
	none, err := b.d.Delegations(ctx, wire.DelegationQuery{Parent: string(child.ID)})
	require.NoError(t, err)
	require.Empty(t, none)

	for name, err := range map[string]error{
		"unknown":        second(b.d.Delegation(ctx, string(jam.New[jam.DelegationID](jam.NewMinter(nil, nil))))),
		"cancel unknown": second(b.d.DelegationCancel(ctx, string(jam.New[jam.DelegationID](jam.NewMinter(nil, nil))))),
	} {
		require.ErrorIs(t, err, jam.ErrNotFound, name)
	}
	for name, err := range map[string]error{
		"not an id":        second(b.d.Delegation(ctx, "del_x")),
		"a session's id":   second(b.d.DelegationCancel(ctx, string(b.parent.ID))),
		"a bad parent":     second(b.d.Delegations(ctx, wire.DelegationQuery{Parent: "del_x"})),
		"over the maximum": second(b.d.Delegations(ctx, wire.DelegationQuery{Limit: wire.MaxDelegationLimit + 1})),
	} {
		require.ErrorIs(t, err, jam.ErrInvalid, name)
	}
}

// TestDelegationsAPI_sessionUnread: a child session the store does not
// hold leaves its room "", and the delegation is still shown.
func TestDelegationsAPI_sessionUnread(t *testing.T) {
	t.Parallel()
	b := setupDelegations(t, false)
	v := b.delegate(t, "test")
	detail, err := b.d.Delegation(t.Context(), string(v.ID))
	require.NoError(t, err)
	require.Equal(t, string(v.Child), detail.Delegation.Child)
	require.Empty(t, detail.Delegation.ChildRoom)
	require.Equal(t, string(b.parent.Room), detail.Delegation.ParentRoom)
	require.Nil(t, detail.Result)
}

// second is the error of a call's two results.
func second[T any](_ T, err error) error { return err }
