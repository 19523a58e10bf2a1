// Package pgtest gives each test a throwaway PostgreSQL database on the
// server that JAM_TEST_POSTGRES_URL names.
//
// Without that variable a test that asks for a database is skipped,
// unless JAM_REQUIRE_POSTGRES=1, when it fails: CI sets both, so a
// missing server cannot pass as a skipped suite. Each database is created
// fresh (CREATE DATABASE jam_test_<random>) and dropped when the test
// ends, with the connections still open to it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable that holds the server's URL; the URL's
// database is only used to connect while creating and dropping databases.
const EnvURL = "JAM_TEST_POSTGRES_URL"

// EnvRequire, set to 1, makes a missing EnvURL a failure, not a skip.
const EnvRequire = "JAM_REQUIRE_POSTGRES"

// ServerURL returns the URL of EnvURL, skipping (or failing, see
// EnvRequire) t when it is unset.
func ServerURL(t testing.TB) string {
	t.Helper()
	raw := os.Getenv(EnvURL)
	if raw == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 and %s is unset", EnvRequire, EnvURL)
		}
		t.Skipf("%s is unset: no PostgreSQL server to test against", EnvURL)
	}
	return raw
}

// URL creates a fresh, empty database on the server and returns its URL;
// the database is dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	admin := ServerURL(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "jam_test_" + hex.EncodeToString(b[:])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	// The name is [a-z0-9_] only, so it needs no quoting.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("pgtest: connect to drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})

	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL", EnvURL)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}
