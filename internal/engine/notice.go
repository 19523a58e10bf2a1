package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// NoticeParams are the inputs of Notice.
type NoticeParams struct {
	WorkspaceID jam.WorkspaceID
	Peer        jam.PeerKey
	Room        jam.RoomID
	Text        string
}

// noticeSender names the sender of local notices in the inbox.
const noticeSender = "jam"

// Notice queues a local notice for the agent in a room: it is spooled,
// routed and delivered exactly like a Band message, and settled by an
// acknowledgement, but nothing about it is ever claimed, posted or settled
// on Band, and it cannot be replied to. It returns the notice's id
// (jam.NoticePrefix + a message id).
func (e *Engine) Notice(ctx context.Context, np NoticeParams) (jam.PlatformMessageID, error) {
	if _, err := e.peer(np.WorkspaceID, np.Peer); err != nil {
		return "", err
	}
	if strings.TrimSpace(np.Text) == "" {
		return "", fmt.Errorf("%w: notice text is empty", jam.ErrInvalid)
	}
	room, err := jam.ParseUUID[jam.RoomID](string(np.Room))
	if err != nil {
		return "", err
	}
	id := jam.NoticeID(jam.New[jam.MessageID](e.cfg.Minter))
	now := e.cfg.Now()
	m := protocol.Message{
		ID: string(id), ChatRoomID: string(room), Content: np.Text,
		SenderType: "System", SenderName: noticeSender, MessageType: "notice",
		InsertedAt: now.UTC().Format(time.RFC3339Nano), UpdatedAt: now.UTC().Format(time.RFC3339Nano),
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	entry := store.SpoolEntry{WorkspaceID: np.WorkspaceID, Peer: np.Peer, Room: room, MessageID: id,
		Sealed: e.cfg.Sealer.Seal(raw, aad(np.WorkspaceID, np.Peer, id)), ReceivedAt: now}
	if _, _, err := e.cfg.Spool.Push(ctx, entry); err != nil {
		return "", fmt.Errorf("spool notice: %w", err)
	}
	e.emit(Event{Kind: EventNotice, Workspace: np.WorkspaceID, Peer: np.Peer, Room: room, MessageID: id})
	e.wakeLane(store.Lane{WorkspaceID: np.WorkspaceID, Peer: np.Peer, Room: room})
	return id, nil
}
