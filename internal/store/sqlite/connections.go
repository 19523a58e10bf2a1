package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Connections and their credential versions (migration 0022). Each write
// is one IMMEDIATE transaction on the writer (inTx): the write lock is
// taken before the connection row is read, so no other connection to the
// file sees it between the read and the write. A rotation takes its
// version from the UPDATE of the connection row (current_version + 1,
// RETURNING), disables the active version and inserts the new one; the
// partial unique index credential_versions_active refuses a second active
// version and connections_live_name a second live name, whatever the
// code above them does.
const (
	connectionColumns = `id, workspace_id, provider, name, base_url, current_version, removed_at, created_at, updated_at`
	connectionInsert  = `INSERT INTO connections (` + connectionColumns + `) VALUES (?, ?, ?, ?, ?, 1, NULL, ?, ?)`
	credentialInsert  = `INSERT INTO credential_versions (connection_id, workspace_id, version, secret, disabled_at, created_at) VALUES (?, ?, ?, ?, NULL, ?)`
	connectionByID    = `SELECT ` + connectionColumns + ` FROM connections WHERE workspace_id = ? AND id = ?`
	connectionByName  = `SELECT ` + connectionColumns + ` FROM connections WHERE workspace_id = ? AND provider = ? AND name = ? AND removed_at IS NULL`
	connectionList    = `SELECT ` + connectionColumns + ` FROM connections WHERE workspace_id = ? ORDER BY created_at, id LIMIT ?`
	connectionBump    = `UPDATE connections SET current_version = current_version + 1, updated_at = ?
WHERE workspace_id = ? AND id = ? AND removed_at IS NULL AND current_version < ? RETURNING ` + connectionColumns
	connectionMarkRemoved = `UPDATE connections SET removed_at = ?, updated_at = ? WHERE workspace_id = ? AND id = ? AND removed_at IS NULL RETURNING ` + connectionColumns
	credentialDisable     = `UPDATE credential_versions SET disabled_at = ? WHERE connection_id = ? AND disabled_at IS NULL`
	credentialActive      = `SELECT v.version, v.secret, v.created_at FROM credential_versions v JOIN connections c ON c.id = v.connection_id
WHERE c.workspace_id = ? AND c.id = ? AND c.removed_at IS NULL AND v.disabled_at IS NULL`
	credentialAll = `SELECT version, disabled_at, created_at FROM credential_versions WHERE workspace_id = ? AND connection_id = ? ORDER BY version LIMIT ?`
)

// sealedCredential names the sealed column of credential versions (see
// sealed.go): the aad also names the connection and the version.
const sealedCredential = "credential_versions.secret"

func credentialAAD(ws jam.WorkspaceID, id jam.ConnectionID, version int) []byte {
	return contentAAD(sealedCredential, ws, string(id), strconv.Itoa(version))
}

// sealCredential seals a secret; without a Sealer the store refuses to
// keep one, unlike other content columns: a credential is never written
// in the clear.
func (s *Store) sealCredential(ws jam.WorkspaceID, id jam.ConnectionID, version int, secret []byte) ([]byte, error) {
	if s.sealer == nil {
		return nil, fmt.Errorf("%w: the store has no key to seal credentials", jam.ErrUnavailable)
	}
	return s.sealer.Seal(secret, credentialAAD(ws, id, version)), nil
}

// ConnectionCreate implements [store.Connections].
func (s *Store) ConnectionCreate(ctx context.Context, c store.Connection, secret []byte) (store.Connection, error) {
	c, err := c.Canonical(secret)
	if err != nil {
		return store.Connection{}, fmt.Errorf("connection: %w", err)
	}
	sealed, err := s.sealCredential(c.WorkspaceID, c.ID, 1, secret)
	if err != nil {
		return store.Connection{}, fmt.Errorf("connection %s: %w", c.ID, err)
	}
	at := c.CreatedAt.UnixMicro()
	err = inTx(ctx, s.writer, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, connectionInsert, c.ID, c.WorkspaceID, c.Provider, c.Name, c.BaseURL, at, at)
		switch {
		case err != nil && isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY):
			return fmt.Errorf("%w: no workspace %s", jam.ErrNotFound, c.WorkspaceID)
		case err != nil && isUniqueViolation(err) && strings.Contains(err.Error(), "connections.name"):
			return fmt.Errorf("%w: a connection %s/%s exists already", jam.ErrAlreadyExists, c.Provider, c.Name)
		case err != nil && isUniqueViolation(err):
			return fmt.Errorf("%w: connection id taken", jam.ErrAlreadyExists)
		case err != nil:
			return err
		}
		_, err = tx.ExecContext(ctx, credentialInsert, c.ID, c.WorkspaceID, 1, sealed, at)
		return err
	})
	if err != nil {
		return store.Connection{}, fmt.Errorf("create connection %s: %w", c.ID, err)
	}
	return c, nil
}

// ConnectionRotate implements [store.Connections].
func (s *Store) ConnectionRotate(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID, secret []byte, at time.Time) (store.Connection, error) {
	if err := store.ValidateConnectionRotate(ws, id, secret, at); err != nil {
		return store.Connection{}, fmt.Errorf("rotate connection: %w", err)
	}
	if s.sealer == nil {
		return store.Connection{}, fmt.Errorf("rotate connection %s: %w: the store has no key to seal credentials", id, jam.ErrUnavailable)
	}
	var c store.Connection
	us := at.UnixMicro()
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		var err error
		c, err = scanConnection(tx.QueryRowContext(ctx, connectionBump, us, ws, id, store.MaxCredentialVersions))
		if errors.Is(err, sql.ErrNoRows) {
			return s.connectionRefused(ctx, tx, ws, id, "rotate")
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, credentialDisable, us, id); err != nil {
			return err
		}
		sealed, err := s.sealCredential(ws, id, c.CurrentVersion, secret)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, credentialInsert, id, ws, c.CurrentVersion, sealed, us)
		return err
	})
	if err != nil {
		return store.Connection{}, fmt.Errorf("rotate connection %s: %w", id, err)
	}
	return c, nil
}

// ConnectionRemove implements [store.Connections].
func (s *Store) ConnectionRemove(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID, at time.Time) (store.Connection, error) {
	if err := store.ValidateConnectionRemove(ws, id, at); err != nil {
		return store.Connection{}, fmt.Errorf("remove connection: %w", err)
	}
	var c store.Connection
	us := at.UnixMicro()
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		var err error
		c, err = scanConnection(tx.QueryRowContext(ctx, connectionMarkRemoved, us, us, ws, id))
		if errors.Is(err, sql.ErrNoRows) {
			return s.connectionRefused(ctx, tx, ws, id, "remove")
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, credentialDisable, us, id)
		return err
	})
	if err != nil {
		return store.Connection{}, fmt.Errorf("remove connection %s: %w", id, err)
	}
	return c, nil
}

// connectionRefused explains a rotation or removal that changed no row,
// read in the write's transaction: no such connection in the workspace,
// or one the write may not change.
func (s *Store) connectionRefused(ctx context.Context, tx *sql.Tx, ws jam.WorkspaceID, id jam.ConnectionID, verb string) error {
	c, err := scanConnection(tx.QueryRowContext(ctx, connectionByID, ws, id))
	if err != nil {
		return notFoundAs(err, "no such connection")
	}
	return c.Refusal(verb)
}

// ConnectionGet implements [store.Connections].
func (s *Store) ConnectionGet(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (store.Connection, error) {
	if err := store.ValidateConnectionRef(ws, id); err != nil {
		return store.Connection{}, fmt.Errorf("connection: %w", err)
	}
	c, err := scanConnection(s.reader.QueryRowContext(ctx, connectionByID, ws, id))
	if err != nil {
		return store.Connection{}, fmt.Errorf("connection %s: %w", id, storageFault(notFoundAs(err, "no such connection")))
	}
	return c, nil
}

// ConnectionByName implements [store.Connections].
func (s *Store) ConnectionByName(ctx context.Context, ws jam.WorkspaceID, provider store.ConnectionProvider, name string) (store.Connection, error) {
	if err := store.ValidateConnectionByName(ws, provider, name); err != nil {
		return store.Connection{}, fmt.Errorf("connection: %w", err)
	}
	c, err := scanConnection(s.reader.QueryRowContext(ctx, connectionByName, ws, provider, name))
	if err != nil {
		return store.Connection{}, fmt.Errorf("connection %s/%s: %w", provider, name, storageFault(notFoundAs(err, "no such connection")))
	}
	return c, nil
}

// ConnectionList implements [store.Connections].
func (s *Store) ConnectionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Connection, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanConnection, connectionList, ws, store.MaxConnectionList)
	if err != nil {
		return nil, fmt.Errorf("connections: %w", storageFault(err))
	}
	return out, nil
}

// CredentialCurrent implements [store.Connections].
func (s *Store) CredentialCurrent(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (store.CredentialVersion, error) {
	if err := store.ValidateConnectionRef(ws, id); err != nil {
		return store.CredentialVersion{}, fmt.Errorf("credential: %w", err)
	}
	v := store.CredentialVersion{ConnectionID: id, WorkspaceID: ws}
	var sealed []byte
	var created int64
	err := s.reader.QueryRowContext(ctx, credentialActive, ws, id).Scan(&v.Version, &sealed, &created)
	if err != nil {
		return store.CredentialVersion{}, fmt.Errorf("credential of connection %s: %w", id, storageFault(notFoundAs(err, "no live connection")))
	}
	if s.sealer == nil {
		return store.CredentialVersion{}, fmt.Errorf("credential of connection %s: %w: the store has no key to open credentials", id, jam.ErrUnavailable)
	}
	if v.Secret, err = s.sealer.Open(sealed, credentialAAD(ws, id, v.Version)); err != nil {
		return store.CredentialVersion{}, fmt.Errorf("credential of connection %s version %d: %w", id, v.Version, err)
	}
	v.CreatedAt = fromMicros(created)
	return v, nil
}

// CredentialVersions implements [store.Connections].
func (s *Store) CredentialVersions(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) ([]store.CredentialVersion, error) {
	if _, err := s.ConnectionGet(ctx, ws, id); err != nil {
		return nil, fmt.Errorf("credential versions: %w", err)
	}
	scan := func(row scanner) (store.CredentialVersion, error) {
		v := store.CredentialVersion{ConnectionID: id, WorkspaceID: ws}
		var disabled sql.NullInt64
		var created int64
		if err := row.Scan(&v.Version, &disabled, &created); err != nil {
			return store.CredentialVersion{}, err
		}
		v.Disabled, v.DisabledAt, v.CreatedAt = disabled.Valid, fromNullMicros(disabled), fromMicros(created)
		return v, nil
	}
	out, err := queryAll(ctx, s.reader, scan, credentialAll, ws, id, store.MaxCredentialVersions)
	if err != nil {
		return nil, fmt.Errorf("credential versions of %s: %w", id, storageFault(err))
	}
	return out, nil
}

func scanConnection(row scanner) (store.Connection, error) {
	var c store.Connection
	var removed sql.NullInt64
	var created, updated int64
	if err := row.Scan(&c.ID, &c.WorkspaceID, &c.Provider, &c.Name, &c.BaseURL, &c.CurrentVersion, &removed, &created, &updated); err != nil {
		return store.Connection{}, err
	}
	c.Removed, c.RemovedAt, c.CreatedAt, c.UpdatedAt = removed.Valid, fromNullMicros(removed), fromMicros(created), fromMicros(updated)
	return c, nil
}

var _ store.Connections = (*Store)(nil)
