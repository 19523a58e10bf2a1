package store

import (
	"context"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Messaging is the part of the seam that holds accounts, peers, bindings
// and the inbound pipeline: spool, queue, settled tombstones and reply
// intents. Every method takes the workspace and every lookup is scoped by
// it. Secret material (keys, message bodies) arrives already sealed by the
// caller; the store never sees plaintext.
type Messaging interface {
	Accounts
	Peers
	Bindings
	Spool
	Queue
	RoomRetirement
	Replies
	Retention
}

// Accounts holds the Band accounts (user keys) by profile.
type Accounts interface {
	// AccountPut creates or replaces the account of a profile.
	AccountPut(ctx context.Context, a Account) (Account, error)

	// AccountGet returns one account by profile.
	AccountGet(ctx context.Context, ws jam.WorkspaceID, profile string) (Account, error)

	// AccountList returns the workspace's accounts by profile.
	AccountList(ctx context.Context, ws jam.WorkspaceID) ([]Account, error)

	// AccountRemove deletes an account, with its sealed key and its
	// rooms' cache, in one transaction. An account a peer still uses is
	// jam.ErrConflict, naming the peers; an unknown one jam.ErrNotFound.
	AccountRemove(ctx context.Context, ws jam.WorkspaceID, profile string) error
}

// Peers holds the agents jam answers for, with their sealed keys.
type Peers interface {
	// PeerPut creates or replaces a peer; its account must exist.
	PeerPut(ctx context.Context, p Peer) (Peer, error)

	// PeerGet returns one peer.
	PeerGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (Peer, error)

	// PeerList returns the workspace's peers by key.
	PeerList(ctx context.Context, ws jam.WorkspaceID) ([]Peer, error)

	// PeerRemove deletes a peer and what jam holds for it, in one
	// transaction: its spooled and queued messages (left unsettled on
	// Band), bindings, retired rooms, reply intents, runtime template and
	// the peer itself with its sealed key. Its sessions, turns, leases and
	// worktrees stay as history, and its settled tombstones stay. An
	// unknown peer is jam.ErrNotFound.
	PeerRemove(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (PeerRemoved, error)
}

// Bindings holds which session of a peer owns which room.
type Bindings interface {
	// BindingPut binds a session to a room for a peer. If another binding
	// of the same peer owns the room it is replaced (the steal path), and
	// its queued messages move to the new binding in the same transaction;
	// unrouted messages of the room move too. A binding with the same id
	// is updated in place. It returns the number of queue rows re-homed.
	BindingPut(ctx context.Context, b Binding) (moved int, err error)

	// BindingGet returns one binding by id.
	BindingGet(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) (Binding, error)

	// BindingForRoom returns the binding that owns (peer, room).
	BindingForRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (Binding, error)

	// BindingList returns the peer's bindings (all peers when key is zero).
	BindingList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]Binding, error)

	// BindingDelete detaches a binding; its queued messages move to the
	// unrouted bucket in the same transaction.
	BindingDelete(ctx context.Context, ws jam.WorkspaceID, id jam.BindingID) error
}

// Spool holds inbound messages stored before anything else happens to them.
type Spool interface {
	// SpoolAppend stores a batch of inbound messages in one transaction
	// (one fsync). An entry whose message id is already spooled, queued or
	// settled for the same peer is skipped; Appended says which were new.
	SpoolAppend(ctx context.Context, entries []SpoolEntry) (SpoolAppendResult, error)

	// SpoolNext returns the oldest spooled entries of one (peer, room)
	// lane, up to limit, in arrival order.
	SpoolNext(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, limit int) ([]SpoolEntry, error)

	// SpoolLanes returns every (peer, room) that has spooled entries, for
	// recovery at start.
	SpoolLanes(ctx context.Context) ([]Lane, error)

	// SpoolUsage returns the entries and bytes spooled per peer.
	SpoolUsage(ctx context.Context) ([]SpoolUsage, error)

	// SpoolMove moves one spool entry to the queue in one transaction: the
	// entry is deleted and the row inserted, so no crash leaves it in both
	// or in neither. The row goes to the binding that owns (peer, room) at
	// that moment, read in the same transaction, or to the unrouted bucket.
	SpoolMove(ctx context.Context, seq int64, row QueueRow) (QueueRow, error)

	// SpoolMoveBatch moves several spool entries to the queue in one
	// transaction, each exactly as SpoolMove would; rows[i].Seq names the
	// entry. An entry that is gone yields MoveMissing instead of an error,
	// so one stale entry never fails its batch-mates. A move that would
	// leave its peer with more than MaxQueuedPerPeer queue rows moves
	// nothing and fails with jam.ErrUnavailable: the entries stay in the
	// spool (SpoolMove likewise).
	SpoolMoveBatch(ctx context.Context, rows []QueueRow) ([]SpoolMoved, error)

	// SpoolDrop deletes a spool entry that is consumed without queueing (a
	// system marker), recording the message as settled.
	SpoolDrop(ctx context.Context, seq int64, at time.Time) error
}

// Queue holds routed messages until they settle, and the settled tombstones.
type Queue interface {
	// QueueGet returns one queued message.
	QueueGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (QueueRow, error)

	// QueueList returns queued messages oldest first: of one binding, of
	// the unrouted bucket (binding "" with Unrouted), or of a peer.
	QueueList(ctx context.Context, p QueueListParams) ([]QueueRow, error)

	// QueueRooms returns the rooms a peer has queued messages in (routed
	// or not), each with its oldest message's ReceivedAt, in room order.
	QueueRooms(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]QueueRoom, error)

	// QueueMark records a claim or delivery on a queued message.
	QueueMark(ctx context.Context, p QueueMarkParams) error

	// QueueSettle removes a queued message after Band accepted its
	// settlement and records the settled tombstone, in one transaction.
	QueueSettle(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, at time.Time) error

	// MessageSettled reports whether msg was settled for the peer (its
	// tombstone is kept, until retention prunes it).
	MessageSettled(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (bool, error)

	// QueuePruneUnrouted deletes unrouted rows older than before, then
	// keeps only the newest keep rows per peer; it returns how many went.
	QueuePruneUnrouted(ctx context.Context, before time.Time, keep int) (int, error)
}

// RoomRetirement holds the rooms a peer has left.
type RoomRetirement interface {
	// RoomRetire retires a room for a peer (the agent left it, or it was
	// deleted): in one transaction it records the retirement and deletes
	// the room's spooled entries, queued rows (routed and unrouted) and
	// binding, without any remote write. A retired room's messages that
	// arrive later are dropped when they leave the spool. Retiring a room
	// twice is harmless.
	RoomRetire(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID, at time.Time) (RoomRetired, error)

	// RoomRestore lifts a retirement (the agent was added to the room
	// again); it reports whether the room was retired.
	RoomRestore(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (bool, error)

	// RoomRetiredList returns the peer's retired rooms.
	RoomRetiredList(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) ([]jam.RoomID, error)
}

// Replies holds the reply intents that make an answer exactly-once.
type Replies interface {
	// ReplyIntentPut records (or advances) a reply before and while it is
	// posted, so a crash between posting and settling never posts twice.
	ReplyIntentPut(ctx context.Context, r ReplyIntent) error

	// ReplyIntentGet returns the intent of a source message, if any.
	ReplyIntentGet(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) (ReplyIntent, error)

	// ReplyLinks returns the links of those of ids that are posted reply
	// parts: which message each answers. ReplyIntentPut records a link for
	// every posted id in the transaction that records the id; a link is
	// never rewritten and outlives its intent (removing the peer deletes
	// it). Ids that are no reply are left out.
	ReplyLinks(ctx context.Context, ws jam.WorkspaceID, ids []jam.PlatformMessageID) ([]ReplyLink, error)
}

// ReplyLink says which message a posted reply part answers.
type ReplyLink struct {
	// MessageID is the posted part's Band id.
	MessageID jam.PlatformMessageID
	Peer      jam.PeerKey
	Room      jam.RoomID
	// ReplyTo is the source message the reply answers.
	ReplyTo jam.PlatformMessageID
	// Turn is the owned session's turn that produced the reply; "" for an
	// attached agent's reply.
	Turn jam.TurnID
}

// Retention prunes the messaging history.
type Retention interface {
	// RetentionPrune deletes settled tombstones older than before, and
	// reply intents last updated before it whose message is no longer
	// queued (an intent of a queued message is what keeps a resumed reply
	// from posting twice, so it stays however old).
	RetentionPrune(ctx context.Context, before time.Time) (RetentionPruned, error)
}

// PeerRemoved counts what PeerRemove deleted.
type PeerRemoved struct {
	Spooled      int
	SpooledBytes int64
	Queued       int
	Bindings     int
	Templates    int
}

// RetentionPruned counts what RetentionPrune deleted.
type RetentionPruned struct {
	Settled int
	Intents int
}

// Account is one signed-in Band user (or the embedded hub's owner).
type Account struct {
	ID          jam.AccountID
	WorkspaceID jam.WorkspaceID
	// Profile names the account locally; it is the first half of PeerKey.
	Profile string
	BandURL string
	UserID  jam.IdentityID
	Handle  string
	// ConnectionID names the connection of provider band that holds the
	// person key ("" only for a legacy row not moved onto one yet).
	ConnectionID jam.ConnectionID
	// KeySealed is the legacy column: the key sealed by the daemon,
	// empty once the row is moved onto a connection.
	KeySealed []byte
	CreatedAt time.Time
}

// Peer is jam's record of one Band agent under one account.
type Peer struct {
	WorkspaceID jam.WorkspaceID
	Key         jam.PeerKey
	AccountID   jam.AccountID
	AgentID     jam.IdentityID
	Handle      string
	Name        string
	// ConnectionID names the connection of provider band that holds the
	// agent's key ("" only for a legacy row not moved onto one yet).
	ConnectionID jam.ConnectionID
	// KeySealed is the legacy column: the key sealed by the daemon,
	// empty once the row is moved onto a connection.
	KeySealed []byte
	CreatedAt time.Time
}

// Binding binds one runtime session to exactly one room for one peer.
type Binding struct {
	ID          jam.BindingID
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
	// Alias is the operator-facing name, unique per peer; never identity.
	Alias     string
	SessionID jam.SessionID
	Mode      jam.RuntimeMode
	CreatedAt time.Time
}

// Lane names one (peer, room) ordered lane.
type Lane struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
}

// SpoolEntry is one durable inbound message awaiting routing.
type SpoolEntry struct {
	// Seq orders entries; assigned by the store.
	Seq         int64
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
	MessageID   jam.PlatformMessageID
	// Sealed is the encrypted Band message.
	Sealed     []byte
	ReceivedAt time.Time
}

// SpoolAppendResult reports which entries of a batch were new.
type SpoolAppendResult struct {
	// Appended[i] is true when entries[i] was stored; false means a
	// duplicate of a spooled, queued or settled message.
	Appended []bool
	// Seqs[i] is the sequence of entries[i] when appended.
	Seqs []int64
}

// SpoolUsage is the spool's load for one peer.
type SpoolUsage struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Entries     int
	Bytes       int64
}

// SpoolMoveOutcome says what SpoolMoveBatch did with one entry.
type SpoolMoveOutcome string

// Outcomes of a spool move.
const (
	// MoveQueued: the entry became a queue row (routed or unrouted).
	MoveQueued SpoolMoveOutcome = "queued"
	// MoveAlreadyQueued: the message was queued by an earlier arrival; the
	// entry was deleted and Row is the existing row.
	MoveAlreadyQueued SpoolMoveOutcome = "already_queued"
	// MoveSettled: the message was settled already; the entry was deleted.
	MoveSettled SpoolMoveOutcome = "settled"
	// MoveRetired: the room is retired for the peer; the entry was deleted.
	MoveRetired SpoolMoveOutcome = "retired"
	// MoveMissing: no such entry (moved or dropped before).
	MoveMissing SpoolMoveOutcome = "missing"
)

// SpoolMoved is the result of one entry of SpoolMoveBatch.
type SpoolMoved struct {
	Outcome SpoolMoveOutcome
	// Row is the new row (MoveQueued) or the existing one
	// (MoveAlreadyQueued); zero otherwise.
	Row QueueRow
	// SpoolBytes is the size of the deleted entry's sealed content, for
	// releasing spool budget; zero for MoveMissing.
	SpoolBytes int
}

// RoomRetired counts what RoomRetire deleted.
type RoomRetired struct {
	// Spooled entries deleted, and their sealed bytes.
	Spooled      int
	SpooledBytes int64
	// Queued rows deleted.
	Queued int
	// Binding is the binding that owned the room, if any.
	Binding jam.BindingID
}

// Queue states.
const (
	QueueQueued    = "queued"
	QueueClaimed   = "claimed"
	QueueDelivered = "delivered"
)

// QueueRow is one routed (or unrouted) message awaiting settlement.
type QueueRow struct {
	// Seq is the spool sequence: the per-room arrival order.
	Seq         int64
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
	MessageID   jam.PlatformMessageID
	// Binding is the owning binding, or "" for the unrouted bucket.
	Binding         jam.BindingID
	SenderID        jam.IdentityID
	AddressedToUser bool
	// Sealed is the encrypted message as delivered to the agent (mention
	// tokens rewritten to handles).
	Sealed      []byte
	State       string
	Attempts    int
	ReceivedAt  time.Time
	ClaimedAt   time.Time
	DeliveredAt time.Time
}

// QueueRoom is a room a peer has queued messages in, and when the oldest
// of them was received.
type QueueRoom struct {
	Room          jam.RoomID
	FirstReceived time.Time
}

// QueueListParams select queued messages.
type QueueListParams struct {
	WorkspaceID jam.WorkspaceID
	// Peer restricts to one peer when not zero.
	Peer jam.PeerKey
	// Binding restricts to one binding when not "".
	Binding jam.BindingID
	// Unrouted selects the unrouted bucket (Binding must be "").
	Unrouted bool
	// Room restricts to one room when not "".
	Room jam.RoomID
	// Delivered selects only routed rows in state delivered: what an
	// attached agent's inbox shows.
	Delivered bool
	// After skips rows up to this seq (0: from the first): the next page
	// of a listing.
	After int64
	// Limit bounds the rows returned, oldest first; 0 returns all.
	Limit int
}

// QueueMarkParams record progress on a queued message.
type QueueMarkParams struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	MessageID   jam.PlatformMessageID
	// State is QueueClaimed or QueueDelivered.
	State string
	At    time.Time
}

// Reply intent states.
const (
	ReplyPending = "pending"
	ReplyPosted  = "posted"
)

// ReplyIntent is a reply recorded before it is posted.
type ReplyIntent struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
	// MessageID is the source message the reply settles.
	MessageID jam.PlatformMessageID
	// Sealed is the encrypted reply (parts and mentions).
	Sealed []byte
	// Parts is the number of parts; Posted how many Band accepted, with
	// their Band ids.
	Parts     int
	Posted    int
	PostedIDs []jam.PlatformMessageID
	State     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// Turn is the owned session's turn that produced the reply ("" for an
	// attached agent). It is not part of the intent: ReplyIntentPut writes
	// it into the links of the ids it records, and ReplyIntentGet returns
	// it empty.
	Turn jam.TurnID
}
