package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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
