package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Sealer seals and opens the content columns (package secret's Box).
// Open must fail on data sealed for another aad.
type Sealer interface {
	Seal(plaintext, aad []byte) []byte
	Open(sealed, aad []byte) ([]byte, error)
}

// The content columns the store seals itself (migration 0015). Each value
// is bound to its row: the aad names the table, the workspace and the
// row's key, so a value copied to another row, table or workspace fails
// to open.
const (
	sealedEvents   = "events.payload"
	sealedOutput   = "turn_output.updates"
	sealedMessages = "session_messages.text"
	sealedTurns    = "turns.detail"
	sealedJournal  = "turn_journal.detail"
	sealedManifest = "change_sets.manifest"
	sealedPatch    = "change_sets.patch"
	sealedPayload  = "jobs.payload"
	sealedResult   = "jobs.result"
	sealedJobError = "jobs.error"
)

func manifestAAD(ws jam.WorkspaceID, id jam.ChangeSetID) []byte {
	return contentAAD(sealedManifest, ws, string(id))
}

func patchAAD(ws jam.WorkspaceID, id jam.ChangeSetID) []byte {
	return contentAAD(sealedPatch, ws, string(id))
}

func jobPayloadAAD(ws jam.WorkspaceID, id jam.JobID) []byte {
	return contentAAD(sealedPayload, ws, string(id))
}

func jobResultAAD(ws jam.WorkspaceID, id jam.JobID) []byte {
	return contentAAD(sealedResult, ws, string(id))
}

func jobErrorAAD(ws jam.WorkspaceID, id jam.JobID) []byte {
	return contentAAD(sealedJobError, ws, string(id))
}

// sealBlob is the stored form of a job's payload, result or error (a
// NOT NULL BLOB, migration 0021): sealed when the store has a Sealer,
// and empty for an empty value (nothing to protect), so nil and empty
// read back as nil. Jobs are sealed from their first version on, so as
// with patches no value was written in the clear by a store with a
// Sealer.
func (s *Store) sealBlob(v []byte, aad []byte) []byte {
	if len(v) == 0 {
		return []byte{}
	}
	if s.sealer == nil {
		return v
	}
	return s.sealer.Seal(v, aad)
}

// openBlob reverses sealBlob.
func (s *Store) openBlob(v []byte, aad []byte) ([]byte, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if s.sealer == nil {
		return v, nil
	}
	return s.sealer.Open(v, aad)
}

// sealPatch is the stored form of a change set's patch, a BLOB whatever
// it holds: sealed when the store has a Sealer; nil (omitted) stays NULL
// and an empty patch stays empty. Patches are sealed from migration 0020
// on: no store wrote one in the clear with a Sealer before.
func (s *Store) sealPatch(patch []byte, aad []byte) any {
	if patch == nil {
		return nil
	}
	if len(patch) == 0 || s.sealer == nil {
		return patch
	}
	return s.sealer.Seal(patch, aad)
}

// openPatch reverses sealPatch.
func (s *Store) openPatch(v []byte, aad []byte) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	if len(v) == 0 || s.sealer == nil {
		return v, nil
	}
	return s.sealer.Open(v, aad)
}

// contentAAD is the aad of a sealed content value: the column, the
// workspace and the row's key parts, each length-prefixed so no two
// different rows share one.
func contentAAD(column string, ws jam.WorkspaceID, key ...string) []byte {
	parts := append([]string{"jam.store/" + column, string(ws)}, key...)
	var out []byte
	for _, p := range parts {
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	return out
}

func eventAAD(ws jam.WorkspaceID, seq int64) []byte {
	return contentAAD(sealedEvents, ws, fmt.Sprint(seq))
}

func outputAAD(ws jam.WorkspaceID, turn jam.TurnID, batch int) []byte {
	return contentAAD(sealedOutput, ws, string(turn), fmt.Sprint(batch))
}

func messageAAD(ws jam.WorkspaceID, id jam.MessageID) []byte {
	return contentAAD(sealedMessages, ws, string(id))
}

func turnDetailAAD(ws jam.WorkspaceID, turn jam.TurnID) []byte {
	return contentAAD(sealedTurns, ws, string(turn))
}

func journalDetailAAD(ws jam.WorkspaceID, seq int64) []byte {
	return contentAAD(sealedJournal, ws, fmt.Sprint(seq))
}

// seal is the stored form of a content value: sealed (a BLOB) when the
// store has a Sealer, else the text itself. An empty value stays empty
// text: it holds nothing to protect.
func (s *Store) seal(plain string, aad []byte) any {
	if plain == "" || s.sealer == nil {
		return plain
	}
	return s.sealer.Seal([]byte(plain), aad)
}

// open is the text of a stored content value scanned as any: a BLOB is
// opened, TEXT (empty, written without a Sealer, or from before migration
// 0015 and not yet sealed) is returned as it is.
func (s *Store) open(v any, aad []byte) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []byte:
		if s.sealer == nil {
			return "", fmt.Errorf("%w: a sealed value and no key to open it", jam.ErrUnavailable)
		}
		plain, err := s.sealer.Open(v, aad)
		if err != nil {
			return "", err
		}
		return string(plain), nil
	default:
		return "", fmt.Errorf("content value of type %T", v)
	}
}

// SQL of sealing the rows written in the clear (before migration 0015, or
// by a Store without a Sealer).
const (
	plainEvents   = `SELECT seq, workspace_id, payload FROM events WHERE typeof(payload) = 'text' AND payload NOT IN ('', '{}') LIMIT ?`
	sealEvent     = `UPDATE events SET payload = ? WHERE seq = ?`
	plainOutput   = `SELECT workspace_id, turn_id, batch, updates FROM turn_output WHERE typeof(updates) = 'text' AND updates <> '' LIMIT ?`
	sealOutput    = `UPDATE turn_output SET updates = ? WHERE turn_id = ? AND batch = ?`
	plainMessages = `SELECT workspace_id, id, text FROM session_messages WHERE typeof(text) = 'text' AND text <> '' LIMIT ?`
	sealMessage   = `UPDATE session_messages SET text = ? WHERE id = ?`
	plainTurns    = `SELECT workspace_id, id, detail FROM turns WHERE typeof(detail) = 'text' AND detail <> '' LIMIT ?`
	sealTurn      = `UPDATE turns SET detail = ? WHERE id = ?`
	plainJournal  = `SELECT workspace_id, seq, detail FROM turn_journal WHERE typeof(detail) = 'text' AND detail <> '' LIMIT ?`
	sealJournal   = `UPDATE turn_journal SET detail = ? WHERE seq = ?`
	// sealedSchema is the migration that made the content columns BLOB.
	sealedSchema = 15
	// sealChunk bounds the rows of one transaction of sealPlaintext.
	sealChunk = 1000
)

// sealPlaintext seals every content value stored in the clear, a chunk of
// rows per transaction, and returns how many values it sealed. If it
// sealed any, or the schema was before version 0015 when the store opened
// (prior), it then VACUUMs the file: the replaced text, the pages of the
// tables migration 0015 rebuilt and rows deleted before it would otherwise
// linger in free pages. Without a Sealer, or on a schema before the sealed
// columns (a test's), it does nothing.
func (s *Store) sealPlaintext(ctx context.Context, migs []store.Migration, prior int) (int, error) {
	if s.sealer == nil || len(migs) < sealedSchema {
		return 0, nil
	}
	total := 0
	for {
		n := 0
		err := inTx(ctx, s.writer, func(tx *sql.Tx) error {
			n = 0
			k, err := s.sealRows(ctx, tx, plainEvents, sealEvent, func(r scanner) (any, []any, error) {
				var seq int64
				var ws jam.WorkspaceID
				var v string
				if err := r.Scan(&seq, &ws, &v); err != nil {
					return nil, nil, err
				}
				return s.sealer.Seal([]byte(v), eventAAD(ws, seq)), []any{seq}, nil
			})
			if n += k; err != nil {
				return err
			}
			k, err = s.sealRows(ctx, tx, plainOutput, sealOutput, func(r scanner) (any, []any, error) {
				var ws jam.WorkspaceID
				var turn jam.TurnID
				var batch int
				var v string
				if err := r.Scan(&ws, &turn, &batch, &v); err != nil {
					return nil, nil, err
				}
				return s.sealer.Seal([]byte(v), outputAAD(ws, turn, batch)), []any{turn, batch}, nil
			})
			if n += k; err != nil {
				return err
			}
			k, err = s.sealRows(ctx, tx, plainMessages, sealMessage, func(r scanner) (any, []any, error) {
				var ws jam.WorkspaceID
				var id jam.MessageID
				var v string
				if err := r.Scan(&ws, &id, &v); err != nil {
					return nil, nil, err
				}
				return s.sealer.Seal([]byte(v), messageAAD(ws, id)), []any{id}, nil
			})
			if n += k; err != nil {
				return err
			}
			k, err = s.sealRows(ctx, tx, plainTurns, sealTurn, func(r scanner) (any, []any, error) {
				var ws jam.WorkspaceID
				var id jam.TurnID
				var v string
				if err := r.Scan(&ws, &id, &v); err != nil {
					return nil, nil, err
				}
				return s.sealer.Seal([]byte(v), turnDetailAAD(ws, id)), []any{id}, nil
			})
			if n += k; err != nil {
				return err
			}
			k, err = s.sealRows(ctx, tx, plainJournal, sealJournal, func(r scanner) (any, []any, error) {
				var ws jam.WorkspaceID
				var seq int64
				var v string
				if err := r.Scan(&ws, &seq, &v); err != nil {
					return nil, nil, err
				}
				return s.sealer.Seal([]byte(v), journalDetailAAD(ws, seq)), []any{seq}, nil
			})
			n += k
			return err
		})
		if err != nil {
			return total, fmt.Errorf("seal stored content: %w", err)
		}
		total += n
		if n > 0 {
			continue
		}
		if total > 0 || prior < sealedSchema {
			if _, err := s.writer.ExecContext(ctx, `VACUUM`); err != nil {
				return total, fmt.Errorf("seal stored content: vacuum: %w", err)
			}
		}
		return total, nil
	}
}

// sealRows seals up to sealChunk rows that query selects, writing each
// with update (the sealed value, then the key args row returned).
func (s *Store) sealRows(ctx context.Context, tx *sql.Tx, query, update string, row func(scanner) (any, []any, error)) (int, error) {
	rows, err := tx.QueryContext(ctx, query, sealChunk)
	if err != nil {
		return 0, err
	}
	var updates [][]any
	for rows.Next() {
		sealed, key, err := row(rows)
		if err != nil {
			return 0, errors.Join(err, rows.Close())
		}
		updates = append(updates, append([]any{sealed}, key...))
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, err
	}
	for _, args := range updates {
		if _, err := tx.ExecContext(ctx, update, args...); err != nil {
			return 0, err
		}
	}
	return len(updates), nil
}
