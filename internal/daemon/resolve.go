package daemon

import (
	"context"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The one place where what a person typed for a room, session, turn or
// message becomes its id (jam.PickRef's rules): the whole id, a unique
// prefix of it (for sessions and turns with or without the
// "sess_"/"turn_" part), or, for rooms, the title.

// roomRef resolves a room: a whole UUID as it is, else a title or an id
// prefix among the account's rooms on Band.
func (d *daemon) roomRef(ctx context.Context, account, ref string) (jam.RoomID, error) {
	if id, err := jam.ParseUUID[jam.RoomID](ref); err == nil {
		return id, nil
	}
	rooms, err := d.Rooms(ctx, account)
	if err != nil {
		return "", err
	}
	cands := make([]jam.RefCandidate, 0, len(rooms))
	for _, r := range rooms {
		cands = append(cands, jam.RefCandidate{ID: r.ID, Title: r.Title})
	}
	id, err := jam.PickRef("room", ref, ref, cands)
	if err != nil {
		return "", err
	}
	return jam.ParseUUID[jam.RoomID](id)
}

// sessionRef resolves a session: a whole id as it is, else a prefix.
func (d *daemon) sessionRef(ctx context.Context, ref string) (jam.SessionID, error) {
	if id, err := jam.ParseID[jam.SessionID](ref); err == nil {
		return id, nil
	}
	ss, err := d.store.SessionList(ctx, d.workspace.ID)
	if err != nil {
		return "", err
	}
	cands := make([]jam.RefCandidate, 0, len(ss))
	for _, s := range ss {
		cands = append(cands, jam.RefCandidate{ID: string(s.ID)})
	}
	id, err := jam.PickRef("session", ref, jam.WithPrefix(jam.SessionID("").Prefix(), ref), cands)
	return jam.SessionID(id), err
}

// turnRef resolves a turn: a whole id as it is, else a prefix among the
// turns of every session.
func (d *daemon) turnRef(ctx context.Context, ref string) (jam.TurnID, error) {
	if id, err := jam.ParseID[jam.TurnID](ref); err == nil {
		return id, nil
	}
	ss, err := d.store.SessionList(ctx, d.workspace.ID)
	if err != nil {
		return "", err
	}
	var cands []jam.RefCandidate
	for _, s := range ss {
		ts, err := d.store.TurnList(ctx, d.workspace.ID, s.ID)
		if err != nil {
			return "", err
		}
		for _, t := range ts {
			cands = append(cands, jam.RefCandidate{ID: string(t.ID)})
		}
	}
	id, err := jam.PickRef("turn", ref, jam.WithPrefix(jam.TurnID("").Prefix(), ref), cands)
	return jam.TurnID(id), err
}

// messageRef resolves a message: a whole id as it is, else a prefix
// among the messages queued for the agents.
func (d *daemon) messageRef(ctx context.Context, ref string) (jam.PlatformMessageID, error) {
	if id, err := jam.ParseMessageID(ref); err == nil {
		return id, nil
	}
	rows, err := d.store.QueueList(ctx, store.QueueListParams{WorkspaceID: d.workspace.ID})
	if err != nil {
		return "", err
	}
	seen := map[string]bool{}
	var cands []jam.RefCandidate
	for _, r := range rows {
		if id := string(r.MessageID); !seen[id] {
			seen[id] = true
			cands = append(cands, jam.RefCandidate{ID: id})
		}
	}
	id, err := jam.PickRef("message", ref, ref, cands)
	if err != nil {
		return "", err
	}
	return jam.ParseMessageID(id)
}
