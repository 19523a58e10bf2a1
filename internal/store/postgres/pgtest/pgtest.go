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
	"errors"
	"fmt"
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
	return FromTemplate(t, "")
}

// FromTemplate is URL with the new database copied from template (a
// database name as Template returns it; "" is the server's empty
// template). No session may be connected to template meanwhile.
func FromTemplate(t testing.TB, template string) string {
	t.Helper()
	admin := ServerURL(t)
	name := randomName("jam_test_")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	// Names are [a-z0-9_] only, so they need no quoting.
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	if _, err := conn.Exec(ctx, create); err != nil {
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

	u, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// Template creates a database for FromTemplate on the server of EnvURL
// (it must be set) and runs setup on its URL; setup must close every
// connection it opened. drop removes it. A package's TestMain makes one
// (a migrated schema, say) so that each test copies it instead of
// building it again.
func Template(ctx context.Context, setup func(url string) error) (name string, drop func() error, err error) {
	admin := os.Getenv(EnvURL)
	if admin == "" {
		return "", nil, fmt.Errorf("%s is unset", EnvURL)
	}
	name = randomName("jam_tpl_")
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create template: %w", err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	}
	u, err := withDatabase(admin, name)
	if err == nil {
		err = setup(u)
	}
	if err != nil {
		return "", nil, errors.Join(err, drop())
	}
	return name, drop, nil
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// withDatabase is the server URL raw with its database replaced by name.
func withDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL", EnvURL)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}
