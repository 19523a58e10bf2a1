package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/agentconf"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/connection"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The daemon's messaging control surface (api.Messaging).

func (d *daemon) Accounts(ctx context.Context) ([]wire.Account, error) {
	accts, err := d.store.AccountList(ctx, d.workspace.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Account, 0, len(accts))
	for _, a := range accts {
		out = append(out, wireAccount(a))
	}
	return out, nil
}

func wireAccount(a store.Account) wire.Account {
	return wire.Account{ID: string(a.ID), Profile: a.Profile, BandURL: a.BandURL, UserID: string(a.UserID), Handle: a.Handle, Created: a.CreatedAt}
}

func (d *daemon) AccountAdd(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error) {
	profile := r.Profile
	if profile == "" {
		profile = "band"
	}
	if err := (jam.PeerKey{Profile: profile, Scope: "x"}).Validate(); err != nil {
		return wire.Account{}, fmt.Errorf("profile: %w", err)
	}
	if r.Key == "" || r.BandURL == "" {
		return wire.Account{}, fmt.Errorf("%w: band_url and key are required", jam.ErrInvalid)
	}
	c, err := band.NewClient(d.band.http, r.BandURL, band.APIKey(r.Key))
	if err != nil {
		return wire.Account{}, fmt.Errorf("%w: %v", jam.ErrInvalid, err)
	}
	p, err := c.Profile(ctx)
	if err != nil {
		return wire.Account{}, fmt.Errorf("sign in to %s: %w", r.BandURL, err)
	}
	user, err := jam.ParseUUID[jam.IdentityID](p.ID)
	if err != nil {
		return wire.Account{}, err
	}
	ws := d.workspace.ID
	a := store.Account{ID: jam.New[jam.AccountID](d.minter), WorkspaceID: ws, Profile: profile, BandURL: c.BaseURL(), UserID: user, Handle: p.Handle,
		CreatedAt: time.Now()}
	old, err := d.store.AccountGet(ctx, ws, profile)
	switch {
	case err == nil:
		a.ID, a.CreatedAt = old.ID, old.CreatedAt
	case !errors.Is(err, jam.ErrNotFound):
		return wire.Account{}, err
	}
	// The key goes into the account's band connection (rotated when it
	// holds another), before the row that names it.
	conn, err := d.connections().SetBand(ctx, ws, old.ConnectionID, connection.BandAccountName(profile), []byte(r.Key))
	if err != nil {
		return wire.Account{}, err
	}
	a.ConnectionID = conn.ID
	a, err = d.store.AccountPut(ctx, a)
	if err != nil {
		return wire.Account{}, err
	}
	d.msg.mu.Lock()
	delete(d.msg.clients, a.ID)
	d.msg.mu.Unlock()
	if err := d.rooms.start(ctx, a); err != nil {
		d.log.Warn("room feed cannot start", "account", a.Profile, "err", err)
	}
	return wireAccount(a), nil
}

// account resolves a profile name, or the only account when empty.
func (d *daemon) account(ctx context.Context, profile string) (store.Account, error) {
	if profile != "" {
		return d.store.AccountGet(ctx, d.workspace.ID, profile)
	}
	accts, err := d.store.AccountList(ctx, d.workspace.ID)
	if err != nil {
		return store.Account{}, err
	}
	switch len(accts) {
	case 0:
		return store.Account{}, fmt.Errorf("%w: no account; add one with jam account add", jam.ErrNotFound)
	case 1:
		return accts[0], nil
	}
	for _, a := range accts {
		if a.Profile == d.configuredProfile() {
			return a, nil
		}
	}
	return store.Account{}, fmt.Errorf("%w: %d accounts; name one with --account", jam.ErrInvalid, len(accts))
}

func (d *daemon) Agents(ctx context.Context) ([]wire.Agent, error) {
	peers, err := d.store.PeerList(ctx, d.workspace.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Agent, 0, len(peers))
	for _, p := range peers {
		a, err := d.wireAgent(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (d *daemon) wireAgent(ctx context.Context, p store.Peer) (wire.Agent, error) {
	ws := d.workspace.ID
	a := wire.Agent{Peer: p.Key.String(), Name: p.Name, AgentID: string(p.AgentID), Handle: p.Handle, Account: p.Key.Profile, State: d.msg.feeds.state(p.Key), Bindings: []wire.Binding{}}
	bs, err := d.store.BindingList(ctx, ws, p.Key)
	if err != nil {
		return a, err
	}
	for _, b := range bs {
		a.Bindings = append(a.Bindings, wireBinding(b))
	}
	rows, err := d.store.QueueList(ctx, store.QueueListParams{WorkspaceID: ws, Peer: p.Key})
	if err != nil {
		return a, err
	}
	for _, r := range rows {
		if r.Binding == "" {
			a.Unrouted++
		} else {
			a.Queued++
		}
	}
	t, err := d.store.TemplateForPeer(ctx, ws, p.Key)
	switch {
	case err == nil:
		a.Runtime = wireRuntimeStatus(t)
		if a.Health, a.HealthReason, err = d.agentHealth(ctx, t); err != nil {
			return a, err
		}
	case !errors.Is(err, jam.ErrNotFound):
		return a, err
	}
	return a, nil
}

// agentHealth is an owned agent's health: degraded, with the reason, while
// it cannot serve one of its rooms (no session could be made there) or the
// latest of its turns to fail or succeed, across its rooms, failed; online
// otherwise (cancelled and interrupted turns say nothing of it).
func (d *daemon) agentHealth(ctx context.Context, t store.Template) (string, string, error) {
	ws := d.workspace.ID
	ss, err := d.store.SessionList(ctx, ws)
	if err != nil {
		return "", "", err
	}
	var last store.Turn
	for _, s := range ss {
		if s.TemplateID != t.ID {
			continue
		}
		turns, err := d.store.TurnList(ctx, ws, s.ID)
		if err != nil {
			return "", "", err
		}
		for _, tr := range turns {
			if (tr.State == jam.TurnFailed && tr.Reason != "message_gone") || tr.State == jam.TurnSucceeded {
				if tr.UpdatedAt.After(last.UpdatedAt) || (tr.UpdatedAt.Equal(last.UpdatedAt) && tr.Seq > last.Seq) {
					last = tr
				}
			}
		}
	}
	if why, ok := d.msg.engine.Refused(ws, t.Peer); ok {
		return wire.HealthDegraded, why, nil
	}
	if last.State != jam.TurnFailed {
		return wire.HealthOnline, "", nil
	}
	why := last.Reason
	if last.Detail != "" {
		why += ": " + last.Detail
	}
	return wire.HealthDegraded, engine.FailReason(why), nil
}

// retryUnserved offers an agent's queued messages again after its
// configuration changed: a message a failed turn left queued (marked
// failed on Band) gets a new turn, which runs the new configuration.
func (d *daemon) retryUnserved(ctx context.Context, key jam.PeerKey) {
	// Rooms it could not serve (their messages wait unrouted) are tried
	// again first.
	rows, err := d.store.QueueList(ctx, store.QueueListParams{WorkspaceID: d.workspace.ID, Peer: key, Unrouted: true})
	if err != nil {
		d.log.Warn("list unrouted after a configuration change", "peer", key, "err", err)
	}
	tried := map[jam.RoomID]bool{}
	for _, r := range rows {
		if !tried[r.Room] {
			tried[r.Room] = true
			d.msg.serveOwnedRoom(ctx, d.workspace.ID, key, r.Room)
		}
	}
	if err := d.msg.engine.Redeliver(ctx, d.workspace.ID, key, ""); err != nil {
		d.log.Warn("redeliver after a configuration change", "peer", key, "err", err)
	}
}

// serveOwnedRoom gives an owned agent its session in a room it is in
// (ensureOwnedRoom). When that fails (its repository is not a git
// repository), the room's messages are marked failed on Band with why,
// as they come, until a later try succeeds.
func (m *messaging) serveOwnedRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) {
	err := m.ensureOwnedRoom(ctx, ws, key, room)
	if err == nil {
		m.engine.ServeRoom(ws, key, room)
		return
	}
	m.log.Warn("owned agent cannot serve the room", "peer", key, "room", room, "err", err)
	if ferr := m.engine.RefuseRoom(ctx, ws, key, room, "agent cannot serve this room: "+err.Error()); ferr != nil {
		m.log.Warn("room's messages not marked failed", "peer", key, "room", room, "err", ferr)
	}
}

func wireBinding(b store.Binding) wire.Binding {
	return wire.Binding{ID: string(b.ID), Peer: b.Peer.String(), Room: string(b.Room), Alias: b.Alias, SessionID: string(b.SessionID), Mode: string(b.Mode), Created: b.CreatedAt}
}

func (d *daemon) AgentAdd(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
	acct, err := d.account(ctx, r.Account)
	if err != nil {
		return wire.Agent{}, err
	}
	ws := d.workspace.ID
	key := r.Key
	if err := d.agentAbsent(ctx, acct, r.Name); err != nil {
		return wire.Agent{}, err
	}
	tid := jam.New[jam.TemplateID](d.minter)
	var rtc *store.TemplateConfig
	if r.Runtime != nil {
		// Before anything is registered on Band.
		c, err := d.msg.conf().Add(ctx, tid, runtimeRequest(*r.Runtime))
		if err != nil {
			return wire.Agent{}, err
		}
		rtc = &c
	}
	var agentID, handle, name string
	if key != "" {
		c, err := band.NewClient(d.band.http, acct.BandURL, band.APIKey(key))
		if err != nil {
			return wire.Agent{}, err
		}
		me, err := c.AgentMe(ctx)
		if err != nil {
			return wire.Agent{}, fmt.Errorf("import agent key: %w", err)
		}
		agentID, handle, name = me.ID, me.Handle, me.Name
	} else {
		if strings.TrimSpace(r.Name) == "" {
			return wire.Agent{}, fmt.Errorf("%w: an agent needs a name", jam.ErrInvalid)
		}
		user, err := d.msg.accountClient(ctx, acct)
		if err != nil {
			return wire.Agent{}, err
		}
		desc := r.Description
		if desc == "" {
			desc = "jam agent " + r.Name
		}
		reg, err := user.RegisterAgent(ctx, r.Name, desc)
		if taken(err) {
			return wire.Agent{}, fmt.Errorf("%w: agent %s on Band (account %s); pick another name, or import it with --key", jam.ErrAlreadyExists, r.Name, acct.Profile)
		}
		if err != nil {
			return wire.Agent{}, fmt.Errorf("register agent: %w", err)
		}
		key, agentID, name = reg.Credentials.APIKey, reg.Agent.ID, reg.Agent.Name
		c, err := band.NewClient(d.band.http, acct.BandURL, band.APIKey(key))
		if err != nil {
			return wire.Agent{}, err
		}
		me, err := c.AgentMe(ctx)
		if err != nil {
			return wire.Agent{}, fmt.Errorf("new agent: %w", err)
		}
		handle = me.Handle
	}
	if r.Name != "" {
		name = r.Name
	}
	pk := jam.PeerKey{Profile: acct.Profile, Scope: scopeOf(name)}
	if err := pk.Validate(); err != nil {
		return wire.Agent{}, fmt.Errorf("agent name %q: %w", name, err)
	}
	aid, err := jam.ParseUUID[jam.IdentityID](agentID)
	if err != nil {
		return wire.Agent{}, err
	}
	// The key goes into the agent's band connection, before the row that
	// names it; a peer of the key replaced keeps its connection, rotated.
	prev, err := d.store.PeerGet(ctx, ws, pk)
	if err != nil && !errors.Is(err, jam.ErrNotFound) {
		return wire.Agent{}, err
	}
	conn, err := d.connections().SetBand(ctx, ws, prev.ConnectionID, connection.BandAgentName(pk), []byte(key))
	if err != nil {
		return wire.Agent{}, err
	}
	p := store.Peer{WorkspaceID: ws, Key: pk, AccountID: acct.ID, AgentID: aid, Handle: handle, Name: name, ConnectionID: conn.ID, CreatedAt: time.Now()}
	if p, err = d.store.PeerPut(ctx, p); err != nil {
		if prev.ConnectionID == "" {
			d.removeBandKey(ctx, conn.ID, "agent")
		}
		return wire.Agent{}, err
	}
	if rtc != nil {
		// Before the feed starts: the rooms it lists get sessions.
		if _, err := d.store.TemplatePut(ctx, store.Template{ID: tid, WorkspaceID: ws, Peer: pk, Desired: *rtc, CreatedAt: time.Now()}); err != nil {
			return wire.Agent{}, err
		}
	}
	rt, c, err := d.msg.peerRuntime(ctx, p)
	if err != nil {
		return wire.Agent{}, err
	}
	if err := d.msg.engine.AddPeer(ctx, rt); err != nil {
		return wire.Agent{}, err
	}
	d.msg.feeds.start(ws, p, c)
	return d.wireAgent(ctx, p)
}

// agentAbsent refuses, before anything is asked of Band, a new agent
// whose name jam has recorded already under the account (by its peer
// key or its name).
func (d *daemon) agentAbsent(ctx context.Context, acct store.Account, name string) error {
	if strings.TrimSpace(name) == "" {
		return nil
	}
	peers, err := d.store.PeerList(ctx, d.workspace.ID)
	if err != nil {
		return err
	}
	scope := scopeOf(name)
	for _, p := range peers {
		if p.Key.Profile == acct.Profile && (p.Key.Scope == scope || strings.EqualFold(p.Name, name)) {
			return fmt.Errorf("%w: agent %s (%s); pick another name", jam.ErrAlreadyExists, name, p.Key)
		}
	}
	return nil
}

// taken reports whether Band refused a registration because the name is
// in use (422, "has already been taken").
func taken(err error) bool {
	var be *band.Error
	if !errors.As(err, &be) || be.Status != http.StatusUnprocessableEntity {
		return false
	}
	if strings.Contains(be.Message, "has already been taken") {
		return true
	}
	for _, ds := range be.Details {
		for _, d := range ds {
			if strings.Contains(d, "has already been taken") {
				return true
			}
		}
	}
	return false
}

// peer resolves what a user typed for an agent: "profile/scope", a scope,
// a handle or a name; empty means the only agent.
func (d *daemon) peer(ctx context.Context, ref string) (store.Peer, error) {
	peers, err := d.store.PeerList(ctx, d.workspace.ID)
	if err != nil {
		return store.Peer{}, err
	}
	var found []store.Peer
	for _, p := range peers {
		if ref == "" || p.Key.String() == ref || p.Key.Scope == ref || strings.EqualFold(p.Handle, strings.TrimPrefix(ref, "@")) || strings.EqualFold(p.Name, ref) {
			found = append(found, p)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && ref == "":
		return store.Peer{}, fmt.Errorf("%w: no agents; add one with jam agent add", jam.ErrNotFound)
	case len(found) == 0:
		return store.Peer{}, fmt.Errorf("%w: no agent %q", jam.ErrNotFound, ref)
	}
	return store.Peer{}, fmt.Errorf("%w: %d agents match %q; name one with --agent", jam.ErrInvalid, len(found), ref)
}

func (d *daemon) Rooms(ctx context.Context, profile string) ([]wire.Room, error) {
	acct, err := d.account(ctx, profile)
	if err != nil {
		return nil, err
	}
	c, err := d.msg.accountClient(ctx, acct)
	if err != nil {
		return nil, err
	}
	rooms, _, err := c.MyChats(ctx, "", protocol.MaxPageLimit)
	if err != nil {
		return nil, fmt.Errorf("list rooms: %w", err)
	}
	out := make([]wire.Room, 0, len(rooms))
	for _, r := range rooms {
		w := wire.Room{ID: r.ID, Account: acct.Profile}
		if r.Title != nil {
			w.Title = *r.Title
		}
		if r.LastMessageAt != nil {
			w.LastMessageAt = *r.LastMessageAt
		}
		out = append(out, w)
	}
	return out, nil
}

func (d *daemon) RoomCreate(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
	acct, err := d.account(ctx, r.Account)
	if err != nil {
		return wire.Room{}, err
	}
	var peers []store.Peer
	for _, a := range r.Agents {
		p, err := d.peer(ctx, a)
		if err != nil {
			return wire.Room{}, err
		}
		peers = append(peers, p)
	}
	c, err := d.msg.accountClient(ctx, acct)
	if err != nil {
		return wire.Room{}, err
	}
	room, err := c.CreateChat(ctx, r.Title)
	if err != nil {
		return wire.Room{}, fmt.Errorf("create room: %w", err)
	}
	w := wire.Room{ID: room.ID, Title: r.Title, Account: acct.Profile}
	for _, p := range peers {
		if _, err := c.AddChatParticipant(ctx, room.ID, string(p.AgentID), protocol.RoleMember); err != nil {
			return w, fmt.Errorf("add %s to room %s: %w", p.Key, room.ID, err)
		}
		w.Participants = append(w.Participants, p.Handle)
	}
	return w, nil
}

// RoomAdd adds an agent to a room on Band. An owned agent's session in
// the room is made first, with the room's overrides (refused before
// anything is made or the agent is added when its placement cannot run
// them).
func (d *daemon) RoomAdd(ctx context.Context, ref string, r wire.RoomAddRequest) error {
	p, err := d.peer(ctx, r.Agent)
	if err != nil {
		return err
	}
	id, err := d.roomRef(ctx, "", ref)
	if err != nil {
		return err
	}
	room := string(id)
	acct, err := d.msg.accountByID(ctx, p.WorkspaceID, p.AccountID)
	if err != nil {
		return err
	}
	c, err := d.msg.accountClient(ctx, acct)
	if err != nil {
		return err
	}
	if r.Overrides.Repo != "" {
		if err := agentconf.CheckRepo(ctx, r.Overrides.Repo); err != nil {
			return err
		}
	}
	// A session made here for an add Band then refuses stays, unused
	// until the agent joins the room; a later add reuses it.
	if err := d.msg.addOwnedRoom(ctx, d.workspace.ID, p.Key, room, r.Overrides); err != nil {
		return err
	}
	if _, err := c.AddChatParticipant(ctx, room, string(p.AgentID), protocol.RoleMember); err != nil {
		return fmt.Errorf("add %s to room %s: %w", p.Key, room, err)
	}
	return nil
}

func (d *daemon) Bind(ctx context.Context, r wire.BindRequest) (wire.Binding, error) {
	p, err := d.peer(ctx, r.Agent)
	if err != nil {
		return wire.Binding{}, err
	}
	room, err := d.roomRef(ctx, "", r.Room)
	if err != nil {
		return wire.Binding{}, err
	}
	if err := d.roomExists(ctx, p, room); err != nil {
		return wire.Binding{}, err
	}
	alias := r.Alias
	if alias == "" {
		alias = p.Key.Scope + "@" + string(room)[:8]
	}
	b := store.Binding{ID: jam.New[jam.BindingID](d.minter), WorkspaceID: d.workspace.ID, Peer: p.Key, Room: room, Alias: alias,
		SessionID: jam.New[jam.SessionID](d.minter), Mode: jam.RuntimeAttached, CreatedAt: time.Now()}
	moved, err := d.store.BindingPut(ctx, b)
	if err != nil {
		return wire.Binding{}, err
	}
	if err := d.msg.engine.Redeliver(ctx, b.WorkspaceID, b.Peer, b.ID); err != nil {
		d.log.Warn("redeliver after bind", "binding", b.ID, "err", err)
	}
	w := wireBinding(b)
	w.Moved = moved
	return w, nil
}

// roomExists asks Band, as the agent's account, whether a room exists:
// a binding to a room that does not is refused (jam.ErrNotFound) rather
// than kept for messages that never come.
func (d *daemon) roomExists(ctx context.Context, p store.Peer, room jam.RoomID) error {
	acct, err := d.msg.accountByID(ctx, p.WorkspaceID, p.AccountID)
	if err != nil {
		return err
	}
	c, err := d.msg.accountClient(ctx, acct)
	if err != nil {
		return err
	}
	_, err = c.ChatParticipants(ctx, string(room))
	if errors.Is(err, jam.ErrNotFound) {
		return fmt.Errorf("%w: no room %s", jam.ErrNotFound, room)
	}
	if err != nil {
		return fmt.Errorf("room %s: %w", room, err)
	}
	return nil
}

func (d *daemon) Unbind(ctx context.Context, ref string) error {
	ws := d.workspace.ID
	if id, err := jam.ParseID[jam.BindingID](ref); err == nil {
		return d.store.BindingDelete(ctx, ws, id)
	}
	bs, err := d.store.BindingList(ctx, ws, jam.PeerKey{})
	if err != nil {
		return err
	}
	for _, b := range bs {
		if b.Alias == ref {
			return d.store.BindingDelete(ctx, ws, b.ID)
		}
	}
	return fmt.Errorf("%w: no binding %q", jam.ErrNotFound, ref)
}

// inboxParams resolves the agent and room filters of an inbox request.
func (d *daemon) inboxParams(ctx context.Context, agent, room string, unrouted bool, limit int, after string) (engine.InboxParams, error) {
	p := engine.InboxParams{WorkspaceID: d.workspace.ID, Unrouted: unrouted, Limit: limit}
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			return p, fmt.Errorf("%w: cursor %q is not one an inbox gave (next_cursor)", jam.ErrInvalid, after)
		}
		p.After = n
	}
	if agent != "" {
		peer, err := d.peer(ctx, agent)
		if err != nil {
			return p, err
		}
		p.Peer = peer.Key
	}
	if room != "" {
		r, err := d.roomRef(ctx, "", room)
		if err != nil {
			return p, err
		}
		p.Room = r
	}
	return p, nil
}

func wireInbox(pg engine.InboxPage) wire.Inbox {
	out := wire.Inbox{Messages: make([]wire.InboxMessage, 0, len(pg.Items)), More: pg.More}
	if pg.More {
		out.NextCursor = strconv.FormatInt(pg.Next, 10)
	}
	for _, it := range pg.Items {
		out.Messages = append(out.Messages, wire.InboxMessage{ID: string(it.MessageID), Peer: it.Peer.String(), Room: string(it.Room), Binding: string(it.Binding),
			SenderID: string(it.SenderID), SenderName: it.SenderName, Content: it.Content, AddressedToUser: it.AddressedToUser, State: it.State, ReceivedAt: it.ReceivedAt})
	}
	return out
}

func (d *daemon) Inbox(ctx context.Context, q wire.InboxQuery) (wire.Inbox, error) {
	p, err := d.inboxParams(ctx, q.Agent, q.Room, q.Unrouted, q.Limit, q.After)
	if err != nil {
		return wire.Inbox{}, err
	}
	pg, err := d.msg.engine.Inbox(ctx, p)
	return wireInbox(pg), err
}

func (d *daemon) WaitInbox(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error) {
	p, err := d.inboxParams(ctx, r.Agent, r.Room, false, r.Limit, r.After)
	if err != nil {
		return wire.Inbox{}, err
	}
	pg, err := d.msg.engine.Wait(ctx, p)
	return wireInbox(pg), err
}

// messagePeer finds the agent whose queue holds msg, or checks the named one.
func (d *daemon) messagePeer(ctx context.Context, agent, msg string) (jam.PeerKey, jam.PlatformMessageID, error) {
	id, err := d.messageRef(ctx, msg)
	if err != nil {
		return jam.PeerKey{}, "", err
	}
	if agent != "" {
		p, err := d.peer(ctx, agent)
		return p.Key, id, err
	}
	key, err := d.msg.engine.FindMessage(ctx, d.workspace.ID, id)
	return key, id, err
}

func (d *daemon) Reply(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error) {
	key, id, err := d.messagePeer(ctx, r.Agent, msg)
	if err != nil {
		return wire.ReplyResult{}, err
	}
	res, err := d.msg.engine.Reply(ctx, engine.ReplyParams{WorkspaceID: d.workspace.ID, Peer: key, MessageID: id, Text: r.Text, Mentions: r.Mentions})
	out := wire.ReplyResult{Resumed: res.Resumed, Posted: []string{}, Mentions: []string{}}
	for _, p := range res.PostedIDs {
		out.Posted = append(out.Posted, string(p))
	}
	for _, m := range res.Mentions {
		out.Mentions = append(out.Mentions, m.ID)
		out.Handles = append(out.Handles, m.Handle)
	}
	return out, err
}

func (d *daemon) Ack(ctx context.Context, msg string, r wire.AckRequest) error {
	key, id, err := d.messagePeer(ctx, r.Agent, msg)
	if err != nil {
		return err
	}
	return d.msg.engine.Ack(ctx, d.workspace.ID, key, id)
}

func (d *daemon) Send(ctx context.Context, r wire.SendRequest) (wire.SendResult, error) {
	p, err := d.peer(ctx, r.Agent)
	if err != nil {
		return wire.SendResult{}, err
	}
	room, err := d.roomRef(ctx, "", r.Room)
	if err != nil {
		return wire.SendResult{}, err
	}
	res, err := d.msg.engine.Send(ctx, engine.SendParams{WorkspaceID: d.workspace.ID, Peer: p.Key, Room: room, Text: r.Text, Recipients: r.Recipients, Directed: r.Directed})
	out := wire.SendResult{ID: string(res.ID), Body: res.Body, Mentions: []string{}, Warnings: res.Warnings}
	for _, m := range res.Mentions {
		out.Mentions = append(out.Mentions, m.ID)
	}
	return out, err
}

func (d *daemon) Notice(ctx context.Context, r wire.NoticeRequest) (wire.NoticeResult, error) {
	p, err := d.peer(ctx, r.Agent)
	if err != nil {
		return wire.NoticeResult{}, err
	}
	room, err := d.roomRef(ctx, "", r.Room)
	if err != nil {
		return wire.NoticeResult{}, err
	}
	id, err := d.msg.engine.Notice(ctx, engine.NoticeParams{WorkspaceID: d.workspace.ID, Peer: p.Key, Room: room, Text: r.Text})
	return wire.NoticeResult{ID: string(id)}, err
}
