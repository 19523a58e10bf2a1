package daemon_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/fakemodel"
)

// toolAgent is one agent CLI as the tools end-to-end tests drive it: its
// runtime on a fake model, and the model's reply that makes it call one
// of jam's tools.
type toolAgent struct {
	// runtime is an owned agent's runtime on model (started): network on,
	// so that its sandbox reaches jamd's tools on loopback.
	runtime func(t *testing.T, model *fakemodel.Server) *wire.AgentRuntime
	// call is the model's reply calling jam's tool with args.
	call func(tool string, args map[string]any) fakemodel.Reply
	// step bounds one turn.
	step time.Duration
}

// turn is a model script calling jam's tool, then, in the request after
// its result, a final text: a turn's two model requests.
func (a toolAgent) turn(tool string, args map[string]any, final string) []fakemodel.Reply {
	return []fakemodel.Reply{a.call(tool, args), {Text: []string{final}}}
}

// toolRun is an owned agent of a tools test and its fake model.
type toolRun struct {
	name  string
	model *fakemodel.Server
	agent wire.Agent
}

// addToolAgent adds an owned agent of kind a, on a fake model of its own.
func addToolAgent(t *testing.T, r *orphanRig, a toolAgent, name string) toolRun {
	t.Helper()
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	agent, err := r.client.AgentAdd(t.Context(), wire.AgentAddRequest{Name: name, Runtime: a.runtime(t, model)})
	require.NoError(t, err)
	return toolRun{name: name, model: model, agent: agent}
}

// roomMessages is the room's messages, oldest first.
func roomMessages(t *testing.T, r *orphanRig, room string) []protocol.Message {
	t.Helper()
	page, err := r.owner.ChatMessages(t.Context(), room, "", 100)
	require.NoError(t, err)
	msgs := page.Messages
	slices.SortStableFunc(msgs, func(a, b protocol.Message) int { return strings.Compare(a.InsertedAt, b.InsertedAt) })
	return msgs
}

// sessionTurns is the turns of the agent's session in the room.
func sessionTurns(t *testing.T, r *orphanRig, room string, a wire.Agent) []wire.Turn {
	t.Helper()
	ctx := t.Context()
	ss, err := r.client.Sessions(ctx)
	require.NoError(t, err)
	for _, s := range ss {
		if s.Room == room && (s.Agent == a.Peer || s.Agent == a.Name) {
			ts, err := r.client.Turns(ctx, s.ID)
			require.NoError(t, err)
			return ts
		}
	}
	t.Fatalf("no session of %s in room %s", a.Handle, room)
	return nil
}

// modelTurns is the model requests of the agent's turns (not its
// auxiliary ones, such as OpenCode's title).
func modelTurns(model *fakemodel.Server) []fakemodel.Captured {
	var out []fakemodel.Captured
	for _, c := range model.Requests() {
		if fakemodel.Turn(c) {
			out = append(out, c)
		}
	}
	return out
}

// agentsTalkUntilTheHopLimit: two owned agents of kind a (the real CLI
// under bwrap, network on), each on its own scripted fake model, in one
// room with hop limit hops. The person asks alice; alice answers with
// room_reply, mentioning bob; bob is woken and answers alice with
// room_reply; alice answers bob explicitly, and so on, until the
// (hops+1)-th agent message in a row is acknowledged unanswered and an
// error event in the room says so. No final text of any turn is posted
// beside its explicit reply; every reply mentions whom it answers; each
// call reached jam's tool (its result, "staged", is in the model's next
// request).
func agentsTalkUntilTheHopLimit(t *testing.T, a toolAgent, hops int) {
	t.Helper()
	require.GreaterOrEqual(t, hops, 2)
	requireBwrap(t)
	r := newJamdRig(t, nil)
	r.jamd.args = append(r.jamd.args, "--hop-limit", strconv.Itoa(hops))
	r.start()
	ctx := t.Context()
	start := time.Now()

	alice, bob := addToolAgent(t, r, a, "alice"), addToolAgent(t, r, a, "bob")
	// hops+1 agent turns post, alternating from alice; the next one's
	// agent is stopped before its CLI sees the message.
	runs := [2]toolRun{alice, bob}
	var want []string // "name: text" of each agent message, in order
	for i := 0; i <= hops; i++ {
		who := runs[i%2]
		var text string
		args := map[string]any{}
		switch {
		case i == 0:
			// Band shows the handle as a mention token; the question is
			// the text's own.
			text = "what is 2+2?"
			args["text"] = "@" + bob.agent.Handle + " " + text
			args["mentions"] = []string{bob.agent.Handle}
		case who.name == "bob":
			text = fmt.Sprintf("answer %d", i)
		default:
			text = fmt.Sprintf("thanks; and question %d?", i)
		}
		if args["text"] == nil {
			args["text"] = text
		}
		who.model.Push(a.turn("room_reply", args, fmt.Sprintf("FINAL-%s-%d", who.name, i))...)
		want = append(want, who.name+": "+text)
	}
	stopped := runs[(hops+1)%2]
	stopped.model.Push(a.turn("room_reply", map[string]any{"text": "never posted"}, "FINAL-never")...)

	room, err := r.client.RoomCreate(ctx, wire.RoomCreateRequest{Title: "talk", Agents: []string{"alice", "bob"}})
	require.NoError(t, err)
	_, err = r.owner.SendChatMessage(ctx, room.ID, "@"+alice.agent.Handle+" ask bob for a sum", []protocol.Mention{{ID: alice.agent.AgentID}})
	require.NoError(t, err)

	var msgs []protocol.Message
	require.Eventually(t, func() bool {
		page, err := r.owner.ChatMessages(ctx, room.ID, "", 100)
		if err != nil {
			return false
		}
		for _, m := range page.Messages {
			if m.MessageType == "error" && strings.Contains(m.Content, "chain of agent messages") {
				return true
			}
		}
		return false
	}, time.Duration(hops+2)*a.step, 100*time.Millisecond, "the hop limit is announced in the room")
	t.Logf("the chain of %d agent messages and the hop limit took %s", hops+1, time.Since(start))
	msgs = roomMessages(t, r, room.ID)
	names := map[string]string{alice.agent.AgentID: "alice", bob.agent.AgentID: "bob"}
	var said []string
	var texts []protocol.Message
	for _, m := range msgs {
		name, ok := names[m.SenderID]
		if !ok {
			continue
		}
		said = append(said, name+" "+m.MessageType+": "+m.Content)
		if m.MessageType == "text" {
			texts = append(texts, m)
		}
	}
	require.Len(t, said, hops+2, "%q", said)
	for i, w := range want {
		name, text, _ := strings.Cut(w, ": ")
		require.True(t, strings.HasPrefix(said[i], name+" text: "), "message %d is %s's: %q", i, name, said)
		require.Contains(t, said[i], text, "message %d", i)
	}
	require.Contains(t, said[hops+1], stopped.name+" error: jam stopped a chain of agent messages: "+strconv.Itoa(hops+1)+" in a row")
	for _, s := range said {
		require.NotContains(t, s, "never posted")
		require.NotContains(t, s, "FINAL-", "no final text was posted")
	}
	// Each reply mentions whom it answers: bob's wake alice, alice's
	// (after the first, which names bob itself) wake bob.
	for i, m := range texts {
		other := runs[(i+1)%2]
		require.Contains(t, mentionIDs(m), strings.ToLower(other.agent.AgentID), "message %d mentions %s", i, other.name)
	}

	// Each agent ran its turns, all succeeded; the stopped agent's last
	// failed with hop_limit before its CLI saw it.
	for k, run := range runs {
		n := (hops + 1 + 1 - k) / 2 // turns that posted: alice has i = 0, 2, …; bob i = 1, 3, …
		var ts []wire.Turn
		if run.name == stopped.name {
			require.Eventually(t, func() bool {
				ts = sessionTurns(t, r, room.ID, run.agent)
				return len(ts) == n+1 && ts[n].State == "failed"
			}, a.step, 50*time.Millisecond, "%s's last turn ends", run.name)
			require.Equal(t, "hop_limit", ts[n].Reason, ts[n].Detail)
		} else {
			ts = sessionTurns(t, r, room.ID, run.agent)
		}
		require.GreaterOrEqual(t, len(ts), n, run.name)
		for _, tr := range ts[:n] {
			require.Equal(t, "succeeded", tr.State, "%s: %s: %s", run.name, tr.Reason, tr.Detail)
		}
		reqs := modelTurns(run.model)
		require.Len(t, reqs, 2*n, "%s's model saw %d turns of two requests", run.name, n)
		for j := 0; j < n; j++ {
			first, second := conversation(reqs[2*j]), reqs[2*j+1]
			if run.name == "bob" || j > 0 {
				require.Contains(t, first, "(an agent) wrote in the room", "%s's turn %d answers an agent", run.name, j)
			}
			require.Contains(t, first, "room_reply", "the prompt names jam's tool")
			results := second.ToolResults()
			require.NotEmpty(t, results, "%s's turn %d: the tool's result reached the model", run.name, j)
			require.Contains(t, string(results[len(results)-1].Content), "staged", "%s's turn %d: jam staged the reply", run.name, j)
		}
	}
}
