package cli_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/apitest"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

const conSecret = "ghp_s3cret-canary"

var conAt = time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC)

var ghConnection = wire.Connection{ID: "con_01", Provider: "github", Name: "work", BaseURL: "https://ghe.example.com/api/v3", Version: 1, Created: conAt, Updated: conAt}

// addConnection is a ConnectionAdd that checks the request it gets.
func addConnection(t *testing.T, want wire.ConnectionAddRequest) backend {
	return backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionAddFunc: func(_ context.Context, r wire.ConnectionAddRequest) (wire.Connection, error) {
		assert.Equal(t, want, r)
		return ghConnection, nil
	}}}
}

func rotateConnection(t *testing.T, ref string) backend {
	return backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionRotateFunc: func(_ context.Context, got string, r wire.ConnectionRotateRequest) (wire.Connection, error) {
		assert.Equal(t, ref, got)
		assert.Equal(t, conSecret, r.Secret)
		c := ghConnection
		c.Version = 2
		return c, nil
	}}}
}

func TestConnectionCommands(t *testing.T) {
	t.Parallel()
	req := wire.ConnectionAddRequest{Provider: "github", Name: "work", BaseURL: "https://ghe.example.com/api/v3", Secret: conSecret}
	add := []string{"connection", "add", "github", "work", "--base-url", "https://ghe.example.com/api/v3"}
	runCases(t, []cmdCase{
		{
			name:       "add, secret from stdin",
			backend:    addConnection(t, req),
			inv:        invocation{args: add, stdin: conSecret + "\n"},
			wantStdout: "added connection github/work (con_01, version 1)\n",
		},
		{
			name:       "add, secret from the named variable",
			backend:    addConnection(t, req),
			inv:        invocation{args: append(add, "--secret-env", "GH_TOKEN"), env: map[string]string{"GH_TOKEN": conSecret}},
			wantStdout: "added connection github/work (con_01, version 1)\n",
		},
		{
			name:     "add, json",
			backend:  addConnection(t, req),
			inv:      invocation{args: append(add, "--json"), stdin: conSecret},
			wantJSON: `{"id":"con_01","provider":"github","name":"work","base_url":"https://ghe.example.com/api/v3","version":1,"created_at":"2026-12-03T07:00:00Z","updated_at":"2026-12-03T07:00:00Z"}`,
		},
		{
			name:       "add, the variable unset",
			inv:        invocation{args: append(add, "--secret-env", "GH_TOKEN")},
			wantCode:   2,
			wantStderr: "jam: $GH_TOKEN is not set or empty\n",
		},
		{
			name:       "add, nothing on stdin",
			inv:        invocation{args: add},
			wantCode:   2,
			wantStderr: "jam: a secret is required: on standard input, or name a variable with --secret-env\n",
		},
		{
			name:       "add, a secret as an argument is refused",
			inv:        invocation{args: []string{"connection", "add", "github", "work", conSecret}},
			wantCode:   2,
			wantStderr: "jam: accepts 2 arg(s), received 3 (see jam connection add --help)\n",
		},
		{
			name: "add, name taken",
			backend: backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionAddFunc: func(context.Context, wire.ConnectionAddRequest) (wire.Connection, error) {
				return wire.Connection{}, fmt.Errorf("a connection github/work exists already: %w", jam.ErrAlreadyExists)
			}}},
			inv:        invocation{args: add, stdin: conSecret},
			wantCode:   5,
			wantStderr: "jam: add connection: a connection github/work exists already: already exists (already_exists)\n",
		},
		{
			name: "list",
			backend: backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionsFunc: func(context.Context) ([]wire.Connection, error) {
				anth := wire.Connection{ID: "con_02", Provider: "anthropic", Name: "team", Version: 3, Created: conAt, Updated: conAt}
				return []wire.Connection{ghConnection, anth}, nil
			}}},
			inv: invocation{args: []string{"connection", "list"}},
			wantStdout: "PROVIDER   NAME  VERSION  BASE URL                        ID\n" +
				"github     work  1        https://ghe.example.com/api/v3  con_01\n" +
				"anthropic  team  3        -                               con_02\n",
		},
		{
			name: "list, none",
			backend: backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionsFunc: func(context.Context) ([]wire.Connection, error) {
				return nil, nil
			}}},
			inv:        invocation{args: []string{"connection", "list"}},
			wantStdout: "no connections; add one with: jam connection add PROVIDER NAME\n",
		},
		{
			name:       "rotate by name, stdin",
			backend:    rotateConnection(t, "work"),
			inv:        invocation{args: []string{"connection", "rotate", "work"}, stdin: conSecret + "\nignored\n"},
			wantStdout: "rotated connection github/work (con_01, version 2)\n",
		},
		{
			name:       "rotate by provider/name, env",
			backend:    rotateConnection(t, "github/work"),
			inv:        invocation{args: []string{"connection", "rotate", "github/work", "--secret-env", "T"}, env: map[string]string{"T": conSecret}},
			wantStdout: "rotated connection github/work (con_01, version 2)\n",
		},
		{
			name: "remove",
			backend: backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionRemoveFunc: func(_ context.Context, ref string) (wire.Connection, error) {
				assert.Equal(t, "con_01", ref)
				c := ghConnection
				c.Removed = true
				return c, nil
			}}},
			inv:        invocation{args: []string{"connection", "remove", "con_01"}},
			wantStdout: "removed connection github/work (con_01, version 1)\n",
		},
		{
			name: "remove, unknown",
			backend: backend{ConnectionFuncs: apitest.ConnectionFuncs{ConnectionRemoveFunc: func(_ context.Context, ref string) (wire.Connection, error) {
				return wire.Connection{}, fmt.Errorf("connection %s: %w", ref, jam.ErrNotFound)
			}}},
			inv:        invocation{args: []string{"connection", "remove", "nope"}},
			wantCode:   4,
			wantStderr: "jam: remove connection nope: connection nope: not found (not_found)\n",
		},
	})
}
