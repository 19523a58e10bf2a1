package hub

import (
	"context"
	"database/sql"

	"github.com/jamhq/jam/internal/band/protocol"
)

// Room types and statuses. The hub creates every room as Band's default,
// "direct" and "active", and has no endpoint that changes either.
const (
	roomTypeDirect = "direct"
	roomActive     = "active"
)

// SQL of the rooms and participants tables.
const (
	roomInsert = `INSERT INTO rooms (id, title, title_locked, task_id, type, status, inserted_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	roomCols         = `r.seq, r.id, r.title, r.task_id, r.type, r.status, r.inserted_at, r.updated_at, r.last_message_at`
	roomSelectByID   = `SELECT ` + roomCols + ` FROM rooms r WHERE r.id = ?`
	roomsSelectForID = `SELECT ` + roomCols + ` FROM rooms r JOIN participants p ON p.room_id = r.id
WHERE p.participant_id = ? ORDER BY r.seq`
	roomUpdateTitle   = `UPDATE rooms SET title = ?, title_locked = 1, updated_at = ? WHERE id = ?`
	roomTouchMessages = `UPDATE rooms SET last_message_at = ? WHERE id = ?`

	participantInsert = `INSERT INTO participants (room_id, participant_id, participant_type, role, inserted_at)
VALUES (?, ?, ?, ?, ?)`
	participantDelete = `DELETE FROM participants WHERE room_id = ? AND participant_id = ?`
	// participantCols resolves each participant's name and handle; a
	// deleted agent has no participant rows, so the joins always match.
	participantCols = `p.seq, p.participant_id, p.participant_type, p.role, p.inserted_at,
COALESCE(a.name, NULLIF(TRIM(u.first_name || ' ' || u.last_name), ''), u.handle, ''),
COALESCE(ou.handle || '/' || a.slug, u.handle, ''),
a.description
FROM participants p
LEFT JOIN users u ON p.participant_type = 'User' AND u.id = p.participant_id
LEFT JOIN agents a ON p.participant_type = 'Agent' AND a.id = p.participant_id
LEFT JOIN users ou ON ou.id = a.owner_id`
	participantSelect    = `SELECT ` + participantCols + ` WHERE p.room_id = ? AND p.participant_id = ?`
	participantsSelect   = `SELECT ` + participantCols + ` WHERE p.room_id = ? ORDER BY p.seq`
	participantIDsSelect = `SELECT participant_id FROM participants WHERE room_id = ?`
)

// roomRow is a stored room.
type roomRow struct {
	Seq           int64
	ID            string
	Title         *string
	TaskID        *string
	Type          string
	Status        string
	InsertedAt    int64
	UpdatedAt     int64
	LastMessageAt *int64
}

func scanRoom(row interface{ Scan(...any) error }) (roomRow, error) {
	var r roomRow
	var title, task sql.NullString
	var last sql.NullInt64
	err := row.Scan(&r.Seq, &r.ID, &title, &task, &r.Type, &r.Status, &r.InsertedAt, &r.UpdatedAt, &last)
	if title.Valid {
		r.Title = &title.String
	}
	if task.Valid {
		r.TaskID = &task.String
	}
	if last.Valid {
		r.LastMessageAt = &last.Int64
	}
	return r, err
}

func (r roomRow) agentView() protocol.ChatRoom {
	return protocol.ChatRoom{ID: r.ID, Title: r.Title, TaskID: r.TaskID, InsertedAt: formatMicros(r.InsertedAt), UpdatedAt: formatMicros(r.UpdatedAt)}
}

func (r roomRow) meView() protocol.MeChatRoom {
	return protocol.MeChatRoom{
		ID: r.ID, Title: r.Title, TaskID: r.TaskID, Type: r.Type, Status: r.Status,
		LastMessageAt: formatMicrosPtr(r.LastMessageAt),
		InsertedAt:    formatMicros(r.InsertedAt), UpdatedAt: formatMicros(r.UpdatedAt),
	}
}

// event is the payload of room_added and room_removed: the superset Band's
// clients accept.
func (r roomRow) event() protocol.RoomEvent {
	return protocol.RoomEvent{
		ID: r.ID, Title: r.Title, TaskID: r.TaskID, Type: r.Type, Status: r.Status,
		InsertedAt: formatMicros(r.InsertedAt), UpdatedAt: formatMicros(r.UpdatedAt),
	}
}

func roomByID(ctx context.Context, q querier, id string) (roomRow, error) {
	return scanRoom(q.QueryRowContext(ctx, roomSelectByID, id))
}

// roomsOf lists the rooms id participates in, oldest first.
func roomsOf(ctx context.Context, q querier, id string) ([]roomRow, error) {
	rows, err := q.QueryContext(ctx, roomsSelectForID, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []roomRow
	for rows.Next() {
		r, err := scanRoom(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// participantRow is a participant with its resolved name and handle.
type participantRow struct {
	Seq         int64
	ID          string
	Type        string
	Role        string
	InsertedAt  int64
	Name        string
	Handle      string
	Description *string
}

func scanParticipant(row interface{ Scan(...any) error }) (participantRow, error) {
	var p participantRow
	var desc sql.NullString
	err := row.Scan(&p.Seq, &p.ID, &p.Type, &p.Role, &p.InsertedAt, &p.Name, &p.Handle, &desc)
	if desc.Valid {
		p.Description = &desc.String
	}
	return p, err
}

// wire is the participant in the agent view (ChatParticipant).
func (p participantRow) wire() protocol.Participant {
	handle := p.Handle
	return protocol.Participant{ID: p.ID, Type: p.Type, Role: p.Role, Status: "active", Name: p.Name, Handle: &handle}
}

// details is the human view (ChatParticipantDetails) and the payload of
// participant_added: agents add description and is_external.
func (p participantRow) details() protocol.Participant {
	w := p.wire()
	if p.Type == protocol.TypeAgent {
		external := true
		desc := p.Description
		if desc == nil {
			empty := ""
			desc = &empty
		}
		w.Description, w.IsExternal = desc, &external
	}
	return w
}

func participantOf(ctx context.Context, q querier, roomID, id string) (participantRow, error) {
	return scanParticipant(q.QueryRowContext(ctx, participantSelect, roomID, id))
}

func participantsOf(ctx context.Context, q querier, roomID string) ([]participantRow, error) {
	rows, err := q.QueryContext(ctx, participantsSelect, roomID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []participantRow
	for rows.Next() {
		p, err := scanParticipant(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func participantIDsOf(ctx context.Context, q querier, roomID string) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, participantIDsSelect, roomID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
