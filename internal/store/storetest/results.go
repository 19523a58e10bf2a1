package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// hexID is a commit id of one repeated digit.
func hexID(d byte) string { return strings.Repeat(string(d), 40) }

func checkpointFor(b *msgBundle, s store.Session, seq int, phase store.CheckpointPhase) store.Checkpoint {
	return store.Checkpoint{ID: jam.New[jam.SnapshotID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Seq: seq, Phase: phase,
		GitDir: "/src/repo/.git", Ref: fmt.Sprintf("refs/jam/checkpoints/%s/%d", s.ID, seq), Commit: hexID(byte('a' + seq%6)), Tree: hexID('9'),
		BaseCommit: hexID('1'), CreatedAt: epoch.Add(time.Duration(seq) * time.Second).UTC().Truncate(time.Microsecond)}
}

func changeSetFor(b *msgBundle, s store.Session, base, end store.Checkpoint, at time.Time) store.ChangeSet {
	patch := []byte("diff --git a/a b/a\nGIT binary patch\nliteral 2\n\x00\xff\n")
	return store.ChangeSet{ID: jam.New[jam.ChangeSetID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Origin: store.ChangeSetTurn,
		BaseCheckpoint: base.ID, EndCheckpoint: end.ID, BaseCommit: base.Commit, EndCommit: end.Commit,
		Files: []store.ChangeSetFile{
			{Path: "a", OldMode: 0o100644, NewMode: 0o100755, OldSHA256: strings.Repeat("0", 64), NewSHA256: strings.Repeat("1", 64), Size: 2, Kind: store.ChangeModified, Binary: true},
			{Path: "new name ü.txt", OldPath: "old.txt", OldMode: 0o100644, NewMode: 0o100644, OldSHA256: strings.Repeat("2", 64), NewSHA256: strings.Repeat("3", 64), Size: 9, Kind: store.ChangeRenamed, Additions: 2, Deletions: 1},
		},
		Patch: patch, PatchBytes: int64(len(patch)), SubjectDigest: "sha256:" + strings.Repeat("f", 64), Additions: 2, Deletions: 1, CreatedAt: at.UTC().Truncate(time.Microsecond)}
}

func resultCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) (*msgBundle, store.Session) {
		t.Helper()
		b := setupMessaging(t, open)
		return b, session(t, b, template(t, b), newUUID[jam.RoomID]())
	}

	t.Run("Checkpoint_insertGetListLatest", func(t *testing.T) {
		t.Parallel()
		b, s := setup(t)
		ctx := t.Context()
		_, err := b.st.CheckpointLatest(ctx, b.ws, s.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "a session without checkpoints has no latest")
		var want []store.Checkpoint
		for seq := 1; seq <= 3; seq++ {
			c := checkpointFor(b, s, seq, store.CheckpointTurnStart)
			got, err := b.st.CheckpointInsert(ctx, c)
			require.NoError(t, err)
			require.Equal(t, c, got)
			want = append(want, c)
		}
		list, err := b.st.CheckpointList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Equal(t, want, list)
		latest, err := b.st.CheckpointLatest(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Equal(t, want[2], latest)
		got, err := b.st.CheckpointGet(ctx, b.ws, want[1].ID)
		require.NoError(t, err)
		require.Equal(t, want[1], got)

		_, err = b.st.CheckpointGet(ctx, b.other, want[1].ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's checkpoint is not found")
		list, err = b.st.CheckpointList(ctx, b.other, s.ID)
		require.NoError(t, err)
		require.Empty(t, list)

		dup := checkpointFor(b, s, 2, store.CheckpointTurnEnd)
		_, err = b.st.CheckpointInsert(ctx, dup)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "a seq is taken once")
		again := want[0]
		again.Seq, again.Ref = 9, "refs/jam/checkpoints/x/9"
		_, err = b.st.CheckpointInsert(ctx, again)
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "an id is taken once")
		stranger := checkpointFor(b, s, 4, store.CheckpointRequest)
		stranger.WorkspaceID = b.other
		_, err = b.st.CheckpointInsert(ctx, stranger)
		require.ErrorIs(t, err, jam.ErrNotFound, "a session of another workspace")
		ghost := checkpointFor(b, store.Session{ID: jam.New[jam.SessionID](b.minter)}, 1, store.CheckpointRequest)
		_, err = b.st.CheckpointInsert(ctx, ghost)
		require.ErrorIs(t, err, jam.ErrNotFound, "a session that does not exist")
		bad := checkpointFor(b, s, 5, "sometime")
		_, err = b.st.CheckpointInsert(ctx, bad)
		require.ErrorIs(t, err, jam.ErrInvalid)
	})

	t.Run("ChangeSet_insertGetList", func(t *testing.T) {
		t.Parallel()
		b, s := setup(t)
		ctx := t.Context()
		var cps []store.Checkpoint
		for seq := 1; seq <= 4; seq++ {
			c, err := b.st.CheckpointInsert(ctx, checkpointFor(b, s, seq, store.CheckpointTurnStart))
			require.NoError(t, err)
			cps = append(cps, c)
		}
		first := changeSetFor(b, s, cps[0], cps[1], epoch.Add(time.Minute))
		first.Turn = jam.New[jam.TurnID](b.minter)
		got, err := b.st.ChangeSetInsert(ctx, first)
		require.NoError(t, err)
		require.Equal(t, first, got, "stored as given, patch byte for byte")
		empty := store.ChangeSet{ID: jam.New[jam.ChangeSetID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Origin: store.ChangeSetSalvage,
			BaseCheckpoint: cps[2].ID, EndCheckpoint: cps[3].ID, BaseCommit: cps[2].Commit, EndCommit: cps[3].Commit,
			SubjectDigest: "sha256:" + strings.Repeat("e", 64), CreatedAt: epoch.Add(2 * time.Minute).UTC().Truncate(time.Microsecond)}
		got, err = b.st.ChangeSetInsert(ctx, empty)
		require.NoError(t, err)
		require.True(t, got.Empty(), "a change set that records nothing changed")
		omitted := changeSetFor(b, s, cps[1], cps[2], epoch.Add(3*time.Minute))
		omitted.Patch, omitted.PatchOmitted, omitted.PatchBytes = nil, true, 64<<20
		_, err = b.st.ChangeSetInsert(ctx, omitted)
		require.NoError(t, err)

		list, err := b.st.ChangeSetList(ctx, store.ChangeSetListParams{WorkspaceID: b.ws, SessionID: s.ID})
		require.NoError(t, err)
		require.Len(t, list, 3)
		require.Equal(t, []jam.ChangeSetID{omitted.ID, empty.ID, first.ID}, []jam.ChangeSetID{list[0].ID, list[1].ID, list[2].ID}, "newest first")
		for _, cs := range list {
			require.Nil(t, cs.Patch, "a list leaves the patches out")
		}
		require.Equal(t, first.Files, list[2].Files)
		require.Equal(t, first.PatchBytes, list[2].PatchBytes)
		byTurn, err := b.st.ChangeSetList(ctx, store.ChangeSetListParams{WorkspaceID: b.ws, Turn: first.Turn})
		require.NoError(t, err)
		require.Len(t, byTurn, 1)
		require.Equal(t, first.ID, byTurn[0].ID)
		one, err := b.st.ChangeSetList(ctx, store.ChangeSetListParams{WorkspaceID: b.ws, Limit: 1})
		require.NoError(t, err)
		require.Len(t, one, 1)
		_, err = b.st.ChangeSetList(ctx, store.ChangeSetListParams{WorkspaceID: b.ws, Limit: store.MaxChangeSetLimit + 1})
		require.ErrorIs(t, err, jam.ErrInvalid)
		foreign, err := b.st.ChangeSetList(ctx, store.ChangeSetListParams{WorkspaceID: b.other})
		require.NoError(t, err)
		require.Empty(t, foreign)
		_, err = b.st.ChangeSetGet(ctx, b.other, first.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "another workspace's change set is not found")

		stray := changeSetFor(b, s, cps[0], cps[1], epoch)
		stray.EndCheckpoint = jam.New[jam.SnapshotID](b.minter)
		_, err = b.st.ChangeSetInsert(ctx, stray)
		require.ErrorIs(t, err, jam.ErrNotFound, "a checkpoint that does not exist")
	})

	t.Run("ChangeSet_noRouteChangesOne", func(t *testing.T) {
		t.Parallel()
		b, s := setup(t)
		ctx := t.Context()
		base, err := b.st.CheckpointInsert(ctx, checkpointFor(b, s, 1, store.CheckpointTurnStart))
		require.NoError(t, err)
		end, err := b.st.CheckpointInsert(ctx, checkpointFor(b, s, 2, store.CheckpointTurnEnd))
		require.NoError(t, err)
		cs, err := b.st.ChangeSetInsert(ctx, changeSetFor(b, s, base, end, epoch))
		require.NoError(t, err)

		// The seam has no method that could change one.
		for _, it := range []reflect.Type{reflect.TypeFor[store.ChangeSets](), reflect.TypeFor[store.Checkpoints]()} {
			for i := range it.NumMethod() {
				name := it.Method(i).Name
				require.Regexp(t, `^(ChangeSet|Checkpoint)(Insert|Get|List|Latest)$`, name, "%s has a method beyond insert and read", it)
			}
		}
		// A second insert of the id with other content changes nothing.
		other := changeSetFor(b, s, base, end, epoch.Add(time.Hour))
		other.ID, other.Origin, other.Patch, other.PatchBytes = cs.ID, store.ChangeSetSalvage, []byte("rewritten"), 9
		other.Files = other.Files[:1]
		_, err = b.st.ChangeSetInsert(ctx, other)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		got, err := b.st.ChangeSetGet(ctx, b.ws, cs.ID)
		require.NoError(t, err)
		require.Equal(t, cs, got, "the first capture stands, byte for byte")
		// So does a second checkpoint of the same id.
		twin := checkpointFor(b, s, 3, store.CheckpointRequest)
		twin.ID = base.ID
		_, err = b.st.CheckpointInsert(ctx, twin)
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
		again, err := b.st.CheckpointGet(ctx, b.ws, base.ID)
		require.NoError(t, err)
		require.Equal(t, base, again)
	})
}

// resultRaces takes one session's next checkpoint through two handles at
// once: the seq is the database's to guard, so exactly one wins.
func resultRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("CheckpointInsert_sameSeqTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		s := session(t, b, template(t, b), newUUID[jam.RoomID]())
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		for round := range raceRounds {
			seq := round + 1
			cs := [2]store.Checkpoint{checkpointFor(b, s, seq, store.CheckpointTurnStart), checkpointFor(b, s, seq, store.CheckpointTurnEnd)}
			var errs [2]error
			race(
				func() { _, errs[0] = handles[0].CheckpointInsert(ctx, cs[0]) },
				func() { _, errs[1] = handles[1].CheckpointInsert(ctx, cs[1]) },
			)
			won := 0
			for i, err := range errs {
				if err == nil {
					won++
					continue
				}
				require.ErrorIs(t, err, jam.ErrAlreadyExists, "round %d, handle %d", round, i)
			}
			require.Equal(t, 1, won, "round %d: exactly one checkpoint takes seq %d", round, seq)
		}
		list, err := b.st.CheckpointList(ctx, b.ws, s.ID)
		require.NoError(t, err)
		require.Len(t, list, raceRounds)
	})
}
