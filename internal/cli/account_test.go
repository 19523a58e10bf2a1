package cli_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

const secret = "band_u_s3cret"

// addAccount is an AccountAdd that checks the request it gets.
func addAccount(t *testing.T, want wire.AccountAddRequest) backend {
	return backend{AccountAddFunc: func(_ context.Context, r wire.AccountAddRequest) (wire.Account, error) {
		assert.Equal(t, want, r)
		return acct, nil
	}}
}

func TestAccountAdd(t *testing.T) {
	t.Parallel()
	req := wire.AccountAddRequest{BandURL: "https://band.example", Key: secret}
	runCases(t, []cmdCase{
		{
			name:       "key flag",
			backend:    addAccount(t, req),
			inv:        invocation{args: []string{"account", "add", "--band", "https://band.example", "--key", secret}},
			wantStdout: "added account band: ann (user u-1) on https://band.example\n",
		},
		{
			name:       "key from stdin",
			backend:    addAccount(t, wire.AccountAddRequest{Profile: "work", BandURL: "https://band.example", Key: secret}),
			inv:        invocation{args: []string{"account", "add", "--band", "https://band.example", "--key", "-", "--profile", "work"}, stdin: secret + "\n"},
			wantStdout: "added account band: ann (user u-1) on https://band.example\n",
		},
		{
			name:     "key from the environment, json",
			backend:  addAccount(t, req),
			inv:      invocation{args: []string{"account", "add", "--band", "https://band.example", "--json"}, env: map[string]string{"JAM_BAND_KEY": secret}},
			wantJSON: acctJSON,
		},
		{
			name:       "the key flag beats the environment",
			backend:    addAccount(t, req),
			inv:        invocation{args: []string{"account", "add", "--band", "https://band.example", "--key", secret}, env: map[string]string{"JAM_BAND_KEY": "band_u_other"}},
			wantStdout: "added account band: ann (user u-1) on https://band.example\n",
		},
		{
			name:       "no band",
			inv:        invocation{args: []string{"account", "add", "--key", secret}},
			wantCode:   2,
			wantStderr: "jam: --band is required (the Band REST base URL, e.g. https://app.band.ai)\n",
		},
		{
			name:       "no key",
			inv:        invocation{args: []string{"account", "add", "--band", "https://band.example"}},
			wantCode:   2,
			wantStderr: "jam: a Band user key is required: --key KEY, --key - (stdin) or $JAM_BAND_KEY\n",
		},
		{
			name:       "empty stdin",
			inv:        invocation{args: []string{"account", "add", "--band", "https://band.example", "--key", "-"}},
			wantCode:   2,
			wantStderr: "jam: a Band user key is required: --key KEY, --key - (stdin) or $JAM_BAND_KEY\n",
		},
		{
			name: "band refuses the key",
			backend: backend{AccountAddFunc: func(context.Context, wire.AccountAddRequest) (wire.Account, error) {
				return wire.Account{}, fmt.Errorf("sign in to https://band.example: %w", jam.ErrUnauthenticated)
			}},
			inv:        invocation{args: []string{"account", "add", "--band", "https://band.example", "--key", secret}},
			wantCode:   6,
			wantStderr: "jam: add account: sign in to https://band.example: unauthenticated (unauthenticated)\n",
		},
	})
}

func TestAccountAdd_neverPrintsTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, addAccount(t, wire.AccountAddRequest{BandURL: "https://band.example", Key: secret}))
	for _, args := range [][]string{
		{"account", "add", "--band", "https://band.example", "--key", secret},
		{"account", "add", "--band", "https://band.example", "--key", secret, "--json"},
	} {
		r := b.jam(t, args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.NotContains(t, r.stdout+r.stderr, secret)
	}
}

func TestAccountList(t *testing.T) {
	t.Parallel()
	two := backend{AccountsFunc: func(context.Context) ([]wire.Account, error) {
		work := acct
		work.Profile, work.Handle, work.BandURL = "work", "ann.smith", "https://app.band.ai"
		return []wire.Account{acct, work}, nil
	}}
	none := backend{AccountsFunc: func(context.Context) ([]wire.Account, error) { return nil, nil }}
	runCases(t, []cmdCase{
		{
			name:    "table",
			backend: two,
			inv:     invocation{args: []string{"account", "list"}},
			wantStdout: "" +
				"PROFILE  HANDLE     USER  BAND\n" +
				"band     ann        u-1   https://band.example\n" +
				"work     ann.smith  u-1   https://app.band.ai\n",
		},
		{
			name:       "none",
			backend:    none,
			inv:        invocation{args: []string{"account", "list"}},
			wantStdout: "no accounts; add one with: jam account add --band URL\n",
		},
		{
			name:     "json",
			backend:  backend{AccountsFunc: func(context.Context) ([]wire.Account, error) { return []wire.Account{acct}, nil }},
			inv:      invocation{args: []string{"account", "list", "--json"}},
			wantJSON: `{"accounts":[` + acctJSON + `]}`,
		},
		{
			name:     "json none",
			backend:  none,
			inv:      invocation{args: []string{"account", "list", "--json"}},
			wantJSON: `{"accounts":[]}`,
		},
		{
			name:       "extra argument",
			inv:        invocation{args: []string{"account", "list", "x"}},
			wantCode:   2,
			wantStderr: "jam: unknown command \"x\" for \"jam account list\" (see jam account list --help)\n",
		},
		{
			name:       "unknown subcommand",
			inv:        invocation{args: []string{"account", "delete"}},
			wantCode:   2,
			wantStderr: "jam: unknown command \"delete\" for \"jam account\" (see jam account --help)\n",
		},
	})
}
