package hub

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/mention"
)

// blank reports whether s is empty, white space or invisible characters
// only (format characters such as U+200B, and a few fillers that render as
// nothing).
func blank(s string) bool {
	for _, r := range s {
		switch {
		case unicode.IsSpace(r), unicode.Is(unicode.Cf, r), unicode.IsControl(r):
		case r == '\u115F', r == '\u1160', r == '\u3164', r == '\u2800', r == '\uFFA0':
		default:
			return false
		}
	}
	return true
}

// msgNoControl is the detail of a name or title with a control character.
const msgNoControl = "must be valid UTF-8 without control characters"

// hasControl reports whether s, a one-line name or title, is not valid
// UTF-8 or holds a control character (C0 including line breaks and tabs,
// DEL, C1): such text would reach terminals and logs verbatim.
func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	return strings.ContainsFunc(s, unicode.IsControl)
}

// mentionIn is one entry of a request's mentions. Kind stays raw so an
// explicit null can be told from an absent field.
type mentionIn struct {
	ID     *string         `json:"id"`
	Handle *string         `json:"handle"`
	Name   *string         `json:"name"`
	Kind   json.RawMessage `json:"kind"`
}

// sendBody is the body of sending a text message.
type sendBody struct {
	Message *struct {
		Content  *string     `json:"content"`
		Mentions []mentionIn `json:"mentions"`
	} `json:"message"`
}

// resolved is a mention entry resolved to a room participant.
type resolved struct {
	p       participantRow
	deliver bool // kind "mention"; "reference" entries do not deliver
	name    string
}

// resolveMentions applies band-protocol.md §2.4 to a send request.
func resolveMentions(in []mentionIn, participants []participantRow, sender string) ([]resolved, *apiError) {
	if len(in) == 0 {
		return nil, errInvalid(codeMentionsRequired, "/message/mentions", "can't be blank")
	}
	byID := map[string]participantRow{}
	byHandle := map[string]participantRow{}
	for _, p := range participants {
		byID[p.ID] = p
		byHandle[strings.ToLower(p.Handle)] = p
	}
	var out []resolved
	seen := map[string]bool{}
	anyMention := false
	for i, m := range in {
		ptr := "/message/mentions/" + strconv.Itoa(i)
		deliver := true
		if m.Kind != nil {
			var kind string
			if err := json.Unmarshal(m.Kind, &kind); err != nil || (kind != protocol.KindMention && kind != protocol.KindReference) {
				return nil, errInvalid(codeInvalidMentionKind, ptr+"/kind", "must be mention or reference")
			}
			deliver = kind == protocol.KindMention
		}
		id, handle := trimmed(m.ID), strings.TrimPrefix(trimmed(m.Handle), "@")
		var p participantRow
		var ok bool
		switch {
		case id != "":
			canonical, valid := parseUUID(id)
			if !valid {
				return nil, errInvalid(codeValidation, ptr+"/id", "is invalid")
			}
			if p, ok = byID[canonical]; !ok {
				return nil, errInvalid(codeMentionNotInRoom, ptr+"/id", "is not a participant of this room")
			}
		case handle != "":
			if p, ok = byHandle[strings.ToLower(handle)]; !ok {
				return nil, errInvalid(codeHandleNotFound, ptr+"/handle", "does not match a participant of this room")
			}
		default:
			return nil, errInvalid(codeMentionMissingID, ptr, "must have an id or a handle")
		}
		if p.ID == sender {
			return nil, errInvalid(codeCannotMentionSelf, ptr, "cannot mention yourself")
		}
		if seen[p.ID] {
			return nil, errInvalid(codeDuplicateMentions, ptr, "mentions a participant already mentioned")
		}
		seen[p.ID] = true
		anyMention = anyMention || deliver
		name := trimmed(m.Name)
		if name == "" {
			name = p.Name
		}
		out = append(out, resolved{p: p, deliver: deliver, name: name})
	}
	if !anyMention {
		return nil, errInvalid(codeMentionsRequired, "/message/mentions", "must contain at least one entry of kind mention")
	}
	return out, nil
}

func trimmed(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}

// sendMessage is POST …/messages for agents and users: store the text
// message with normalised mentions, one delivery per mentioned agent, and
// push message_created.
func (h *Hub) sendMessage(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	var body sendBody
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Message == nil {
		return 0, nil, errInvalid(codeValidation, "/message", "can't be blank")
	}
	if body.Message.Content == nil || blank(*body.Message.Content) {
		return 0, nil, errInvalid(codeValidation, "/message/content", "can't be blank")
	}
	if !utf8.ValidString(*body.Message.Content) || strings.IndexByte(*body.Message.Content, 0) >= 0 {
		return 0, nil, errInvalid(codeValidation, "/message/content", "must be valid UTF-8 without NUL")
	}
	var out protocol.MessageSent
	err = h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		// Resolve against the participants as of this transaction.
		participants, err := participantsOf(c.ctx, tx, r.ID)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(participants, func(p participantRow) bool { return p.ID == c.p.id() }) {
			return nil, errNotFound(msgRoomNotFound) // removed since the check above
		}
		mentions, e := resolveMentions(body.Message.Mentions, participants, c.p.id())
		if e != nil {
			return nil, e
		}
		var targets []mention.Target
		stored := []protocol.Mention{}
		recipients := []protocol.Recipient{}
		agents := map[string]bool{}
		for _, m := range mentions {
			if !m.deliver {
				continue
			}
			targets = append(targets, mention.Target{ID: m.p.ID, Handle: m.p.Handle, Name: m.name})
			stored = append(stored, protocol.Mention{ID: m.p.ID, Handle: m.p.Handle, Name: m.p.Name})
			recipients = append(recipients, protocol.Recipient{ID: m.p.ID, Handle: m.p.Handle, Name: m.p.Name})
			if m.p.Type == protocol.TypeAgent {
				agents[m.p.ID] = true
			}
		}
		content := mention.Normalize(*body.Message.Content, targets)
		msg, err := h.insertMessage(c, tx, r.ID, protocol.MessageText, content, stored, nil)
		if err != nil {
			return nil, err
		}
		for _, m := range mentions {
			if m.deliver && m.p.Type == protocol.TypeAgent {
				if _, err := tx.ExecContext(c.ctx, deliveryInsert, msg.Seq, m.p.ID, r.ID, msg.InsertedAt); err != nil {
					return nil, err
				}
			}
		}
		wire, err := wireMessage(c.ctx, tx, msg)
		if err != nil {
			return nil, err
		}
		out = protocol.MessageSent{ID: msg.ID, Success: true, Recipients: recipients}
		return func() {
			h.broker.publish(protocol.Topic(protocol.TopicChatRoom, r.ID), protocol.EventMessageCreated, wire, func(s *socket) bool {
				return !s.who.Agent || agents[s.who.agent.ID]
			})
		}, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, data(out), nil
}

// insertMessage stores a message from the caller and moves the room's
// last_message_at.
func (h *Hub) insertMessage(c *call, tx *sql.Tx, roomID, typ, content string, mentions []protocol.Mention, extra json.RawMessage) (messageRow, error) {
	now := h.now().UnixMicro()
	m := messageRow{
		ID: newUUID(), RoomID: roomID, SenderID: c.p.id(), SenderType: c.p.kind(), MessageType: typ,
		Content: content, Mentions: mentions, Extra: extra, InsertedAt: now, UpdatedAt: now,
	}
	if c.p.Agent {
		m.SenderName = c.p.agent.Name
	} else {
		m.SenderName = c.p.user.name()
	}
	mj, err := json.Marshal(mentions)
	if err != nil {
		return messageRow{}, err
	}
	var ex any
	if extra != nil {
		ex = string(extra)
	}
	if err := tx.QueryRowContext(c.ctx, messageInsert, m.ID, roomID, m.SenderID, m.SenderType, typ, content, string(mj), ex, now, now).Scan(&m.Seq); err != nil {
		return messageRow{}, err
	}
	if _, err := tx.ExecContext(c.ctx, roomTouchMessages, now, roomID); err != nil {
		return messageRow{}, err
	}
	return m, nil
}

// postEvent is POST /agent/chats/{chat_id}/events: a non-text message,
// pushed to user sockets only.
func (h *Hub) postEvent(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Event *protocol.EventFields `json:"event"`
	}
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	ev := body.Event
	switch {
	case ev == nil:
		return 0, nil, errInvalid(codeValidation, "/event", "can't be blank")
	case !slices.Contains(protocol.EventMessageTypes, ev.MessageType):
		return 0, nil, errInvalid(codeValidation, "/event/message_type", "must be one of "+strings.Join(protocol.EventMessageTypes, ", "))
	case blank(ev.Content):
		return 0, nil, errInvalid(codeValidation, "/event/content", "can't be blank")
	case utf8.RuneCountInString(ev.Content) > protocol.MaxEventContentChars:
		return 0, nil, errInvalid(codeValidation, "/event/content", fmt.Sprintf("should be at most %d character(s)", protocol.MaxEventContentChars))
	case strings.IndexByte(ev.Content, 0) >= 0:
		return 0, nil, errInvalid(codeValidation, "/event/content", "must not contain NUL")
	}
	var extra json.RawMessage
	if raw := bytes.TrimSpace(ev.Metadata); len(raw) > 0 && string(raw) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return 0, nil, errInvalid(codeValidation, "/event/metadata", "must be an object")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return 0, nil, errInvalid(codeValidation, "/event/metadata", "must be an object")
		}
		if buf.Len() > protocol.MaxEventMetadataBytes {
			return 0, nil, errInvalid(codeValidation, "/event/metadata", fmt.Sprintf("should be at most %d bytes", protocol.MaxEventMetadataBytes))
		}
		if ev.MessageType == protocol.MessageAttention {
			var kind string
			_ = json.Unmarshal(obj["kind"], &kind)
			if !slices.Contains([]string{"question", "assumption", "failure", "review"}, kind) {
				return 0, nil, errInvalid(codeValidation, "/event/metadata/kind", "must be one of question, assumption, failure, review")
			}
		}
		extra = buf.Bytes()
	} else if ev.MessageType == protocol.MessageAttention {
		return 0, nil, errInvalid(codeValidation, "/event/metadata/kind", "can't be blank")
	}
	var id string
	err = h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		msg, err := h.insertMessage(c, tx, r.ID, ev.MessageType, ev.Content, []protocol.Mention{}, extra)
		if err != nil {
			return nil, err
		}
		id = msg.ID
		wire := msg.wire(nil)
		return func() {
			h.broker.publish(protocol.Topic(protocol.TopicChatRoom, r.ID), protocol.EventEventCreated, wire, usersOnly)
		}, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, data(protocol.EventCreated{ID: id, MessageType: ev.MessageType, Success: true}), nil
}

func usersOnly(s *socket) bool { return !s.who.Agent }

// pageMessages runs a message listing in the requested pagination form.
func (c *call) pageMessages(mq messageQuery, p paging, scope string) ([]protocol.Message, map[string]any, error) {
	var rows []messageRow
	var err error
	total := 0
	if p.legacy {
		if total, err = mq.count(c.ctx, c.db.reader); err != nil {
			return nil, nil, err
		}
		rows, err = mq.page(c.ctx, c.db.reader, 0, p.limit+1, p.offset())
	} else {
		rows, err = mq.page(c.ctx, c.db.reader, p.after.Seq, p.limit+1, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	hasMore := len(rows) > p.limit
	rows = rows[:min(len(rows), p.limit)]
	var next *string
	if hasMore && !p.legacy {
		s := encodeCursor(cursor{Scope: scope, Seq: rows[len(rows)-1].Seq})
		next = &s
	}
	msgs, err := wireMessages(c.ctx, c.db.reader, rows)
	if err != nil {
		return nil, nil, err
	}
	return msgs, cursorMeta(p, hasMore, next, total), nil
}

// agentQueue is GET /agent/chats/{chat_id}/messages: the agent's queue,
// oldest first, filtered by delivery status.
func (h *Hub) agentQueue(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	filter := q.Get("status")
	if _, ok := queueFilters[filter]; !ok {
		return 0, nil, errInvalid(codeValidation, "/status", "must be one of pending, processing, processed, failed, all")
	}
	scope := "queue:" + r.ID
	p, e := parsePaging(q, scope, protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	msgs, meta, err := c.pageMessages(queueQuery(c.p.id(), r.ID, filter), p, scope)
	if err != nil {
		return 0, nil, err
	}
	meta["status_filter"] = nil
	if filter != "" {
		meta["status_filter"] = filter
	}
	deprecate(c, p)
	return http.StatusOK, listBody[protocol.Message]{Data: msgs, Metadata: meta}, nil
}

// agentNext is GET …/messages/next: the oldest not-processed message, a
// stuck processing one included; 204 when there is none.
func (h *Hub) agentNext(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	rows, err := queueQuery(c.p.id(), r.ID, "").page(c.ctx, c.db.reader, 0, 1, 0)
	if err != nil {
		return 0, nil, err
	}
	if len(rows) == 0 {
		return http.StatusNoContent, nil, nil
	}
	m, err := wireMessage(c.ctx, c.db.reader, rows[0])
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(m), nil
}

// agentContext is GET …/context: what the agent sent plus the text
// messages that mention it, oldest first.
func (h *Hub) agentContext(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	scope := "context:" + r.ID
	p, e := parsePaging(c.r.URL.Query(), scope, protocol.DefaultContextLimit)
	if e != nil {
		return 0, nil, e
	}
	msgs, meta, err := c.pageMessages(contextQuery(c.p.id(), r.ID), p, scope)
	if err != nil {
		return 0, nil, err
	}
	deprecate(c, p)
	return http.StatusOK, listBody[protocol.Message]{Data: msgs, Metadata: meta, Meta: meta}, nil
}

// history is GET /me/chats/{chat_id}/messages: every message, newest
// first, with message_type and since filters.
func (h *Hub) history(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	q := c.r.URL.Query()
	typ := q.Get("message_type")
	if typ != "" && typ != protocol.MessageText && !slices.Contains(protocol.EventMessageTypes, typ) {
		return 0, nil, errInvalid(codeValidation, "/message_type", "is invalid")
	}
	var since int64
	if s := q.Get("since"); s != "" {
		if q.Get("cursor") != "" {
			return 0, nil, errInvalidMsg(codeInvalidPagination, "since and cursor cannot be combined", "/since", "cannot be combined with cursor")
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, nil, errInvalid(codeValidation, "/since", "must be an ISO 8601 date-time")
		}
		since = max(t.UnixMicro(), 1)
	}
	scope := "history:" + r.ID
	p, e := parsePaging(q, scope, protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	msgs, meta, err := c.pageMessages(historyQuery(r.ID, typ, since), p, scope)
	if err != nil {
		return 0, nil, err
	}
	deprecate(c, p)
	return http.StatusOK, listBody[protocol.Message]{Data: msgs, Metadata: meta}, nil
}

// claim loads the agent's delivery of the message named in the path,
// inside tx; 404 when the message is not in the agent's queue.
func (c *call) claim(tx *sql.Tx) (roomRow, deliveryRow, string, error) {
	r, _, err := c.room(tx, c.r.PathValue("chat_id"))
	if err != nil {
		return roomRow{}, deliveryRow{}, "", err
	}
	id, ok := parseUUID(c.r.PathValue("id"))
	if !ok {
		return roomRow{}, deliveryRow{}, "", errNotFound(msgMessageNotFound)
	}
	d, err := deliveryOf(c.ctx, tx, c.p.id(), r.ID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return roomRow{}, deliveryRow{}, "", errNotFound(msgMessageNotFound)
	}
	return r, d, id, err
}

// pushDelivery sends message_updated with the message's new delivery
// status to user sockets.
func (h *Hub) pushDelivery(c *call, tx *sql.Tx, roomID, messageID string) (func(), error) {
	m, err := messageByID(c.ctx, tx, messageID)
	if err != nil {
		return nil, err
	}
	wire, err := wireMessage(c.ctx, tx, m)
	if err != nil {
		return nil, err
	}
	return func() {
		h.broker.publish(protocol.Topic(protocol.TopicChatRoom, roomID), protocol.EventMessageUpdated, wire, usersOnly)
	}, nil
}

// markProcessing is POST …/processing: every call opens a new attempt.
// An attempt still open (the agent crashed) is closed as failed.
func (h *Hub) markProcessing(c *call) (int, any, error) {
	var out protocol.MessageStatus
	err := h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		r, d, id, err := c.claim(tx)
		if err != nil {
			return nil, err
		}
		if d.Status == protocol.DeliveryProcessed {
			return nil, errInvalidMsg(codeValidation, "Message is already processed", "/status", "is already processed")
		}
		now := h.now().UnixMicro()
		n := d.CurrentAttempt + 1
		if _, err := tx.ExecContext(c.ctx, attemptAbandon, fmt.Sprintf("%s by attempt %d", protocol.AttemptSuperseded, n), now, d.AgentID, d.MessageSeq); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(c.ctx, attemptInsert, d.MessageSeq, d.AgentID, n, now); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(c.ctx, deliveryClaim, n, d.AgentID, d.MessageSeq); err != nil {
			return nil, err
		}
		out = protocol.MessageStatus{ID: id, Status: protocol.DeliveryProcessing, AttemptNumber: n, Success: true}
		return h.pushDelivery(c, tx, r.ID, id)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(out), nil
}

// markProcessed is POST …/processed: closes the active attempt as a
// success; 422 without one.
func (h *Hub) markProcessed(c *call) (int, any, error) {
	return h.finish(c, protocol.DeliveryProcessed, nil)
}

// markFailed is POST …/failed {"error"}: closes the active attempt as
// failed; the message stays in the queue.
func (h *Hub) markFailed(c *call) (int, any, error) {
	var body struct {
		Error *string `json:"error"`
	}
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Error == nil || blank(*body.Error) {
		return 0, nil, errInvalid(codeValidation, "/error", "can't be blank")
	}
	return h.finish(c, protocol.DeliveryFailed, body.Error)
}

func (h *Hub) finish(c *call, status string, errText *string) (int, any, error) {
	var out protocol.MessageStatus
	err := h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		r, d, id, err := c.claim(tx)
		if err != nil {
			return nil, err
		}
		if d.Status != protocol.DeliveryProcessing {
			return nil, errInvalidMsg(codeNoActiveAttempt, "Message has no active processing attempt; call /processing first", "/status", "has no active processing attempt")
		}
		now := h.now().UnixMicro()
		attemptStatus, update, args := protocol.AttemptSuccess, deliverySetProcessed, []any{now, d.AgentID, d.MessageSeq}
		if status == protocol.DeliveryFailed {
			attemptStatus, update, args = protocol.AttemptFailed, deliverySetFailed, []any{d.AgentID, d.MessageSeq}
		}
		if _, err := tx.ExecContext(c.ctx, attemptFinish, attemptStatus, errText, now, d.AgentID, d.MessageSeq, d.CurrentAttempt); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(c.ctx, update, args...); err != nil {
			return nil, err
		}
		out = protocol.MessageStatus{ID: id, Status: status, AttemptNumber: d.CurrentAttempt, Success: true}
		return h.pushDelivery(c, tx, r.ID, id)
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(out), nil
}

// reportActivity is POST …/activity {"working"}: sets or clears the
// agent's working indicator, pushed on room_activity:{room} and expiring
// after Config.ActivityTTL.
func (h *Hub) reportActivity(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Working *bool `json:"working"`
	}
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Working == nil {
		return 0, nil, errInvalid(codeValidation, "/working", "can't be blank")
	}
	h.act.report(r.ID, c.p.id(), *body.Working, h.now().Add(h.cfg.ActivityTTL), h.pushActivity)
	return http.StatusOK, data(protocol.ActivityRequest{Working: *body.Working}), nil
}
