package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Workspaces = (*Store)(nil)

// SQL of the workspaces table.
const (
	// ON CONFLICT (name) settles a race of two ensures of one name in
	// SQL: the loser inserts nothing and reads the winner's row. An id
	// that belongs to another name still violates the primary key.
	workspaceInsertIfNameFree = `INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)
ON CONFLICT (name) DO NOTHING`
	workspaceSelectByName = `SELECT id, name, created_at FROM workspaces WHERE name = $1`
	workspaceSelectByID   = `SELECT id, name, created_at FROM workspaces WHERE id = $1`
	workspaceSelectAll    = `SELECT id, name, created_at FROM workspaces ORDER BY created_at, id`
	workspaceCountByID    = `SELECT COUNT(*) FROM workspaces WHERE id = $1`
)

// WorkspaceEnsure implements [store.Workspaces]: the insert and the read
// back share one READ COMMITTED transaction; a concurrent ensure of the
// same name that commits first makes this one's insert do nothing, and
// the read back (a new snapshot per statement) sees the winner's row.
func (s *Store) WorkspaceEnsure(ctx context.Context, p store.WorkspaceEnsureParams) (store.Workspace, error) {
	if err := p.Validate(); err != nil {
		return store.Workspace{}, fmt.Errorf("workspace ensure %q: %w", p.Name, err)
	}
	var w store.Workspace
	err := s.inTx(ctx, pgx.ReadCommitted, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, workspaceInsertIfNameFree, p.ID, p.Name, micros(p.At)); err != nil {
			if pgCode(err) == codeUniqueViolation {
				return fmt.Errorf("id %s names another workspace: %w", p.ID, jam.ErrAlreadyExists)
			}
			return err
		}
		var err error
		w, err = scanWorkspace(tx.QueryRow(ctx, workspaceSelectByName, p.Name))
		return err
	})
	if err != nil {
		return store.Workspace{}, fmt.Errorf("workspace ensure %q: %w", p.Name, err)
	}
	return w, nil
}

// WorkspaceGet implements [store.Workspaces].
func (s *Store) WorkspaceGet(ctx context.Context, id jam.WorkspaceID) (store.Workspace, error) {
	if err := store.ValidateWorkspaceID(id); err != nil {
		return store.Workspace{}, fmt.Errorf("workspace get %s: %w", id, err)
	}
	w, err := scanWorkspace(s.pool.QueryRow(ctx, workspaceSelectByID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Workspace{}, fmt.Errorf("workspace get %s: %w", id, mapErr(err))
	}
	return w, nil
}

// WorkspaceList implements [store.Workspaces].
func (s *Store) WorkspaceList(ctx context.Context) ([]store.Workspace, error) {
	rows, err := s.pool.Query(ctx, workspaceSelectAll)
	if err != nil {
		return nil, fmt.Errorf("workspace list: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Workspace, error) { return scanWorkspace(r) })
	if err != nil {
		return nil, fmt.Errorf("workspace list: %w", mapErr(err))
	}
	return out, nil
}

// workspaceExists reports whether id names a workspace.
func workspaceExists(ctx context.Context, q querier, id jam.WorkspaceID) (bool, error) {
	var n int
	err := q.QueryRow(ctx, workspaceCountByID, id).Scan(&n)
	return n > 0, err
}

// scanner is the Scan method shared by pgx.Row and pgx.Rows.
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
