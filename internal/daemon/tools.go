package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mcp"
	"github.com/jamhq/jam/internal/session"
	"github.com/jamhq/jam/internal/store"
)

// toolActions carries out jam's MCP tools (package mcp) for the session a
// caller's token names: dispositions are staged on the session's running
// turn, the roster is read from Band, the history from the room feed.
type toolActions struct {
	m  *messaging
	rt *atomic.Pointer[session.Manager]
}

// runtime is the session manager, once owned runtimes run.
func (a toolActions) runtime() (*session.Manager, error) {
	rt := a.rt.Load()
	if rt == nil {
		return nil, fmt.Errorf("%w: owned runtimes are not running", jam.ErrUnavailable)
	}
	return rt, nil
}

func (a toolActions) stage(ctx context.Context, s jam.SessionID, d session.Disposition) (mcp.Staged, error) {
	rt, err := a.runtime()
	if err != nil {
		return mcp.Staged{}, err
	}
	st, err := rt.Stage(ctx, s, d)
	if err != nil {
		return mcp.Staged{}, err
	}
	return mcp.Staged{Turn: string(st.Turn), Index: st.Index, Kind: string(st.Kind),
		Note: "staged: it happens when your turn ends successfully, in the order staged"}, nil
}

func (a toolActions) Reply(ctx context.Context, s jam.SessionID, in mcp.ReplyInput) (mcp.Staged, error) {
	return a.stage(ctx, s, session.Disposition{Kind: session.DispositionReply, Text: in.Text, Mentions: in.Mentions})
}

func (a toolActions) NoReply(ctx context.Context, s jam.SessionID, in mcp.NoReplyInput) (mcp.Staged, error) {
	return a.stage(ctx, s, session.Disposition{Kind: session.DispositionNoReply, Reason: in.Reason})
}

func (a toolActions) Send(ctx context.Context, s jam.SessionID, in mcp.SendInput) (mcp.Staged, error) {
	return a.stage(ctx, s, session.Disposition{Kind: session.DispositionSend, Text: in.Text, Mentions: in.To})
}

func (a toolActions) Participants(ctx context.Context, s jam.SessionID) ([]mcp.Participant, error) {
	rt, err := a.runtime()
	if err != nil {
		return nil, err
	}
	sess, err := a.m.d.store.SessionGet(ctx, a.m.d.workspace.ID, s)
	if err != nil {
		return nil, err
	}
	roster, err := rt.Participants(ctx, s)
	if err != nil {
		return nil, err
	}
	self := ""
	if p, err := a.m.d.store.PeerGet(ctx, a.m.d.workspace.ID, sess.Peer); err == nil {
		self = strings.ToLower(string(p.AgentID))
	}
	out := make([]mcp.Participant, 0, len(roster))
	for _, q := range roster {
		out = append(out, mcp.Participant{ID: q.ID, Handle: q.HandleText(), Name: q.Name, Type: q.Type, You: strings.ToLower(q.ID) == self})
	}
	return out, nil
}

func (a toolActions) History(ctx context.Context, s jam.SessionID, limit int) ([]mcp.Message, error) {
	sess, err := a.m.d.store.SessionGet(ctx, a.m.d.workspace.ID, s)
	if err != nil {
		return nil, err
	}
	page, err := a.m.d.RoomMessages(ctx, string(sess.Room), sess.Peer.Profile, limit)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.Message, 0, len(page.Messages))
	for _, r := range page.Messages {
		out = append(out, mcp.Message{ID: r.ID, SenderID: r.SenderID, SenderName: r.SenderName, SenderType: r.SenderType, Text: r.Text, At: r.InsertedAt})
	}
	return out, nil
}

func (a toolActions) CaptureChangeSet(ctx context.Context, s jam.SessionID) (mcp.ChangeSet, error) {
	rt, err := a.runtime()
	if err != nil {
		return mcp.ChangeSet{}, err
	}
	cs, err := rt.CaptureInTurn(ctx, s)
	if err != nil {
		return mcp.ChangeSet{}, err
	}
	paths := make([]string, 0, len(cs.Files))
	for _, f := range cs.Files {
		paths = append(paths, f.Path)
	}
	return mcp.ChangeSet{ID: string(cs.ID), Turn: string(cs.Turn), Files: len(cs.Files), Paths: paths, PatchBytes: cs.PatchBytes}, nil
}

// sessionTools are the MCP servers a session's threads are given: jam's,
// with the session's capability, unless the agent has no network (its
// sandbox cannot reach jamd's loopback listener) or the server is off.
func (m *messaging) sessionTools(s store.Session, cfg store.TemplateConfig) []harness.MCPServer {
	if m.tools == nil || cfg.NoNetwork {
		return nil
	}
	srv, err := m.tools.Grant(s.ID)
	if err != nil {
		// The agent works without them, answering in final text.
		m.log.Warn("no tools for the session's agent", "session", s.ID, "err", err)
		return nil
	}
	return []harness.MCPServer{srv}
}
