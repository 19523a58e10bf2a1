package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// epoch is a fixed, non-UTC base time with sub-microsecond digits, so every
// test also checks that times come back in UTC at microsecond precision.
var epoch = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+5:30", 5*3600+1800))

// basicInvalid runs the rows of the invalid-parameter table of the
// workspace, setting and daemon-run methods whose names start with one of
// prefixes, as subtest name.
func basicInvalid(t *testing.T, setup func(t *testing.T) *testBundle, name string, prefixes ...string) {
	t.Run(name, func(t *testing.T) {
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

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// testBundle is the fixture of the workspace, setting and daemon-run cases.
type testBundle struct {
	st     store.Store
	minter *jam.Minter
}

func newTestBundle(t *testing.T, open func(t *testing.T) store.Store) *testBundle {
	t.Helper()
	return &testBundle{st: open(t), minter: jam.NewMinter(nil, nil)}
}

func newID(b *testBundle) jam.WorkspaceID { return jam.New[jam.WorkspaceID](b.minter) }

func ensure(t *testing.T, b *testBundle, name string, at time.Time) store.Workspace {
	t.Helper()
	w, err := b.st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: newID(b), Name: name, At: at})
	require.NoError(t, err)
	return w
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
