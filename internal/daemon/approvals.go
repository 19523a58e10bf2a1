package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/approval"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/session"
)

// Event kinds of approvals: one is pending, one was answered (by the
// person, a timeout or the turn's end).
const (
	kindApprovalPending  = "approval.pending"
	kindApprovalResolved = "approval.resolved"
)

// newApprovals builds the service that asks the person for agents whose
// permission policy is ask: the room is told with a blocking attention
// event that names the person, the answer is the turn's evidence (an
// approval update in its output) and resolves that event, and both show
// on the event stream.
func (m *messaging) newApprovals(rt *atomic.Pointer[session.Manager]) (*approval.Service, error) {
	return approval.New(approval.Config{Timeout: m.d.cfg.ApprovalTimeout, Minter: m.d.minter,
		Announce: func(ctx context.Context, r approval.Request) string {
			person := "the person"
			if a, err := m.d.store.AccountGet(ctx, r.Workspace, r.Peer.Profile); err == nil && a.Handle != "" {
				person = "@" + a.Handle
			}
			text := fmt.Sprintf("%s: %s asks to %s. Answer with `jam approve %s allow|always|deny` or in the web UI; without an answer by %s it is denied.",
				person, r.Agent, r.Title, r.ID, r.Deadline.UTC().Format(time.Kitchen+" MST"))
			meta, _ := json.Marshal(map[string]any{"kind": "question", "blocking": true, "approval_id": r.ID, "turn_id": r.Turn})
			m.d.publish(events.Event{Kind: kindApprovalPending, Peer: r.Peer, Room: r.Room, Data: encodeData(wireApproval(r))})
			ev, err := m.engine.RoomEvent(ctx, r.Workspace, r.Peer, r.Room, protocol.EventFields{Content: clipEvent(text), MessageType: "attention", Metadata: meta})
			if err != nil {
				m.log.Warn("approval not announced in the room", "approval", r.ID, "room", r.Room, "err", err)
				return ""
			}
			return ev.ID
		},
		Resolved: func(ctx context.Context, a approval.Answer) {
			r := a.Request
			if s := rt.Load(); s != nil {
				s.TurnEvidence(r.Session, harness.Update{Kind: harness.UpdateApproval, ToolCallID: r.ToolCallID, ToolKind: r.ToolKind,
					Title: fmt.Sprintf("%s (%s by %s)", r.Title, a.Decision, a.By), Status: string(a.Decision)})
			}
			m.d.publish(events.Event{Kind: kindApprovalResolved, Peer: r.Peer, Room: r.Room,
				Data: encodeData(map[string]any{"approval": wireApproval(r), "decision": a.Decision, "by": a.By})})
			if r.Announcement == "" {
				return
			}
			meta, _ := json.Marshal(map[string]any{"kind": "question", "resolves": r.Announcement, "resolution": string(a.Decision), "approval_id": r.ID})
			text := fmt.Sprintf("%s: %s to %s (%s).", a.Decision, r.Agent, r.Title, a.By)
			if _, err := m.engine.RoomEvent(ctx, r.Workspace, r.Peer, r.Room, protocol.EventFields{Content: clipEvent(text), MessageType: "attention", Metadata: meta}); err != nil {
				m.log.Warn("approval's answer not shown in the room", "approval", r.ID, "err", err)
			}
		},
	})
}

// clipEvent keeps an event's content within Band's cap.
func clipEvent(s string) string {
	if r := []rune(s); len(r) > 4000 {
		return string(r[:4000]) + "…"
	}
	return s
}

// askPerson is the Approval of a process whose policy is ask: the request
// of a thread with a running turn waits for the person; any other is
// rejected.
func (m *messaging) askPerson(rt *atomic.Pointer[session.Manager]) harness.Approval {
	return func(ctx context.Context, req harness.ApprovalRequest) harness.Decision {
		s := rt.Load()
		if s == nil || m.approvals == nil {
			return harness.Reject
		}
		sess, turn, ok := s.RunningTurn(req.Thread)
		if !ok {
			return harness.Reject
		}
		agent := sess.Peer.String()
		if p, err := m.d.store.PeerGet(ctx, sess.WorkspaceID, sess.Peer); err == nil && p.Handle != "" {
			agent = "@" + p.Handle
		}
		title := req.Title
		if title == "" {
			title = "use a tool"
			if req.ToolKind != "" {
				title = "use a tool (" + req.ToolKind + ")"
			}
		}
		a := m.approvals.Ask(ctx, approval.Request{Workspace: sess.WorkspaceID, Session: sess.ID, Turn: turn.ID, Peer: sess.Peer, Room: sess.Room,
			Agent: agent, Title: title, ToolKind: req.ToolKind, ToolCallID: req.ToolCallID})
		if a.Decision.Allows() {
			return harness.AllowOnce
		}
		return harness.Reject
	}
}

// wireApproval is a pending request on the wire.
func wireApproval(r approval.Request) wire.Approval {
	return wire.Approval{ID: string(r.ID), Session: string(r.Session), Turn: string(r.Turn), Agent: r.Agent, Room: string(r.Room),
		Title: r.Title, ToolKind: r.ToolKind, Created: r.Created, Deadline: r.Deadline}
}

// The approval routes of the control API.

func (d *daemon) Approvals(context.Context) ([]wire.Approval, error) {
	ap := d.msg.approvals
	if ap == nil {
		return []wire.Approval{}, nil
	}
	list := ap.Pending(d.workspace.ID)
	out := make([]wire.Approval, 0, len(list))
	for _, r := range list {
		out = append(out, wireApproval(r))
	}
	return out, nil
}

func (d *daemon) Approve(ctx context.Context, id string, req wire.ApproveRequest) (wire.ApprovalAnswer, error) {
	ap := d.msg.approvals
	if ap == nil {
		return wire.ApprovalAnswer{}, fmt.Errorf("%w: owned runtimes are not running", jam.ErrUnavailable)
	}
	aid, err := jam.ParseID[jam.ApprovalID](id)
	if err != nil {
		return wire.ApprovalAnswer{}, err
	}
	dec, err := approval.ParseDecision(req.Decision)
	if err != nil {
		return wire.ApprovalAnswer{}, err
	}
	// The person of the asking agent's account answers (a request no
	// longer waiting is refused by Answer, naming how it ended).
	by := "the person"
	if r, err := ap.Get(d.workspace.ID, aid); err == nil {
		if a, err := d.store.AccountGet(ctx, d.workspace.ID, r.Peer.Profile); err == nil && a.Handle != "" {
			by = a.Handle
		}
	}
	a, err := ap.Answer(d.workspace.ID, aid, dec, by)
	if err != nil {
		return wire.ApprovalAnswer{}, err
	}
	return wire.ApprovalAnswer{Approval: wireApproval(a.Request), Decision: string(a.Decision), By: a.By}, nil
}
