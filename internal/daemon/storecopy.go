package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// copySampleEvents is how many events of each workspace the verification
// of a copy reads back through both stores.
const copySampleEvents = 200

// CopyStore implements "jam store copy": with the data directory's lock
// held (so no daemon runs on it), it copies the SQLite store into the
// empty PostgreSQL database opts.To names, sealed values unchanged, then
// verifies that every table has as many rows on both sides and that a
// sample of sealed values (the first events of each workspace, and the
// accounts) reads back the same through both stores with the daemon key.
// A failed import writes nothing.
func CopyStore(ctx context.Context, opts cli.StoreCopyOptions) (cli.StoreCopyResult, error) {
	d := &daemon{cfg: config.Config{DataDir: opts.DataDir, Store: opts.To}}
	res, err := d.copyStore(ctx)
	return res, d.redactStoreErr(err)
}

func (d *daemon) copyStore(ctx context.Context) (cli.StoreCopyResult, error) {
	var res cli.StoreCopyResult
	dbPath := filepath.Join(d.cfg.DataDir, datadir.StoreFile)
	if _, err := os.Stat(dbPath); err != nil {
		return res, fmt.Errorf("no store to copy: %w", err)
	}
	lock, err := datadir.Acquire(d.cfg.DataDir)
	if err != nil {
		return res, fmt.Errorf("stop jamd first: %w", err)
	}
	defer lock.Release()
	keyPath := filepath.Join(d.cfg.DataDir, keyFile)
	if _, err := os.Stat(keyPath); err != nil {
		return res, fmt.Errorf("the daemon key: %w", err)
	}
	box, err := secret.LoadOrCreate(keyPath)
	if err != nil {
		return res, err
	}
	src, err := sqlite.Open(ctx, sqlite.Config{Path: dbPath, Sealer: box})
	if err != nil {
		return res, fmt.Errorf("open the sqlite store: %w", err)
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, postgres.Config{URL: d.cfg.Store, Sealer: box})
	if err != nil {
		return res, err
	}
	defer dst.Close()
	info, err := dst.Info(ctx)
	if err != nil {
		return res, err
	}
	res.Target = info.Location
	srcInfo, err := src.Info(ctx)
	if err != nil {
		return res, err
	}
	if srcInfo.SchemaVersion != info.SchemaVersion {
		return res, fmt.Errorf("%w: the sqlite store has schema %d, the postgres store %d", jam.ErrInvalid, srcInfo.SchemaVersion, info.SchemaVersion)
	}

	copied, err := dst.Import(ctx, src)
	if err != nil {
		return res, err
	}
	res.Rows = copied

	// Verify: the counts of both sides, table by table.
	tables, err := src.ExportTables(ctx)
	if err != nil {
		return res, err
	}
	got, err := dst.ImportCounts(ctx)
	if err != nil {
		return res, err
	}
	var bad []string
	for _, t := range tables {
		want, err := src.ExportCount(ctx, t)
		if err != nil {
			return res, err
		}
		if got[t] != want {
			bad = append(bad, fmt.Sprintf("%s: %d in sqlite, %d in postgres", t, want, got[t]))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return res, fmt.Errorf("the copy differs: %v", bad)
	}

	// Verify: sealed values open to the same content on both sides.
	wss, err := src.WorkspaceList(ctx)
	if err != nil {
		return res, err
	}
	for _, ws := range wss {
		want, err := src.EventList(ctx, ws.ID, 0, copySampleEvents)
		if err != nil {
			return res, fmt.Errorf("read back events: %w", err)
		}
		have, err := dst.EventList(ctx, ws.ID, 0, copySampleEvents)
		if err != nil {
			return res, fmt.Errorf("read back events from postgres: %w", err)
		}
		if !reflect.DeepEqual(want, have) {
			return res, errors.New("the copy differs: the events of workspace " + string(ws.ID) + " read back differently")
		}
		res.Sampled += len(want)
		wantAcc, err := src.AccountList(ctx, ws.ID)
		if err != nil {
			return res, err
		}
		haveAcc, err := dst.AccountList(ctx, ws.ID)
		if err != nil {
			return res, fmt.Errorf("read back accounts from postgres: %w", err)
		}
		if !reflect.DeepEqual(wantAcc, haveAcc) {
			return res, errors.New("the copy differs: the accounts of workspace " + string(ws.ID) + " read back differently")
		}
		n, err := sameCredentials(ctx, src, dst, ws.ID)
		if err != nil {
			return res, err
		}
		res.Sampled += n
	}
	return res, nil
}

// credentialReader is the part of a store sameCredentials reads.
type credentialReader interface {
	ConnectionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Connection, error)
	CredentialVersions(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) ([]store.CredentialVersion, error)
	CredentialCurrent(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (store.CredentialVersion, error)
}

// sameCredentials checks that the live connections of ws, the credential
// versions of each and the active version's sealed secret read back alike
// from both stores, and returns how many secrets it opened on each side.
func sameCredentials(ctx context.Context, src, dst credentialReader, ws jam.WorkspaceID) (int, error) {
	differ := errors.New("the copy differs: the connections of workspace " + string(ws) + " read back differently")
	want, err := src.ConnectionList(ctx, ws)
	if err != nil {
		return 0, err
	}
	have, err := dst.ConnectionList(ctx, ws)
	if err != nil {
		return 0, fmt.Errorf("read back connections from postgres: %w", err)
	}
	if !reflect.DeepEqual(want, have) {
		return 0, differ
	}
	n := 0
	for _, c := range want {
		a, err := src.CredentialVersions(ctx, ws, c.ID)
		if err != nil {
			return 0, err
		}
		b, err := dst.CredentialVersions(ctx, ws, c.ID)
		if err != nil {
			return 0, fmt.Errorf("read back credentials from postgres: %w", err)
		}
		if !reflect.DeepEqual(a, b) {
			return 0, differ
		}
		ca, err := src.CredentialCurrent(ctx, ws, c.ID)
		if err != nil {
			return 0, err
		}
		cb, err := dst.CredentialCurrent(ctx, ws, c.ID)
		if err != nil {
			return 0, fmt.Errorf("read back a credential from postgres: %w", err)
		}
		if !reflect.DeepEqual(ca, cb) {
			return 0, differ
		}
		n++
	}
	return n, nil
}
