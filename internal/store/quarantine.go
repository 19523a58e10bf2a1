package store

import (
	"context"
	"errors"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// ErrCorrupt marks a spool or queue row that cannot be read as the record
// it should be: a column of the wrong type or out of its domain. A read
// that meets one fails with an error wrapping ErrCorrupt (and nothing
// else is wrong with the store); QuarantineInvalid then takes such rows
// out of the way.
var ErrCorrupt = errors.New("corrupt record")

// Quarantine is the part of the seam that keeps records of the inbound
// pipeline that can no longer be read: a spool entry or queue row whose
// columns are invalid, or whose sealed content no longer opens. Such a
// record is moved, in one transaction, out of its table into the
// quarantine, with its raw bytes and the reason, so that the rest of its
// room keeps flowing and nothing is silently lost.
type Quarantine interface {
	// QuarantineSpool moves spool entry seq to the quarantine.
	// jam.ErrNotFound if it is gone.
	QuarantineSpool(ctx context.Context, seq int64, reason string, at time.Time) (QuarantinedRecord, error)
	// QuarantineQueue moves one queue row to the quarantine.
	// jam.ErrNotFound if it is gone.
	QuarantineQueue(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID, reason string, at time.Time) (QuarantinedRecord, error)
	// QuarantineInvalid moves every spool entry and queue row of any
	// workspace whose columns are invalid to the quarantine and returns
	// what it moved, spool entries first, each table in seq order. It
	// reads every row (but not their sealed content), so it runs at
	// start and after a read met ErrCorrupt.
	QuarantineInvalid(ctx context.Context, at time.Time) ([]QuarantinedRecord, error)
	// QuarantineList returns the quarantined records of a workspace,
	// together with those whose own workspace id was unreadable, oldest
	// first, up to limit (0: no limit).
	QuarantineList(ctx context.Context, ws jam.WorkspaceID, limit int) ([]QuarantinedRecord, error)
}

// Sources of a quarantined record.
const (
	QuarantineFromSpool = "spool"
	QuarantineFromQueue = "queue"
)

// MaxQuarantineReasonLen bounds a reason, in bytes; a longer one is cut.
const MaxQuarantineReasonLen = 1024

// QuarantinedRecord is a spool entry or queue row taken out of the
// pipeline. The identity fields hold what the row held, as text, even
// when it was invalid (they are then not valid ids); WorkspaceID is ""
// when the row's own was not a valid workspace id.
type QuarantinedRecord struct {
	ID          int64
	WorkspaceID jam.WorkspaceID
	// Source is QuarantineFromSpool or QuarantineFromQueue.
	Source    string
	Seq       int64
	Peer      jam.PeerKey
	Room      jam.RoomID
	MessageID jam.PlatformMessageID
	Reason    string
	// Row is the row as it was stored: a JSON object of every column by
	// name, blobs in base64.
	Row []byte
	// Sealed is the row's sealed content, byte for byte (empty if the
	// column was not a blob).
	Sealed        []byte
	QuarantinedAt time.Time
}
