package store

import (
	"context"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// RoomCache is the part of the seam that holds the human room feed's cache
// (see package roomfeed): per (account, room) a sequence watermark and the
// retained window of messages, the local membership system rows, and the
// attention items staged for direct mentions of the account's person.
// Message bodies arrive sealed by the caller; the store never sees
// plaintext. Every lookup is scoped by workspace and account.
type RoomCache interface {
	// RoomCacheApply writes one room's accepted mutations at sequence
	// p.Seq, together with the attention items they stage, in one
	// transaction. A sequence at or below the room's stored watermark is
	// rejected with jam.ErrConflict and writes nothing; any higher one is
	// accepted, gaps included (coalesced writes skip sequences). After the
	// write the room keeps only its RoomCacheWindow newest items. An
	// unknown account is jam.ErrNotFound.
	RoomCacheApply(ctx context.Context, p RoomCacheApplyParams) error
	// RoomCacheStates returns the watermark of every cached room of an
	// account, by room id.
	RoomCacheStates(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID) ([]RoomCacheState, error)
	// RoomCacheItems returns a room's retained items, newest first, at
	// most limit (RoomCacheWindow when limit is 0).
	RoomCacheItems(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID, limit int) ([]RoomCacheItem, error)
	// RoomCacheRetire deletes a room's items and local system rows (the
	// person left it, or it was deleted). The watermark stays, so a room
	// that comes back never reuses a sequence.
	RoomCacheRetire(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID) error

	// RoomSystemAppend stores a local system row; appending a row whose
	// message id is already stored is a no-op. A room keeps only its
	// MaxRoomSystemMessages newest rows.
	RoomSystemAppend(ctx context.Context, m RoomSystemMessage) error
	// RoomSystemList returns a room's local system rows, newest first, at
	// most limit (MaxRoomSystemMessages when limit is 0).
	RoomSystemList(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID, limit int) ([]RoomSystemMessage, error)

	// AttentionList returns an account's attention items, newest staged
	// first, at most limit (MaxAttentionItems when limit is 0).
	AttentionList(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, limit int) ([]AttentionItem, error)
}

// Bounds of the room cache, enforced by every dialect (the item counts by
// [RoomCacheApplyParams.Canonical] and [ListLimit], the kept rows by the
// dialect).
const (
	// RoomCacheWindow is how many newest messages a room retains.
	RoomCacheWindow = 100
	// MaxRoomSystemMessages is how many local system rows a room keeps.
	MaxRoomSystemMessages = 200
	// MaxAttentionItems is how many attention items an account keeps; the
	// oldest staged go first.
	MaxAttentionItems = 1000
	// MaxRoomCacheApplyItems bounds the upserts plus deletes of one apply.
	MaxRoomCacheApplyItems = 4 * RoomCacheWindow
)

// RoomCacheApplyParams are the inputs of RoomCache.RoomCacheApply.
type RoomCacheApplyParams struct {
	WorkspaceID jam.WorkspaceID
	AccountID   jam.AccountID
	Room        jam.RoomID
	// Seq is the room sequence the write brings the room to; at least 1.
	Seq int64
	// Replace makes Upserts the room's whole window: every other item is
	// deleted (a coalesced checkpoint).
	Replace bool
	// Upserts are created or replaced by message id.
	Upserts []RoomCacheItem
	// Deletes are removed; a missing id is not an error.
	Deletes []jam.PlatformMessageID
	// Attention items are staged once per message id: staging an item
	// whose message already has one is a no-op.
	Attention []AttentionItem
	At        time.Time
}

// RoomCacheState is one room's stored watermark.
type RoomCacheState struct {
	Room      jam.RoomID
	Seq       int64
	UpdatedAt time.Time
}

// RoomCacheItem is one retained message of a room.
type RoomCacheItem struct {
	MessageID jam.PlatformMessageID
	// Seq is the room sequence of the mutation that last changed it.
	Seq int64
	// InsertedAt is the message's platform time; the window keeps the
	// newest by (InsertedAt, MessageID).
	InsertedAt time.Time
	// Sealed is the encrypted projected row.
	Sealed []byte
}

// RoomSystemMessage is a system row jam synthesized locally (a membership
// change Band announced without a durable row).
type RoomSystemMessage struct {
	WorkspaceID jam.WorkspaceID
	AccountID   jam.AccountID
	Room        jam.RoomID
	MessageID   jam.PlatformMessageID
	// ParticipantID is whom the row is about.
	ParticipantID jam.IdentityID
	InsertedAt    time.Time
	// Sealed is the encrypted row in Band's message shape.
	Sealed    []byte
	CreatedAt time.Time
}

// Attention kinds.
const (
	// AttentionMention: a message mentions the account's person directly.
	AttentionMention = "mention"
)

// AttentionItem asks the account's person to look at a message.
type AttentionItem struct {
	WorkspaceID jam.WorkspaceID
	AccountID   jam.AccountID
	Room        jam.RoomID
	MessageID   jam.PlatformMessageID
	SenderID    jam.IdentityID
	Kind        string
	// MessageAt is the message's platform time.
	MessageAt time.Time
	StagedAt  time.Time
}
