package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Deliveries (migration 0023), as in the SQLite dialect; every write is
// one statement under READ COMMITTED.
//
//   - The create is INSERT ... ON CONFLICT on the intent's unique key
//     (workspace, change set, remote, branch) DO NOTHING, then, when
//     nothing went in, a read of the key's delivery in a statement of its
//     own: a concurrent insert of the key makes ours wait for its commit,
//     and only a new statement's snapshot sees the row it committed. A
//     taken id with another key is a unique violation of the primary key
//     (jam.ErrAlreadyExists).
//   - The update names the generation in its WHERE clause, which the
//     UPDATE re-checks on the row version it locks, and increments it in
//     its SET: of two updates from one generation at once, the second
//     waits for the first's commit and then matches no row. Zero rows is
//     read back to tell jam.ErrNotFound from jam.ErrConflict.
const (
	deliveryColumns = `id, workspace_id, change_set_id, session_id, turn, remote, branch, connection_id, pr, repo, api_base_url, base, title,
operation, state, commit_sha, remote_sha, pr_number, pr_url, pr_state, pr_head_sha, checks, error_code, error, generation, created_at, updated_at,
followed_at`
	deliveryInsert = `INSERT INTO deliveries (` + deliveryColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::boolean, $10, $11, $12, $13, $14, $15, $16, $17, $18::bigint, $19, $20, $21, $22, $23, $24,
  $25::bigint, $26::bigint, $27::bigint, $28::bigint)
ON CONFLICT (workspace_id, change_set_id, remote, branch) DO NOTHING`
	deliveryByID  = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE workspace_id = $1 AND id = $2`
	deliveryByKey = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE workspace_id = $1 AND change_set_id = $2 AND remote = $3 AND branch = $4`
	// deliveryUpdate writes the outcome fields when the generation is $12.
	deliveryUpdate = `UPDATE deliveries SET state = $1, commit_sha = $2, remote_sha = $3, pr_number = $4::bigint, pr_url = $5, pr_state = $6,
  pr_head_sha = $7, checks = $8, error_code = $9, error = $10, followed_at = $11::bigint, generation = generation + 1, updated_at = $13::bigint
WHERE workspace_id = $14 AND id = $15 AND generation = $12::bigint
RETURNING ` + deliveryColumns
	deliveryList = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE workspace_id = $1 AND ($2 = '' OR change_set_id = $2) AND ($3 = '' OR state = $3)
ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4`
)

// DeliveryCreate implements [store.Deliveries].
func (s *Store) DeliveryCreate(ctx context.Context, d store.Delivery) (store.Delivery, bool, error) {
	d, err := d.Canonical()
	if err != nil {
		return store.Delivery{}, false, fmt.Errorf("delivery: %w", err)
	}
	n, err := rowsAffected(ctx, s.pool, deliveryInsert, d.ID, d.WorkspaceID, d.ChangeSetID, d.SessionID, d.Turn, d.Remote, d.Branch, d.ConnectionID,
		d.PR, d.Repo, d.APIBaseURL, d.Base, d.Title, d.Operation, string(d.State), d.Commit, d.RemoteSHA, d.PRNumber, d.PRURL, d.PRState, d.PRHeadSHA,
		d.Checks, d.ErrorCode, d.Error, d.Generation, micros(d.CreatedAt), micros(d.UpdatedAt), nullMicros(d.FollowedAt))
	switch {
	case pgCode(err) == codeForeignKeyViolation:
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w: no workspace %s", d.ID, jam.ErrNotFound, d.WorkspaceID)
	case pgCode(err) == codeUniqueViolation:
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w", d.ID, jam.ErrAlreadyExists)
	case err != nil:
		return store.Delivery{}, false, fmt.Errorf("delivery %s: %w", d.ID, mapErr(err))
	case n == 0:
		got, err := s.deliveryByKey(ctx, d)
		if err != nil {
			return store.Delivery{}, false, fmt.Errorf("delivery %s: its intent: %w", d.ID, err)
		}
		return got, false, nil
	}
	return d, true, nil
}

func (s *Store) deliveryByKey(ctx context.Context, d store.Delivery) (store.Delivery, error) {
	got, err := scanDelivery(s.pool.QueryRow(ctx, deliveryByKey, d.WorkspaceID, d.ChangeSetID, d.Remote, d.Branch))
	return got, notFoundAs(err, "no delivery of the intent")
}

// DeliveryUpdate implements [store.Deliveries].
func (s *Store) DeliveryUpdate(ctx context.Context, d store.Delivery) (store.Delivery, error) {
	if err := d.ValidateUpdate(); err != nil {
		return store.Delivery{}, fmt.Errorf("update delivery: %w", err)
	}
	got, err := scanDelivery(s.pool.QueryRow(ctx, deliveryUpdate, string(d.State), d.Commit, d.RemoteSHA, d.PRNumber, d.PRURL, d.PRState, d.PRHeadSHA,
		d.Checks, d.ErrorCode, d.Error, nullMicros(d.FollowedAt), d.Generation, micros(d.UpdatedAt), d.WorkspaceID, d.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		var cur store.Delivery
		if cur, err = s.DeliveryGet(ctx, d.WorkspaceID, d.ID); err == nil {
			err = cur.Refusal(d.Generation)
		}
	}
	if err != nil {
		return store.Delivery{}, fmt.Errorf("update delivery %s: %w", d.ID, mapErr(err))
	}
	return got, nil
}

// DeliveryGet implements [store.Deliveries].
func (s *Store) DeliveryGet(ctx context.Context, ws jam.WorkspaceID, id jam.DeliveryID) (store.Delivery, error) {
	if err := store.ValidateDeliveryRef(ws, id); err != nil {
		return store.Delivery{}, fmt.Errorf("delivery: %w", err)
	}
	d, err := scanDelivery(s.pool.QueryRow(ctx, deliveryByID, ws, id))
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
	out, err := queryAll(ctx, s.pool, scanDelivery, deliveryList, p.WorkspaceID, string(p.ChangeSetID), string(p.State), limit)
	if err != nil {
		return nil, fmt.Errorf("deliveries: %w", mapErr(err))
	}
	return out, nil
}

func scanDelivery(row scanner) (store.Delivery, error) {
	var d store.Delivery
	var created, updated int64
	var followed *int64
	err := row.Scan(&d.ID, &d.WorkspaceID, &d.ChangeSetID, &d.SessionID, &d.Turn, &d.Remote, &d.Branch, &d.ConnectionID, &d.PR, &d.Repo,
		&d.APIBaseURL, &d.Base, &d.Title, &d.Operation, &d.State, &d.Commit, &d.RemoteSHA, &d.PRNumber, &d.PRURL, &d.PRState, &d.PRHeadSHA,
		&d.Checks, &d.ErrorCode, &d.Error, &d.Generation, &created, &updated, &followed)
	if err != nil {
		return store.Delivery{}, err
	}
	d.CreatedAt, d.UpdatedAt, d.FollowedAt = fromMicros(created), fromMicros(updated), fromNullMicros(followed)
	return d, nil
}
