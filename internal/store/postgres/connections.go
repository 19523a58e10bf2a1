package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Connections and their credential versions (migration 0022), as in the
// SQLite dialect; each write is one READ COMMITTED transaction.
//
//   - A rotation's first statement is the UPDATE of the connection row
//     (current_version + 1, RETURNING it): a second rotation at once
//     waits on that row's lock, then re-checks its WHERE clause on the
//     committed version and counts on from it, so both succeed with
//     distinct versions. The statements after it (disable the active
//     version, insert the new one) each take a new snapshot, so they see
//     what the first rotation committed.
//   - A removal takes the same row lock, so it and a rotation serialize;
//     the one that runs second sees the other's outcome.
//   - Two creates of one name: the second insert waits on the partial
//     unique index connections_live_name for the first's commit, then
//     fails (jam.ErrAlreadyExists).
//   - credential_versions_active allows one active version per
//     connection, whatever the code above it does.
const (
	connectionColumns = `id, workspace_id, provider, name, base_url, current_version, removed_at, created_at, updated_at`
	connectionInsert  = `INSERT INTO connections (` + connectionColumns + `) VALUES ($1, $2, $3, $4, $5, 1, NULL, $6::bigint, $6::bigint)`
	credentialInsert  = `INSERT INTO credential_versions (connection_id, workspace_id, version, secret, disabled_at, created_at)
VALUES ($1, $2, $3::bigint, $4::bytea, NULL, $5::bigint)`
	connectionByID   = `SELECT ` + connectionColumns + ` FROM connections WHERE workspace_id = $1 AND id = $2`
	connectionByName = `SELECT ` + connectionColumns + ` FROM connections WHERE workspace_id = $1 AND provider = $2 AND name = $3 AND removed_at IS NULL`
	connectionList   = `SELECT ` + connectionColumns + ` FROM connections WHERE workspace_id = $1 ORDER BY created_at, id COLLATE "C" LIMIT $2`
	connectionBump   = `UPDATE connections SET current_version = current_version + 1, updated_at = $1::bigint
WHERE workspace_id = $2 AND id = $3 AND removed_at IS NULL AND current_version < $4::bigint RETURNING ` + connectionColumns
	connectionMarkRemoved = `UPDATE connections SET removed_at = $1::bigint, updated_at = $1::bigint WHERE workspace_id = $2 AND id = $3 AND removed_at IS NULL RETURNING ` + connectionColumns
	credentialDisable     = `UPDATE credential_versions SET disabled_at = $1::bigint WHERE connection_id = $2 AND disabled_at IS NULL`
	credentialActive      = `SELECT v.version, v.secret, v.created_at FROM credential_versions v JOIN connections c ON c.id = v.connection_id
WHERE c.workspace_id = $1 AND c.id = $2 AND c.removed_at IS NULL AND v.disabled_at IS NULL`
	credentialAll = `SELECT version, disabled_at, created_at FROM credential_versions WHERE workspace_id = $1 AND connection_id = $2 ORDER BY version LIMIT $3`
)

// sealedCredential names the sealed column of credential versions, as
// in the SQLite dialect (a value sealed by one opens in the other).
const sealedCredential = "credential_versions.secret"

func credentialAAD(ws jam.WorkspaceID, id jam.ConnectionID, version int) []byte {
	return contentAAD(sealedCredential, ws, string(id), strconv.Itoa(version))
}

// sealCredential seals a secret; without a Sealer the store refuses to
// keep one: a credential is never written in the clear.
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
	at := micros(c.CreatedAt)
	err = s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, connectionInsert, c.ID, c.WorkspaceID, string(c.Provider), c.Name, c.BaseURL, at)
		switch {
		case pgCode(err) == codeForeignKeyViolation:
			return fmt.Errorf("%w: no workspace %s", jam.ErrNotFound, c.WorkspaceID)
		case pgCode(err) == codeUniqueViolation && constraintOf(err) == "connections_live_name":
			return fmt.Errorf("%w: a connection %s/%s exists already", jam.ErrAlreadyExists, c.Provider, c.Name)
		case pgCode(err) == codeUniqueViolation:
			return fmt.Errorf("%w: connection id taken", jam.ErrAlreadyExists)
		case err != nil:
			return err
		}
		_, err = tx.Exec(ctx, credentialInsert, c.ID, c.WorkspaceID, 1, sealed, at)
		return err
	})
	if err != nil {
		return store.Connection{}, fmt.Errorf("create connection %s: %w", c.ID, mapErr(err))
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
	us := micros(at)
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var err error
		c, err = scanConnection(tx.QueryRow(ctx, connectionBump, us, ws, id, store.MaxCredentialVersions))
		if errors.Is(err, pgx.ErrNoRows) {
			return connectionRefused(ctx, tx, ws, id, "rotate")
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, credentialDisable, us, id); err != nil {
			return err
		}
		sealed, err := s.sealCredential(ws, id, c.CurrentVersion, secret)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, credentialInsert, id, ws, c.CurrentVersion, sealed, us)
		return err
	})
	if err != nil {
		return store.Connection{}, fmt.Errorf("rotate connection %s: %w", id, mapErr(err))
	}
	return c, nil
}

// ConnectionRemove implements [store.Connections].
func (s *Store) ConnectionRemove(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID, at time.Time) (store.Connection, error) {
	if err := store.ValidateConnectionRemove(ws, id, at); err != nil {
		return store.Connection{}, fmt.Errorf("remove connection: %w", err)
	}
	var c store.Connection
	us := micros(at)
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		var err error
		c, err = scanConnection(tx.QueryRow(ctx, connectionMarkRemoved, us, ws, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return connectionRefused(ctx, tx, ws, id, "remove")
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, credentialDisable, us, id)
		return err
	})
	if err != nil {
		return store.Connection{}, fmt.Errorf("remove connection %s: %w", id, mapErr(err))
	}
	return c, nil
}

// connectionRefused explains a rotation or removal that changed no row,
// read in the write's transaction.
func connectionRefused(ctx context.Context, tx pgx.Tx, ws jam.WorkspaceID, id jam.ConnectionID, verb string) error {
	c, err := scanConnection(tx.QueryRow(ctx, connectionByID, ws, id))
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
	c, err := scanConnection(s.pool.QueryRow(ctx, connectionByID, ws, id))
	if err != nil {
		return store.Connection{}, fmt.Errorf("connection %s: %w", id, notFoundAs(err, "no such connection"))
	}
	return c, nil
}

// ConnectionByName implements [store.Connections].
func (s *Store) ConnectionByName(ctx context.Context, ws jam.WorkspaceID, provider store.ConnectionProvider, name string) (store.Connection, error) {
	if err := store.ValidateConnectionByName(ws, provider, name); err != nil {
		return store.Connection{}, fmt.Errorf("connection: %w", err)
	}
	c, err := scanConnection(s.pool.QueryRow(ctx, connectionByName, ws, string(provider), name))
	if err != nil {
		return store.Connection{}, fmt.Errorf("connection %s/%s: %w", provider, name, notFoundAs(err, "no such connection"))
	}
	return c, nil
}

// ConnectionList implements [store.Connections].
func (s *Store) ConnectionList(ctx context.Context, ws jam.WorkspaceID) ([]store.Connection, error) {
	if err := store.ValidateWorkspaceID(ws); err != nil {
		return nil, fmt.Errorf("connections: %w", err)
	}
	out, err := queryAll(ctx, s.pool, scanConnection, connectionList, ws, store.MaxConnectionList)
	if err != nil {
		return nil, fmt.Errorf("connections: %w", mapErr(err))
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
	err := s.pool.QueryRow(ctx, credentialActive, ws, id).Scan(&v.Version, &sealed, &created)
	if err != nil {
		return store.CredentialVersion{}, fmt.Errorf("credential of connection %s: %w", id, notFoundAs(err, "no live connection"))
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
		var disabled *int64
		var created int64
		if err := row.Scan(&v.Version, &disabled, &created); err != nil {
			return store.CredentialVersion{}, err
		}
		v.Disabled, v.DisabledAt, v.CreatedAt = disabled != nil, fromNullMicros(disabled), fromMicros(created)
		return v, nil
	}
	out, err := queryAll(ctx, s.pool, scan, credentialAll, ws, id, store.MaxCredentialVersions)
	if err != nil {
		return nil, fmt.Errorf("credential versions of %s: %w", id, mapErr(err))
	}
	return out, nil
}

func scanConnection(row scanner) (store.Connection, error) {
	var c store.Connection
	var removed *int64
	var created, updated int64
	if err := row.Scan(&c.ID, &c.WorkspaceID, &c.Provider, &c.Name, &c.BaseURL, &c.CurrentVersion, &removed, &created, &updated); err != nil {
		return store.Connection{}, err
	}
	c.Removed, c.RemovedAt, c.CreatedAt, c.UpdatedAt = removed != nil, fromNullMicros(removed), fromMicros(created), fromMicros(updated)
	return c, nil
}

var _ store.Connections = (*Store)(nil)
