package api

import (
	"context"
	"fmt"
	"net/http"
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

// connectionsBackend keeps connections in memory, by id and by
// "provider/name", and records every secret it was given.
func connectionsBackend(at time.Time) (fakeBackend, func() []string) {
	var mu sync.Mutex
	byRef := map[string]*wire.Connection{}
	var secrets []string
	lookup := func(ref string) (*wire.Connection, error) {
		if c, ok := byRef[ref]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("connection %s: %w", ref, jam.ErrNotFound)
	}
	return fakeBackend{ConnectionFuncs: apitest.ConnectionFuncs{
		ConnectionsFunc: func(context.Context) ([]wire.Connection, error) {
			mu.Lock()
			defer mu.Unlock()
			var out []wire.Connection
			for ref, c := range byRef {
				if strings.HasPrefix(ref, "con_") && !c.Removed {
					out = append(out, *c)
				}
			}
			return out, nil
		},
		ConnectionAddFunc: func(_ context.Context, r wire.ConnectionAddRequest) (wire.Connection, error) {
			mu.Lock()
			defer mu.Unlock()
			key := r.Provider + "/" + r.Name
			if _, ok := byRef[key]; ok {
				return wire.Connection{}, fmt.Errorf("%w: %s exists", jam.ErrAlreadyExists, key)
			}
			secrets = append(secrets, r.Secret)
			c := &wire.Connection{ID: fmt.Sprintf("con_%d", len(byRef)), Provider: r.Provider, Name: r.Name, BaseURL: r.BaseURL, Version: 1, Created: at, Updated: at}
			byRef[key], byRef[c.ID] = c, c
			return *c, nil
		},
		ConnectionFunc: func(_ context.Context, ref string) (wire.Connection, error) {
			mu.Lock()
			defer mu.Unlock()
			c, err := lookup(ref)
			if err != nil {
				return wire.Connection{}, err
			}
			return *c, nil
		},
		ConnectionRotateFunc: func(_ context.Context, ref string, r wire.ConnectionRotateRequest) (wire.Connection, error) {
			mu.Lock()
			defer mu.Unlock()
			c, err := lookup(ref)
			if err != nil {
				return wire.Connection{}, err
			}
			secrets = append(secrets, r.Secret)
			c.Version++
			return *c, nil
		},
		ConnectionRemoveFunc: func(_ context.Context, ref string) (wire.Connection, error) {
			mu.Lock()
			defer mu.Unlock()
			c, err := lookup(ref)
			if err != nil {
				return wire.Connection{}, err
			}
			if c.Removed {
				return wire.Connection{}, fmt.Errorf("%w: removed already", jam.ErrConflict)
			}
			c.Removed = true
			return *c, nil
		},
	}}, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), secrets...) }
}

func TestConnectionRoutes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)
	backend, secrets := connectionsBackend(at)
	b := setup(t, backend, "")
	oas, err := apitest.LoadOpenAPI(OpenAPIDocument())
	require.NoError(t, err)
	c := apiclient.NewWrapped(b.socket, oas.Transport)
	ctx := t.Context()

	list, err := c.Connections(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
	added, err := c.ConnectionAdd(ctx, wire.ConnectionAddRequest{Provider: "github", Name: "work", BaseURL: "https://ghe.example.com/api/v3", Secret: "ghp_canary"})
	require.NoError(t, err)
	assert.Equal(t, wire.Connection{ID: "con_0", Provider: "github", Name: "work", BaseURL: "https://ghe.example.com/api/v3", Version: 1, Created: at, Updated: at}, added)
	_, err = c.ConnectionAdd(ctx, wire.ConnectionAddRequest{Provider: "github", Name: "work", Secret: "x"})
	assertCode(t, wire.CodeAlreadyExists, err)

	got, err := c.Connection(ctx, "github/work")
	require.NoError(t, err, "PROVIDER/NAME travels as one escaped path segment")
	assert.Equal(t, added, got)
	rot, err := c.ConnectionRotate(ctx, added.ID, wire.ConnectionRotateRequest{Secret: "ghp_canary2"})
	require.NoError(t, err)
	assert.Equal(t, 2, rot.Version)
	list, err = c.Connections(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	rm, err := c.ConnectionRemove(ctx, "con_0")
	require.NoError(t, err)
	assert.True(t, rm.Removed)
	_, err = c.ConnectionRemove(ctx, "con_0")
	assertCode(t, wire.CodeConflict, err)
	_, err = c.Connection(ctx, "con_nope")
	assertCode(t, wire.CodeNotFound, err)
	assert.Equal(t, []string{"ghp_canary", "ghp_canary2"}, secrets(), "the secret reaches the backend from the body")
	assert.Empty(t, oas.Violations())

	// A secret is required, and only in the body.
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/connections", `{"provider":"github","name":"x"}`},
		{"POST", "/v1/connections", `{"provider":"github","name":"x","secret":""}`},
		{"POST", "/v1/connections", `{"provider":"github","name":"x","secret":"s","token":"t"}`},
		{"POST", "/v1/connections?secret=s", `{"provider":"github","name":"x","secret":"s"}`},
		{"POST", "/v1/connections/con_0/rotate", `{}`},
		{"GET", "/v1/connections?x=1", ``},
	} {
		req, err := http.NewRequestWithContext(ctx, tc.method, "http://jamd"+tc.path, strings.NewReader(tc.body))
		require.NoError(t, err)
		resp, err := b.unix.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.path+" "+tc.body)
		e := decodeError(t, resp)
		assert.Equal(t, wire.CodeInvalidArgument, e.Code, tc.path+" "+tc.body)
		assert.NotContains(t, e.Message, `"s"`)
		resp.Body.Close()
	}
	assert.Len(t, secrets(), 2, "no refused request reached the backend")
}
