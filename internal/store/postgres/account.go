package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Accounts = (*Store)(nil)

// SQL of the accounts table. A profile has one account per workspace;
// replacing it keeps the original created_at unless the account id
// changes, which makes it a new account.
const (
	accountColumns = `id, workspace_id, profile, band_url, user_id, handle, key_sealed, connection_id, created_at`
	accountUpsert  = `INSERT INTO accounts (` + accountColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (workspace_id, profile) DO UPDATE SET
    id = excluded.id,
    band_url = excluded.band_url,
    user_id = excluded.user_id,
    handle = excluded.handle,
    key_sealed = excluded.key_sealed,
    connection_id = excluded.connection_id,
    created_at = CASE WHEN accounts.id = excluded.id THEN accounts.created_at ELSE excluded.created_at END
RETURNING ` + accountColumns
	accountSelect    = `SELECT ` + accountColumns + ` FROM accounts WHERE workspace_id = $1 AND profile = $2`
	accountSelectAll = `SELECT ` + accountColumns + ` FROM accounts WHERE workspace_id = $1 ORDER BY profile`
	// accountShareID reads the profile's account id and keeps the row
	// from being replaced or removed until the transaction ends.
	accountShareID = `SELECT id FROM accounts WHERE workspace_id = $1 AND profile = $2 FOR SHARE`
	// accountLockID reads the id and locks the row against every other
	// writer, including a PeerPut's share lock.
	accountLockID = `SELECT id FROM accounts WHERE workspace_id = $1 AND profile = $2 FOR UPDATE`
)

// AccountPut implements [store.Accounts] with one upsert. An account id
// that already names the account of another profile is the primary key's
// refusal (jam.ErrAlreadyExists); a missing workspace is the foreign
// key's (jam.ErrNotFound).
func (s *Store) AccountPut(ctx context.Context, a store.Account) (store.Account, error) {
	a, err := a.Canonical()
	if err != nil {
		return store.Account{}, fmt.Errorf("account put %q: %w", a.Profile, err)
	}
	out, err := scanAccount(s.pool.QueryRow(ctx, accountUpsert,
		a.ID, a.WorkspaceID, a.Profile, a.BandURL, a.UserID, a.Handle, keySealed(a.KeySealed), a.ConnectionID, micros(a.CreatedAt)))
	switch pgCode(err) {
	case codeUniqueViolation:
		err = fmt.Errorf("id %s names another account: %w", a.ID, jam.ErrAlreadyExists)
	case codeForeignKeyViolation:
		err = fmt.Errorf("workspace %s: %w", a.WorkspaceID, jam.ErrNotFound)
	}
	if err != nil {
		return store.Account{}, fmt.Errorf("account put %q: %w", a.Profile, mapErr(err))
	}
	return out, nil
}

// AccountGet implements [store.Accounts].
func (s *Store) AccountGet(ctx context.Context, ws jam.WorkspaceID, profile string) (store.Account, error) {
	if err := store.ValidateAccountKey(ws, profile); err != nil {
		return store.Account{}, fmt.Errorf("account get %q: %w", profile, err)
	}
	a, err := scanAccount(s.pool.QueryRow(ctx, accountSelect, ws, profile))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Account{}, fmt.Errorf("account get %q: %w", profile, mapErr(err))
	}
	return a, nil
}

// AccountList implements [store.Accounts].
func (s *Store) AccountList(ctx context.Context, ws jam.WorkspaceID) ([]store.Account, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("account list: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanAccount, accountSelectAll, ws)
	if err != nil {
		return nil, fmt.Errorf("account list: %w", mapErr(err))
	}
	return out, nil
}

// accountID returns the id of the profile's account inside tx, locked
// with lock (accountShareID or accountLockID).
func accountID(ctx context.Context, tx pgx.Tx, lock string, ws jam.WorkspaceID, profile string) (jam.AccountID, error) {
	var id jam.AccountID
	err := tx.QueryRow(ctx, lock, ws, profile).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
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
