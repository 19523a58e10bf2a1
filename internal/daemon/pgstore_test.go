package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/daemon"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// pwRole is the role the start-error tests log in as with a password: the
// test creates it with pwRoleSecret. The server must ask it for a
// password (a pg_hba.conf line such as "host all jam_test_pw 127.0.0.1/32
// scram-sha-256"); on a server that trusts every login the wrong-password
// case is skipped.
const (
	pwRole       = "jam_test_pw"
	pwRoleSecret = "right-horse-battery"
)

// runJamd runs jamd in-process as cmd/jamd does, with the store URL in
// $JAM_STORE (never on the command line), and returns its exit code and
// what it printed.
func runJamd(t *testing.T, storeURL string) (int, string, string) {
	t.Helper()
	dir := testConfig(t).DataDir
	env := func(k string) (string, bool) {
		switch k {
		case "JAM_STORE":
			return storeURL, true
		case "HOME":
			return dir, true
		}
		return "", false
	}
	io, _, out, errOut := cli.Test()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	code := cli.MainDaemon(ctx, []string{"--data-dir", dir, "--http-addr", "off", "--log-level", "debug"}, io,
		cli.Deps{RunDaemon: daemon.RunCLI, RunHub: daemon.RunHub, Env: env})
	return code, out.String(), errOut.String()
}

// withUser returns raw with its userinfo set to user:password.
func withUser(t *testing.T, raw, user, password string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.User = url.UserPassword(user, password)
	return u.String()
}

// TestRun_postgresStartErrors: a store URL that does not parse, a server
// that does not listen and a password the server refuses each stop jamd
// at start with one line naming the problem, a non-zero exit, and the
// password nowhere in what it printed.
func TestRun_postgresStartErrors(t *testing.T) {
	t.Parallel()
	server := pgtest.ServerURL(t)
	su, err := url.Parse(server)
	require.NoError(t, err)

	// A port nothing listens on: one taken, then released.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())

	const secret = "s3cret-Pa55word"
	cases := []struct {
		name     string
		url      func(t *testing.T) string
		wantCode cli.ExitCode
		want     string
	}{
		{"bad url", func(*testing.T) string {
			return "postgres://jam:" + secret + "@127.0.0.1:notaport/jam"
		}, cli.ExitUsage, "jamd: open store: postgres store: invalid url postgres://jam:xxxxx@127.0.0.1:notaport/jam: "},
		{"closed port", func(*testing.T) string {
			return "postgres://jam:" + secret + "@" + closed + "/jam?sslmode=disable"
		}, cli.ExitUnavailable, "jamd: open store: postgres store: cannot reach " + closed + ": connection refused"},
		{"no such database", func(t *testing.T) string {
			u := *su
			u.Path = "/jam_test_missing"
			return u.String()
		}, cli.ExitUnavailable, `jamd: open store: postgres store: database "jam_test_missing" does not exist on ` + su.Host},
		{"wrong password", func(t *testing.T) string {
			db := pgtest.URL(t)
			ensurePasswordRole(t, server)
			requirePasswordAsked(t, withUser(t, db, pwRole, secret))
			return withUser(t, db, pwRole, secret)
		}, cli.ExitUnavailable, `jamd: open store: postgres store: authentication failed for user "` + pwRole + `" at ` + su.Host + "/"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			raw := tc.url(t)
			code, out, errOut := runJamd(t, raw)
			require.Equal(t, int(tc.wantCode), code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Empty(t, out, "nothing started")
			lines := strings.Split(strings.TrimRight(errOut, "\n"), "\n")
			last := lines[len(lines)-1]
			require.True(t, strings.HasPrefix(last, tc.want), "the last line names the problem:\n%s\nwant prefix:\n%s", last, tc.want)
			require.NotContains(t, errOut, secret, "the password never shows")
			require.NotContains(t, errOut, url.QueryEscape(secret))
		})
	}
}

// ensurePasswordRole creates pwRole with pwRoleSecret (once per server;
// concurrent tests may race to create it, which is fine).
func ensurePasswordRole(t *testing.T, server string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%s') THEN
    CREATE ROLE %s LOGIN PASSWORD '%s';
  END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$`, pwRole, pwRole, pwRoleSecret))
	require.NoError(t, err)
}

// requirePasswordAsked skips t when the server lets pwRole in with a
// wrong password (it trusts every login, so no password can be wrong).
func requirePasswordAsked(t *testing.T, wrong string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, wrong)
	if err == nil {
		conn.Close(ctx)
		t.Skipf("the server does not ask %s for a password (add a pg_hba.conf line for it)", pwRole)
	}
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) && pe.SQLState() == "28P01" {
		return
	}
	t.Fatalf("want an authentication failure, got: %v", err)
}
