package hub

import (
	"database/sql"
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/band/protocol"
)

// room loads a room the caller participates in, with the caller's
// participation. A room that does not exist and one the caller is not in
// are the same 404 (existence hiding).
func (c *call) room(q querier, rawID string) (roomRow, participantRow, error) {
	id, ok := parseUUID(rawID)
	if !ok {
		return roomRow{}, participantRow{}, errNotFound(msgRoomNotFound)
	}
	r, err := roomByID(c.ctx, q, id)
	if errors.Is(err, sql.ErrNoRows) {
		return roomRow{}, participantRow{}, errNotFound(msgRoomNotFound)
	}
	if err != nil {
		return roomRow{}, participantRow{}, err
	}
	me, err := participantOf(c.ctx, q, id, c.p.id())
	if errors.Is(err, sql.ErrNoRows) {
		return roomRow{}, participantRow{}, errNotFound(msgRoomNotFound)
	}
	return r, me, err
}

// roomView is the room as the caller's API shows it.
func (c *call) roomView(r roomRow) any {
	if c.p.Agent {
		return r.agentView()
	}
	return r.meView()
}

// chatBody is the body of creating and renaming a room.
type chatBody struct {
	Chat *struct {
		Title  *string `json:"title"`
		TaskID *string `json:"task_id"`
	} `json:"chat"`
}

// checkTitle validates a room title: invalid UTF-8 and control characters
// (CR, LF and NUL as Band, and every other one too) are rejected, and the
// trimmed title must be 1 to 120 characters. blank reports an empty one.
func checkTitle(raw string) (title string, blank bool, e *apiError) {
	if hasControl(raw) {
		return "", false, errInvalid(codeValidation, "/chat/title", msgNoControl)
	}
	title = strings.TrimSpace(raw)
	if title == "" {
		return "", true, nil
	}
	if utf8.RuneCountInString(title) > protocol.MaxTitleChars {
		return "", false, errInvalid(codeValidation, "/chat/title", "should be at most 120 character(s)")
	}
	return title, false, nil
}

// createChat is POST /agent/chats and POST /me/chats: the caller becomes
// the room's owner.
func (h *Hub) createChat(c *call) (int, any, error) {
	var body chatBody
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Chat == nil {
		return 0, nil, errInvalid(codeValidation, "/chat", "can't be blank")
	}
	now := h.now().UnixMicro()
	r := roomRow{ID: newUUID(), Type: roomTypeDirect, Status: roomActive, InsertedAt: now, UpdatedAt: now}
	locked := false
	if body.Chat.Title != nil {
		title, blank, e := checkTitle(*body.Chat.Title)
		if e != nil {
			return 0, nil, e
		}
		if !blank {
			r.Title, locked = &title, true
		}
	}
	if t := body.Chat.TaskID; t != nil && *t != "" {
		id, ok := parseUUID(*t)
		if !ok {
			return 0, nil, errInvalid(codeValidation, "/chat/task_id", "is invalid")
		}
		r.TaskID = &id
	}
	err := h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		res, err := tx.ExecContext(c.ctx, roomInsert, r.ID, r.Title, locked, r.TaskID, r.Type, r.Status, now, now)
		if err != nil {
			return nil, err
		}
		if r.Seq, err = res.LastInsertId(); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(c.ctx, participantInsert, r.ID, c.p.id(), c.p.kind(), protocol.RoleOwner, now); err != nil {
			return nil, err
		}
		return func() { h.pushRoomAdded(c.p.id(), c.p.kind(), r) }, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, data(c.roomView(r)), nil
}

// getChat is GET /agent/chats/{id} and GET /me/chats/{id}.
func (h *Hub) getChat(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(c.roomView(r)), nil
}

// renameChat is PATCH /agent/chats/{id}; only the room's owner may rename.
func (h *Hub) renameChat(c *call) (int, any, error) {
	r, me, err := c.room(c.db.reader, c.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if me.Role != protocol.RoleOwner {
		return 0, nil, errForbidden("Only the room owner may rename it")
	}
	var body chatBody
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Chat == nil || body.Chat.Title == nil {
		return 0, nil, errInvalid(codeValidation, "/chat/title", "can't be blank")
	}
	title, blank, e := checkTitle(*body.Chat.Title)
	if e != nil {
		return 0, nil, e
	}
	if blank {
		return 0, nil, errInvalid(codeValidation, "/chat/title", "can't be blank")
	}
	if r.Title != nil && *r.Title == title {
		return http.StatusOK, data(r.agentView()), nil
	}
	now := h.now().UnixMicro()
	err = h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		_, err := tx.ExecContext(c.ctx, roomUpdateTitle, title, now, r.ID)
		return nil, err
	})
	if err != nil {
		return 0, nil, err
	}
	r.Title, r.UpdatedAt = &title, now
	return http.StatusOK, data(r.agentView()), nil
}

// agentChats is GET /agent/chats: offset pagination, oldest room first so
// pages stay stable while rooms are added.
func (h *Hub) agentChats(c *call) (int, any, error) {
	p, e := parseOffset(c.r.URL.Query(), protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	rooms, err := roomsOf(c.ctx, c.db.reader, c.p.id())
	if err != nil {
		return 0, nil, err
	}
	page, meta := pageOffset(rooms, p)
	out := make([]protocol.ChatRoom, 0, len(page))
	for _, r := range page {
		out = append(out, r.agentView())
	}
	return http.StatusOK, listBody[protocol.ChatRoom]{Data: out, Metadata: meta}, nil
}

// myChats is GET /me/chats: cursor pagination over inserted_at (default)
// or updated_at, descending by default, with status and type filters.
func (h *Hub) myChats(c *call) (int, any, error) {
	q := c.r.URL.Query()
	status, typ := q.Get("status"), q.Get("type")
	if status != "" && !slices.Contains([]string{"active", "archived", "closed"}, status) {
		return 0, nil, errInvalid(codeValidation, "/status", "is invalid")
	}
	if typ != "" && !slices.Contains([]string{"direct", "group", "task"}, typ) {
		return 0, nil, errInvalid(codeValidation, "/type", "is invalid")
	}
	sortBy, order, e := sortParams(q.Get("sort_by"), q.Get("order"), "/sort_by", []string{"inserted_at", "updated_at"})
	if e != nil {
		return 0, nil, e
	}
	p, e := parsePaging(q, "me_chats:"+sortBy+":"+order, protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	rooms, err := roomsOf(c.ctx, c.db.reader, c.p.id())
	if err != nil {
		return 0, nil, err
	}
	rooms = slices.DeleteFunc(rooms, func(r roomRow) bool {
		return (status != "" && r.Status != status) || (typ != "" && r.Type != typ)
	})
	keyOf := func(r roomRow) sortKey {
		if sortBy == "updated_at" {
			return sortKey{microsKey(r.UpdatedAt), r.Seq}
		}
		return sortKey{microsKey(r.InsertedAt), r.Seq}
	}
	sortItems(rooms, keyOf, order == "desc")
	page, meta := pageSlice(rooms, keyOf, p, "me_chats:"+sortBy+":"+order, order == "desc")
	out := make([]protocol.MeChatRoom, 0, len(page))
	for _, r := range page {
		out = append(out, r.meView())
	}
	deprecate(c, p)
	return http.StatusOK, listBody[protocol.MeChatRoom]{Data: out, Metadata: meta}, nil
}

// sortParams validates a sort field and an order (default desc).
func sortParams(sortBy, order, pointer string, fields []string) (string, string, *apiError) {
	if sortBy == "" {
		sortBy = fields[0]
	}
	if !slices.Contains(fields, sortBy) {
		return "", "", errInvalid(codeValidation, pointer, "is invalid")
	}
	if order == "" {
		order = "desc"
	}
	if order != "asc" && order != "desc" {
		return "", "", errInvalid(codeValidation, "/order", "is invalid")
	}
	return sortBy, order, nil
}

func sortItems[T any](items []T, keyOf func(T) sortKey, desc bool) {
	slices.SortStableFunc(items, func(a, b T) int {
		c := compareKeys(keyOf(a), keyOf(b))
		if desc {
			return -c
		}
		return c
	})
}

// deprecate marks a response to Band's deprecated page/page_size form.
func deprecate(c *call, p paging) {
	if p.legacy {
		c.w.Header().Set("Deprecation", "true")
		c.w.Header().Set("Sunset", "Thu, 01 Oct 2026 00:00:00 GMT")
	}
}

// listParticipants is GET …/participants: the whole list for agents, a
// cursor-paginated one (with participant_type) for users.
func (h *Hub) listParticipants(c *call) (int, any, error) {
	r, _, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	all, err := participantsOf(c.ctx, c.db.reader, r.ID)
	if err != nil {
		return 0, nil, err
	}
	if c.p.Agent {
		out := make([]protocol.Participant, 0, len(all))
		for _, p := range all {
			out = append(out, p.wire())
		}
		return http.StatusOK, protocol.Data[[]protocol.Participant]{Data: out}, nil
	}
	q := c.r.URL.Query()
	if t := q.Get("participant_type"); t != "" {
		if t != protocol.TypeUser && t != protocol.TypeAgent {
			return 0, nil, errInvalid(codeValidation, "/participant_type", "is invalid")
		}
		all = slices.DeleteFunc(all, func(p participantRow) bool { return p.Type != t })
	}
	scope := "participants:" + r.ID
	p, e := parsePaging(q, scope, protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	keyOf := func(p participantRow) sortKey { return sortKey{seq: p.Seq} }
	page, meta := pageSlice(all, keyOf, p, scope, false)
	out := make([]protocol.Participant, 0, len(page))
	for _, p := range page {
		out = append(out, p.details())
	}
	deprecate(c, p)
	return http.StatusOK, listBody[protocol.Participant]{Data: out, Metadata: meta}, nil
}

// addParticipant is POST …/participants. An agent may add its sibling
// agents and its owner; a user may add their own agents. Only a caller
// who is the room's owner or admin may give the owner or admin role.
func (h *Hub) addParticipant(c *call) (int, any, error) {
	r, me, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Participant *protocol.ParticipantFields `json:"participant"`
	}
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Participant == nil {
		return 0, nil, errInvalid(codeValidation, "/participant", "can't be blank")
	}
	id, ok := parseUUID(body.Participant.ParticipantID)
	if !ok {
		return 0, nil, errInvalid(codeValidation, "/participant/participant_id", "is invalid")
	}
	role := body.Participant.Role
	if role == "" {
		role = protocol.RoleMember
	}
	if !slices.Contains([]string{protocol.RoleOwner, protocol.RoleAdmin, protocol.RoleMember}, role) {
		return 0, nil, errInvalid(codeValidation, "/participant/role", "is invalid")
	}
	who, err := identityByID(c.ctx, c.db.reader, id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, errNotFound(msgParticipantNotFound)
	}
	if err != nil {
		return 0, nil, err
	}
	// Everything the hub knows belongs to one owner's world: own agents
	// and the owner themself.
	mine := who.ID == c.p.UserID || (who.Type == protocol.TypeAgent && who.OwnerID == c.p.UserID)
	if !mine {
		return 0, nil, errForbidden("You may add only your own agents and your owner")
	}
	// Only an owner or admin hands out the roles that remove participants:
	// otherwise a member agent could add its sibling as owner, and that
	// owner remove everyone else.
	if role != protocol.RoleMember && me.Role != protocol.RoleOwner && me.Role != protocol.RoleAdmin {
		return 0, nil, errForbidden("Only the room owner or an admin may add an owner or admin")
	}
	var added participantRow
	err = h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		if _, err := participantOf(c.ctx, tx, r.ID, id); err == nil {
			return nil, errInvalid(codeAlreadyParticipant, "/participant/participant_id", "is already a participant")
		} else if !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		if _, err := tx.ExecContext(c.ctx, participantInsert, r.ID, id, who.Type, role, h.now().UnixMicro()); err != nil {
			return nil, err
		}
		var err error
		if added, err = participantOf(c.ctx, tx, r.ID, id); err != nil {
			return nil, err
		}
		return func() {
			h.broker.publish(protocol.Topic(protocol.TopicRoomParticipants, r.ID), protocol.EventParticipantAdded, added.details(), nil)
			h.pushRoomAdded(id, who.Type, r)
		}, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, data(added.wire()), nil
}

// participantOwnerCounts counts a room's owners, and the people among them.
const participantOwnerCounts = `SELECT COUNT(*), COUNT(*) FILTER (WHERE participant_type = ?) FROM participants WHERE room_id = ? AND role = 'owner'`

// removeParticipant is DELETE …/participants/{id}: owner or admin only,
// never the room's last owner nor its last human owner, and never a human
// owner at an agent's request.
func (h *Hub) removeParticipant(c *call) (int, any, error) {
	r, me, err := c.room(c.db.reader, c.r.PathValue("chat_id"))
	if err != nil {
		return 0, nil, err
	}
	if me.Role != protocol.RoleOwner && me.Role != protocol.RoleAdmin {
		return 0, nil, errForbidden(msgOwnerOrAdminRequired)
	}
	id, ok := parseUUID(c.r.PathValue("id"))
	if !ok {
		return 0, nil, errNotFound(msgParticipantNotFound)
	}
	var gone participantRow
	err = h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		var err error
		gone, err = participantOf(c.ctx, tx, r.ID, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, errNotFound(msgParticipantNotFound)
		}
		if err != nil {
			return nil, err
		}
		if gone.Role == protocol.RoleOwner {
			if c.p.Agent && gone.Type == protocol.TypeUser {
				return nil, errForbidden("An agent may not remove a person who owns the room")
			}
			owners, people := 0, 0
			if err := tx.QueryRowContext(c.ctx, participantOwnerCounts, protocol.TypeUser, r.ID).Scan(&owners, &people); err != nil {
				return nil, err
			}
			// The last owner stays, and so does the last person among the
			// owners: a room owned only by agents would lock its people out.
			if owners <= 1 || (gone.Type == protocol.TypeUser && people <= 1) {
				return nil, &apiError{status: http.StatusForbidden, code: codeCannotRemoveSoleOwner, message: msgCannotRemoveSoleOwner}
			}
		}
		if _, err := tx.ExecContext(c.ctx, participantDelete, r.ID, id); err != nil {
			return nil, err
		}
		return func() { h.pushParticipantRemoved(r, gone.ID, gone.Type) }, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(gone.wire()), nil
}

// pushRoomAdded tells id's sockets it joined r.
func (h *Hub) pushRoomAdded(id, typ string, r roomRow) {
	h.broker.publish(roomsTopic(id, typ), protocol.EventRoomAdded, r.event(), nil)
}

// pushParticipantRemoved announces a removal on the room's participants
// channel (the removed participant hears it too), tells its rooms channel,
// and then takes its sockets off the room's channels.
func (h *Hub) pushParticipantRemoved(r roomRow, id, typ string) {
	h.broker.publish(protocol.Topic(protocol.TopicRoomParticipants, r.ID), protocol.EventParticipantRemoved,
		protocol.ParticipantRemoved{ID: id, Type: typ}, nil)
	h.broker.publish(roomsTopic(id, typ), protocol.EventRoomRemoved, r.event(), nil)
	h.broker.evict(r.ID, id)
}

// roomsTopic is the rooms channel of a participant.
func roomsTopic(id, typ string) string {
	if typ == protocol.TypeAgent {
		return protocol.Topic(protocol.TopicAgentRooms, id)
	}
	return protocol.Topic(protocol.TopicUserRooms, id)
}
