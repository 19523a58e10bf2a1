package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// resultsBackend serves one session's change set and checkpoints, and
// reports every other id as not found, as the daemon does for a foreign
// workspace's.
func resultsBackend(at time.Time, patch []byte) fakeBackend {
	cs := wire.ChangeSet{ID: "cs_1", Session: "sess_1", Turn: "turn_1", Origin: "turn", BaseCheckpoint: "snap_1", EndCheckpoint: "snap_2",
		BaseCommit: "1111111111111111111111111111111111111111", EndCommit: "2222222222222222222222222222222222222222",
		Files:     []wire.ChangeSetFile{{Path: "a b/ü.txt", Kind: "modified", OldMode: "100644", NewMode: "100755", OldSHA256: "aa", NewSHA256: "bb", Size: 3, Additions: 2, Deletions: 1}},
		Additions: 2, Deletions: 1, PatchBytes: int64(len(patch)), SubjectDigest: "sha256:00", Created: at}
	return fakeBackend{Results: apitest.Results{
		ChangeSetsFunc: func(_ context.Context, q wire.ChangeSetQuery) ([]wire.ChangeSet, error) {
			if q.Session != "" && q.Session != "sess_1" {
				return nil, fmt.Errorf("session %s: %w", q.Session, jam.ErrNotFound)
			}
			return []wire.ChangeSet{cs}, nil
		},
		ChangeSetFunc: func(_ context.Context, id string) (wire.ChangeSet, error) {
			if id != "cs_1" {
				return wire.ChangeSet{}, jam.ErrNotFound
			}
			return cs, nil
		},
		ChangeSetPatchFunc: func(_ context.Context, id string) ([]byte, error) {
			if id != "cs_1" {
				return nil, jam.ErrNotFound
			}
			return patch, nil
		},
		CheckpointsFunc: func(_ context.Context, session string) ([]wire.Checkpoint, error) {
			if session != "sess_1" {
				return nil, jam.ErrNotFound
			}
			return []wire.Checkpoint{{ID: "snap_1", Session: "sess_1", Seq: 1, Turn: "turn_1", Phase: "turn_start", Ref: "refs/jam/checkpoints/sess_1/1",
				Commit: cs.BaseCommit, Created: at}}, nil
		},
	}}
}

func TestResultRoutes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	// A binary patch: NUL bytes and invalid UTF-8 come back byte for byte.
	patch := []byte("diff --git a/x b/x\nGIT binary patch\nliteral 3\nK\x00\xff\xfe\n")
	b := setup(t, resultsBackend(at, patch), "")
	oas, err := apitest.LoadOpenAPI(OpenAPIDocument())
	require.NoError(t, err)
	c := apiclient.NewWrapped(b.socket, oas.Transport)
	ctx := t.Context()

	list, err := c.ChangeSets(ctx, wire.ChangeSetQuery{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "a b/ü.txt", list[0].Files[0].Path)
	list, err = c.ChangeSets(ctx, wire.ChangeSetQuery{Session: "sess_1", Limit: 5})
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = c.ChangeSets(ctx, wire.ChangeSetQuery{Session: "sess_other"})
	assertCode(t, wire.CodeNotFound, err)

	one, err := c.ChangeSet(ctx, "cs_1")
	require.NoError(t, err)
	assert.Equal(t, "sha256:00", one.SubjectDigest)
	_, err = c.ChangeSet(ctx, "cs_foreign")
	assertCode(t, wire.CodeNotFound, err)

	got, err := c.ChangeSetPatch(ctx, "cs_1")
	require.NoError(t, err)
	assert.Equal(t, patch, got, "the patch comes back byte for byte")
	_, err = c.ChangeSetPatch(ctx, "cs_foreign")
	assertCode(t, wire.CodeNotFound, err)

	cps, err := c.Checkpoints(ctx, "sess_1")
	require.NoError(t, err)
	require.Len(t, cps, 1)
	assert.Equal(t, "refs/jam/checkpoints/sess_1/1", cps[0].Ref)
	assert.Empty(t, oas.Violations())

	// The patch is served as a diff that no browser sniffs into HTML.
	resp, err := b.unix.Get("http://jamd/v1/changesets/cs_1/patch")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, patch, raw)
	assert.Equal(t, "text/x-diff; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))

	for _, bad := range []string{"/v1/changesets?limit=0", "/v1/changesets?limit=501", "/v1/changesets?limit=x", "/v1/changesets?colour=1",
		"/v1/sessions/sess_1/changesets?session=sess_2", "/v1/changesets/cs_1?x=1"} {
		resp, err := b.unix.Get("http://jamd" + bad)
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
		assert.Equal(t, wire.CodeInvalidArgument, decodeError(t, resp).Code, bad)
		resp.Body.Close()
	}
}

func assertCode(t *testing.T, want wire.Code, err error) {
	t.Helper()
	ae, ok := errors.AsType[*apiclient.Error](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, want, ae.Code, "%v", err)
}

// captureBackend captures for sess_1, whose checkpoints are 1 and 2;
// sess_bare has none (and no active worktree); every other session is
// unknown.
func captureBackend(at time.Time) (fakeBackend, func() []int) {
	var (
		mu     sync.Mutex
		sinces []int
	)
	seen := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sinces)
	}
	return fakeBackend{Results: apitest.Results{
		CaptureChangeSetFunc: func(_ context.Context, session string, since int) (wire.ChangeSet, error) {
			switch {
			case session == "sess_bare":
				return wire.ChangeSet{}, fmt.Errorf("session %s has no checkpoint: %w", session, jam.ErrConflict)
			case session != "sess_1":
				return wire.ChangeSet{}, fmt.Errorf("session %s: %w", session, jam.ErrNotFound)
			case since > 2:
				return wire.ChangeSet{}, fmt.Errorf("checkpoint %d of %s: %w", since, session, jam.ErrNotFound)
			}
			mu.Lock()
			sinces = append(sinces, since)
			mu.Unlock()
			return wire.ChangeSet{ID: "cs_new", Session: session, Origin: "request", BaseCheckpoint: "snap_1", EndCheckpoint: "snap_3",
				BaseCommit: "1111111111111111111111111111111111111111", EndCommit: "3333333333333333333333333333333333333333",
				SubjectDigest: "sha256:01", Created: at}, nil
		},
	}}, seen
}

func TestChangeSetCapture(t *testing.T) {
	t.Parallel()
	fb, sinces := captureBackend(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	b := setup(t, fb, "")
	oas, err := apitest.LoadOpenAPI(OpenAPIDocument())
	require.NoError(t, err)
	c := apiclient.NewWrapped(b.socket, oas.Transport)
	ctx := t.Context()

	cs, err := c.CaptureChangeSet(ctx, "sess_1", 0)
	require.NoError(t, err)
	assert.Equal(t, "cs_new", cs.ID)
	assert.Equal(t, "request", cs.Origin)
	assert.NotNil(t, cs.Files, "an empty manifest is [] on the wire")
	_, err = c.CaptureChangeSet(ctx, "sess_1", 2)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, sinces())

	_, err = c.CaptureChangeSet(ctx, "sess_other", 0)
	assertCode(t, wire.CodeNotFound, err)
	_, err = c.CaptureChangeSet(ctx, "sess_1", 7)
	assertCode(t, wire.CodeNotFound, err)
	_, err = c.CaptureChangeSet(ctx, "sess_bare", 0)
	assertCode(t, wire.CodeConflict, err)
	assert.Empty(t, oas.Violations())

	post := func(t *testing.T, path, contentType, body string) *http.Response {
		t.Helper()
		resp, err := b.unix.Post("http://jamd"+path, contentType, strings.NewReader(body))
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("status codes", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			name, session, body string
			want                int
			code                wire.Code
		}{
			{name: "no body", session: "sess_1", want: http.StatusCreated},
			{name: "empty object", session: "sess_1", body: `{}`, want: http.StatusCreated},
			{name: "since", session: "sess_1", body: `{"since":1}`, want: http.StatusCreated},
			{name: "unknown session", session: "sess_x", body: `{}`, want: http.StatusNotFound, code: wire.CodeNotFound},
			{name: "unknown checkpoint", session: "sess_1", body: `{"since":3}`, want: http.StatusNotFound, code: wire.CodeNotFound},
			{name: "no checkpoint", session: "sess_bare", want: http.StatusConflict, code: wire.CodeConflict},
			{name: "negative since", session: "sess_1", body: `{"since":-1}`, want: http.StatusBadRequest, code: wire.CodeInvalidArgument},
			{name: "unknown field", session: "sess_1", body: `{"since":1,"until":2}`, want: http.StatusBadRequest, code: wire.CodeInvalidArgument},
			{name: "since as text", session: "sess_1", body: `{"since":"1"}`, want: http.StatusBadRequest, code: wire.CodeInvalidArgument},
			{name: "fractional since", session: "sess_1", body: `{"since":1.5}`, want: http.StatusBadRequest, code: wire.CodeInvalidArgument},
			{name: "two values", session: "sess_1", body: `{} {}`, want: http.StatusBadRequest, code: wire.CodeInvalidArgument},
			{name: "not JSON", session: "sess_1", body: `since=1`, want: http.StatusBadRequest, code: wire.CodeInvalidArgument},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				resp := post(t, "/v1/sessions/"+tc.session+"/changesets", "application/json", tc.body)
				require.Equal(t, tc.want, resp.StatusCode)
				if tc.code != "" {
					assert.Equal(t, tc.code, decodeError(t, resp).Code)
				}
			})
		}
	})
	t.Run("refused before the backend", func(t *testing.T) {
		t.Parallel()
		resp := post(t, "/v1/sessions/sess_1/changesets?since=1", "application/json", `{}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "the route takes no query")
		resp = post(t, "/v1/sessions/sess_1/changesets", "text/plain", `{}`)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "the body is JSON")
	})
}

// FuzzChangeSetCapture: whatever the body, the capture route answers 201
// with a since the backend accepts, or refuses it as invalid (or the
// backend's not found), and never hands the backend a negative since.
func FuzzChangeSetCapture(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"since":1}`, `{"since":-1}`, `{"since":3}`, `{"since":1e3}`, `{"since":null}`, `{"until":1}`, `{"since":9999999999999999999}`} {
		f.Add(s)
	}
	fb, _ := captureBackend(time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	guarded := fb
	guarded.Results.CaptureChangeSetFunc = func(ctx context.Context, session string, since int) (wire.ChangeSet, error) {
		if since < 0 {
			panic(fmt.Sprintf("the backend got since %d", since))
		}
		return fb.Results.CaptureChangeSetFunc(ctx, session, since)
	}
	srv := &Server{cfg: Config{}.withDefaults(), log: slog.New(slog.DiscardHandler), backend: guarded}
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/sessions/sess_1/changesets", strings.NewReader(body))
		req.SetPathValue("session", "sess_1")
		rec := httptest.NewRecorder()
		srv.handleChangeSetCapture(rec, req)
		switch rec.Code {
		case http.StatusCreated:
			var cs wire.ChangeSet
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &cs))
			require.Equal(t, "cs_new", cs.ID)
		case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("body %q answered %d: %s", body, rec.Code, rec.Body)
		}
	})
}
