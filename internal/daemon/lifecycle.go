package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/session"
	"github.com/jamhq/jam/internal/store"
)

// The lifecycle use cases (api.Lifecycle): removing an agent or an
// account, restarting an agent's processes, an agent leaving a room, and
// a session's archiving and closing, and a turn's retry.

// AgentRemove implements api.Lifecycle. With DeleteOnBand the agent is
// deleted on Band first (nothing changes here when Band refuses). Then its
// open and archived sessions are closed (their queued turns cancelled,
// a running one cancelled and waited for, their git worktrees archived:
// the branches keep the work), its processes stop (their leases end,
// reason agent_removed), its feed stops, and the peer goes with its
// template, bindings, retired rooms and the messages jam queued or
// spooled for it, which stay unsettled on Band (they are deleted here,
// not quarantined: they are Band's, and Band still holds them for the
// agent). Sessions, turns and worktrees stay as history. The same name
// can be added again afterwards. An attached agent has no sessions or
// processes; the rest is the same.
func (d *daemon) AgentRemove(ctx context.Context, agent string, r wire.AgentRemoveRequest) (wire.AgentRemoved, error) {
	p, err := d.peer(ctx, agent)
	if err != nil {
		return wire.AgentRemoved{}, err
	}
	if d.msg == nil {
		return wire.AgentRemoved{}, fmt.Errorf("%w: messaging is not running", jam.ErrUnavailable)
	}
	ws := d.workspace.ID
	out := wire.AgentRemoved{Agent: p.Key.String()}
	if r.DeleteOnBand {
		acct, err := d.msg.accountByID(ctx, ws, p.AccountID)
		if err != nil {
			return out, err
		}
		c, err := d.msg.accountClient(ctx, acct)
		if err != nil {
			return out, err
		}
		if err := c.DeleteAgent(ctx, string(p.AgentID), true); err != nil && !errors.Is(err, jam.ErrNotFound) {
			return out, fmt.Errorf("delete %s on Band (nothing was removed): %w", p.Key, err)
		}
		out.DeletedOnBand = true
	}
	t, err := d.store.TemplateForPeer(ctx, ws, p.Key)
	switch {
	case err == nil:
		rt, err := d.ownedRuntime()
		if err != nil {
			return out, err
		}
		ss, err := d.store.SessionList(ctx, ws)
		if err != nil {
			return out, err
		}
		for _, s := range ss {
			if s.TemplateID != t.ID || s.Lifecycle == jam.SessionClosed {
				continue
			}
			if _, err := d.closeSession(ctx, rt, s.ID); err != nil {
				return out, fmt.Errorf("close session %s: %w", s.ID, err)
			}
			out.Sessions++
		}
		if err := rt.StopAgent(ctx, t.ID); err != nil {
			d.log.Warn("stop the removed agent's processes", "peer", p.Key, "err", err)
		}
	case !errors.Is(err, jam.ErrNotFound):
		return out, err
	}
	d.msg.feeds.stopPeer(p.Key)
	res, err := d.msg.engine.RemovePeer(ctx, ws, p.Key)
	if err != nil {
		return out, err
	}
	out.Bindings, out.Dropped = res.Bindings, res.Queued+res.Spooled
	d.removeBandKey(ctx, p.ConnectionID, "agent")
	d.log.Info("agent removed", "peer", p.Key, "sessions", out.Sessions, "bindings", out.Bindings, "dropped", out.Dropped, "deleted_on_band", out.DeletedOnBand)
	return out, nil
}

// AgentRestart implements api.Lifecycle: the owned agent's live processes
// are replaced at the next turn boundary (session.Manager.Restart).
func (d *daemon) AgentRestart(ctx context.Context, agent string) (wire.AgentRestarted, error) {
	p, err := d.peer(ctx, agent)
	if err != nil {
		return wire.AgentRestarted{}, err
	}
	t, err := d.store.TemplateForPeer(ctx, d.workspace.ID, p.Key)
	if errors.Is(err, jam.ErrNotFound) {
		return wire.AgentRestarted{}, fmt.Errorf("%w: %s is attached: jam runs no process for it", jam.ErrConflict, p.Key)
	}
	if err != nil {
		return wire.AgentRestarted{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.AgentRestarted{}, err
	}
	res, err := rt.Restart(ctx, t.ID)
	if err != nil {
		return wire.AgentRestarted{}, err
	}
	return wire.AgentRestarted{Agent: p.Key.String(), Stopped: res.Stopped, Pending: res.Pending}, nil
}

// RoomLeave implements api.Lifecycle: the agent is removed from the room
// on Band (one it is no longer in there is left locally all the same);
// then its session there is closed (queued turns cancelled, a running
// one cancelled, its git worktree archived) and the room is retired for
// it: its binding and the room's queued and spooled messages go (they
// stay unsettled on Band). Adding the agent to the room again gives it a
// new session.
func (d *daemon) RoomLeave(ctx context.Context, room string, r wire.RoomLeaveRequest) (wire.RoomLeft, error) {
	p, err := d.peer(ctx, r.Agent)
	if err != nil {
		return wire.RoomLeft{}, err
	}
	id, err := d.roomRef(ctx, "", room)
	if err != nil {
		return wire.RoomLeft{}, err
	}
	if d.msg == nil {
		return wire.RoomLeft{}, fmt.Errorf("%w: messaging is not running", jam.ErrUnavailable)
	}
	ws := d.workspace.ID
	out := wire.RoomLeft{Room: string(id), Agent: p.Key.String()}
	acct, err := d.msg.accountByID(ctx, ws, p.AccountID)
	if err != nil {
		return out, err
	}
	c, err := d.msg.accountClient(ctx, acct)
	if err != nil {
		return out, err
	}
	if err := c.RemoveChatParticipant(ctx, string(id), string(p.AgentID)); err != nil && !errors.Is(err, jam.ErrNotFound) {
		return out, fmt.Errorf("remove %s from room %s: %w", p.Key, id, err)
	}
	s, err := d.store.SessionForRoom(ctx, ws, p.Key, id)
	switch {
	case err == nil:
		rt, err := d.ownedRuntime()
		if err != nil {
			return out, err
		}
		if _, err := d.closeSession(ctx, rt, s.ID); err != nil {
			return out, fmt.Errorf("close session %s: %w", s.ID, err)
		}
		out.Session = string(s.ID)
	case !errors.Is(err, jam.ErrNotFound):
		return out, err
	}
	res, err := d.msg.engine.RetireRoom(ctx, ws, p.Key, id)
	if err != nil {
		return out, err
	}
	out.Dropped = res.Queued + res.Spooled
	return out, nil
}

// SessionArchive implements api.Lifecycle (session.Manager.ArchiveSession).
func (d *daemon) SessionArchive(ctx context.Context, session string) (wire.Session, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return wire.Session{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.Session{}, err
	}
	if _, err := rt.ArchiveSession(ctx, id); err != nil {
		return wire.Session{}, err
	}
	return d.wireSession(ctx, id)
}

// SessionClose implements api.Lifecycle: the session is closed for good
// (session.Manager.CloseSession). While its agent is still bound in the
// room, a new session is made there at once, with the same room
// configuration and a new worktree, and the room's binding moves to it:
// the messages still waiting in the room, and later ones, are answered in
// the new session. (To stop the agent answering in the room, jam room
// leave.)
func (d *daemon) SessionClose(ctx context.Context, session string) (wire.Session, error) {
	id, err := d.sessionRef(ctx, session)
	if err != nil {
		return wire.Session{}, err
	}
	ws := d.workspace.ID
	s, err := d.store.SessionGet(ctx, ws, id)
	if err != nil {
		return wire.Session{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.Session{}, err
	}
	if _, err := d.closeSession(ctx, rt, id); err != nil {
		return wire.Session{}, err
	}
	b, err := d.store.BindingForRoom(ctx, ws, s.Peer, s.Room)
	switch {
	case err == nil && b.SessionID == s.ID:
		if err := d.msg.ownedRoom(ctx, ws, s.Peer, s.Room, s.Overrides); err != nil {
			d.log.Warn("no new session after a close", "session", id, "room", s.Room, "err", err)
		} else if err := d.msg.engine.Redeliver(ctx, ws, s.Peer, b.ID); err != nil {
			d.log.Warn("redeliver after a close", "binding", b.ID, "err", err)
		}
	case err != nil && !errors.Is(err, jam.ErrNotFound):
		return wire.Session{}, err
	}
	return d.wireSession(ctx, id)
}

// wireSession is one session as Sessions shows it.
func (d *daemon) wireSession(ctx context.Context, id jam.SessionID) (wire.Session, error) {
	ss, err := d.Sessions(ctx)
	if err != nil {
		return wire.Session{}, err
	}
	for _, s := range ss {
		if s.ID == string(id) {
			return s, nil
		}
	}
	return wire.Session{}, fmt.Errorf("%w: no session %s", jam.ErrNotFound, id)
}

// RetryTurn implements api.Lifecycle (session.Manager.Retry).
func (d *daemon) RetryTurn(ctx context.Context, turn string) (wire.Turn, error) {
	id, err := d.turnRef(ctx, turn)
	if err != nil {
		return wire.Turn{}, err
	}
	rt, err := d.ownedRuntime()
	if err != nil {
		return wire.Turn{}, err
	}
	t, err := rt.Retry(ctx, id)
	if err != nil {
		return wire.Turn{}, err
	}
	w, err := d.wireTurn(ctx, t)
	w.Session = string(t.SessionID)
	return w, err
}

// AccountRemove implements api.Lifecycle: an account no agent uses is
// removed with its band connection (its key) and its rooms' cache, after its room feed
// stops. One agents use is jam.ErrConflict, naming them; so is the
// account jamd was started with (the embedded hub's owner, or --band),
// which it would record again at its next start.
func (d *daemon) AccountRemove(ctx context.Context, profile string) (wire.AccountRemoved, error) {
	ws := d.workspace.ID
	acct, err := d.store.AccountGet(ctx, ws, profile)
	if err != nil {
		return wire.AccountRemoved{}, err
	}
	if d.band.userID != "" && profile == d.configuredProfile() {
		return wire.AccountRemoved{}, fmt.Errorf("%w: account %s is the one jamd was started with", jam.ErrConflict, profile)
	}
	peers, err := d.store.PeerList(ctx, ws)
	if err != nil {
		return wire.AccountRemoved{}, err
	}
	var users []string
	for _, p := range peers {
		if p.Key.Profile == profile {
			users = append(users, p.Key.String())
		}
	}
	if len(users) > 0 {
		return wire.AccountRemoved{}, fmt.Errorf("%w: agents use account %s: %v (remove them first with jam agent remove)", jam.ErrConflict, profile, users)
	}
	if d.rooms != nil {
		if err := d.rooms.stopAccount(ctx, acct.ID); err != nil {
			return wire.AccountRemoved{}, err
		}
	}
	if err := d.store.AccountRemove(ctx, ws, profile); err != nil {
		return wire.AccountRemoved{}, err
	}
	d.removeBandKey(ctx, acct.ConnectionID, "account")
	if d.msg != nil {
		d.msg.mu.Lock()
		delete(d.msg.clients, acct.ID)
		d.msg.mu.Unlock()
	}
	return wire.AccountRemoved{Profile: profile}, nil
}

// stopAccount stops an account's socket and room feed, if they run.
func (rf *roomFeeds) stopAccount(ctx context.Context, id jam.AccountID) error {
	rf.mu.Lock()
	old := rf.feeds[id]
	delete(rf.feeds, id)
	rf.mu.Unlock()
	if old == nil {
		return nil
	}
	old.cancel()
	<-old.done
	return old.feed.Stop(ctx)
}

// closeSession closes a session for good and lets go of what it was
// given: its tools' token is revoked, its standing approvals forgotten,
// and a delegation it was working on as a child fails (the parent is
// told).
func (d *daemon) closeSession(ctx context.Context, rt *session.Manager, id jam.SessionID) (store.Session, error) {
	s, err := rt.CloseSession(ctx, id)
	if err != nil {
		return s, err
	}
	if d.msg.tools != nil {
		d.msg.tools.Revoke(id)
	}
	if d.msg.approvals != nil {
		d.msg.approvals.Forget(id)
	}
	if d.msg.delegations != nil {
		if err := d.msg.delegations.ChildClosed(context.WithoutCancel(ctx), d.workspace.ID, id); err != nil {
			d.log.Warn("the closed session's delegation", "session", id, "err", err)
		}
	}
	return s, nil
}
