package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
)

// freshDatabase creates an empty database on the server of serverURL, so
// every run starts from a store as small as SQLite's fresh file, and
// returns its URL and a function that drops it.
func freshDatabase(ctx context.Context, serverURL string) (string, func() error, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("ingest: postgres URL: %w", err)
	}
	name := "jambench_" + strings.ReplaceAll(uuidString(), "-", "")
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("ingest: postgres: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("ingest: postgres: create database: %w", err)
	}
	u.Path = "/" + name
	drop := func() error {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return fmt.Errorf("ingest: postgres: drop %s: %w", name, err)
		}
		_, err = c.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)")
		return errors.Join(err, c.Close(ctx))
	}
	return u.String(), drop, nil
}
