package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// delegationAt is a review delegation of the bundle's workspace from a
// new parent session, created at epoch plus d.
func delegationAt(b *msgBundle, d time.Duration) store.Delegation {
	return store.Delegation{ID: jam.New[jam.DelegationID](b.minter), WorkspaceID: b.ws, Parent: jam.New[jam.SessionID](b.minter),
		Role: jam.RoleReview, Agent: "p/reviewer", Instructions: "Review the parser change ü\nand say what breaks.",
		Inputs:   store.DelegationInputs{ChangeSetID: jam.New[jam.ChangeSetID](b.minter), Commit: strings.Repeat("ab", 20)},
		Contract: []byte(`{"type":"object","required":["verdict"]}`), ContractName: store.ContractReview, MaxAttempts: 3, CreatedAt: epoch.Add(d)}
}

func createDelegation(t *testing.T, b *msgBundle, d store.Delegation) store.Delegation {
	t.Helper()
	got, err := b.st.DelegationCreate(t.Context(), d)
	require.NoError(t, err)
	return got
}

// startDelegation creates a delegation and sets a new child session.
func startDelegation(t *testing.T, b *msgBundle, d store.Delegation) store.Delegation {
	t.Helper()
	createDelegation(t, b, d)
	got, err := b.st.DelegationSetChild(t.Context(), store.DelegationSetChildParams{WorkspaceID: d.WorkspaceID, ID: d.ID,
		Child: jam.New[jam.SessionID](b.minter), At: d.CreatedAt.Add(time.Second)})
	require.NoError(t, err)
	return got
}

func delegationIDs(ds []store.Delegation) []jam.DelegationID {
	out := make([]jam.DelegationID, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// delegationCases checks [store.Delegations] on one handle.
func delegationCases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Delegation_createGetList", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		d := delegationAt(b, 0)
		got, err := b.st.DelegationCreate(ctx, d)
		require.NoError(t, err)
		want := d
		want.State, want.Generation, want.CreatedAt = store.DelegationPending, 1, epoch.UTC().Truncate(time.Microsecond)
		want.UpdatedAt = want.CreatedAt
		require.Equal(t, want, got, "stored pending at generation 1, times in UTC microseconds")
		again, err := b.st.DelegationGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, again, "instructions, inputs and contract read back as written")

		bare := delegationAt(b, time.Second)
		bare.Parent, bare.Inputs, bare.Role, bare.ContractName = d.Parent, store.DelegationInputs{}, jam.RoleResearch, store.ContractCustom
		bare = createDelegation(t, b, bare)
		gotBare, err := b.st.DelegationGet(ctx, b.ws, bare.ID)
		require.NoError(t, err)
		require.Equal(t, bare, gotBare, "no inputs read back as none")
		later := createDelegation(t, b, delegationAt(b, 2*time.Second))

		all, err := b.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Equal(t, []jam.DelegationID{later.ID, bare.ID, d.ID}, delegationIDs(all), "newest first")
		byParent, err := b.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: b.ws, Parent: d.Parent})
		require.NoError(t, err)
		require.Equal(t, []jam.DelegationID{bare.ID, d.ID}, delegationIDs(byParent))
		one, err := b.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: b.ws, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []jam.DelegationID{later.ID}, delegationIDs(one))
		_, err = b.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: b.ws, Limit: store.MaxDelegationLimit + 1})
		require.ErrorIs(t, err, jam.ErrInvalid)
		foreign, err := b.st.DelegationList(ctx, store.DelegationListParams{WorkspaceID: b.other})
		require.NoError(t, err)
		require.Empty(t, foreign)

		_, err = b.st.DelegationGet(ctx, b.other, d.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's delegation")
		_, err = b.st.DelegationGet(ctx, b.ws, jam.New[jam.DelegationID](b.minter))
		require.ErrorIs(t, err, jam.ErrNotFound)
		_, err = b.st.DelegationCreate(ctx, d)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "an id taken")
		stray := delegationAt(b, 0)
		stray.WorkspaceID = jam.New[jam.WorkspaceID](b.minter)
		_, err = b.st.DelegationCreate(ctx, stray)
		require.ErrorIs(t, err, jam.ErrNotFound, "a workspace that does not exist")
		invalid := delegationAt(b, 0)
		invalid.Contract = []byte(`[1]`)
		_, err = b.st.DelegationCreate(ctx, invalid)
		require.ErrorIs(t, err, jam.ErrInvalid, "a contract that is not an object")
	})

	t.Run("Delegation_listFilters", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		p1, p2 := jam.New[jam.SessionID](b.minter), jam.New[jam.SessionID](b.minter)
		csX, csY := jam.New[jam.ChangeSetID](b.minter), jam.New[jam.ChangeSetID](b.minter)
		childA, childD := jam.New[jam.SessionID](b.minter), jam.New[jam.SessionID](b.minter)
		// put creates a delegation of parent on change set cs ("" for no
		// inputs) and, when child is not "", starts it.
		put := func(ws jam.WorkspaceID, at time.Duration, parent jam.SessionID, cs jam.ChangeSetID, child jam.SessionID) store.Delegation {
			d := delegationAt(b, at)
			d.WorkspaceID, d.Parent, d.Inputs = ws, parent, store.DelegationInputs{ChangeSetID: cs}
			d = createDelegation(t, b, d)
			if child == "" {
				return d
			}
			d, err := b.st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: ws, ID: d.ID, Child: child, At: d.CreatedAt})
			require.NoError(t, err)
			return d
		}
		a := put(b.ws, 0, p1, csX, childA)                                       // running
		bb := put(b.ws, time.Second, p1, csX, "")                                // pending
		c := put(b.ws, 2*time.Second, p1, csY, jam.New[jam.SessionID](b.minter)) // cancelled below
		_, err := b.st.DelegationCancel(ctx, store.DelegationEndParams{WorkspaceID: b.ws, ID: c.ID, Reason: "cancelled", At: c.CreatedAt})
		require.NoError(t, err)
		d := put(b.ws, 3*time.Second, p2, csX, childD) // running
		e := put(b.ws, 4*time.Second, p2, "", "")      // pending, no inputs
		// Another workspace's delegation with the same parent, change set
		// and child, newest of all: no list of b.ws may show it.
		foreign := put(b.other, 5*time.Second, p1, csX, childA)

		ids := func(ds ...store.Delegation) []jam.DelegationID { return delegationIDs(ds) }
		for _, tt := range []struct {
			name string
			p    store.DelegationListParams
			want []jam.DelegationID
		}{
			{"none", store.DelegationListParams{}, ids(e, d, c, bb, a)},
			{"parent", store.DelegationListParams{Parent: p1}, ids(c, bb, a)},
			{"child", store.DelegationListParams{Child: childA}, ids(a)},
			{"other child", store.DelegationListParams{Child: childD}, ids(d)},
			{"child of none", store.DelegationListParams{Child: jam.New[jam.SessionID](b.minter)}, ids()},
			{"child and its parent", store.DelegationListParams{Child: childD, Parent: p2}, ids(d)},
			{"child and another parent", store.DelegationListParams{Child: childA, Parent: p2}, ids()},
			{"child and another state", store.DelegationListParams{Child: childA, State: store.DelegationPending}, ids()},
			{"change set", store.DelegationListParams{ChangeSet: csX}, ids(d, bb, a)},
			{"change set and parent", store.DelegationListParams{ChangeSet: csX, Parent: p1}, ids(bb, a)},
			{"change set and state", store.DelegationListParams{ChangeSet: csX, State: store.DelegationRunning}, ids(d, a)},
			{"change set, parent and state", store.DelegationListParams{ChangeSet: csX, Parent: p1, State: store.DelegationRunning}, ids(a)},
			{"change set and child", store.DelegationListParams{ChangeSet: csX, Child: childD}, ids(d)},
			{"change set and another child", store.DelegationListParams{ChangeSet: csY, Child: childD}, ids()},
			{"other change set", store.DelegationListParams{ChangeSet: csY}, ids(c)},
			{"change set of none", store.DelegationListParams{ChangeSet: jam.New[jam.ChangeSetID](b.minter)}, ids()},
			{"change set, limited", store.DelegationListParams{ChangeSet: csX, Limit: 2}, ids(d, bb)},
			{"pending", store.DelegationListParams{State: store.DelegationPending}, ids(e, bb)},
			{"running", store.DelegationListParams{State: store.DelegationRunning}, ids(d, a)},
			{"cancelled", store.DelegationListParams{State: store.DelegationCancelled}, ids(c)},
			{"submitted", store.DelegationListParams{State: store.DelegationSubmitted}, ids()},
			{"state and parent", store.DelegationListParams{State: store.DelegationPending, Parent: p2}, ids(e)},
			{"state and parent, limited", store.DelegationListParams{State: store.DelegationRunning, Parent: p1, Limit: 1}, ids(a)},
		} {
			tt.p.WorkspaceID = b.ws
			got, err := b.st.DelegationList(ctx, tt.p)
			require.NoError(t, err, tt.name)
			require.Equal(t, tt.want, delegationIDs(got), tt.name)
		}
		for _, p := range []store.DelegationListParams{{Child: childA}, {ChangeSet: csX}, {Parent: p1}, {State: store.DelegationRunning}, {}} {
			p.WorkspaceID = b.other
			got, err := b.st.DelegationList(ctx, p)
			require.NoError(t, err)
			require.Equal(t, ids(foreign), delegationIDs(got), "the other workspace sees its own only: %+v", p)
		}
		for name, p := range map[string]store.DelegationListParams{
			"bad child":      {Child: "sess"},
			"bad change set": {ChangeSet: "cs"},
			"bad state":      {State: "done"},
		} {
			p.WorkspaceID = b.ws
			_, err := b.st.DelegationList(ctx, p)
			require.ErrorIs(t, err, jam.ErrInvalid, name)
		}
	})

	t.Run("Delegation_setChild", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		d := createDelegation(t, b, delegationAt(b, 0))
		child := jam.New[jam.SessionID](b.minter)
		p := store.DelegationSetChildParams{WorkspaceID: b.ws, ID: d.ID, Child: child, At: epoch.Add(time.Minute)}
		got, err := b.st.DelegationSetChild(ctx, p)
		require.NoError(t, err)
		require.Equal(t, child, got.Child)
		require.Equal(t, store.DelegationRunning, got.State)
		require.Equal(t, int64(2), got.Generation)
		require.Equal(t, epoch.Add(time.Minute).UTC().Truncate(time.Microsecond), got.UpdatedAt)
		stored, err := b.st.DelegationGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, got, stored)

		p.Child = jam.New[jam.SessionID](b.minter)
		_, err = b.st.DelegationSetChild(ctx, p)
		require.ErrorIs(t, err, jam.ErrConflict, "the child is set once")
		other := createDelegation(t, b, delegationAt(b, time.Second))
		_, err = b.st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: b.ws, ID: other.ID, Child: child, At: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "a session is the child of one delegation")
		_, err = b.st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: b.other, ID: other.ID, Child: p.Child, At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's delegation")
	})

	t.Run("Delegation_attempts", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		pending := createDelegation(t, b, delegationAt(b, 0))
		_, err := b.st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: b.ws, ID: pending.ID, Generation: 1, At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "a pending delegation takes no attempt")

		d := startDelegation(t, b, delegationAt(b, time.Second))
		for i := 1; i <= d.MaxAttempts; i++ {
			stale := d.Generation - 1
			_, err := b.st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: b.ws, ID: d.ID, Generation: stale, At: epoch})
			require.ErrorIs(t, err, jam.ErrConflict, "attempt %d at a stale generation", i)
			got, err := b.st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: b.ws, ID: d.ID, Generation: d.Generation,
				At: epoch.Add(time.Duration(i) * time.Minute)})
			require.NoError(t, err, "attempt %d", i)
			require.Equal(t, i, got.Attempts)
			require.Equal(t, d.Generation+1, got.Generation)
			d = got
			if i < d.MaxAttempts {
				require.Equal(t, store.DelegationRunning, d.State)
				require.Empty(t, d.Reason)
			}
		}
		require.Equal(t, store.DelegationFailed, d.State, "the last attempt fails it")
		require.Equal(t, store.ReasonAttemptsExhausted, d.Reason)
		_, err = b.st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: b.ws, ID: d.ID, Generation: d.Generation, At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "no attempt beyond the last")
		stored, err := b.st.DelegationGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, d, stored)
		_, err = b.st.DelegationRecordAttempt(ctx, store.DelegationAttemptParams{WorkspaceID: b.other, ID: d.ID, Generation: d.Generation, At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Delegation_submit", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		d := startDelegation(t, b, delegationAt(b, 0))
		result := []byte(`{"verdict":"approve","findings":[],"summary":"fine ü"}`)
		p := store.DelegationSubmitParams{WorkspaceID: b.ws, ID: d.ID, Child: jam.New[jam.SessionID](b.minter), Result: result, At: epoch.Add(time.Hour)}
		_, _, err := b.st.DelegationSubmit(ctx, p)
		require.ErrorIs(t, err, jam.ErrConflict, "only its child submits")
		_, err = b.st.DelegationResultGet(ctx, b.ws, d.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "a refused submit stores nothing")

		p.Child = d.Child
		got, r, err := b.st.DelegationSubmit(ctx, p)
		require.NoError(t, err)
		require.Equal(t, store.DelegationSubmitted, got.State)
		require.Equal(t, d.Generation+1, got.Generation)
		sum := sha256.Sum256(result)
		want := store.DelegationResult{DelegationID: d.ID, WorkspaceID: b.ws, Result: result, Digest: hex.EncodeToString(sum[:]),
			At: epoch.Add(time.Hour).UTC().Truncate(time.Microsecond)}
		require.Equal(t, want, r)
		stored, err := b.st.DelegationResultGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, stored)
		_, err = b.st.DelegationResultGet(ctx, b.other, d.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's result")

		p.Result = []byte(`{"verdict":"request_changes","findings":[]}`)
		_, _, err = b.st.DelegationSubmit(ctx, p)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "a second result is refused, never an overwrite")
		stored, err = b.st.DelegationResultGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, stored)
		_, err = b.st.DelegationCancel(ctx, store.DelegationEndParams{WorkspaceID: b.ws, ID: d.ID, Reason: "cancelled", At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "a submitted delegation is final")

		pending := createDelegation(t, b, delegationAt(b, time.Second))
		_, _, err = b.st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: b.ws, ID: pending.ID, Child: d.Child, Result: result, At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "a pending delegation takes no result")
		_, _, err = b.st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: b.ws, ID: d.ID, Child: d.Child, Result: []byte(`[]`), At: epoch})
		require.ErrorIs(t, err, jam.ErrInvalid, "a result is a JSON object")
		_, _, err = b.st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: b.other, ID: d.ID, Child: d.Child, Result: result, At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Delegation_cancelFail", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		pending := createDelegation(t, b, delegationAt(b, 0))
		got, err := b.st.DelegationCancel(ctx, store.DelegationEndParams{WorkspaceID: b.ws, ID: pending.ID, Reason: "cancelled", At: epoch.Add(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, store.DelegationCancelled, got.State)
		require.Equal(t, "cancelled", got.Reason)
		require.Equal(t, int64(2), got.Generation)
		_, err = b.st.DelegationCancel(ctx, store.DelegationEndParams{WorkspaceID: b.ws, ID: pending.ID, Reason: "cancelled", At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "cancelled once")
		_, err = b.st.DelegationSetChild(ctx, store.DelegationSetChildParams{WorkspaceID: b.ws, ID: pending.ID, Child: jam.New[jam.SessionID](b.minter),
			At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "a cancelled delegation starts no child")

		running := startDelegation(t, b, delegationAt(b, time.Second))
		got, err = b.st.DelegationFail(ctx, store.DelegationEndParams{WorkspaceID: b.ws, ID: running.ID, Reason: "start_failed", Error: "no such agent",
			At: epoch.Add(time.Minute)})
		require.NoError(t, err)
		require.Equal(t, store.DelegationFailed, got.State)
		require.Equal(t, "no such agent", got.Error)
		_, _, err = b.st.DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: b.ws, ID: running.ID, Child: running.Child,
			Result: []byte(`{}`), At: epoch})
		require.ErrorIs(t, err, jam.ErrConflict, "a failed delegation takes no result")
		_, err = b.st.DelegationFail(ctx, store.DelegationEndParams{WorkspaceID: b.ws, ID: running.ID, Reason: "Bad Code", At: epoch})
		require.ErrorIs(t, err, jam.ErrInvalid)
		_, err = b.st.DelegationCancel(ctx, store.DelegationEndParams{WorkspaceID: b.other, ID: running.ID, Reason: "cancelled", At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound)
	})
}

// delegationRaces submits one delegation through two handles at once. A
// handle knows nothing of the other's submit: only the state condition
// of the submit's move and the result's primary key keep a second result
// out.
func delegationRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("DelegationSubmit_twoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		for round := range raceRounds {
			d := startDelegation(t, b, delegationAt(b, time.Duration(round)*time.Second))
			var got [2]store.DelegationResult
			var errs [2]error
			submit := func(i int) func() {
				return func() {
					_, got[i], errs[i] = handles[i].DelegationSubmit(ctx, store.DelegationSubmitParams{WorkspaceID: b.ws, ID: d.ID, Child: d.Child,
						Result: fmt.Appendf(nil, `{"writer":%d}`, i), At: epoch.Add(time.Hour)})
				}
			}
			race(submit(0), submit(1))
			won := -1
			for i, err := range errs {
				switch {
				case err == nil:
					require.Equal(t, -1, won, "round %d: both submits won", round)
					won = i
				case errors.Is(err, jam.ErrAlreadyExists):
				default:
					require.NoError(t, err, "round %d, submit %d", round, i)
				}
			}
			require.NotEqual(t, -1, won, "round %d: one submit wins", round)
			stored, err := other.DelegationResultGet(ctx, b.ws, d.ID)
			require.NoError(t, err)
			require.Equal(t, got[won], stored, "round %d: the stored result is the winner's", round)
			state, err := b.st.DelegationGet(ctx, b.ws, d.ID)
			require.NoError(t, err)
			require.Equal(t, store.DelegationSubmitted, state.State)
			require.Equal(t, d.Generation+1, state.Generation, "round %d: moved once", round)
		}
	})
}
