package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the accounts table. A profile has one account per workspace;
// replacing it keeps the original created_at unless the account id
// changes, which makes it a new account.
const (
	accountColumns = `id, workspace_id, profile, band_url, user_id, handle, key_sealed, connection_id, created_at`
	accountUpsert  = `INSERT INTO accounts (` + accountColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, profile) DO UPDATE SET
    id = excluded.id,
    band_url = excluded.band_url,
    user_id = excluded.user_id,
    handle = excluded.handle,
    key_sealed = excluded.key_sealed,
    connection_id = excluded.connection_id,
    created_at = CASE WHEN accounts.id = excluded.id THEN accounts.created_at ELSE excluded.created_at END
RETURNING ` + accountColumns
	accountSelect    = `SELECT ` + accountColumns + ` FROM accounts WHERE workspace_id = ? AND profile = ?`
	accountSelectAll = `SELECT ` + accountColumns + ` FROM accounts WHERE workspace_id = ? ORDER BY profile`
	accountSelectID  = `SELECT id FROM accounts WHERE workspace_id = ? AND profile = ?`
)

// AccountPut implements [store.Messaging]. An account id that already
// names the account of another profile is jam.ErrAlreadyExists; a missing
// workspace is jam.ErrNotFound.
func (s *Store) AccountPut(ctx context.Context, a store.Account) (store.Account, error) {
	a, err := a.Canonical()
	if err != nil {
		return store.Account{}, fmt.Errorf("account put %q: %w", a.Profile, err)
	}
	var out store.Account
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		ok, err := workspaceExists(ctx, tx, a.WorkspaceID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("workspace %s: %w", a.WorkspaceID, jam.ErrNotFound)
		}
		out, err = scanAccount(tx.QueryRowContext(ctx, accountUpsert,
			a.ID, a.WorkspaceID, a.Profile, a.BandURL, a.UserID, a.Handle, keySealed(a.KeySealed), a.ConnectionID, a.CreatedAt.UnixMicro()))
		if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
			return fmt.Errorf("id %s names another account: %w", a.ID, jam.ErrAlreadyExists)
		}
		return err
	})
	if err != nil {
		return store.Account{}, fmt.Errorf("account put %q: %w", a.Profile, err)
	}
	return out, nil
}

// AccountGet implements [store.Messaging].
func (s *Store) AccountGet(ctx context.Context, ws jam.WorkspaceID, profile string) (store.Account, error) {
	if err := store.ValidateAccountKey(ws, profile); err != nil {
		return store.Account{}, fmt.Errorf("account get %q: %w", profile, err)
	}
	a, err := scanAccount(s.reader.QueryRowContext(ctx, accountSelect, ws, profile))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Account{}, fmt.Errorf("account get %q: %w", profile, err)
	}
	return a, nil
}

// AccountList implements [store.Messaging].
func (s *Store) AccountList(ctx context.Context, ws jam.WorkspaceID) ([]store.Account, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("account list: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanAccount, accountSelectAll, ws)
	if err != nil {
		return nil, fmt.Errorf("account list: %w", err)
	}
	return out, nil
}

// accountID returns the id of the profile's account inside tx.
func accountID(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, profile string) (jam.AccountID, error) {
	var id jam.AccountID
	err := tx.QueryRowContext(ctx, accountSelectID, ws, profile).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("account of profile %q: %w", profile, jam.ErrNotFound)
	}
	return id, err
}

func scanAccount(row scanner) (store.Account, error) {
	var a store.Account
	var created int64
	err := row.Scan(&a.ID, &a.WorkspaceID, &a.Profile, &a.BandURL, &a.UserID, &a.Handle, &a.KeySealed, &a.ConnectionID, &created)
	if err != nil {
		return store.Account{}, err
	}
	if len(a.KeySealed) == 0 {
		a.KeySealed = nil
	}
	a.CreatedAt = fromMicros(created)
	return a, nil
}

// keySealed is the legacy key column's value: an empty blob, not NULL,
// for a row whose key lives in a connection.
func keySealed(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
