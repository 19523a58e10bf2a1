package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// settingCases covers [store.Settings].
func settingCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *testBundle { t.Helper(); return newTestBundle(t, open) }

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
	t.Run("Setting_timesUTCMicroseconds", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		w := ensure(t, b, "alpha", epoch)
		put, err := b.st.SettingPut(ctx, store.SettingPutParams{WorkspaceID: w.ID, Key: "k", Value: "v", At: epoch})
		require.NoError(t, err)
		requireTime(t, epoch, put.UpdatedAt)
		setting, err := b.st.SettingGet(ctx, w.ID, "k")
		require.NoError(t, err)
		requireTime(t, epoch, setting.UpdatedAt)
	})

	basicInvalid(t, setup, "Setting_invalidParams", "setting ")
}
