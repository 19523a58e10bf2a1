package session

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/engine"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// toolHost is a fakeHost whose threads take MCP servers, and which keeps
// the servers each thread was opened with.
type toolHost struct {
	fakeHost
	mu     sync.Mutex
	opened [][]harness.MCPServer // guarded by mu
}

func (h *toolHost) Manifest() harness.Manifest {
	mf := h.fakeHost.Manifest()
	mf.MCPServers = true
	return mf
}

func (h *toolHost) Open(_ context.Context, _ string, tools ...harness.MCPServer) (harness.Thread, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opened = append(h.opened, tools)
	return "thread-1", nil
}

// toolRig is a Manager over a bundle whose sessions are given one MCP
// server (when tools) and whose agent answers with act, which may stage
// dispositions on the Manager while its turn runs.
type toolRig struct {
	*bundle
	m    *Manager
	host *toolHost
}

func (b *bundle) toolManager(t *testing.T, tools bool, hopLimit int, act func(m *Manager, text string) (harness.Outcome, error)) *toolRig {
	t.Helper()
	r := &toolRig{bundle: b}
	r.host = &toolHost{fakeHost: fakeHost{exited: make(chan struct{}), answer: func(text string) (harness.Outcome, error) { return act(r.m, text) }}}
	cfg := Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		HopLimit: hopLimit,
		Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return r.host, nil
		}}
	if tools {
		cfg.Tools = func(s store.Session, _ store.TemplateConfig) []harness.MCPServer {
			return []harness.MCPServer{{Name: "jam", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer " + string(s.ID)}}}
		}
	}
	m, err := New(cfg)
	require.NoError(t, err)
	r.m = m
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, m.Stop(context.Background())) })
	return r
}

// waitTurn waits until the session has n turns, the last one ended, and
// returns it.
func (b *bundle) waitTurn(t *testing.T, n int) store.Turn {
	t.Helper()
	var last store.Turn
	require.Eventually(t, func() bool {
		turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
		require.NoError(t, err)
		if len(turns) != n || !turns[n-1].State.Terminal() {
			return false
		}
		last = turns[n-1]
		return true
	}, 10*time.Second, time.Millisecond, "turn %d ends", n)
	return last
}

func completed(text string) (harness.Outcome, error) {
	return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: text}, nil
}

const (
	dm1 = jam.PlatformMessageID("0190a1b2-0000-4000-8000-0000000000d1")
	dm2 = jam.PlatformMessageID("0190a1b2-0000-4000-8000-0000000000d2")
	dm3 = jam.PlatformMessageID("0190a1b2-0000-4000-8000-0000000000d3")
	dm4 = jam.PlatformMessageID("0190a1b2-0000-4000-8000-0000000000d4")
	dm5 = jam.PlatformMessageID("0190a1b2-0000-4000-8000-0000000000d5")
)

// TestStage_commitsInOrderOnCompletion: a turn stages a send and a reply
// through the tools; nothing is posted while it runs; on completion the
// send is posted, then the reply settles the message; the final text is
// not posted beside an explicit reply. The thread was opened with the
// session's tools.
func TestStage_commitsInOrderOnCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.set.roster = []protocol.Participant{{ID: "0190a1b2-0000-4000-8000-0000000000b0", Name: "Bob", Type: "Agent", Handle: ptr("owner/bob")}}
	r := b.toolManager(t, true, 0, func(m *Manager, text string) (harness.Outcome, error) {
		s1, err := m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionSend, Text: "bob, look", Mentions: []string{"owner/bob"}})
		if err != nil {
			return harness.Outcome{}, err
		}
		s2, err := m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionReply, Text: "on it", Mentions: []string{"bob"}})
		if err != nil {
			return harness.Outcome{}, err
		}
		if s1.Index != 0 || s2.Index != 1 || s1.Turn != s2.Turn {
			return harness.Outcome{}, errors.New("staged out of order")
		}
		b.set.mu.Lock()
		posted := len(b.set.sends) + len(b.set.replies)
		b.set.mu.Unlock()
		if posted != 0 {
			return harness.Outcome{}, errors.New("posted before the turn ended")
		}
		// A message settles once.
		if _, err := m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionNoReply}); !errors.Is(err, jam.ErrConflict) {
			return harness.Outcome{}, errors.New("a second settlement was staged")
		}
		return completed("final text, not posted")
	})
	b.deliver(t, r.m, dm1)
	require.Equal(t, dm1, <-b.set.done)
	tr := b.waitTurn(t, 1)
	require.Equal(t, jam.TurnSucceeded, tr.State, "%s: %s", tr.Reason, tr.Detail)
	require.Equal(t, "on it", b.set.replies[dm1])
	require.Len(t, b.set.sends, 1)
	require.Equal(t, "bob, look", b.set.sends[0].Text)
	require.Equal(t, []string{"owner/bob"}, b.set.sends[0].Recipients)
	require.Len(t, r.host.opened, 1)
	require.Len(t, r.host.opened[0], 1, "the thread was given the session's tools")
	require.Contains(t, r.host.opened[0][0].Headers["Authorization"], string(b.sess.ID))

	// Between turns the tools act on nothing.
	_, err := r.m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionSend, Text: "late", Mentions: []string{"owner/bob"}})
	require.ErrorIs(t, err, jam.ErrConflict)
}

func ptr[T any](v T) *T { return &v }

// TestStage_refusesBadInput: every bad disposition is refused with
// jam.ErrInvalid and a message naming the problem, and stages nothing.
func TestStage_refusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.set.roster = []protocol.Participant{
		{ID: "0190a1b2-0000-4000-8000-0000000000b1", Name: "Bob", Type: "Agent", Handle: ptr("ann/bob")},
		{ID: "0190a1b2-0000-4000-8000-0000000000b2", Name: "Bob", Type: "Agent", Handle: ptr("cy/bob")},
	}
	errs := make(chan []error, 1)
	r := b.toolManager(t, true, 0, func(m *Manager, text string) (harness.Outcome, error) {
		var got []error
		for _, d := range []Disposition{
			{Kind: DispositionReply, Text: "  "},
			{Kind: DispositionReply, Text: strings.Repeat("x", MaxDispositionText+1)},
			{Kind: DispositionReply, Text: "bad \xff utf-8"},
			{Kind: DispositionSend, Text: "to nobody"},
			{Kind: DispositionSend, Text: "hi", Mentions: []string{"bob"}},       // ambiguous
			{Kind: DispositionSend, Text: "hi", Mentions: []string{"owner/eve"}}, // not in the room
			{Kind: DispositionSend, Text: "hi", Mentions: []string{" "}},
			{Kind: DispositionSend, Text: "hi", Mentions: make([]string, MaxRecipients+1)},
			{Kind: DispositionNoReply, Reason: strings.Repeat("r", MaxDispositionReason+1)},
			{Kind: "shout", Text: "hi"},
		} {
			_, err := m.Stage(t.Context(), b.sess.ID, d)
			got = append(got, err)
		}
		errs <- got
		return completed(noReply)
	})
	b.deliver(t, r.m, dm1)
	require.Equal(t, dm1, <-b.set.done)
	got := <-errs
	wants := []string{"text is empty", "more than", "not UTF-8", "names its recipients", "ambiguous", "not in the room", "recipient is empty", "recipients, more than", "reason is", "disposition kind"}
	for i, err := range got {
		require.ErrorIs(t, err, jam.ErrInvalid, "case %d", i)
		require.ErrorContains(t, err, wants[i], "case %d", i)
	}
	require.True(t, b.set.acks[dm1], "NO_REPLY as final text still acknowledges")
	require.Empty(t, b.set.sends)
	_, err := r.m.Stage(t.Context(), "sess_unknown", Disposition{Kind: DispositionNoReply})
	require.ErrorIs(t, err, jam.ErrConflict, "no turn runs in an unknown session")
}

// TestStage_failedTurnCommitsNothing: what a failed or cancelled turn
// staged is dropped; its message is not consumed.
func TestStage_failedTurnCommitsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.set.roster = []protocol.Participant{{ID: "0190a1b2-0000-4000-8000-0000000000b0", Name: "Bob", Type: "Agent", Handle: ptr("owner/bob")}}
	r := b.toolManager(t, true, 0, func(m *Manager, text string) (harness.Outcome, error) {
		if _, err := m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionSend, Text: "x", Mentions: []string{"owner/bob"}}); err != nil {
			return harness.Outcome{}, err
		}
		if _, err := m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionReply, Text: "y"}); err != nil {
			return harness.Outcome{}, err
		}
		if strings.Contains(text, string(dm1)) {
			return harness.Outcome{StopReason: harness.StopFailed, ProviderReason: "error"}, nil
		}
		return harness.Outcome{StopReason: harness.StopCancelled}, nil
	})
	b.deliver(t, r.m, dm1)
	require.Equal(t, jam.TurnFailed, b.waitTurn(t, 1).State)
	b.deliver(t, r.m, dm2)
	require.Equal(t, jam.TurnCancelled, b.waitTurn(t, 2).State)
	require.Empty(t, b.set.sends)
	require.Empty(t, b.set.replies)
	require.Empty(t, b.set.acks)
}

// TestStage_agentMessagesNeedAnExplicitDisposition: with tools, a message
// from an agent answered only in final text is not answered (the turn
// fails no_disposition, the message is marked failed and stays queued);
// without tools the final text is still the reply. An empty answer to a
// person is no silent acknowledgement either.
func TestStage_agentMessagesNeedAnExplicitDisposition(t *testing.T) {
	t.Parallel()
	for _, tools := range []bool{true, false} {
		b := setup(t)
		b.set.agents = map[jam.PlatformMessageID]bool{dm1: true}
		r := b.toolManager(t, tools, 0, func(m *Manager, text string) (harness.Outcome, error) {
			if strings.Contains(text, string(dm2)) {
				return completed("")
			}
			return completed("final words")
		})
		b.deliver(t, r.m, dm1)
		tr := b.waitTurn(t, 1)
		if tools {
			require.Equal(t, jam.TurnFailed, tr.State)
			require.Equal(t, jam.ReasonNoDisposition, tr.Reason)
			require.Contains(t, tr.Detail, "room_reply")
			b.set.waitFailed(t, dm1, "turn failed (no_disposition): "+tr.Detail)
			require.Empty(t, b.set.replies)
		} else {
			require.Equal(t, dm1, <-b.set.done)
			require.Equal(t, jam.TurnSucceeded, tr.State)
			require.Equal(t, "final words", b.set.replies[dm1], "an agent without tools answers in final text")
		}
		b.deliver(t, r.m, dm2)
		tr = b.waitTurn(t, 2)
		require.Equal(t, jam.TurnFailed, tr.State, "tools %v", tools)
		require.Equal(t, jam.ReasonNoDisposition, tr.Reason)
		require.False(t, b.set.acks[dm2], "an empty answer acknowledges nothing")
	}
}

// TestStage_noticeTurns: a turn for a local notice (a delegation's news)
// is told it is one; its final text is not a reply (a notice cannot be
// replied to) but an acknowledgement, with or without tools; room_reply is
// refused with a message naming room_send, which is taken and posted.
func TestStage_noticeTurns(t *testing.T) {
	t.Parallel()
	notice := jam.NoticeID(jam.New[jam.MessageID](setup(t).m))
	for _, tools := range []bool{true, false} {
		b := setup(t)
		var prompt string
		var replyErr, sendErr error
		r := b.toolManager(t, tools, 0, func(m *Manager, text string) (harness.Outcome, error) {
			prompt = text
			if tools {
				_, replyErr = m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionReply, Text: "thanks"})
				_, sendErr = m.Stage(t.Context(), b.sess.ID, Disposition{Kind: DispositionSend, Text: "the review approved", Mentions: []string{"ann"}})
			}
			return completed("noted, thanks")
		})
		b.set.roster = []protocol.Participant{{ID: "u-ann", Name: "Ann", Handle: new("ann"), Type: "User"}}
		b.deliver(t, r.m, notice)
		require.Equal(t, notice, <-b.set.done)
		tr := b.waitTurn(t, 1)
		require.Equal(t, jam.TurnSucceeded, tr.State, "tools %v: %s", tools, tr.Detail)
		require.True(t, b.set.acks[notice], "the notice is acknowledged")
		require.Empty(t, b.set.replies, "nothing replies to a notice")
		require.Contains(t, prompt, "jam tells you (a notice")
		require.Contains(t, prompt, "note "+string(notice))
		if tools {
			require.ErrorIs(t, replyErr, jam.ErrInvalid)
			require.Contains(t, replyErr.Error(), "room_send")
			require.NoError(t, sendErr)
			require.Len(t, b.set.sends, 1)
			require.Equal(t, "the review approved", b.set.sends[0].Text)
		}
	}
}

// TestHopLimit_stopsAgentChains: with a hop limit of 2, the third agent
// message in a row is acknowledged unanswered before the agent sees it,
// and the room is told in an error event; a person's message resets the
// count.
func TestHopLimit_stopsAgentChains(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.set.agents = map[jam.PlatformMessageID]bool{dm1: true, dm2: true, dm3: true, dm5: true}
	var mu sync.Mutex
	var seen []string
	r := b.toolManager(t, false, 2, func(m *Manager, text string) (harness.Outcome, error) {
		mu.Lock()
		seen = append(seen, text)
		mu.Unlock()
		return completed("ok")
	})
	for i, msg := range []jam.PlatformMessageID{dm1, dm2, dm3, dm4, dm5} {
		b.deliver(t, r.m, msg)
		require.Equal(t, msg, <-b.set.done, "message %d settles", i+1)
		b.waitTurn(t, i+1)
	}
	turns, err := b.st.TurnList(t.Context(), b.ws, b.sess.ID)
	require.NoError(t, err)
	var states []string
	for _, tr := range turns {
		states = append(states, string(tr.State)+"/"+tr.Reason)
	}
	require.Equal(t, []string{"succeeded/end_turn", "succeeded/end_turn", "failed/hop_limit", "succeeded/end_turn", "succeeded/end_turn"}, states)
	require.True(t, b.set.acks[dm3], "the hop-limited message is acknowledged")
	require.Empty(t, b.set.failed(dm3), "and not marked failed")
	require.Len(t, seen, 4, "the agent never saw it")
	require.Len(t, b.set.events, 1)
	require.Equal(t, "error", b.set.events[0].MessageType)
	require.Contains(t, b.set.events[0].Content, "3 in a row")
	require.Contains(t, string(b.set.events[0].Metadata), `"error_code":"hop_limit"`)
	require.Contains(t, seen[0], "bot (an agent) wrote in the room")
}

// Compile-time: the fake settler is what the Manager needs.
var _ Settler = (*settler)(nil)
var _ = engine.SendParams{}
