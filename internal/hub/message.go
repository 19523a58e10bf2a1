package hub

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/band/protocol"
)

// SQL of the messages, deliveries and attempts tables. Listing queries are
// assembled only from the constant fragments below, never from input.
const (
	messageInsert = `INSERT INTO messages (id, room_id, sender_id, sender_type, message_type, content, mentions, extra, inserted_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`
	// messageSelect resolves the sender's display name; deleted agents keep
	// their row, so old messages still name them.
	messageSelect = `SELECT m.seq, m.id, m.room_id, m.sender_id, m.sender_type, m.message_type, m.content, m.mentions, m.extra,
m.inserted_at, m.updated_at,
COALESCE(sa.name, NULLIF(TRIM(su.first_name || ' ' || su.last_name), ''), su.handle, '')
FROM messages m
LEFT JOIN agents sa ON m.sender_type = 'Agent' AND sa.id = m.sender_id
LEFT JOIN users su ON m.sender_type = 'User' AND su.id = m.sender_id`
	messageCount = `SELECT COUNT(*) FROM messages m`

	// Where clauses of the three message listings.
	whereQueue = ` WHERE m.room_id = ? AND m.seq IN (SELECT message_seq FROM deliveries d
WHERE d.agent_id = ? AND d.room_id = ? AND %s)`
	whereContext = ` WHERE m.room_id = ? AND (m.sender_id = ? OR m.seq IN (SELECT message_seq FROM deliveries d
WHERE d.agent_id = ? AND d.room_id = ?))`
	whereHistory     = ` WHERE m.room_id = ?`
	andType          = ` AND m.message_type = ?`
	andSince         = ` AND m.inserted_at > ?`
	andAfter         = ` AND m.seq > ?`
	andBefore        = ` AND m.seq < ?`
	orderAsc         = ` ORDER BY m.seq ASC LIMIT ? OFFSET ?`
	orderDesc        = ` ORDER BY m.seq DESC LIMIT ? OFFSET ?`
	whereMessageByID = ` WHERE m.id = ?`

	deliveryInsert = `INSERT INTO deliveries (message_seq, agent_id, room_id, status, delivered_at) VALUES (?, ?, ?, 'delivered', ?)`
	deliveryCols   = `message_seq, agent_id, status, current_attempt, delivered_at, processed_at`
	// deliveryForMessage finds the agent's delivery of a message of a room.
	deliveryForMessage = `SELECT d.message_seq, d.agent_id, d.status, d.current_attempt, d.delivered_at, d.processed_at
FROM deliveries d JOIN messages m ON m.seq = d.message_seq
WHERE d.agent_id = ? AND d.room_id = ? AND m.id = ?`
	deliveryClaim        = `UPDATE deliveries SET status = 'processing', current_attempt = ? WHERE agent_id = ? AND message_seq = ?`
	deliverySetProcessed = `UPDATE deliveries SET status = 'processed', processed_at = ? WHERE agent_id = ? AND message_seq = ? AND status = 'processing'`
	deliverySetFailed    = `UPDATE deliveries SET status = 'failed' WHERE agent_id = ? AND message_seq = ? AND status = 'processing'`
	deliveriesDelete     = `DELETE FROM deliveries WHERE agent_id = ?`

	attemptInsert = `INSERT INTO attempts (message_seq, agent_id, attempt_number, status, started_at) VALUES (?, ?, ?, 'processing', ?)`
	// attemptAbandon closes attempts a new claim replaces: the agent
	// crashed or gave up on them.
	attemptAbandon = `UPDATE attempts SET status = 'failed', error = ?, completed_at = ?
WHERE agent_id = ? AND message_seq = ? AND status = 'processing'`
	attemptFinish = `UPDATE attempts SET status = ?, error = ?, completed_at = ?
WHERE agent_id = ? AND message_seq = ? AND attempt_number = ? AND status = 'processing'`
	attemptsDelete = `DELETE FROM attempts WHERE agent_id = ?`
)

// queueFilters maps ?status= to the delivery condition it selects
// (band-protocol.md §2.3). "" is the default: everything not processed.
var queueFilters = map[string]string{
	"":                        `d.status <> 'processed'`,
	protocol.FilterPending:    `d.status IN ('delivered', 'failed')`,
	protocol.FilterProcessing: `d.status = 'processing'`,
	protocol.FilterProcessed:  `d.status = 'processed'`,
	protocol.FilterFailed:     `d.status = 'failed'`,
	protocol.FilterAll:        `1 = 1`,
}

// messageRow is a stored message with its sender's display name.
type messageRow struct {
	Seq         int64
	ID          string
	RoomID      string
	SenderID    string
	SenderType  string
	MessageType string
	Content     string
	Mentions    []protocol.Mention
	Extra       json.RawMessage
	InsertedAt  int64
	UpdatedAt   int64
	SenderName  string
}

func scanMessage(row interface{ Scan(...any) error }) (messageRow, error) {
	var m messageRow
	var mentions string
	var extra sql.NullString
	err := row.Scan(&m.Seq, &m.ID, &m.RoomID, &m.SenderID, &m.SenderType, &m.MessageType, &m.Content, &mentions, &extra,
		&m.InsertedAt, &m.UpdatedAt, &m.SenderName)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal([]byte(mentions), &m.Mentions); err != nil {
		return m, fmt.Errorf("message %s mentions: %w", m.ID, err)
	}
	if extra.Valid {
		m.Extra = json.RawMessage(extra.String)
	}
	return m, nil
}

// messageQuery is one listing: a where clause from the constants above and
// its arguments.
type messageQuery struct {
	where string
	args  []any
	desc  bool
}

// page runs the listing after (or, descending, before) seq, returning at
// most limit rows from offset.
func (mq messageQuery) page(ctx context.Context, q querier, afterSeq int64, limit, offset int) ([]messageRow, error) {
	where, args := mq.where, append([]any(nil), mq.args...)
	if afterSeq > 0 {
		if mq.desc {
			where += andBefore
		} else {
			where += andAfter
		}
		args = append(args, afterSeq)
	}
	order := orderAsc
	if mq.desc {
		order = orderDesc
	}
	rows, err := q.QueryContext(ctx, messageSelect+where+order, append(args, limit, offset)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []messageRow
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (mq messageQuery) count(ctx context.Context, q querier) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, messageCount+mq.where, mq.args...).Scan(&n)
	return n, err
}

func queueQuery(agentID, roomID, filter string) messageQuery {
	return messageQuery{where: fmt.Sprintf(whereQueue, queueFilters[filter]), args: []any{roomID, agentID, roomID}}
}

func contextQuery(agentID, roomID string) messageQuery {
	return messageQuery{where: whereContext, args: []any{roomID, agentID, agentID, roomID}}
}

func historyQuery(roomID, messageType string, since int64) messageQuery {
	mq := messageQuery{where: whereHistory, args: []any{roomID}, desc: true}
	if messageType != "" {
		mq.where += andType
		mq.args = append(mq.args, messageType)
	}
	if since > 0 {
		mq.where += andSince
		mq.args = append(mq.args, since)
	}
	return mq
}

func messageByID(ctx context.Context, q querier, id string) (messageRow, error) {
	return scanMessage(q.QueryRowContext(ctx, messageSelect+whereMessageByID, id))
}

// deliveryRow is one agent's delivery of one message.
type deliveryRow struct {
	MessageSeq     int64
	AgentID        string
	Status         string
	CurrentAttempt int
	DeliveredAt    int64
	ProcessedAt    *int64
}

func scanDelivery(row interface{ Scan(...any) error }) (deliveryRow, error) {
	var d deliveryRow
	var processed sql.NullInt64
	err := row.Scan(&d.MessageSeq, &d.AgentID, &d.Status, &d.CurrentAttempt, &d.DeliveredAt, &processed)
	if processed.Valid {
		d.ProcessedAt = &processed.Int64
	}
	return d, err
}

func deliveryOf(ctx context.Context, q querier, agentID, roomID, messageID string) (deliveryRow, error) {
	return scanDelivery(q.QueryRowContext(ctx, deliveryForMessage, agentID, roomID, messageID))
}

// inList returns "(?, ?, …)" for n values and the values as arguments.
func inList(seqs []int64) (string, []any) {
	args := make([]any, len(seqs))
	for i, s := range seqs {
		args[i] = s
	}
	return "(" + strings.TrimSuffix(strings.Repeat("?, ", len(seqs)), ", ") + ")", args
}

// deliveryStatus loads metadata.delivery_status of each message in seqs.
func deliveryStatus(ctx context.Context, q querier, seqs []int64) (map[int64]map[string]protocol.DeliveryRecord, error) {
	out := map[int64]map[string]protocol.DeliveryRecord{}
	if len(seqs) == 0 {
		return out, nil
	}
	list, args := inList(seqs)
	rows, err := q.QueryContext(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE message_seq IN `+list, args...)
	if err != nil {
		return nil, err
	}
	type key struct {
		seq   int64
		agent string
	}
	index := map[key]protocol.DeliveryRecord{}
	var order []key
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		k := key{d.MessageSeq, d.AgentID}
		delivered := formatMicros(d.DeliveredAt)
		index[k] = protocol.DeliveryRecord{
			Status: d.Status, CurrentAttempt: d.CurrentAttempt, DeliveredAt: &delivered,
			ProcessedAt: formatMicrosPtr(d.ProcessedAt), Attempts: []protocol.Attempt{},
		}
		order = append(order, k)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.QueryContext(ctx, `SELECT message_seq, agent_id, attempt_number, status, error, started_at, completed_at
FROM attempts WHERE message_seq IN `+list+` ORDER BY message_seq, agent_id, attempt_number`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		var a protocol.Attempt
		var errText sql.NullString
		var started int64
		var completed sql.NullInt64
		if err := rows.Scan(&k.seq, &k.agent, &a.AttemptNumber, &a.Status, &errText, &started, &completed); err != nil {
			return nil, err
		}
		if errText.Valid {
			a.Error = &errText.String
		}
		s := formatMicros(started)
		a.StartedAt = &s
		if completed.Valid {
			a.CompletedAt = formatMicrosPtr(&completed.Int64)
		}
		rec, ok := index[k]
		if !ok {
			continue
		}
		rec.Attempts = append(rec.Attempts, a)
		index[k] = rec
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, k := range order {
		if out[k.seq] == nil {
			out[k.seq] = map[string]protocol.DeliveryRecord{}
		}
		out[k.seq][k.agent] = index[k]
	}
	return out, nil
}

// wireMessages turns rows into Band's ChatMessage, with delivery status.
func wireMessages(ctx context.Context, q querier, rows []messageRow) ([]protocol.Message, error) {
	seqs := make([]int64, 0, len(rows))
	for _, m := range rows {
		if m.MessageType == protocol.MessageText {
			seqs = append(seqs, m.Seq)
		}
	}
	status, err := deliveryStatus(ctx, q, seqs)
	if err != nil {
		return nil, fmt.Errorf("load delivery status: %w", err)
	}
	out := make([]protocol.Message, 0, len(rows))
	for _, m := range rows {
		out = append(out, m.wire(status[m.Seq]))
	}
	return out, nil
}

// wireMessage is wireMessages for one message.
func wireMessage(ctx context.Context, q querier, m messageRow) (protocol.Message, error) {
	out, err := wireMessages(ctx, q, []messageRow{m})
	if err != nil {
		return protocol.Message{}, err
	}
	return out[0], nil
}

func (m messageRow) wire(status map[string]protocol.DeliveryRecord) protocol.Message {
	md := protocol.MessageMetadata{Extra: m.Extra}
	if m.MessageType == protocol.MessageText {
		md.Mentions = m.Mentions
		md.Status = "sent"
		if len(status) > 0 {
			md.DeliveryStatus = status
		}
	}
	return protocol.Message{
		ID: m.ID, Content: m.Content, MessageType: m.MessageType,
		SenderID: m.SenderID, SenderType: m.SenderType, SenderName: m.SenderName,
		ChatRoomID: m.RoomID, Metadata: md,
		InsertedAt: formatMicros(m.InsertedAt), UpdatedAt: formatMicros(m.UpdatedAt),
	}
}
