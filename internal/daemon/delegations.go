package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/changeset"
	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/events"
	gitcli "github.com/jamhq/jam/internal/git"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mcp"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/worktree"
)

// children starts delegations' child sessions and tells their parents
// (delegation.Children).
//
// A child is an ordinary session of the delegated agent, in the
// delegation's role, in a room of its own: the agent's owner creates it on
// the platform (so the person can watch the work there) and adds the
// agent. Its worktree is on the repository the delegation's input is of:
// a change set is committed on its base commit (git show HEAD is the
// change set), a commit is checked out. Its first turn is a local notice
// with the instructions and the contract, queued once the delegation
// records the child; the parent hears of the result the same way, in its
// own room.
type children struct {
	m *messaging
}

// Start creates d's child session.
func (c children) Start(ctx context.Context, d store.Delegation) (jam.SessionID, error) {
	m, st, ws := c.m, c.m.d.store, d.WorkspaceID
	key, err := jam.ParsePeerKey(d.Agent)
	if err != nil {
		return "", err
	}
	peer, err := st.PeerGet(ctx, ws, key)
	if err != nil {
		return "", fmt.Errorf("the agent %s: %w", key, err)
	}
	t, err := st.TemplateForPeer(ctx, ws, key)
	if errors.Is(err, jam.ErrNotFound) {
		return "", fmt.Errorf("%w: %s is not an agent jam runs", jam.ErrInvalid, key)
	}
	if err != nil {
		return "", err
	}
	parent, err := st.SessionGet(ctx, ws, d.Parent)
	if err != nil {
		return "", fmt.Errorf("the parent session %s: %w", d.Parent, err)
	}
	pin, err := c.pin(ctx, d, parent)
	if err != nil {
		return "", err
	}
	acct, err := m.accountByID(ctx, ws, peer.AccountID)
	if err != nil {
		return "", err
	}
	client, err := m.accountClient(ctx, acct)
	if err != nil {
		return "", err
	}
	room, err := client.CreateChat(ctx, roomTitle(d, parent))
	if err != nil {
		return "", fmt.Errorf("create the delegation's room: %w", err)
	}
	roomID, err := jam.ParseUUID[jam.RoomID](room.ID)
	if err != nil {
		return "", err
	}
	s, err := m.childSession(ctx, t, d, roomID, pin)
	if err != nil {
		return "", err
	}
	if _, err := client.AddChatParticipant(ctx, room.ID, string(peer.AgentID), protocol.RoleMember); err != nil {
		return "", fmt.Errorf("add %s to the delegation's room %s: %w", key, room.ID, err)
	}
	return s.ID, nil
}

// roomTitle names a delegation's room (at most 120 characters, Band's
// bound).
func roomTitle(d store.Delegation, parent store.Session) string {
	of := ""
	switch {
	case d.Inputs.ChangeSetID != "":
		of = " of " + string(d.Inputs.ChangeSetID)
	case d.Inputs.Commit != "":
		of = " of " + d.Inputs.Commit[:12]
	}
	title := fmt.Sprintf("%s%s for %s (%s)", d.Role, of, parent.Peer.Scope, d.ID)
	if len(title) > 120 {
		title = title[:120]
	}
	return title
}

// childPin is where a child's worktree starts: repo ("" the template's)
// at commit ("" its HEAD), with cs committed on it when set.
type childPin struct {
	repo, commit string
	cs           *store.ChangeSet
}

// pin finds the repository and commit d's inputs are of. A change set is
// of the repository of the session that captured it, at its base; a
// commit is of the parent's repository.
func (c children) pin(ctx context.Context, d store.Delegation, parent store.Session) (childPin, error) {
	st, ws := c.m.d.store, d.WorkspaceID
	switch {
	case d.Inputs.ChangeSetID != "":
		cs, err := st.ChangeSetGet(ctx, ws, d.Inputs.ChangeSetID)
		if err != nil {
			return childPin{}, fmt.Errorf("change set %s: %w", d.Inputs.ChangeSetID, err)
		}
		src, err := st.WorktreeForSession(ctx, ws, cs.SessionID)
		if err != nil {
			return childPin{}, fmt.Errorf("the worktree change set %s is of: %w", cs.ID, err)
		}
		if src.Repo == "" || cs.BaseCommit == "" {
			return childPin{}, fmt.Errorf("%w: change set %s is of a directory that is no git repository; delegate it without pinning it", jam.ErrInvalid, cs.ID)
		}
		if cs.PatchOmitted {
			return childPin{}, fmt.Errorf("%w: change set %s is too large to apply (its patch was not kept)", jam.ErrInvalid, cs.ID)
		}
		if d.Inputs.Commit != "" && d.Inputs.Commit != cs.BaseCommit {
			return childPin{}, fmt.Errorf("%w: change set %s is on commit %s, not %s", jam.ErrInvalid, cs.ID, cs.BaseCommit, d.Inputs.Commit)
		}
		return childPin{repo: src.Repo, commit: cs.BaseCommit, cs: &cs}, nil
	case d.Inputs.Commit != "":
		src, err := st.WorktreeForSession(ctx, ws, parent.ID)
		if err != nil {
			return childPin{}, err
		}
		if src.Repo == "" {
			return childPin{}, fmt.Errorf("%w: session %s has no git repository to find commit %s in", jam.ErrInvalid, parent.ID, d.Inputs.Commit)
		}
		if _, err := gitcli.Resolve(ctx, src.Repo, d.Inputs.Commit); err != nil {
			return childPin{}, fmt.Errorf("commit %s: %w", d.Inputs.Commit, err)
		}
		return childPin{repo: src.Repo, commit: d.Inputs.Commit}, nil
	}
	return childPin{}, nil
}

// childSession makes the child session of d in room, its worktree at pin,
// and binds the room to it.
func (m *messaging) childSession(ctx context.Context, t store.Template, d store.Delegation, room jam.RoomID, pin childPin) (store.Session, error) {
	st, ws := m.d.store, d.WorkspaceID
	key, err := jam.ParsePeerKey(d.Agent)
	if err != nil {
		return store.Session{}, err
	}
	var ov store.SessionOverrides
	if pin.repo != "" && pin.repo != t.Desired.Repo {
		ov.Repo = pin.repo
	}
	// Unlike ownedRoom, no lock: the room was made for this session, and
	// nothing routes to the agent in it before the binding below exists
	// (the agent joins the room after).
	now := time.Now()
	s := store.Session{ID: jam.New[jam.SessionID](m.d.minter), WorkspaceID: ws, TemplateID: t.ID, Peer: key, Room: room, Role: d.Role,
		Overrides: ov, CreatedAt: now}
	root := filepath.Join(m.d.cfg.DataDir, worktreeDir, string(t.ID))
	w, err := worktree.NewAt(ctx, root, jam.New[jam.WorktreeID](m.d.minter), t, s, now, pin.commit)
	if err != nil {
		return store.Session{}, fmt.Errorf("the child's worktree: %w", err)
	}
	if pin.cs != nil {
		if err := changeset.Apply(ctx, *pin.cs, w.Path, false); err != nil {
			return store.Session{}, errors.Join(fmt.Errorf("the child's worktree: %w", err), worktree.Remove(context.WithoutCancel(ctx), w, true))
		}
		if !pin.cs.Empty() {
			msg := fmt.Sprintf("jam: change set %s\n\nThe change set delegation %s is of.", pin.cs.ID, d.ID)
			if _, err := gitcli.CommitAll(ctx, w.Repo, w.Path, msg); err != nil {
				return store.Session{}, errors.Join(fmt.Errorf("the child's worktree: %w", err), worktree.Remove(context.WithoutCancel(ctx), w, true))
			}
		}
	}
	if s, err = st.SessionCreate(ctx, s); err != nil {
		return store.Session{}, err
	}
	if _, err := st.WorktreePut(ctx, w); err != nil {
		return store.Session{}, err
	}
	_, err = st.BindingPut(ctx, store.Binding{ID: jam.New[jam.BindingID](m.d.minter), WorkspaceID: ws, Peer: key, Room: room,
		Alias: "room-" + string(room)[:8], SessionID: s.ID, Mode: jam.RuntimeOwned, CreatedAt: now})
	return s, err
}

// Begin queues the child's first turn: a notice with the instructions.
func (c children) Begin(ctx context.Context, d store.Delegation) error {
	s, err := c.m.d.store.SessionGet(ctx, d.WorkspaceID, d.Child)
	if err != nil {
		return err
	}
	_, err = c.m.engine.Notice(ctx, engine.NoticeParams{WorkspaceID: d.WorkspaceID, Peer: s.Peer, Room: s.Room, Text: briefing(d)})
	return err
}

// briefing is a child's first prompt.
func briefing(d store.Delegation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You have been delegated work: delegation %s, in the role %s.\n\n", d.ID, d.Role)
	switch {
	case d.Inputs.ChangeSetID != "":
		fmt.Fprintf(&b, "Your worktree holds change set %s committed on its base: `git show HEAD` shows it.\n\n", d.Inputs.ChangeSetID)
	case d.Inputs.Commit != "":
		fmt.Fprintf(&b, "Your worktree is checked out at commit %s.\n\n", d.Inputs.Commit)
	}
	b.WriteString("Instructions:\n")
	b.WriteString(d.Instructions)
	fmt.Fprintf(&b, "\n\nAnswer with jam's submit_result tool: delegation %q and a result, a JSON object that this %s contract accepts:\n%s\n",
		d.ID, d.ContractName, d.Contract)
	fmt.Fprintf(&b, "An invalid result is refused with its problems; %d invalid results fail the delegation. Nothing you write in the room counts as the result.",
		d.MaxAttempts)
	return b.String()
}

// Notify queues text as a local notice for parent, in its room.
func (c children) Notify(ctx context.Context, parent jam.SessionID, text string) error {
	ws := c.m.d.workspace.ID
	s, err := c.m.d.store.SessionGet(ctx, ws, parent)
	if err != nil {
		return err
	}
	_, err = c.m.engine.Notice(ctx, engine.NoticeParams{WorkspaceID: ws, Peer: s.Peer, Room: s.Room, Text: text})
	return err
}

// The delegation tools (package mcp) for the session a token names.

func (a toolActions) Delegate(ctx context.Context, s jam.SessionID, in mcp.DelegateInput) (mcp.Delegation, error) {
	rt, err := a.runtime()
	if err != nil {
		return mcp.Delegation{}, err
	}
	m, ws := a.m, a.m.d.workspace.ID
	sess, err := m.d.store.SessionGet(ctx, ws, s)
	if err != nil {
		return mcp.Delegation{}, err
	}
	roster, err := rt.Participants(ctx, s)
	if err != nil {
		return mcp.Delegation{}, err
	}
	p, n := protocol.FindParticipant(roster, in.Agent)
	switch {
	case n == 0:
		return mcp.Delegation{}, fmt.Errorf("%w: agent %q is not in your room (room_participants lists who is)", jam.ErrInvalid, in.Agent)
	case n > 1:
		return mcp.Delegation{}, fmt.Errorf("%w: agent %q is ambiguous (%d participants match; use the id or the full handle)", jam.ErrInvalid, in.Agent, n)
	case !strings.EqualFold(p.Type, "Agent"):
		return mcp.Delegation{}, fmt.Errorf("%w: %q is a person; delegate to an agent", jam.ErrInvalid, in.Agent)
	}
	peers, err := m.d.store.PeerList(ctx, ws)
	if err != nil {
		return mcp.Delegation{}, err
	}
	var key jam.PeerKey
	for _, q := range peers {
		if strings.EqualFold(string(q.AgentID), p.ID) {
			key = q.Key
		}
	}
	switch {
	case key == (jam.PeerKey{}):
		return mcp.Delegation{}, fmt.Errorf("%w: %s is not an agent jam runs here", jam.ErrInvalid, p.HandleText())
	case key == sess.Peer:
		return mcp.Delegation{}, fmt.Errorf("%w: you cannot delegate to yourself", jam.ErrInvalid)
	}
	req := delegation.CreateRequest{Workspace: ws, Parent: s, Role: in.Role, Agent: key.String(), Instructions: in.Instructions,
		Inputs: store.DelegationInputs{Commit: in.Commit}, Contract: in.Contract, Schema: in.Schema}
	if in.MaxAttempts != nil {
		req.MaxAttempts = *in.MaxAttempts
	}
	if in.ChangeSet != "" {
		if req.Inputs.ChangeSetID, err = jam.ParseID[jam.ChangeSetID](in.ChangeSet); err != nil {
			return mcp.Delegation{}, err
		}
		if _, err := m.d.store.ChangeSetGet(ctx, ws, req.Inputs.ChangeSetID); err != nil {
			return mcp.Delegation{}, fmt.Errorf("change set %s: %w", in.ChangeSet, err)
		}
	}
	d, err := m.delegations.Create(ctx, req)
	if err != nil {
		return mcp.Delegation{}, err
	}
	out := toolDelegation(delegation.Status{Delegation: d}, false)
	out.Note = fmt.Sprintf("Started: %s works on it in a room of its own. You get a notice when it submits its result or fails; "+
		"delegation_status reads it meanwhile.", p.HandleText())
	return out, nil
}

// delegationFor reads delegation id for session s, which must be its
// parent or its child: for any other session it does not exist.
func (a toolActions) delegationFor(ctx context.Context, s jam.SessionID, id string) (delegation.Status, error) {
	did, err := jam.ParseID[jam.DelegationID](id)
	if err != nil {
		return delegation.Status{}, err
	}
	st, err := a.m.delegations.Status(ctx, a.m.d.workspace.ID, did)
	if err != nil {
		return delegation.Status{}, err
	}
	if st.Delegation.Parent != s && st.Delegation.Child != s {
		return delegation.Status{}, fmt.Errorf("delegation %s: %w", did, jam.ErrNotFound)
	}
	return st, nil
}

func (a toolActions) DelegationStatus(ctx context.Context, s jam.SessionID, id string) (mcp.Delegation, error) {
	st, err := a.delegationFor(ctx, s, id)
	if err != nil {
		return mcp.Delegation{}, err
	}
	return toolDelegation(st, true), nil
}

func (a toolActions) SubmitResult(ctx context.Context, s jam.SessionID, in mcp.SubmitInput) (mcp.Delegation, error) {
	did, err := jam.ParseID[jam.DelegationID](in.Delegation)
	if err != nil {
		return mcp.Delegation{}, err
	}
	if _, err := a.m.delegations.Submit(ctx, a.m.d.workspace.ID, s, did, in.Result); err != nil {
		return mcp.Delegation{}, err
	}
	st, err := a.delegationFor(ctx, s, in.Delegation)
	if err != nil {
		return mcp.Delegation{}, err
	}
	out := toolDelegation(st, false)
	out.Note = "Recorded for good; the delegating agent is told. You may end your turn."
	return out, nil
}

// toolDelegation is a delegation as the tools show it; detail adds the
// instructions and the contract's schema.
func toolDelegation(st delegation.Status, detail bool) mcp.Delegation {
	d := st.Delegation
	out := mcp.Delegation{ID: string(d.ID), Role: string(d.Role), Agent: d.Agent, Parent: string(d.Parent), Child: string(d.Child),
		ChangeSet: string(d.Inputs.ChangeSetID), Commit: d.Inputs.Commit, Contract: d.ContractName, State: string(d.State),
		Reason: d.Reason, Error: d.Error, Attempts: d.Attempts, MaxAttempts: d.MaxAttempts}
	if detail {
		out.Instructions, out.Schema = d.Instructions, d.Contract
	}
	if st.Result != nil {
		out.Result, out.Digest = st.Result.Result, st.Result.Digest
	}
	return out
}

// Event kinds of delegations: one was created, one moved (running, an
// invalid result counted, submitted, failed, cancelled).
const (
	kindDelegationCreated = "delegation.created"
	kindDelegationUpdated = "delegation.updated"
)

// delegationChanged publishes d on the event stream, named by the
// parent's agent and room. The instructions stay out of the event (the
// store keeps events unsealed); GET /v1/delegations/{id} has them.
func (d *daemon) delegationChanged(v store.Delegation) {
	ctx := context.Background()
	result, err := d.submittedResult(ctx, v)
	if err != nil {
		d.log.Warn("delegation event without its verdict", "delegation", v.ID, "err", err)
	}
	w := d.wireDelegation(ctx, v, result)
	w.Instructions = ""
	kind := kindDelegationUpdated
	if v.State == store.DelegationPending {
		kind = kindDelegationCreated
	}
	ev := events.Event{Kind: kind, Data: encodeData(w)}
	if p, err := d.store.SessionGet(ctx, v.WorkspaceID, v.Parent); err == nil {
		ev.Peer, ev.Room = p.Peer, p.Room
	}
	d.publish(ev)
}
