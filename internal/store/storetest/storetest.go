package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// epoch is a fixed, non-UTC base time with sub-microsecond digits, so every
// test also checks that times come back in UTC at microsecond precision.
var epoch = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+5:30", 5*3600+1800))

// Exercise runs the conformance suite against the dialect that open
// creates. open must return a fresh, empty store for each call and close it
// when t ends (t.Cleanup); subtests run in parallel, each on its own store.
func Exercise(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()

	type testBundle struct {
		st     store.Store
		minter *jam.Minter
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		return &testBundle{st: open(t), minter: jam.NewMinter(nil, nil)}
	}
	newID := func(b *testBundle) jam.WorkspaceID { return jam.New[jam.WorkspaceID](b.minter) }
	ensure := func(t *testing.T, b *testBundle, name string, at time.Time) store.Workspace {
		t.Helper()
		w, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: newID(b), Name: name, At: at})
		require.NoError(t, err)
		return w
	}

	t.Run("Info", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		info, err := b.st.Info(t.Context())
		require.NoError(t, err)
		require.NotEmpty(t, info.Driver)
		require.NotEmpty(t, info.Location)
		require.GreaterOrEqual(t, info.SchemaVersion, 1)
	})

	t.Run("Check", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.st.Check(t.Context()))
	})

	t.Run("WorkspaceEnsure_idempotentByName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first := ensure(t, b, "alpha", epoch)
		second, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{
			ID: newID(b), Name: "alpha", At: epoch.Add(time.Hour),
		})
		require.NoError(t, err)
		requireWorkspace(t, first, second)

		list, err := b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		require.Len(t, list, 1)
	})

	t.Run("WorkspaceEnsure_retry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		p := store.WorkspaceEnsureParams{ID: newID(b), Name: "alpha", At: epoch}
		first, err := b.st.WorkspaceEnsure(t.Context(), p)
		require.NoError(t, err)
		again, err := b.st.WorkspaceEnsure(t.Context(), p)
		require.NoError(t, err)
		requireWorkspace(t, first, again)
	})

	t.Run("WorkspaceEnsure_idOfAnotherName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := ensure(t, b, "alpha", epoch)
		_, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: w.ID, Name: "beta", At: epoch})
		require.ErrorIs(t, err, jam.ErrAlreadyExists)
	})

	t.Run("WorkspaceGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := ensure(t, b, "alpha", epoch)
		got, err := b.st.WorkspaceGet(t.Context(), w.ID)
		require.NoError(t, err)
		requireWorkspace(t, w, got)

		_, err = b.st.WorkspaceGet(t.Context(), newID(b))
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("WorkspaceList_oldestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		list, err := b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		require.Empty(t, list)

		// Created out of time order, so the IDs' minting order (c, a, b)
		// differs from the creation times' order (a, b, c).
		ensure(t, b, "c", epoch.Add(2*time.Second))
		ensure(t, b, "a", epoch)
		ensure(t, b, "b", epoch.Add(time.Second))
		list, err = b.st.WorkspaceList(t.Context())
		require.NoError(t, err)
		var names []string
		for _, w := range list {
			names = append(names, w.Name)
		}
		require.Equal(t, []string{"a", "b", "c"}, names)
	})

	t.Run("InvalidParams", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ws := ensure(t, b, "alpha", epoch).ID
		wsp := func(id jam.WorkspaceID, name string, at time.Time) store.WorkspaceEnsureParams {
			return store.WorkspaceEnsureParams{ID: id, Name: name, At: at}
		}
		setp := func(key, value string, at time.Time) store.SettingPutParams {
			return store.SettingPutParams{WorkspaceID: ws, Key: key, Value: value, At: at}
		}
		runp := func(node string, pid int, at time.Time) store.DaemonRunStartParams {
			return store.DaemonRunStartParams{Node: node, PID: pid, Version: "v1", At: at}
		}
		const wrongPrefix = jam.WorkspaceID("sess_01jqv2x5z9k8m7n6p5q4r3s2t1")
		st := b.st
		tests := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"ensure empty id", func(ctx context.Context) error { return ensureErr(ctx, st, wsp("", "x", epoch)) }},
			{"ensure malformed id", func(ctx context.Context) error { return ensureErr(ctx, st, wsp("ws_nope", "x", epoch)) }},
			{"ensure wrong prefix", func(ctx context.Context) error { return ensureErr(ctx, st, wsp(wrongPrefix, "x", epoch)) }},
			{"ensure empty name", func(ctx context.Context) error { return ensureErr(ctx, st, wsp(newID(b), "", epoch)) }},
			{"ensure long name", func(ctx context.Context) error {
				return ensureErr(ctx, st, wsp(newID(b), strings.Repeat("n", store.MaxWorkspaceNameLen+1), epoch))
			}},
			{"ensure name not UTF-8", func(ctx context.Context) error { return ensureErr(ctx, st, wsp(newID(b), "a\xffb", epoch)) }},
			{"ensure name with NUL", func(ctx context.Context) error { return ensureErr(ctx, st, wsp(newID(b), "a\x00b", epoch)) }},
			{"ensure zero time", func(ctx context.Context) error { return ensureErr(ctx, st, wsp(newID(b), "x", time.Time{})) }},
			{"get empty id", func(ctx context.Context) error { _, err := st.WorkspaceGet(ctx, ""); return err }},
			{"get malformed id", func(ctx context.Context) error { _, err := st.WorkspaceGet(ctx, "ws_nope"); return err }},
			{"setting get empty key", func(ctx context.Context) error { _, err := st.SettingGet(ctx, ws, ""); return err }},
			{"setting get malformed workspace", func(ctx context.Context) error {
				_, err := st.SettingGet(ctx, "ws_nope", "k")
				return err
			}},
			{"setting put empty key", func(ctx context.Context) error { return putErr(ctx, st, setp("", "v", epoch)) }},
			{"setting put empty workspace", func(ctx context.Context) error {
				p := setp("k", "v", epoch)
				p.WorkspaceID = ""
				return putErr(ctx, st, p)
			}},
			{"setting put zero time", func(ctx context.Context) error { return putErr(ctx, st, setp("k", "v", time.Time{})) }},
			{"setting put value not UTF-8", func(ctx context.Context) error { return putErr(ctx, st, setp("k", "\xff", epoch)) }},
			{"setting delete empty key", func(ctx context.Context) error { return st.SettingDelete(ctx, ws, "") }},
			{"setting delete malformed workspace", func(ctx context.Context) error { return st.SettingDelete(ctx, "nope", "k") }},
			{"run start empty node", func(ctx context.Context) error { return startErr(ctx, st, runp("", 1, epoch)) }},
			{"run start zero pid", func(ctx context.Context) error { return startErr(ctx, st, runp("n", 0, epoch)) }},
			{"run start negative pid", func(ctx context.Context) error { return startErr(ctx, st, runp("n", -1, epoch)) }},
			{"run start zero time", func(ctx context.Context) error { return startErr(ctx, st, runp("n", 1, time.Time{})) }},
			{"run stop zero time", func(ctx context.Context) error { return st.DaemonRunStop(ctx, 1, time.Time{}) }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				require.ErrorIs(t, tt.call(t.Context()), jam.ErrInvalid)
			})
		}
	})

	t.Run("SizeLimits", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ws := ensure(t, b, "alpha", epoch).ID
		put := func(key, value string) error {
			_, err := b.st.SettingPut(t.Context(), store.SettingPutParams{WorkspaceID: ws, Key: key, Value: value, At: epoch})
			return err
		}
		maxKey := strings.Repeat("k", store.MaxSettingKeyLen)
		maxValue := strings.Repeat("v", store.MaxSettingValueLen)
		require.NoError(t, put(maxKey, maxValue))
		got, err := b.st.SettingGet(t.Context(), ws, maxKey)
		require.NoError(t, err)
		require.Equal(t, maxValue, got.Value)
		require.ErrorIs(t, put(maxKey+"k", "v"), jam.ErrInvalid)
		require.ErrorIs(t, put("k", maxValue+"v"), jam.ErrInvalid)

		// Names are limited in characters, not bytes.
		ensure(t, b, strings.Repeat("é", store.MaxWorkspaceNameLen), epoch)
	})

	t.Run("Setting_putGetOverwriteDelete", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ws := ensure(t, b, "alpha", epoch).ID
		ctx := t.Context()

		_, err := b.st.SettingGet(ctx, ws, "model")
		require.ErrorIs(t, err, jam.ErrNotFound)

		put, err := b.st.SettingPut(ctx, store.SettingPutParams{WorkspaceID: ws, Key: "model", Value: "small", At: epoch})
		require.NoError(t, err)
		got, err := b.st.SettingGet(ctx, ws, "model")
		require.NoError(t, err)
		requireSetting(t, put, got)
		require.Equal(t, "small", got.Value)

		put, err = b.st.SettingPut(ctx, store.SettingPutParams{WorkspaceID: ws, Key: "model", Value: "large", At: epoch.Add(time.Minute)})
		require.NoError(t, err)
		got, err = b.st.SettingGet(ctx, ws, "model")
		require.NoError(t, err)
		requireSetting(t, put, got)
		require.Equal(t, "large", got.Value)

		require.NoError(t, b.st.SettingDelete(ctx, ws, "model"))
		_, err = b.st.SettingGet(ctx, ws, "model")
		require.ErrorIs(t, err, jam.ErrNotFound)
		require.ErrorIs(t, b.st.SettingDelete(ctx, ws, "model"), jam.ErrNotFound)
	})

	t.Run("Setting_emptyValue", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ws := ensure(t, b, "alpha", epoch).ID
		_, err := b.st.SettingPut(t.Context(), store.SettingPutParams{WorkspaceID: ws, Key: "k", Value: "", At: epoch})
		require.NoError(t, err)
		got, err := b.st.SettingGet(t.Context(), ws, "k")
		require.NoError(t, err)
		require.Empty(t, got.Value)
	})

	t.Run("Setting_workspaceIsolation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		wsA := ensure(t, b, "a", epoch).ID
		wsB := ensure(t, b, "b", epoch).ID

		_, err := b.st.SettingPut(ctx, store.SettingPutParams{WorkspaceID: wsA, Key: "k", Value: "from a", At: epoch})
		require.NoError(t, err)
		_, err = b.st.SettingGet(ctx, wsB, "k")
		require.ErrorIs(t, err, jam.ErrNotFound)
		require.ErrorIs(t, b.st.SettingDelete(ctx, wsB, "k"), jam.ErrNotFound)

		_, err = b.st.SettingPut(ctx, store.SettingPutParams{WorkspaceID: wsB, Key: "k", Value: "from b", At: epoch})
		require.NoError(t, err)
		got, err := b.st.SettingGet(ctx, wsA, "k")
		require.NoError(t, err)
		require.Equal(t, "from a", got.Value)
		require.Equal(t, wsA, got.WorkspaceID)
	})

	t.Run("Setting_unknownWorkspace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.st.SettingPut(t.Context(), store.SettingPutParams{WorkspaceID: newID(b), Key: "k", Value: "v", At: epoch})
		require.ErrorIs(t, err, jam.ErrNotFound)
	})

	t.Run("Setting_concurrentPuts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ws := ensure(t, b, "alpha", epoch).ID
		const writers, writes, keysPerWriter = 16, 50, 10

		// Each writer overwrites its own keys several times; the last value
		// it writes to a key must be the one that survives.
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range writes {
					_, err := b.st.SettingPut(t.Context(), store.SettingPutParams{
						WorkspaceID: ws,
						Key:         fmt.Sprintf("w%02d-k%02d", w, i%keysPerWriter),
						Value:       fmt.Sprint(i),
						At:          epoch,
					})
					if err != nil {
						errs[w] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for w, err := range errs {
			require.NoError(t, err, "writer %d", w)
		}
		for w := range writers {
			for k := range keysPerWriter {
				got, err := b.st.SettingGet(t.Context(), ws, fmt.Sprintf("w%02d-k%02d", w, k))
				require.NoError(t, err)
				require.Equal(t, fmt.Sprint(writes-keysPerWriter+k), got.Value)
			}
		}
	})

	t.Run("DaemonRun_previous", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		start := func(node string, pid int, at time.Time) store.DaemonRunStartResult {
			t.Helper()
			res, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: node, PID: pid, Version: "v1", At: at})
			require.NoError(t, err)
			require.Equal(t, node, res.Run.Node)
			require.Equal(t, pid, res.Run.PID)
			require.False(t, res.Run.Clean())
			return res
		}

		first := start("node-a", 100, epoch)
		require.Nil(t, first.Previous)

		// The first run never stopped: the second sees it as unclean.
		second := start("node-a", 101, epoch.Add(time.Minute))
		require.NotNil(t, second.Previous)
		requireDaemonRun(t, first.Run, *second.Previous)
		require.False(t, second.Previous.Clean())

		// Another node has its own history.
		other := start("node-b", 200, epoch.Add(time.Minute))
		require.Nil(t, other.Previous)

		stoppedAt := epoch.Add(2 * time.Minute)
		require.NoError(t, b.st.DaemonRunStop(ctx, second.Run.ID, stoppedAt))
		third := start("node-a", 102, epoch.Add(3*time.Minute))
		require.NotNil(t, third.Previous)
		require.Equal(t, second.Run.ID, third.Previous.ID)
		require.True(t, third.Previous.Clean())
		requireTime(t, stoppedAt, third.Previous.StoppedAt)
	})

	t.Run("DaemonRunStop_errors", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		res, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: "n", PID: 1, Version: "v1", At: epoch})
		require.NoError(t, err)

		require.NoError(t, b.st.DaemonRunStop(ctx, res.Run.ID, epoch.Add(time.Second)))
		require.ErrorIs(t, b.st.DaemonRunStop(ctx, res.Run.ID, epoch.Add(2*time.Second)), jam.ErrConflict)
		require.ErrorIs(t, b.st.DaemonRunStop(ctx, res.Run.ID+1000, epoch), jam.ErrNotFound)
	})

	t.Run("Times_utcMicroseconds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()

		w := ensure(t, b, "alpha", epoch)
		requireTime(t, epoch, w.CreatedAt)
		got, err := b.st.WorkspaceGet(ctx, w.ID)
		require.NoError(t, err)
		requireTime(t, epoch, got.CreatedAt)

		put, err := b.st.SettingPut(ctx, store.SettingPutParams{WorkspaceID: w.ID, Key: "k", Value: "v", At: epoch})
		require.NoError(t, err)
		requireTime(t, epoch, put.UpdatedAt)
		setting, err := b.st.SettingGet(ctx, w.ID, "k")
		require.NoError(t, err)
		requireTime(t, epoch, setting.UpdatedAt)

		run, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: "n", PID: 1, Version: "v1", At: epoch})
		require.NoError(t, err)
		requireTime(t, epoch, run.Run.StartedAt)
		require.NoError(t, b.st.DaemonRunStop(ctx, run.Run.ID, epoch.Add(time.Hour)))
		next, err := b.st.DaemonRunStart(ctx, store.DaemonRunStartParams{Node: "n", PID: 2, Version: "v1", At: epoch})
		require.NoError(t, err)
		requireTime(t, epoch, next.Previous.StartedAt)
		requireTime(t, epoch.Add(time.Hour), next.Previous.StoppedAt)
	})

	exerciseMessaging(t, open)
	exerciseEvents(t, open)
	exerciseRoomCache(t, open)
	exerciseRetirement(t, open)
	exerciseRuntime(t, open)
	exerciseTurnOutput(t, open)
	exerciseExecutions(t, open)
	exerciseUsage(t, open)
	exerciseRuntimeRetention(t, open)
	exerciseQuarantine(t, open)
}

func ensureErr(ctx context.Context, st store.Store, p store.WorkspaceEnsureParams) error {
	_, err := st.WorkspaceEnsure(ctx, p)
	return err
}

func putErr(ctx context.Context, st store.Store, p store.SettingPutParams) error {
	_, err := st.SettingPut(ctx, p)
	return err
}

func startErr(ctx context.Context, st store.Store, p store.DaemonRunStartParams) error {
	_, err := st.DaemonRunStart(ctx, p)
	return err
}

// requireTime checks that got is want, truncated to microseconds, in UTC.
func requireTime(t *testing.T, want, got time.Time) {
	t.Helper()
	want = want.Truncate(time.Microsecond).UTC()
	require.True(t, want.Equal(got), "time: want %s, got %s", want, got)
	require.Equal(t, time.UTC, got.Location())
}

func requireWorkspace(t *testing.T, want, got store.Workspace) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Name, got.Name)
	requireTime(t, want.CreatedAt, got.CreatedAt)
}

func requireSetting(t *testing.T, want, got store.Setting) {
	t.Helper()
	require.Equal(t, want.WorkspaceID, got.WorkspaceID)
	require.Equal(t, want.Key, got.Key)
	require.Equal(t, want.Value, got.Value)
	requireTime(t, want.UpdatedAt, got.UpdatedAt)
}

func requireDaemonRun(t *testing.T, want, got store.DaemonRun) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Node, got.Node)
	require.Equal(t, want.PID, got.PID)
	require.Equal(t, want.Version, got.Version)
	requireTime(t, want.StartedAt, got.StartedAt)
	require.Equal(t, want.StoppedAt.IsZero(), got.StoppedAt.IsZero())
	if !want.StoppedAt.IsZero() {
		requireTime(t, want.StoppedAt, got.StoppedAt)
	}
}
