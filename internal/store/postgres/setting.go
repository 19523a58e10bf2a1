package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

var _ store.Settings = (*Store)(nil)

// SQL of the settings table. Every statement is keyed by workspace, so a
// setting of another workspace is indistinguishable from a missing one.
const (
	settingSelect = `SELECT workspace_id, key, value, updated_at FROM settings
WHERE workspace_id = $1 AND key = $2`
	settingUpsert = `INSERT INTO settings (workspace_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (workspace_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	settingDelete = `DELETE FROM settings WHERE workspace_id = $1 AND key = $2`
)

// SettingGet implements [store.Settings].
func (s *Store) SettingGet(ctx context.Context, ws jam.WorkspaceID, key string) (store.Setting, error) {
	if err := store.ValidateSettingKey(ws, key); err != nil {
		return store.Setting{}, fmt.Errorf("setting get %q: %w", key, err)
	}
	var st store.Setting
	var updated int64
	err := s.pool.QueryRow(ctx, settingSelect, ws, key).Scan(&st.WorkspaceID, &st.Key, &st.Value, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Setting{}, fmt.Errorf("setting get %q: %w", key, mapErr(err))
	}
	st.UpdatedAt = fromMicros(updated)
	return st, nil
}

// SettingPut implements [store.Settings] with one upsert. A missing
// workspace is the foreign key's refusal, which mapErr reports as
// jam.ErrNotFound; the key is the constraint, not a read before the
// write, so a workspace removed concurrently cannot slip between them.
func (s *Store) SettingPut(ctx context.Context, p store.SettingPutParams) (store.Setting, error) {
	if err := p.Validate(); err != nil {
		return store.Setting{}, fmt.Errorf("setting put %q: %w", p.Key, err)
	}
	if _, err := s.pool.Exec(ctx, settingUpsert, p.WorkspaceID, p.Key, p.Value, micros(p.At)); err != nil {
		if pgCode(err) == codeForeignKeyViolation {
			err = fmt.Errorf("workspace %s: %w", p.WorkspaceID, jam.ErrNotFound)
		}
		return store.Setting{}, fmt.Errorf("setting put %q: %w", p.Key, mapErr(err))
	}
	return store.Setting{
		WorkspaceID: p.WorkspaceID,
		Key:         p.Key,
		Value:       p.Value,
		UpdatedAt:   fromMicros(micros(p.At)),
	}, nil
}

// SettingDelete implements [store.Settings].
func (s *Store) SettingDelete(ctx context.Context, ws jam.WorkspaceID, key string) error {
	if err := store.ValidateSettingKey(ws, key); err != nil {
		return fmt.Errorf("setting delete %q: %w", key, err)
	}
	n, err := rowsAffected(ctx, s.pool, settingDelete, ws, key)
	if err != nil {
		return fmt.Errorf("setting delete %q: %w", key, mapErr(err))
	}
	if n == 0 {
		return fmt.Errorf("setting delete %q: %w", key, jam.ErrNotFound)
	}
	return nil
}
