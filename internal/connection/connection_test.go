package connection_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/connection"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a log sink safe for the handler's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type testBundle struct {
	svc *connection.Service
	st  *sqlite.Store
	ws  jam.WorkspaceID
	log *syncBuffer
	now time.Time
}

// setup opens a sealed SQLite store of one workspace, as jamd does.
func setup(t *testing.T) *testBundle {
	t.Helper()
	dir := t.TempDir()
	box, err := secret.LoadOrCreate(filepath.Join(dir, "daemon.key"))
	require.NoError(t, err)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "jam.db"), CheckpointInterval: time.Hour, Sealer: box})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	b := &testBundle{log: &syncBuffer{}, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	w, err := st.WorkspaceEnsure(t.Context(), store.WorkspaceEnsureParams{ID: jam.New[jam.WorkspaceID](jam.NewMinter(nil, nil)), Name: "w", At: b.now})
	require.NoError(t, err)
	b.ws = w.ID
	b.st = st
	b.svc = connection.New(connection.Config{
		Now:    func() time.Time { b.now = b.now.Add(time.Second); return b.now },
		Logger: slog.New(slog.NewTextHandler(b.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}, st)
	return b
}

func TestService_lifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	canary := "canary-" + rand.Text()
	var seen []string
	note := func(vs ...any) {
		for _, v := range vs {
			seen = append(seen, fmt.Sprintf("%+v", v))
		}
	}

	c, err := b.svc.Add(ctx, b.ws, store.ProviderAnthropic, "work", "", []byte(canary+"-1"))
	require.NoError(t, err)
	note(c)
	_, err = b.svc.Add(ctx, b.ws, store.ProviderAnthropic, "work", "", []byte(canary))
	require.ErrorIs(t, err, jam.ErrAlreadyExists)
	note(err)
	gh, err := b.svc.Add(ctx, b.ws, store.ProviderGitHub, "work", "https://ghe.example.com/api/v3", []byte(canary+"-gh"))
	require.NoError(t, err)

	got, c2, err := b.svc.Resolve(ctx, b.ws, "connection:anthropic/work")
	require.NoError(t, err)
	require.Equal(t, canary+"-1", string(got))
	require.Equal(t, c.ID, c2.ID)

	_, err = b.svc.Get(ctx, b.ws, "work")
	require.ErrorIs(t, err, jam.ErrConflict, "a bare name two providers share")
	require.Contains(t, err.Error(), "anthropic/work")
	require.Contains(t, err.Error(), "github/work")
	note(err)
	byID, err := b.svc.Get(ctx, b.ws, string(gh.ID))
	require.NoError(t, err)
	require.Equal(t, gh, byID)

	r, err := b.svc.Rotate(ctx, b.ws, "anthropic/work", []byte(canary+"-2"))
	require.NoError(t, err)
	require.Equal(t, 2, r.CurrentVersion)
	note(r)
	got, _, err = b.svc.Resolve(ctx, b.ws, "connection:anthropic/work")
	require.NoError(t, err)
	require.Equal(t, canary+"-2", string(got), "the rotated secret resolves")

	list, err := b.svc.List(ctx, b.ws)
	require.NoError(t, err)
	require.Len(t, list, 2)
	note(list)

	rm, err := b.svc.Remove(ctx, b.ws, string(gh.ID))
	require.NoError(t, err)
	require.True(t, rm.Removed)
	note(rm)
	_, _, err = b.svc.Resolve(ctx, b.ws, "connection:github/work")
	require.ErrorIs(t, err, jam.ErrNotFound)
	note(err)
	c3, err := b.svc.Get(ctx, b.ws, "work")
	require.NoError(t, err, "one live connection has the name now")
	require.Equal(t, c.ID, c3.ID)
	_, err = b.svc.Rotate(ctx, b.ws, string(gh.ID), []byte(canary))
	require.ErrorIs(t, err, jam.ErrConflict, "a removed connection is not rotated")
	note(err)
	_, err = b.svc.Rotate(ctx, b.ws, "nope", []byte(canary))
	require.ErrorIs(t, err, jam.ErrNotFound)
	note(err)
	_, err = b.svc.Rotate(ctx, b.ws, "work", nil)
	require.ErrorIs(t, err, jam.ErrInvalid)
	note(err)
	list, err = b.svc.List(ctx, b.ws)
	require.NoError(t, err)
	require.Len(t, list, 1, "List shows live connections")

	seen = append(seen, b.log.String())
	require.Contains(t, b.log.String(), "connection rotated")
	for _, s := range seen {
		require.NotContains(t, s, canary, "no secret in a log, an error or a returned connection")
	}
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref      string
		provider store.ConnectionProvider
		name     string
		ok       bool
	}{
		{"connection:anthropic/work", store.ProviderAnthropic, "work", true},
		{"connection:github/ghe.corp-1", store.ProviderGitHub, "ghe.corp-1", true},
		{"connection:opencode_zen/z", store.ProviderOpenCodeZen, "z", true},
		{"connection:modal/0", store.ProviderModal, "0", true},
		{"connection:openai/a_b", store.ProviderOpenAI, "a_b", true},
		{"anthropic/work", "", "", false},
		{"connection:", "", "", false},
		{"connection:anthropic", "", "", false},
		{"connection:anthropic/", "", "", false},
		{"connection:/team", "", "", false},
		{"connection:gitlab/work", "", "", false},
		{"connection:band/agent.p.a", store.ProviderBand, "agent.p.a", true},
		{"connection:Anthropic/work", "", "", false},
		{"connection:anthropic/Work", "", "", false},
		{"connection:anthropic/team/extra", "", "", false},
		{"Connection:anthropic/work", "", "", false},
		{" connection:anthropic/work", "", "", false},
		{"connection:anthropic/work ", "", "", false},
		{"sk-ant-" + strings.Repeat("x", 100), "", "", false},
	}
	for _, tt := range tests {
		p, n, err := connection.ParseRef(tt.ref)
		if !tt.ok {
			require.ErrorIs(t, err, jam.ErrInvalid, "%q", tt.ref)
			continue
		}
		require.NoError(t, err, "%q", tt.ref)
		require.Equal(t, tt.provider, p)
		require.Equal(t, tt.name, n)
		require.True(t, connection.IsRef(tt.ref))
	}
	_, _, err := connection.ParseRef("connection:" + strings.Repeat("s", 100) + "/x")
	require.NotContains(t, err.Error(), strings.Repeat("s", 100), "a long value is not quoted back")
}

// FuzzParseRef: a reference parses only into a known provider and a
// valid name that print back as the same reference; anything else is
// ErrInvalid, and a long input is never repeated in the error.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"connection:anthropic/work", "connection:github/a.b", "connection:x/y", "connection:", "", "connection:anthropic/w/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		p, n, err := connection.ParseRef(ref)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("%q: %v", ref, err)
			}
			if len(ref) > 80 && strings.Contains(err.Error(), ref) {
				t.Fatalf("%q repeated in %v", ref, err)
			}
			return
		}
		if store.ValidateConnectionProvider(p) != nil || store.ValidateConnectionName(n) != nil {
			t.Fatalf("%q: parsed %q %q", ref, p, n)
		}
		if back := connection.RefPrefix + string(p) + "/" + n; back != ref {
			t.Fatalf("%q parsed to %q", ref, back)
		}
	})
}
