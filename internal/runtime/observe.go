package runtime

import (
	"sync"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Kinds of a turn's streamed output.
const (
	// UpdateText is part of the agent's answer.
	UpdateText = "text"
	// UpdateThought is part of the agent's thinking aloud.
	UpdateThought = "thought"
	// UpdateToolCall starts a tool call.
	UpdateToolCall = "tool_call"
	// UpdateToolCallUpdate reports progress of a tool call.
	UpdateToolCallUpdate = "tool_call_update"
	// UpdatePlan replaces the agent's plan.
	UpdatePlan = "plan"
)

// Update is one piece of a running turn's streamed output, as the host
// reports it while Prompt runs.
type Update struct {
	// Kind is one of the Update* kinds.
	Kind string
	// Text is the chunk of an UpdateText or UpdateThought.
	Text string
	// ToolCallID, Title, ToolKind and Status describe a tool call.
	ToolCallID string
	Title      string
	ToolKind   string
	Status     string
	// Plan is the whole plan of an UpdatePlan.
	Plan []PlanEntry
}

// PlanEntry is one step of the agent's plan.
type PlanEntry struct {
	Content  string
	Priority string
	Status   string
}

// coalesces reports whether updates of kind merge with the one before of
// the same kind.
func coalesces(kind string) bool { return kind == UpdateText || kind == UpdateThought }

// size is roughly what an update costs in an event.
func (u Update) size() int {
	n := len(u.Text) + len(u.ToolCallID) + len(u.Title) + len(u.ToolKind) + len(u.Status) + 16
	for _, p := range u.Plan {
		n += len(p.Content) + len(p.Priority) + len(p.Status) + 8
	}
	return n
}

// Observer sees turns as they happen: every recorded transition, and the
// output of running turns in batches. Its methods are called from the
// session workers and must not block for long.
type Observer interface {
	// TurnMoved is called after a transition of a turn is recorded, and
	// after a new turn is queued (From is then "").
	TurnMoved(TurnEvent)
	// TurnOutput is called with each batch of a running turn's output, in
	// order; Batch numbers them from 1.
	TurnOutput(OutputEvent)
}

// TurnEvent is one recorded transition of a turn.
type TurnEvent struct {
	Turn store.Turn
	From jam.TurnState
	Peer jam.PeerKey
	Room jam.RoomID
}

// OutputEvent is one batch of a running turn's output.
type OutputEvent struct {
	Turn    store.Turn
	Peer    jam.PeerKey
	Room    jam.RoomID
	Batch   int
	Updates []Update
}

// nopObserver is the default Observer.
type nopObserver struct{}

func (nopObserver) TurnMoved(TurnEvent)    {}
func (nopObserver) TurnOutput(OutputEvent) {}

// Output is what a turn streamed so far, as far as the manager keeps it:
// the text of the turns it ran recently, up to MaxOutputBytes each.
type Output struct {
	// Batches is how many batches the updates cover: an OutputEvent with a
	// higher Batch comes after them.
	Batches int
	Updates []Update
	// Truncated says that later output was not kept.
	Truncated bool
}

// Defaults of the output batching and the kept transcripts.
const (
	defaultBatchInterval = 250 * time.Millisecond
	defaultBatchBytes    = 4 << 10
	// MaxOutputBytes bounds the output kept per turn.
	MaxOutputBytes = 64 << 10
	// keptOutputs is how many turns' output the manager keeps.
	keptOutputs = 64
	// maxUpdateText bounds one update's text; an agent that sends more in
	// one chunk is clipped rather than making an event the store refuses.
	maxUpdateText = 64 << 10
)

// batcher coalesces a turn's streamed output into batches: consecutive
// text (or thought) chunks merge, and a batch goes out every interval, as
// soon as it holds maxBytes, and at once for tool calls and plans, which
// flush the text before them first. emit runs on the batcher's own
// goroutine, one batch at a time, in order; close flushes what is left
// and waits for it.
type batcher struct {
	interval time.Duration
	maxBytes int
	emit     func([]Update)

	full chan struct{} // a batch is due now
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	pending []Update // guarded by mu
	size    int      // guarded by mu
}

func newBatcher(interval time.Duration, maxBytes int, emit func([]Update)) *batcher {
	b := &batcher{interval: interval, maxBytes: maxBytes, emit: emit, full: make(chan struct{}, 1), done: make(chan struct{})}
	b.wg.Go(b.run)
	return b
}

// add takes one update; it never blocks on emit.
func (b *batcher) add(u Update) {
	if len(u.Text) > maxUpdateText {
		u.Text = clipText(u.Text, maxUpdateText) + "…"
	}
	b.mu.Lock()
	n := len(b.pending)
	if coalesces(u.Kind) && n > 0 && b.pending[n-1].Kind == u.Kind {
		b.pending[n-1].Text += u.Text
		b.size += len(u.Text)
	} else {
		b.pending = append(b.pending, u)
		b.size += u.size()
	}
	due := b.size >= b.maxBytes || !coalesces(u.Kind)
	b.mu.Unlock()
	if due {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) run() {
	t := time.NewTicker(b.interval)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			b.flush()
			return
		case <-b.full:
			b.flush()
		case <-t.C:
			b.flush()
		}
	}
}

func (b *batcher) flush() {
	b.mu.Lock()
	batch := b.pending
	b.pending, b.size = nil, 0
	b.mu.Unlock()
	if len(batch) > 0 {
		b.emit(batch)
	}
}

// close flushes the rest and waits for the last emit.
func (b *batcher) close() {
	close(b.done)
	b.wg.Wait()
}

// clipText cuts s to at most n bytes on a UTF-8 boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// transcript is the kept output of one turn.
type transcript struct {
	out  Output
	size int
}

// append adds a batch, merging text as the batcher does, within
// MaxOutputBytes.
func (tr *transcript) append(batch []Update) {
	tr.out.Batches++
	for _, u := range batch {
		if tr.out.Truncated {
			return
		}
		if tr.size+u.size() > MaxOutputBytes {
			tr.out.Truncated = true
			return
		}
		tr.size += u.size()
		n := len(tr.out.Updates)
		if coalesces(u.Kind) && n > 0 && tr.out.Updates[n-1].Kind == u.Kind {
			tr.out.Updates[n-1].Text += u.Text
			continue
		}
		tr.out.Updates = append(tr.out.Updates, u)
	}
}

// Output returns what a turn the manager ran recently streamed; false when
// it keeps nothing for the turn (it streamed nothing, ran before the
// daemon's start, or is too old).
func (m *Manager) Output(id jam.TurnID) (Output, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tr, ok := m.outputs[id]
	if !ok {
		return Output{}, false
	}
	out := tr.out
	out.Updates = append([]Update(nil), out.Updates...)
	return out, true
}

// keepOutput records a batch of a turn's output, forgetting the oldest
// turn's when too many are kept, and returns the batch's number.
func (m *Manager) keepOutput(id jam.TurnID, batch []Update) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	tr, ok := m.outputs[id]
	if !ok {
		tr = &transcript{}
		m.outputs[id] = tr
		m.outputOrder = append(m.outputOrder, id)
		if len(m.outputOrder) > keptOutputs {
			delete(m.outputs, m.outputOrder[0])
			m.outputOrder = m.outputOrder[1:]
		}
	}
	tr.append(batch)
	return tr.out.Batches
}
