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

// SQL of the workspaces table.
const (
	workspaceInsertIfNameFree = `INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)
ON CONFLICT (name) DO NOTHING`
	workspaceSelectByName = `SELECT id, name, created_at FROM workspaces WHERE name = ?`
	workspaceSelectByID   = `SELECT id, name, created_at FROM workspaces WHERE id = ?`
	workspaceSelectAll    = `SELECT id, name, created_at FROM workspaces ORDER BY created_at, id`
	workspaceCountByID    = `SELECT COUNT(*) FROM workspaces WHERE id = ?`
)

// WorkspaceEnsure implements [store.Store]. The insert and the read back
// share one write transaction, so two concurrent calls with the same name
// both return the one workspace that won.
func (s *Store) WorkspaceEnsure(ctx context.Context, p store.WorkspaceEnsureParams) (store.Workspace, error) {
	if err := p.Validate(); err != nil {
		return store.Workspace{}, fmt.Errorf("workspace ensure %q: %w", p.Name, err)
	}
	var w store.Workspace
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, workspaceInsertIfNameFree, p.ID, p.Name, p.At.UnixMicro()); err != nil {
			if isConstraint(err, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY) {
				return fmt.Errorf("id %s names another workspace: %w", p.ID, jam.ErrAlreadyExists)
			}
			return err
		}
		var err error
		w, err = scanWorkspace(tx.QueryRowContext(ctx, workspaceSelectByName, p.Name))
		return err
	})
	if err != nil {
		return store.Workspace{}, fmt.Errorf("workspace ensure %q: %w", p.Name, err)
	}
	return w, nil
}

// WorkspaceGet implements [store.Store].
func (s *Store) WorkspaceGet(ctx context.Context, id jam.WorkspaceID) (store.Workspace, error) {
	if err := store.ValidateWorkspaceID(id); err != nil {
		return store.Workspace{}, fmt.Errorf("workspace get %s: %w", id, err)
	}
	w, err := scanWorkspace(s.reader.QueryRowContext(ctx, workspaceSelectByID, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Workspace{}, fmt.Errorf("workspace get %s: %w", id, err)
	}
	return w, nil
}

// WorkspaceList implements [store.Store].
func (s *Store) WorkspaceList(ctx context.Context) ([]store.Workspace, error) {
	rows, err := s.reader.QueryContext(ctx, workspaceSelectAll)
	if err != nil {
		return nil, fmt.Errorf("workspace list: %w", err)
	}
	defer rows.Close()
	var out []store.Workspace
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return nil, fmt.Errorf("workspace list: %w", err)
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("workspace list: %w", err)
	}
	return out, nil
}

// workspaceExists reports whether id names a workspace, inside tx so the
// answer holds until tx ends.
func workspaceExists(ctx context.Context, tx *sql.Tx, id jam.WorkspaceID) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, workspaceCountByID, id).Scan(&n)
	return n > 0, err
}

// scanner is the Scan method shared by *sql.Row and *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanWorkspace(row scanner) (store.Workspace, error) {
	var w store.Workspace
	var created int64
	if err := row.Scan(&w.ID, &w.Name, &created); err != nil {
		return store.Workspace{}, err
	}
	w.CreatedAt = fromMicros(created)
	return w, nil
}
