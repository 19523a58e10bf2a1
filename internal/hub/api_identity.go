package hub

import (
	"database/sql"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/jamhq/jam/internal/band/protocol"
)

// maxAgentName bounds an agent's name.
const maxAgentName = 100

// agentMe is GET /agent/me.
func (h *Hub) agentMe(c *call) (int, any, error) {
	return http.StatusOK, data(c.p.agent.me()), nil
}

// notInChat reads ?not_in_chat=: the participants of that room, which the
// caller must be in (404 otherwise), or nil without the parameter.
func (c *call) notInChat() (map[string]bool, error) {
	raw := c.r.URL.Query().Get("not_in_chat")
	if raw == "" {
		return nil, nil
	}
	if _, ok := parseUUID(raw); !ok {
		return nil, errInvalid(codeValidation, "/not_in_chat", "is invalid")
	}
	r, _, err := c.room(c.db.reader, raw)
	if err != nil {
		return nil, err
	}
	return participantIDsOf(c.ctx, c.db.reader, r.ID)
}

// agentPeers is GET /agent/peers: the owner, then the agent's siblings by
// name. The hub has no global agents and no contacts.
func (h *Hub) agentPeers(c *call) (int, any, error) {
	p, e := parseOffset(c.r.URL.Query(), protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	exclude, err := c.notInChat()
	if err != nil {
		return 0, nil, err
	}
	owner, err := userByID(c.ctx, c.db.reader, c.p.UserID)
	if err != nil {
		return 0, nil, err
	}
	peers := []protocol.Peer{owner.peer()}
	agents, err := agentsByOwner(c.ctx, c.db.reader, c.p.UserID)
	if err != nil {
		return 0, nil, err
	}
	peers = append(peers, peersOf(agents, c.p.agent.ID)...)
	peers = slices.DeleteFunc(peers, func(p protocol.Peer) bool { return exclude[p.ID] })
	page, meta := pageOffset(peers, p)
	return http.StatusOK, listBody[protocol.Peer]{Data: page, Metadata: meta}, nil
}

// peersOf lists agents as peers by name, without skip.
func peersOf(agents []agentRow, skip string) []protocol.Peer {
	slices.SortStableFunc(agents, func(a, b agentRow) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	var out []protocol.Peer
	for _, a := range agents {
		if a.ID != skip {
			out = append(out, a.peer())
		}
	}
	return out
}

// myPeers is GET /me/peers: the user's agents, by name.
func (h *Hub) myPeers(c *call) (int, any, error) {
	q := c.r.URL.Query()
	typ := q.Get("type")
	if typ != "" && typ != protocol.TypeUser && typ != protocol.TypeAgent {
		return 0, nil, errInvalid(codeValidation, "/type", "is invalid")
	}
	p, e := parseOffset(q, protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	exclude, err := c.notInChat()
	if err != nil {
		return 0, nil, err
	}
	agents, err := agentsByOwner(c.ctx, c.db.reader, c.p.UserID)
	if err != nil {
		return 0, nil, err
	}
	peers := peersOf(agents, "")
	peers = slices.DeleteFunc(peers, func(p protocol.Peer) bool {
		return exclude[p.ID] || (typ != "" && p.Type != typ)
	})
	page, meta := pageOffset(peers, p)
	if page == nil {
		page = []protocol.Peer{}
	}
	return http.StatusOK, listBody[protocol.Peer]{Data: page, Metadata: meta}, nil
}

// profile is GET /me/profile.
func (h *Hub) profile(c *call) (int, any, error) {
	return http.StatusOK, data(c.p.user.details()), nil
}

// updateProfile is PUT /me/profile {"user":{"first_name","last_name"}}.
func (h *Hub) updateProfile(c *call) (int, any, error) {
	var body struct {
		User *struct {
			FirstName *string `json:"first_name"`
			LastName  *string `json:"last_name"`
		} `json:"user"`
	}
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.User == nil {
		return 0, nil, errInvalid(codeValidation, "/user", "can't be blank")
	}
	u := c.p.user
	for _, f := range []struct {
		in  *string
		out *string
		ptr string
	}{{body.User.FirstName, &u.FirstName, "/user/first_name"}, {body.User.LastName, &u.LastName, "/user/last_name"}} {
		if f.in == nil {
			continue
		}
		v := strings.TrimSpace(*f.in)
		if hasControl(v) || utf8.RuneCountInString(v) > maxAgentName {
			return 0, nil, errInvalid(codeValidation, f.ptr, "is invalid")
		}
		*f.out = v
	}
	now := h.now().UnixMicro()
	err := h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		_, err := tx.ExecContext(c.ctx, userUpdateNames, u.FirstName, u.LastName, now, u.ID)
		return nil, err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(u.details()), nil
}

// registerAgent is POST /me/agents/register: a new agent and its key,
// shown only in this response.
func (h *Hub) registerAgent(c *call) (int, any, error) {
	var body struct {
		Agent *struct {
			Name        *string `json:"name"`
			Description *string `json:"description"`
		} `json:"agent"`
	}
	if e := c.decode(&body); e != nil {
		return 0, nil, e
	}
	if body.Agent == nil {
		return 0, nil, errInvalid(codeValidation, "/agent", "can't be blank")
	}
	name := trimmed(body.Agent.Name)
	switch {
	case name == "":
		return 0, nil, errInvalid(codeValidation, "/agent/name", "can't be blank")
	case hasControl(name):
		return 0, nil, errInvalid(codeValidation, "/agent/name", msgNoControl)
	case utf8.RuneCountInString(name) > maxAgentName:
		return 0, nil, errInvalid(codeValidation, "/agent/name", "should be at most 100 character(s)")
	case slugify(name) == "":
		return 0, nil, errInvalid(codeValidation, "/agent/name", "must contain a letter or a digit")
	}
	var desc *string
	if d := trimmed(body.Agent.Description); d != "" {
		if strings.IndexByte(d, 0) >= 0 || !utf8.ValidString(d) {
			return 0, nil, errInvalid(codeValidation, "/agent/description", "is invalid")
		}
		desc = &d
	}
	now := h.now().UnixMicro()
	a := agentRow{ID: newUUID(), OwnerID: c.p.UserID, OwnerHandle: c.p.user.Handle, Name: name, Slug: slugify(name), Description: desc, InsertedAt: now, UpdatedAt: now}
	key := newKey(protocol.AgentKeyPrefix)
	err := h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		var n int
		if err := tx.QueryRowContext(c.ctx, agentSlugTaken, a.OwnerID, a.Slug).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			return nil, errInvalid(codeValidation, "/agent/name", "has already been taken")
		}
		if _, err := tx.ExecContext(c.ctx, agentInsert, a.ID, a.OwnerID, a.Name, a.Slug, a.Description, now, now); err != nil {
			return nil, err
		}
		_, err := tx.ExecContext(c.ctx, apiKeyInsertAgent, hashKey(key), a.ID, now)
		return nil, err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, data(protocol.RegisteredAgent{
		Agent:       protocol.RegisteredAgentInfo{ID: a.ID, Name: a.Name, Description: a.Description, OwnerID: a.OwnerID, InsertedAt: formatMicros(now)},
		Credentials: protocol.Credentials{APIKey: key},
	}), nil
}

// agentFilters and agentSorts are GET /me/agents' self-description.
var (
	agentFilters = []map[string]string{
		{"param": "name", "label": "Name", "type": "string"},
		{"param": "is_external", "label": "External", "type": "boolean"},
		{"param": "listed_in_directory", "label": "Listed in directory", "type": "boolean"},
	}
	agentSorts = []map[string]string{
		{"param": "inserted_at", "label": "Created"},
		{"param": "name", "label": "Name"},
		{"param": "updated_at", "label": "Updated"},
	}
)

// myAgents is GET /me/agents: cursor pagination, filters and sorting.
func (h *Hub) myAgents(c *call) (int, any, error) {
	q := c.r.URL.Query()
	sortBy, order, e := sortParams(q.Get("sort"), q.Get("order"), "/sort", []string{"inserted_at", "name", "updated_at"})
	if e != nil {
		return 0, nil, e
	}
	flags := map[string]*bool{}
	for _, f := range []string{"is_external", "listed_in_directory"} {
		if s := q.Get(f); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return 0, nil, errInvalid(codeValidation, "/"+f, "must be a boolean")
			}
			flags[f] = &v
		}
	}
	scope := "me_agents:" + sortBy + ":" + order
	p, e := parsePaging(q, scope, protocol.DefaultMessagesLimit)
	if e != nil {
		return 0, nil, e
	}
	agents, err := agentsByOwner(c.ctx, c.db.reader, c.p.UserID)
	if err != nil {
		return 0, nil, err
	}
	name := strings.ToLower(q.Get("name"))
	agents = slices.DeleteFunc(agents, func(a agentRow) bool {
		// Every hub agent is external and unlisted.
		return !strings.Contains(strings.ToLower(a.Name), name) ||
			(flags["is_external"] != nil && !*flags["is_external"]) ||
			(flags["listed_in_directory"] != nil && *flags["listed_in_directory"])
	})
	keyOf := func(a agentRow) sortKey {
		switch sortBy {
		case "name":
			return sortKey{strings.ToLower(a.Name), a.Seq}
		case "updated_at":
			return sortKey{microsKey(a.UpdatedAt), a.Seq}
		}
		return sortKey{microsKey(a.InsertedAt), a.Seq}
	}
	sortItems(agents, keyOf, order == "desc")
	page, meta := pageSlice(agents, keyOf, p, scope, order == "desc")
	meta["available_filters"], meta["sortable_fields"] = agentFilters, agentSorts
	out := make([]protocol.MyAgent, 0, len(page))
	for _, a := range page {
		out = append(out, a.mine())
	}
	return http.StatusOK, listBody[protocol.MyAgent]{Data: out, Metadata: meta}, nil
}

// deleteAgent is DELETE /me/agents/{id}?force=: revokes the key, removes
// the agent from its rooms and closes its sockets. Without force an agent
// with processing history (attempts) is refused with 422; with force its
// attempts and deliveries are deleted and counted as executions.
func (h *Hub) deleteAgent(c *call) (int, any, error) {
	id, ok := parseUUID(c.r.PathValue("id"))
	if !ok {
		return 0, nil, errNotFound("Agent not found")
	}
	force := false
	if s := c.r.URL.Query().Get("force"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return 0, nil, errInvalid(codeValidation, "/force", "must be a boolean")
		}
		force = v
	}
	var out protocol.DeletedAgent
	err := h.write(c.ctx, c.db, func(tx *sql.Tx) (func(), error) {
		a, err := agentByID(c.ctx, tx, id)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && a.OwnerID != c.p.UserID) {
			return nil, errNotFound("Agent not found")
		}
		if err != nil {
			return nil, err
		}
		var attempts int
		if err := tx.QueryRowContext(c.ctx, agentAttemptCount, id).Scan(&attempts); err != nil {
			return nil, err
		}
		if attempts > 0 && !force {
			return nil, errInvalidMsg(codeHasExecutionHistory, "Agent has processing history; pass force=true to delete it", "/force", "is required: the agent has processing history")
		}
		rooms, err := roomsOf(c.ctx, tx, id)
		if err != nil {
			return nil, err
		}
		now := h.now().UnixMicro()
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{attemptsDelete, []any{id}},
			{deliveriesDelete, []any{id}},
			{apiKeyDeleteAgent, []any{id}},
			{agentMarkDeleted, []any{now, now, id}},
		} {
			if _, err := tx.ExecContext(c.ctx, stmt.sql, stmt.args...); err != nil {
				return nil, err
			}
		}
		for _, r := range rooms {
			if _, err := tx.ExecContext(c.ctx, participantDelete, r.ID, id); err != nil {
				return nil, err
			}
		}
		out = protocol.DeletedAgent{ID: a.ID, Name: a.Name, Description: a.Description, ExecutionsDeleted: attempts}
		return func() {
			for _, r := range rooms {
				h.pushParticipantRemoved(r, id, protocol.TypeAgent)
			}
			h.broker.closeIdentity(id, websocket.StatusPolicyViolation, "agent deleted")
		}, nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, data(out), nil
}
