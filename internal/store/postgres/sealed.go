package postgres

import (
	"encoding/binary"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
)

// Sealer seals and opens the content columns (package secret's Box).
// Open must fail on data sealed for another aad.
type Sealer interface {
	Seal(plaintext, aad []byte) []byte
	Open(sealed, aad []byte) ([]byte, error)
}

// The content columns the store seals itself (migration 0015), named as
// in the SQLite dialect so that a value sealed by either dialect opens in
// the other: the aad names the table, the workspace and the row's key.
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

// sealPatch is the stored form of a change set's patch: sealed when the
// store has a Sealer; nil (omitted) stays NULL and an empty patch stays
// empty.
func (s *Store) sealPatch(patch []byte, aad []byte) []byte {
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
// different rows share one. It is byte for byte the SQLite dialect's.
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

// seal is the stored (BYTEA) form of a content value: sealed when the
// store has a Sealer, else the text's bytes. An empty value stays empty:
// it holds nothing to protect.
func (s *Store) seal(plain string, aad []byte) []byte {
	if plain == "" {
		return []byte{}
	}
	if s.sealer == nil {
		return []byte(plain)
	}
	return s.sealer.Seal([]byte(plain), aad)
}

// open is the text of a stored content value. A PostgreSQL store is
// opened with the same Sealer, or none, for its whole life: every
// migration runs at the first Open, so no value was written before the
// columns were sealed, and unlike SQLite (TEXT or BLOB in one column)
// the column's type cannot tell a clear value from a sealed one. With a
// Sealer every non-empty value is opened, and one that does not open is
// an error (secret.ErrCorrupt: damaged, moved from another row, or
// written by a store without the key).
func (s *Store) open(v []byte, aad []byte) (string, error) {
	if len(v) == 0 {
		return "", nil
	}
	if s.sealer == nil {
		return string(v), nil
	}
	plain, err := s.sealer.Open(v, aad)
	if err != nil {
		return "", err
	}
	return string(plain), nil
}
