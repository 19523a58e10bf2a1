package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// SQL of the settings table. Every statement is keyed by workspace, so a
// setting of another workspace is indistinguishable from a missing one.
const (
	settingSelect = `SELECT workspace_id, key, value, updated_at FROM settings
WHERE workspace_id = ? AND key = ?`
	settingUpsert = `INSERT INTO settings (workspace_id, key, value, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (workspace_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	settingDelete = `DELETE FROM settings WHERE workspace_id = ? AND key = ?`
)

// SettingGet implements [store.Store].
func (s *Store) SettingGet(ctx context.Context, ws jam.WorkspaceID, key string) (store.Setting, error) {
	if err := store.ValidateSettingKey(ws, key); err != nil {
		return store.Setting{}, fmt.Errorf("setting get %q: %w", key, err)
	}
	var st store.Setting
	var updated int64
	err := s.reader.QueryRowContext(ctx, settingSelect, ws, key).Scan(&st.WorkspaceID, &st.Key, &st.Value, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		err = jam.ErrNotFound
	}
	if err != nil {
		return store.Setting{}, fmt.Errorf("setting get %q: %w", key, err)
	}
	st.UpdatedAt = fromMicros(updated)
	return st, nil
}

// SettingPut implements [store.Store]. The workspace is checked in the
// same IMMEDIATE transaction as the write, so a missing workspace is
// reported as ErrNotFound rather than as a foreign-key failure.
func (s *Store) SettingPut(ctx context.Context, p store.SettingPutParams) (store.Setting, error) {
	if err := p.Validate(); err != nil {
		return store.Setting{}, fmt.Errorf("setting put %q: %w", p.Key, err)
	}
	err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
		ok, err := workspaceExists(ctx, tx, p.WorkspaceID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("workspace %s: %w", p.WorkspaceID, jam.ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, settingUpsert, p.WorkspaceID, p.Key, p.Value, p.At.UnixMicro())
		return err
	})
	if err != nil {
		return store.Setting{}, fmt.Errorf("setting put %q: %w", p.Key, err)
	}
	return store.Setting{
		WorkspaceID: p.WorkspaceID,
		Key:         p.Key,
		Value:       p.Value,
		UpdatedAt:   fromMicros(p.At.UnixMicro()),
	}, nil
}

// SettingDelete implements [store.Store].
func (s *Store) SettingDelete(ctx context.Context, ws jam.WorkspaceID, key string) error {
	if err := store.ValidateSettingKey(ws, key); err != nil {
		return fmt.Errorf("setting delete %q: %w", key, err)
	}
	res, err := s.writer.ExecContext(ctx, settingDelete, ws, key)
	if err != nil {
		return fmt.Errorf("setting delete %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("setting delete %q: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("setting delete %q: %w", key, jam.ErrNotFound)
	}
	return nil
}
