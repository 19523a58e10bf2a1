package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// deliveryAt is a delivery of a new change set of the bundle's workspace,
// with a draft pull request, created at epoch plus d.
func deliveryAt(b *msgBundle, d time.Duration) store.Delivery {
	return store.Delivery{ID: jam.New[jam.DeliveryID](b.minter), WorkspaceID: b.ws, ChangeSetID: jam.New[jam.ChangeSetID](b.minter),
		SessionID: jam.New[jam.SessionID](b.minter), Turn: jam.New[jam.TurnID](b.minter), Remote: "https://github.com/acme/app.git",
		Branch: "jam/change-1", ConnectionID: jam.New[jam.ConnectionID](b.minter), PR: true, Repo: "acme/app", Base: "main",
		Title: "Fix the parser ü", Operation: jam.New[jam.OperationID](b.minter), CreatedAt: epoch.Add(d)}
}

func createDelivery(t *testing.T, b *msgBundle, d store.Delivery) store.Delivery {
	t.Helper()
	got, created, err := b.st.DeliveryCreate(t.Context(), d)
	require.NoError(t, err)
	require.True(t, created)
	return got
}

// deliveryCases checks [store.Deliveries] on one handle, then creates
// and updates through two handles at once.
func deliveryCases(t *testing.T, db Opener[store.Store]) {
	open := single(db)
	t.Run("Delivery_createGetList", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		d := deliveryAt(b, 0)
		d.APIBaseURL = "https://ghe.example.com/api/v3"
		got, created, err := b.st.DeliveryCreate(ctx, d)
		require.NoError(t, err)
		require.True(t, created)
		want := d
		want.State, want.Generation, want.CreatedAt = store.DeliveryPending, 1, epoch.UTC().Truncate(time.Microsecond)
		want.UpdatedAt = want.CreatedAt
		require.Equal(t, want, got, "stored pending at generation 1, times in UTC microseconds")
		again, err := b.st.DeliveryGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, again)

		// A local push without a pull request, of the same change set.
		local := deliveryAt(b, time.Second)
		local.ChangeSetID, local.Remote, local.ConnectionID, local.Turn = d.ChangeSetID, "/srv/git/app.git", "", ""
		local.PR, local.Repo, local.Base, local.Title = false, "", "", ""
		local = createDelivery(t, b, local)
		gotLocal, err := b.st.DeliveryGet(ctx, b.ws, local.ID)
		require.NoError(t, err)
		require.Equal(t, local, gotLocal)
		require.False(t, gotLocal.PR)
		later := createDelivery(t, b, deliveryAt(b, 2*time.Second))

		all, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Equal(t, []jam.DeliveryID{later.ID, local.ID, d.ID}, deliveryIDs(all), "newest first")
		byCS, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, ChangeSetID: d.ChangeSetID})
		require.NoError(t, err)
		require.Equal(t, []jam.DeliveryID{local.ID, d.ID}, deliveryIDs(byCS))
		one, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []jam.DeliveryID{later.ID}, deliveryIDs(one))
		u := local
		u.State, u.UpdatedAt = store.DeliveryBuilding, epoch.Add(time.Minute)
		_, err = b.st.DeliveryUpdate(ctx, u)
		require.NoError(t, err)
		building, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, State: store.DeliveryBuilding})
		require.NoError(t, err)
		require.Equal(t, []jam.DeliveryID{local.ID}, deliveryIDs(building))
		both, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, ChangeSetID: d.ChangeSetID, State: store.DeliveryPending})
		require.NoError(t, err)
		require.Equal(t, []store.Delivery{want}, both)
		foreign, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.other})
		require.NoError(t, err)
		require.Empty(t, foreign)
		_, err = b.st.DeliveryGet(ctx, b.other, d.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's delivery")
		_, err = b.st.DeliveryGet(ctx, b.ws, jam.New[jam.DeliveryID](b.minter))
		require.ErrorIs(t, err, jam.ErrNotFound)

		stray := deliveryAt(b, 0)
		stray.WorkspaceID = jam.New[jam.WorkspaceID](b.minter)
		_, _, err = b.st.DeliveryCreate(ctx, stray)
		require.ErrorIs(t, err, jam.ErrNotFound, "a workspace that does not exist")
	})

	t.Run("Delivery_createIdempotent", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		first := createDelivery(t, b, deliveryAt(b, 0))
		second := deliveryAt(b, time.Second)
		second.ChangeSetID, second.Remote, second.Branch = first.ChangeSetID, first.Remote, first.Branch
		second.Title, second.Base = "Another title", "develop"
		got, created, err := b.st.DeliveryCreate(ctx, second)
		require.NoError(t, err, "a second create of the intent is not an error")
		require.False(t, created)
		require.Equal(t, first, got, "it returns the first delivery, as it was")

		// Once the first has moved on, its intent still names it.
		u := first
		u.State, u.Commit, u.UpdatedAt = store.DeliveryPushing, strings.Repeat("a", 40), epoch.Add(time.Minute)
		moved, err := b.st.DeliveryUpdate(ctx, u)
		require.NoError(t, err)
		got, created, err = b.st.DeliveryCreate(ctx, second)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, moved, got)
		// The same create again, id and all (a retry after a crash).
		got, created, err = b.st.DeliveryCreate(ctx, first)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, moved, got)

		// The key is the workspace, change set, remote and branch.
		for _, mod := range []func(*store.Delivery){
			func(d *store.Delivery) { d.Branch = "jam/change-2" },
			func(d *store.Delivery) { d.Remote = "git@github.com:acme/app.git" },
			func(d *store.Delivery) { d.ChangeSetID = jam.New[jam.ChangeSetID](b.minter) },
			func(d *store.Delivery) { d.WorkspaceID = b.other },
		} {
			d := deliveryAt(b, 0)
			d.ChangeSetID, d.Remote, d.Branch = first.ChangeSetID, first.Remote, first.Branch
			mod(&d)
			require.Equal(t, d.ID, createDelivery(t, b, d).ID)
		}
		list, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Len(t, list, 4, "the repeated creates stored nothing")

		// A taken id with another intent.
		dup := deliveryAt(b, 0)
		dup.ID = first.ID
		_, _, err = b.st.DeliveryCreate(ctx, dup)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "an id is taken once")
	})

	t.Run("Delivery_updateFenced", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		d := createDelivery(t, b, deliveryAt(b, 0))
		u := d
		u.State, u.Commit, u.RemoteSHA = store.DeliveryPROpen, strings.Repeat("a", 40), strings.Repeat("b", 64)
		u.PRNumber, u.PRURL, u.PRState, u.PRHeadSHA, u.Checks = 42, "https://github.com/acme/app/pull/42", "open", strings.Repeat("a", 40), "pending"
		u.FollowedAt, u.UpdatedAt = epoch.Add(2*time.Minute), epoch.Add(time.Minute)
		// Intent fields given to an update are ignored.
		u.Remote, u.Branch, u.Title, u.PR, u.CreatedAt = "/elsewhere", "other", "changed", false, epoch.Add(time.Hour)
		got, err := b.st.DeliveryUpdate(ctx, u)
		require.NoError(t, err)
		want := d
		want.State, want.Commit, want.RemoteSHA = u.State, u.Commit, u.RemoteSHA
		want.PRNumber, want.PRURL, want.PRState, want.PRHeadSHA, want.Checks = u.PRNumber, u.PRURL, u.PRState, u.PRHeadSHA, u.Checks
		want.FollowedAt, want.UpdatedAt = epoch.Add(2*time.Minute).UTC().Truncate(time.Microsecond), epoch.Add(time.Minute).UTC().Truncate(time.Microsecond)
		want.Generation = 2
		require.Equal(t, want, got, "the outcome written, the intent kept, the generation one up")
		stored, err := b.st.DeliveryGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, stored)

		// A writer of the old generation changes nothing.
		stale := u
		stale.State, stale.Generation = store.DeliveryFailed, 1
		_, err = b.st.DeliveryUpdate(ctx, stale)
		require.ErrorIs(t, err, jam.ErrConflict)
		require.ErrorContains(t, err, "generation 1, the delivery is at 2")
		ahead := u
		ahead.Generation = 5
		_, err = b.st.DeliveryUpdate(ctx, ahead)
		require.ErrorIs(t, err, jam.ErrConflict, "a generation ahead of the stored one")
		stored, err = b.st.DeliveryGet(ctx, b.ws, d.ID)
		require.NoError(t, err)
		require.Equal(t, want, stored, "the refused updates changed nothing")

		// A whole-row write: fields not given are cleared.
		f := stored
		f.State, f.ErrorCode, f.Error, f.FollowedAt, f.Checks, f.UpdatedAt = store.DeliveryFailed, "push_rejected", "non-fast-forward ü", time.Time{}, "", epoch.Add(time.Hour)
		failed, err := b.st.DeliveryUpdate(ctx, f)
		require.NoError(t, err)
		require.Equal(t, int64(3), failed.Generation)
		require.Equal(t, "push_rejected", failed.ErrorCode)
		require.Equal(t, "non-fast-forward ü", failed.Error)
		require.True(t, failed.FollowedAt.IsZero(), "a zero follow time is stored as never")
		require.Empty(t, failed.Checks)
		requireTime(t, epoch, failed.CreatedAt)

		_, err = b.st.DeliveryUpdate(ctx, store.Delivery{WorkspaceID: b.ws, ID: jam.New[jam.DeliveryID](b.minter), State: store.DeliveryPushed,
			Generation: 1, UpdatedAt: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound, "an unknown delivery")
		foreign := failed
		foreign.WorkspaceID = b.other
		_, err = b.st.DeliveryUpdate(ctx, foreign)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's delivery")
	})

	t.Run("Delivery_invalid", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		d := createDelivery(t, b, deliveryAt(b, 0))
		create := func(mod func(*store.Delivery)) func() error {
			return func() error {
				v := deliveryAt(b, time.Second)
				mod(&v)
				_, _, err := b.st.DeliveryCreate(ctx, v)
				return err
			}
		}
		update := func(mod func(*store.Delivery)) func() error {
			return func() error {
				v := d
				v.State, v.UpdatedAt = store.DeliveryBuilding, epoch.Add(time.Minute)
				mod(&v)
				return errOf(b.st.DeliveryUpdate(ctx, v))
			}
		}
		tests := []struct {
			name string
			call func() error
		}{
			{"create malformed id", create(func(v *store.Delivery) { v.ID = "dlv_x" })},
			{"create empty workspace", create(func(v *store.Delivery) { v.WorkspaceID = "" })},
			{"create no change set", create(func(v *store.Delivery) { v.ChangeSetID = "" })},
			{"create no session", create(func(v *store.Delivery) { v.SessionID = "" })},
			{"create malformed turn", create(func(v *store.Delivery) { v.Turn = "turn_x" })},
			{"create malformed connection", create(func(v *store.Delivery) { v.ConnectionID = "con_x" })},
			{"create no remote", create(func(v *store.Delivery) { v.Remote = "" })},
			{"create remote with a password", create(func(v *store.Delivery) { v.Remote = "https://x:ghp_secret@github.com/acme/app.git" })},
			{"create remote with a token", create(func(v *store.Delivery) { v.Remote = "https://ghp_secret@github.com/acme/app.git" })},
			{"create remote with a query", create(func(v *store.Delivery) { v.Remote = "https://github.com/acme/app.git?token=x" })},
			{"create remote of two lines", create(func(v *store.Delivery) { v.Remote = "/a\n/b" })},
			{"create long remote", create(func(v *store.Delivery) { v.Remote = "/" + strings.Repeat("r", store.MaxDeliveryRemoteLen) })},
			{"create no branch", create(func(v *store.Delivery) { v.Branch = "" })},
			{"create branch with a space", create(func(v *store.Delivery) { v.Branch = "a b" })},
			{"create long branch", create(func(v *store.Delivery) { v.Branch = strings.Repeat("b", store.MaxDeliveryBranchLen+1) })},
			{"create pull request without a repo", create(func(v *store.Delivery) { v.Repo = "" })},
			{"create bad repo", create(func(v *store.Delivery) { v.Repo = "acme/app/x" })},
			{"create pull request without a base", create(func(v *store.Delivery) { v.Base = "" })},
			{"create title of two lines", create(func(v *store.Delivery) { v.Title = "a\nb" })},
			{"create long title", create(func(v *store.Delivery) { v.Title = strings.Repeat("t", store.MaxDeliveryTitleLen+1) })},
			{"create api URL with userinfo", create(func(v *store.Delivery) { v.APIBaseURL = "https://u:p@ghe.example.com" })},
			{"create no operation", create(func(v *store.Delivery) { v.Operation = "" })},
			{"create unknown state", create(func(v *store.Delivery) { v.State = "done" })},
			{"create zero time", create(func(v *store.Delivery) { v.CreatedAt = time.Time{} })},
			{"update malformed id", update(func(v *store.Delivery) { v.ID = "dlv_x" })},
			{"update empty workspace", update(func(v *store.Delivery) { v.WorkspaceID = "" })},
			{"update no state", update(func(v *store.Delivery) { v.State = "" })},
			{"update unknown state", update(func(v *store.Delivery) { v.State = "opened" })},
			{"update bad commit", update(func(v *store.Delivery) { v.Commit = "abc" })},
			{"update bad remote sha", update(func(v *store.Delivery) { v.RemoteSHA = strings.Repeat("A", 40) })},
			{"update bad head sha", update(func(v *store.Delivery) { v.PRHeadSHA = strings.Repeat("a", 41) })},
			{"update negative pr number", update(func(v *store.Delivery) { v.PRNumber = -1 })},
			{"update long pr url", update(func(v *store.Delivery) { v.PRURL = strings.Repeat("u", store.MaxDeliveryPRURLLen+1) })},
			{"update unknown pr state", update(func(v *store.Delivery) { v.PRState = "draft" })},
			{"update unknown checks", update(func(v *store.Delivery) { v.Checks = "neutral" })},
			{"update bad error code", update(func(v *store.Delivery) { v.ErrorCode = "Bad" })},
			{"update long error", update(func(v *store.Delivery) { v.Error = strings.Repeat("e", store.MaxDeliveryErrorLen+1) })},
			{"update generation 0", update(func(v *store.Delivery) { v.Generation = 0 })},
			{"update zero time", update(func(v *store.Delivery) { v.UpdatedAt = time.Time{} })},
			{"get malformed id", func() error { return errOf(b.st.DeliveryGet(ctx, b.ws, "dlv_x")) }},
			{"get empty workspace", func() error { return errOf(b.st.DeliveryGet(ctx, "", d.ID)) }},
			{"list malformed change set", func() error {
				return errOf(b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, ChangeSetID: "cs_x"}))
			}},
			{"list unknown state", func() error {
				return errOf(b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, State: "done"}))
			}},
			{"list limit over the bound", func() error {
				return errOf(b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, Limit: store.MaxDeliveryLimit + 1}))
			}},
			{"list negative limit", func() error {
				return errOf(b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, Limit: -1}))
			}},
		}
		for _, tt := range tests {
			err := tt.call()
			require.ErrorIs(t, err, jam.ErrInvalid, tt.name)
			require.NotContains(t, err.Error(), "ghp_secret", "%s: the error never repeats a credential", tt.name)
		}
		list, err := b.st.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws})
		require.NoError(t, err)
		require.Equal(t, []store.Delivery{d}, list, "no refused call stored or changed a delivery")
	})

	deliveryRaces(t, db)
}

func deliveryIDs(ds []store.Delivery) []jam.DeliveryID {
	out := make([]jam.DeliveryID, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// deliveryRaces creates one intent, and updates one delivery from one
// generation, through two handles at once. A handle knows nothing of the
// other's writes: only the intent's unique key and the generation in the
// update's WHERE clause keep a second delivery out and a second writer of
// one generation from moving it.
func deliveryRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("DeliveryCreate_sameIntentTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		for round := range raceRounds {
			ds := [2]store.Delivery{deliveryAt(b, 0), deliveryAt(b, time.Second)}
			ds[1].ChangeSetID, ds[1].Branch = ds[0].ChangeSetID, ds[0].Branch
			var got [2]store.Delivery
			var created [2]bool
			var errs [2]error
			race(
				func() { got[0], created[0], errs[0] = handles[0].DeliveryCreate(ctx, ds[0]) },
				func() { got[1], created[1], errs[1] = handles[1].DeliveryCreate(ctx, ds[1]) },
			)
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			require.Equal(t, got[0], got[1], "round %d: both creates answer with one delivery", round)
			require.NotEqual(t, created[0], created[1], "round %d: exactly one create stored it", round)
			winner := 0
			if created[1] {
				winner = 1
			}
			require.Equal(t, ds[winner].ID, got[0].ID, "round %d: the stored delivery is the creator's told it created it", round)
		}
		list, err := other.DeliveryList(ctx, store.DeliveryListParams{WorkspaceID: b.ws, Limit: store.MaxDeliveryLimit})
		require.NoError(t, err)
		require.Len(t, list, raceRounds, "one delivery per intent")
	})

	t.Run("DeliveryUpdate_sameGenerationTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		d := createDelivery(t, b, deliveryAt(b, 0))
		states := [2]store.DeliveryState{store.DeliveryBuilding, store.DeliveryFailed}
		for round := range raceRounds {
			cur, err := other.DeliveryGet(ctx, b.ws, d.ID)
			require.NoError(t, err)
			require.Equal(t, int64(round+1), cur.Generation)
			var got [2]store.Delivery
			var errs [2]error
			writer := func(i int) func() {
				return func() {
					u := cur
					u.State, u.Error, u.UpdatedAt = states[i], fmt.Sprintf("writer %d", i), epoch.Add(time.Duration(round)*time.Second)
					got[i], errs[i] = handles[i].DeliveryUpdate(ctx, u)
				}
			}
			race(writer(0), writer(1))
			won := -1
			for i, err := range errs {
				switch {
				case err == nil:
					require.Equal(t, -1, won, "round %d: both writers of generation %d won", round, cur.Generation)
					won = i
				case errors.Is(err, jam.ErrConflict):
				default:
					require.NoError(t, err, "round %d, writer %d", round, i)
				}
			}
			require.NotEqual(t, -1, won, "round %d: one writer wins", round)
			stored, err := b.st.DeliveryGet(ctx, b.ws, d.ID)
			require.NoError(t, err)
			require.Equal(t, got[won], stored, "round %d: the stored row is the winner's", round)
			require.Equal(t, cur.Generation+1, stored.Generation)
			require.Equal(t, states[won], stored.State)
		}
	})
}
