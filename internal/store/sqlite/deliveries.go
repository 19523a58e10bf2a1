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

// Deliveries (migration 0023). Every write is one statement on the
// writer:
//
//   - The create is INSERT ... ON CONFLICT on the intent's unique key
//     (workspace, change set, remote, branch) DO NOTHING, then, when
//     nothing went in, a read of the key's delivery: the read runs after
//     the write that skipped the insert, so it sees the delivery that
//     took the key, whichever handle wrote it.
//   - The update names the generation in its WHERE clause and increments
//     it in its SET; zero rows is read back only to tell an unknown
//     delivery (jam.ErrNotFound) from a stale generation (jam.ErrConflict).
const (
	deliveryColumns = `id, workspace_id, change_set_id, session_id, turn, remote, branch, connection_id, pr, repo, api_base_url, base, title,
operation, state, commit_sha, remote_sha, pr_number, pr_url, pr_state, pr_head_sha, checks, error_code, error, generation, created_at, updated_at,
followed_at`
	deliveryInsert = `INSERT INTO deliveries (` + deliveryColumns + `)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (workspace_id, change_set_id, remote, branch) DO NOTHING`
	deliveryByID  = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE workspace_id = ? AND id = ?`
	deliveryByKey = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE workspace_id = ? AND change_set_id = ? AND remote = ? AND branch = ?`
	// deliveryUpdate writes the outcome fields when the generation is ?12.
	deliveryUpdate = `UPDATE deliveries SET state = ?1, commit_sha = ?2, remote_sha = ?3, pr_number = ?4, pr_url = ?5, pr_state = ?6,
  pr_head_sha = ?7, checks = ?8, error_code = ?9, error = ?10, followed_at = ?11, generation = generation + 1, updated_at = ?13
WHERE workspace_id = ?14 AND id = ?15 AND generation = ?12
RETURNING ` + deliveryColumns
	deliveryList = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE workspace_id = ?1 AND (?2 = '' OR change_set_id = ?2) AND (?3 = '' OR state = ?3)
ORDER BY created_at DESC, id DESC LIMIT ?4`
)

// DeliveryCreate implements [store.Deliveries].
func (s *Store) DeliveryCreate(ctx context.Context, d store.Delivery) (store.Delivery, bool, error) {
	d, err := d.Canonical()
	if err != nil {
		return store.Delivery{}, false, fmt.Errorf("delivery: %w", err)
	}
	res, err := s.writer.ExecContext(ctx, deliveryInsert, d.ID, d.WorkspaceID, d.ChangeSetID, d.SessionID, d.Turn, d.Remote, d.Branch, d.ConnectionID,
		d.PR, d.Repo, d.APIBaseURL, d.Base, d.Title, d.Operation, d.State, d.Commit, d.RemoteSHA, d.PRNumber, d.PRURL, d.PRState, d.PRHeadSHA,
		d.Checks, d.ErrorCode, d.Error, d.Generation, d.CreatedAt.UnixMicro(), d.UpdatedAt.UnixMicro(), toNullMicros(d.FollowedAt))
	switch {
	case err != nil && isConstraint(err, sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY):
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w: no workspace %s", d.ID, jam.ErrNotFound, d.WorkspaceID)
	case err != nil && isUniqueViolation(err):
		// The id is taken, and SQLite may check the primary key before
		// the conflict target: the key's delivery, if there is one, is
		// the answer all the same.
		if got, gerr := s.deliveryByKey(ctx, d); gerr == nil {
			return got, false, nil
		}
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w", d.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w", d.ID, storageFault(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w", d.ID, err)
	} else if n == 0 {
		got, err := s.deliveryByKey(ctx, d)
		if err != nil {
			return store.Delivery{}, false, fmt.Errorf("delivery %s: its intent: %w", d.ID, err)
		}
		return got, false, nil
	}
	return d, true, nil
}

func (s *Store) deliveryByKey(ctx context.Context, d store.Delivery) (store.Delivery, error) {
	got, err := scanDelivery(s.reader.QueryRowContext(ctx, deliveryByKey, d.WorkspaceID, d.ChangeSetID, d.Remote, d.Branch))
	return got, notFoundAs(err, "no delivery of the intent")
}

// DeliveryUpdate implements [store.Deliveries].
func (s *Store) DeliveryUpdate(ctx context.Context, d store.Delivery) (store.Delivery, error) {
	if err := d.ValidateUpdate(); err != nil {
		return store.Delivery{}, fmt.Errorf("update delivery: %w", err)
	}
	got, err := scanDelivery(s.writer.QueryRowContext(ctx, deliveryUpdate, d.State, d.Commit, d.RemoteSHA, d.PRNumber, d.PRURL, d.PRState, d.PRHeadSHA,
		d.Checks, d.ErrorCode, d.Error, toNullMicros(d.FollowedAt), d.Generation, d.UpdatedAt.UnixMicro(), d.WorkspaceID, d.ID))
	if errors.Is(err, sql.ErrNoRows) {
		var cur store.Delivery
		if cur, err = s.DeliveryGet(ctx, d.WorkspaceID, d.ID); err == nil {
			err = cur.Refusal(d.Generation)
		}
	}
	if err != nil {
		return store.Delivery{}, fmt.Errorf("update delivery %s: %w", d.ID, storageFault(err))
	}
	return got, nil
}

// DeliveryGet implements [store.Deliveries].
func (s *Store) DeliveryGet(ctx context.Context, ws jam.WorkspaceID, id jam.DeliveryID) (store.Delivery, error) {
	if err := store.ValidateDeliveryRef(ws, id); err != nil {
		return store.Delivery{}, fmt.Errorf("delivery: %w", err)
	}
	d, err := scanDelivery(s.reader.QueryRowContext(ctx, deliveryByID, ws, id))
	if err != nil {
		return store.Delivery{}, fmt.Errorf("delivery %s: %w", id, notFoundAs(err, "no such delivery"))
	}
	return d, nil
}

// DeliveryList implements [store.Deliveries].
func (s *Store) DeliveryList(ctx context.Context, p store.DeliveryListParams) ([]store.Delivery, error) {
	limit, err := p.Bound()
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	out, err := queryAll(ctx, s.reader, scanDelivery, deliveryList, p.WorkspaceID, p.ChangeSetID, p.State, limit)
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	return out, nil
}

func scanDelivery(row scanner) (store.Delivery, error) {
	var d store.Delivery
	var created, updated int64
	var followed sql.NullInt64
	err := row.Scan(&d.ID, &d.WorkspaceID, &d.ChangeSetID, &d.SessionID, &d.Turn, &d.Remote, &d.Branch, &d.ConnectionID, &d.PR, &d.Repo,
		&d.APIBaseURL, &d.Base, &d.Title, &d.Operation, &d.State, &d.Commit, &d.RemoteSHA, &d.PRNumber, &d.PRURL, &d.PRState, &d.PRHeadSHA,
		&d.Checks, &d.ErrorCode, &d.Error, &d.Generation, &created, &updated, &followed)
	if err != nil {
		return store.Delivery{}, err
	}
	d.CreatedAt, d.UpdatedAt, d.FollowedAt = fromMicros(created), fromMicros(updated), fromNullMicros(followed)
	return d, nil
}
