package session

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// endedTurns passes on the turns that end.
type endedTurns chan store.Turn

func (c endedTurns) TurnMoved(e TurnEvent) {
	if e.Turn.State.Terminal() {
		c <- e.Turn
	}
}
func (endedTurns) TurnOutput(OutputEvent) {}

// steeringHost is a fakeHost whose harness can steer, or not.
type steeringHost struct {
	*fakeHost
	steers  bool
	steered chan string
}

func (h *steeringHost) Manifest() harness.Manifest {
	m := h.fakeHost.Manifest()
	m.Steer = h.steers
	return m
}
func (h *steeringHost) Steer(_ context.Context, _ harness.Thread, in harness.Input) error {
	h.steered <- in.Text
	return nil
}

// promptHost runs each prompt until the test releases it: started
// receives the prompt's text, and the prompt answers with what release
// sends.
type promptHost struct {
	started chan string
	release chan string
}

func newPromptHost() *promptHost {
	return &promptHost{started: make(chan string, 16), release: make(chan string, 16)}
}

func (p *promptHost) answer(text string) (harness.Outcome, error) {
	p.started <- text
	return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: <-p.release}, nil
}

// messageManager starts a manager whose hosts are h (steering when
// steers) and whose ended turns go to the returned channel.
func (b *bundle) messageManager(t *testing.T, p *promptHost, steers bool) (*Manager, endedTurns, *steeringHost) {
	t.Helper()
	ended := make(endedTurns, 16)
	h := &steeringHost{fakeHost: &fakeHost{answer: p.answer, exited: make(chan struct{})}, steers: steers, steered: make(chan string, 4)}
	m, err := New(Config{Workspace: b.ws, Store: b.st, Settler: b.set, Logger: slog.New(slog.DiscardHandler), Minter: b.m, RetryDelay: time.Millisecond,
		Observer: ended, Launch: func(context.Context, store.TemplateConfig, []harness.MCPServer) (harness.Process, error) {
			return h, nil
		}})
	require.NoError(t, err)
	require.NoError(t, m.Start(t.Context()))
	t.Cleanup(func() {
		close(p.release) // a prompt still running answers empty
		require.NoError(t, m.Stop(context.Background()))
	})
	return m, ended, h
}

func TestSend_notesReachTheNextPromptOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPromptHost()
	m, ended, _ := b.messageManager(t, p, false)
	ctx := t.Context()

	n1, err := m.Send(ctx, b.sess.ID, "use tabs", jam.RoutingNote)
	require.NoError(t, err)
	require.Equal(t, jam.RoutingNote, n1.Message.Routing)
	require.Zero(t, n1.Turn, "a note starts no turn")
	n2, err := m.Send(ctx, b.sess.ID, "the tests live in ./t", jam.RoutingNote)
	require.NoError(t, err)
	turns, err := b.st.TurnList(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Empty(t, turns, "notes start no turn")

	first, err := m.Send(ctx, b.sess.ID, "fix the build", "")
	require.NoError(t, err)
	require.Equal(t, jam.RoutingQueue, first.Message.Routing, "queue is the default")
	require.Equal(t, first.Message.ID, first.Turn.MessageID)
	require.Equal(t, "Notes added to this session since the last turn (context, not requests):\n- use tabs\n- the tests live in ./t\n\nfix the build", <-p.started)
	p.release <- "fixed"
	done := <-ended
	require.Equal(t, first.Turn.ID, done.ID)
	require.Equal(t, jam.TurnSucceeded, done.State)

	for _, id := range []jam.MessageID{n1.Message.ID, n2.Message.ID} {
		got, err := b.st.MessageGet(ctx, b.ws, id)
		require.NoError(t, err)
		require.Equal(t, first.Turn.ID, got.TurnID, "consumed by the turn that carried it")
		require.False(t, got.ConsumedAt.IsZero())
	}

	second, err := m.Send(ctx, b.sess.ID, "now the docs", jam.RoutingQueue)
	require.NoError(t, err)
	require.Equal(t, "now the docs", <-p.started, "the notes were consumed by the previous turn")
	p.release <- "done"
	require.Equal(t, second.Turn.ID, (<-ended).ID)
	require.Empty(t, b.set.replies, "sent directly: nothing is settled on Band")
	require.Empty(t, b.set.acks)
}

func TestSend_steerQueuesWithAHostThatCannotSteer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPromptHost()
	m, ended, h := b.messageManager(t, p, false)
	ctx := t.Context()

	// No running turn: a steer is queued.
	idle, err := m.Send(ctx, b.sess.ID, "start", jam.RoutingSteer)
	require.NoError(t, err)
	require.Equal(t, jam.RoutingSteer, idle.Message.Requested)
	require.Equal(t, jam.RoutingQueue, idle.Message.Routing)
	require.Equal(t, "start", <-p.started)

	// A running turn on a harness that does not steer: queued too.
	st, err := m.Send(ctx, b.sess.ID, "faster", jam.RoutingSteer)
	require.NoError(t, err)
	require.Equal(t, jam.RoutingQueue, st.Message.Routing)
	require.NotEmpty(t, st.Turn.ID, "it becomes a turn of its own")
	require.Empty(t, h.steered)
	p.release <- "started"
	require.Equal(t, idle.Turn.ID, (<-ended).ID)
	require.Equal(t, "faster", <-p.started, "the queued steer runs next")
	p.release <- "faster now"
	require.Equal(t, st.Turn.ID, (<-ended).ID)
}

func TestSend_steerReachesTheRunningTurnOfAHostThatSteers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := newPromptHost()
	m, ended, h := b.messageManager(t, p, true)
	ctx := t.Context()

	q, err := m.Send(ctx, b.sess.ID, "start", jam.RoutingQueue)
	require.NoError(t, err)
	require.Equal(t, "start", <-p.started)
	st, err := m.Send(ctx, b.sess.ID, "faster", jam.RoutingSteer)
	require.NoError(t, err)
	require.Equal(t, jam.RoutingSteer, st.Message.Routing)
	require.Equal(t, q.Turn.ID, st.Message.TurnID, "it reached the running turn")
	require.Zero(t, st.Turn)
	require.Equal(t, "faster", <-h.steered)
	p.release <- "done"
	require.Equal(t, q.Turn.ID, (<-ended).ID)
	turns, err := b.st.TurnList(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Len(t, turns, 1, "a steer that reached the turn adds none")
}

func TestSend_bandMessageIsAQueueMessageAndDirectOneSettlesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var prompts []string
	m := b.manager(t, func(text string) (harness.Outcome, error) {
		mu.Lock()
		prompts = append(prompts, text)
		mu.Unlock()
		return harness.Outcome{StopReason: harness.StopCompleted, ProviderReason: "end_turn", Text: "ok: " + text}, nil
	})
	ctx := t.Context()
	_, err := m.Send(ctx, b.sess.ID, "just between us", jam.RoutingQueue)
	require.NoError(t, err)
	band := jam.PlatformMessageID("0190a1b2-0000-4000-8000-000000000021")
	b.deliver(t, m, band)
	require.Equal(t, band, <-b.set.done, "the Band message is settled by its turn's answer")
	require.NoError(t, m.Stop(context.Background()))

	require.Len(t, b.set.replies, 1, "only the Band message was answered on Band")
	require.Empty(t, b.set.acks)
	msgs, err := b.st.MessageList(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Empty(t, msgs[0].SourceMessageID)
	require.Equal(t, band, msgs[1].SourceMessageID)
	require.Equal(t, jam.RoutingQueue, msgs[1].Routing)
	turns, err := b.st.TurnList(ctx, b.ws, b.sess.ID)
	require.NoError(t, err)
	require.Len(t, turns, 2)
	for i, tr := range turns {
		require.Equal(t, jam.TurnSucceeded, tr.State)
		require.Equal(t, msgs[i].ID, tr.MessageID)
		require.Equal(t, tr.ID, msgs[i].TurnID)
	}
	require.Equal(t, "just between us", prompts[0])
	require.True(t, strings.HasPrefix(prompts[1], "ann wrote in the room:"))

	_, err = m.Send(ctx, b.sess.ID, "  ", jam.RoutingQueue)
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, err = m.Send(ctx, b.sess.ID, "x", "shout")
	require.ErrorIs(t, err, jam.ErrInvalid)
}
