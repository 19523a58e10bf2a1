// Package pgdb gives a benchmark run a PostgreSQL database of its own on
// a server the user names, so that every run over jam's PostgreSQL store
// starts from an empty database, as a SQLite run starts from a fresh
// file. The role of the server's URL needs CREATEDB.
//
// Invariants: a database name is the caller's prefix and 32 random hex
// digits (letters, digits and underscores only, so it is never quoted);
// neither the server's URL nor the new one appears in an error (they may
// hold a password); drop removes the database even while connections to
// it are still open (DROP DATABASE … WITH (FORCE)).
package pgdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// validPrefix is what a prefix may be: it starts a database name.
var validPrefix = regexp.MustCompile(`^[a-z][a-z0-9_]{0,29}$`)

// dropTimeout bounds a drop: a server that stopped answering is reported.
const dropTimeout = time.Minute

// Create makes an empty database named prefix + 32 random hex digits on
// the server of serverURL and returns its URL (serverURL with the
// database replaced), its name, and a function that drops it. drop runs
// on a context of its own, so it works after the caller's context ended.
func Create(ctx context.Context, serverURL, prefix string) (dbURL, name string, drop func() error, err error) {
	if !validPrefix.MatchString(prefix) {
		return "", "", nil, fmt.Errorf("pgdb: invalid prefix %q", prefix)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		// url's errors quote the URL; this one must not.
		return "", "", nil, errors.New("pgdb: the postgres URL does not parse")
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	name = prefix + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", "", nil, fmt.Errorf("pgdb: connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", nil, fmt.Errorf("pgdb: create database %s: %w", name, err)
	}
	u.Path = "/" + name
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
		defer cancel()
		c, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return fmt.Errorf("pgdb: drop %s: connect: %w", name, err)
		}
		_, err = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		if err != nil {
			err = fmt.Errorf("pgdb: drop %s: %w", name, err)
		}
		return errors.Join(err, c.Close(ctx))
	}
	return u.String(), name, drop, nil
}

// Exists reports whether the server of serverURL has a database name.
func Exists(ctx context.Context, serverURL, name string) (bool, error) {
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return false, fmt.Errorf("pgdb: connect: %w", err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		return false, fmt.Errorf("pgdb: list databases: %w", err)
	}
	return n > 0, nil
}
