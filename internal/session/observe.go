package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// updateSize is roughly what an update costs in an event.
func updateSize(u harness.Update) int {
	n := len(u.Text) + len(u.ToolCallID) + len(u.Title) + len(u.ToolKind) + len(u.Status) + 16
	for _, p := range u.Plan {
		n += len(p.Content) + len(p.Priority) + len(p.Status) + 8
	}
	if u.Usage != nil {
		n += 64
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
	Updates []harness.Update
}

// nopObserver is the default Observer.
type nopObserver struct{}

func (nopObserver) TurnMoved(TurnEvent)    {}
func (nopObserver) TurnOutput(OutputEvent) {}

// Output is what a turn streamed so far, as far as it is kept: the
// manager keeps the turns it ran recently in memory, up to MaxOutputBytes
// each, and every turn's output in the store, within the store's bounds
// (store.TurnOutputMaxText), across restarts.
type Output struct {
	// Batches is how many batches the updates cover: an OutputEvent with a
	// higher Batch comes after them.
	Batches int
	Updates []harness.Update
	// Truncated says that later output was not kept.
	Truncated bool
}

// Defaults of the output batching and the kept transcripts.
const (
	defaultBatchInterval = 250 * time.Millisecond
	defaultBatchBytes    = 4 << 10
	// MaxOutputBytes bounds the output kept in memory per turn.
	MaxOutputBytes = 64 << 10
	// keptOutputs is how many turns' output the manager keeps.
	keptOutputs = 64
	// maxUpdateText bounds one update's text; an agent that sends more in
	// one chunk is clipped rather than making an event the store refuses.
	maxUpdateText = 64 << 10
	// storeOutputTimeout bounds one batch's store write, so a wedged store
	// holds a turn's end back no longer than this.
	storeOutputTimeout = 10 * time.Second
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
	emit     func([]harness.Update)

	full chan struct{} // a batch is due now
	done chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	pending []harness.Update // guarded by mu
	size    int              // guarded by mu
}

func newBatcher(interval time.Duration, maxBytes int, emit func([]harness.Update)) *batcher {
	b := &batcher{interval: interval, maxBytes: maxBytes, emit: emit, full: make(chan struct{}, 1), done: make(chan struct{})}
	b.wg.Go(b.run)
	return b
}

// add takes one update; it never blocks on emit.
func (b *batcher) add(u harness.Update) {
	if len(u.Text) > maxUpdateText {
		u.Text = clipText(u.Text, maxUpdateText) + "…"
	}
	b.mu.Lock()
	n := len(b.pending)
	if u.Kind.Coalesces() && n > 0 && b.pending[n-1].Kind == u.Kind {
		b.pending[n-1].Text += u.Text
		b.size += len(u.Text)
	} else {
		b.pending = append(b.pending, u)
		b.size += updateSize(u)
	}
	due := b.size >= b.maxBytes || !u.Kind.Coalesces()
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
	// limit bounds size; 0 for none.
	limit int
}

// append adds batch n, merging text as the batcher does, within limit.
func (tr *transcript) append(n int, batch []harness.Update) {
	tr.out.Batches = max(tr.out.Batches, n)
	for _, u := range batch {
		if tr.out.Truncated && tr.limit > 0 {
			return
		}
		if tr.limit > 0 && tr.size+updateSize(u) > tr.limit {
			tr.out.Truncated = true
			return
		}
		tr.size += updateSize(u)
		k := len(tr.out.Updates)
		if u.Kind.Coalesces() && k > 0 && tr.out.Updates[k-1].Kind == u.Kind {
			tr.out.Updates[k-1].Text += u.Text
			continue
		}
		tr.out.Updates = append(tr.out.Updates, u)
	}
}

// Output returns what a turn streamed, as far as it is kept; false when
// nothing is kept (the turn streamed nothing, or ran before output was
// stored). Memory answers for the turns the manager ran recently; the
// store for the others, and for those whose output outgrew memory (it
// keeps more).
func (m *Manager) Output(ctx context.Context, id jam.TurnID) (Output, bool, error) {
	m.mu.Lock()
	tr, inMemory := m.outputs[id]
	var mem Output
	if inMemory {
		mem = tr.out
		mem.Updates = append([]harness.Update(nil), mem.Updates...)
	}
	m.mu.Unlock()
	if inMemory && !mem.Truncated {
		return mem, true, nil
	}
	batches, err := m.cfg.Store.TurnOutput(ctx, m.cfg.Workspace, id)
	if err != nil {
		return Output{}, false, fmt.Errorf("output of turn %s: %w", id, err)
	}
	if len(batches) == 0 {
		return mem, inMemory, nil
	}
	stored := transcript{}
	for _, b := range batches {
		stored.append(b.Batch, b.Updates)
		stored.out.Truncated = b.Truncated
	}
	// Batches it failed to store still count: events up to them are out.
	stored.out.Batches = max(stored.out.Batches, mem.Batches)
	return stored.out, true, nil
}

// keepOutput records batch n of a turn's output in memory, forgetting
// the oldest turn's when too many are kept.
func (m *Manager) keepOutput(id jam.TurnID, n int, batch []harness.Update) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tr, ok := m.outputs[id]
	if !ok {
		tr = &transcript{limit: MaxOutputBytes}
		m.outputs[id] = tr
		m.outputOrder = append(m.outputOrder, id)
		if len(m.outputOrder) > keptOutputs {
			delete(m.outputs, m.outputOrder[0])
			m.outputOrder = m.outputOrder[1:]
		}
	}
	tr.append(n, batch)
}

// storeOutput writes batch n of a running turn's output to the store. It
// runs on the batcher's goroutine, so the agent's stream never waits for
// it (the batcher gathers what comes meanwhile into the next batch). The
// output is evidence, not the turn's result: a batch that fails to store
// is logged and the turn goes on. The write outlives the manager's stop,
// so the last batch of a turn cut short by it is kept too.
func (m *Manager) storeOutput(ctx context.Context, t store.Turn, n int, batch []harness.Update) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeOutputTimeout)
	defer cancel()
	_, err := m.cfg.Store.TurnOutputAppend(ctx, store.TurnOutputAppendParams{WorkspaceID: m.cfg.Workspace, TurnID: t.ID,
		LeaseID: t.LeaseID, LeaseGeneration: t.LeaseGeneration, Batch: n, Updates: batch, At: m.cfg.Now()})
	if err != nil {
		m.log.Warn("turn output not stored", "turn", t.ID, "batch", n, "err", err)
	}
}
