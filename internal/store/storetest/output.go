package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// outputBundle is the fixture of the turn output cases: a turn running on
// a live lease.
type outputBundle struct {
	*msgBundle
	lease store.Lease
	turn  store.Turn
}

func setupOutput(t *testing.T, open func(t *testing.T) store.Store) *outputBundle {
	t.Helper()
	b := &outputBundle{msgBundle: setupMessaging(t, open)}
	ctx := t.Context()
	tm, err := b.st.TemplatePut(ctx, store.Template{ID: jam.New[jam.TemplateID](b.minter), WorkspaceID: b.ws, Peer: b.peer.Key, Desired: demoConfig(), CreatedAt: epoch})
	require.NoError(t, err)
	s, err := b.st.SessionCreate(ctx, store.Session{ID: jam.New[jam.SessionID](b.minter), WorkspaceID: b.ws, TemplateID: tm.ID, Peer: b.peer.Key,
		Room: newUUID[jam.RoomID](), CreatedAt: epoch})
	require.NoError(t, err)
	b.lease, err = b.st.LeaseAcquire(ctx, store.LeaseAcquireParams{WorkspaceID: b.ws, ID: jam.New[jam.LeaseID](b.minter), Holder: string(tm.ID), Pid: 42, At: epoch})
	require.NoError(t, err)
	b.turn, err = b.st.TurnEnqueue(ctx, store.Turn{ID: jam.New[jam.TurnID](b.minter), WorkspaceID: b.ws, SessionID: s.ID, Routing: jam.RoutingQueue,
		SourceMessageID: newUUID[jam.PlatformMessageID](), CreatedAt: epoch})
	require.NoError(t, err)
	b.move(t, jam.TurnQueued, jam.TurnPreparing)
	b.move(t, jam.TurnPreparing, jam.TurnRunning)
	return b
}

func (b *outputBundle) move(t *testing.T, from, to jam.TurnState) {
	t.Helper()
	p := store.TurnTransitionParams{WorkspaceID: b.ws, ID: b.turn.ID, From: from, To: to, LeaseID: b.lease.ID, LeaseGeneration: b.lease.Generation, At: epoch}
	if from == jam.TurnQueued {
		p.Execution = jam.New[jam.ExecutionID](b.minter)
	}
	var err error
	b.turn, err = b.st.TurnTransition(t.Context(), p)
	require.NoError(t, err)
}

// params is batch n of the running turn.
func (b *outputBundle) params(n int, updates ...store.OutputUpdate) store.TurnOutputAppendParams {
	return store.TurnOutputAppendParams{WorkspaceID: b.ws, TurnID: b.turn.ID, LeaseID: b.lease.ID, LeaseGeneration: b.lease.Generation,
		Batch: n, Updates: updates, At: epoch.Add(time.Duration(n) * time.Second)}
}

func (b *outputBundle) append(t *testing.T, n int, updates ...store.OutputUpdate) store.TurnOutputBatch {
	t.Helper()
	kept, err := b.st.TurnOutputAppend(t.Context(), b.params(n, updates...))
	require.NoError(t, err)
	return kept
}

func (b *outputBundle) read(t *testing.T) []store.TurnOutputBatch {
	t.Helper()
	out, err := b.st.TurnOutput(t.Context(), b.ws, b.turn.ID)
	require.NoError(t, err)
	return out
}

func textUpdate(kind harness.UpdateKind, s string) store.OutputUpdate {
	return store.OutputUpdate{Kind: kind, Text: s}
}

// turnOutputCases covers [store.TurnOutputs].
func turnOutputCases(t *testing.T, open func(t *testing.T) store.Store) {
	setup := func(t *testing.T) *outputBundle { t.Helper(); return setupOutput(t, open) }

	t.Run("TurnOutput_appendAndReadInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.Empty(t, b.read(t), "nothing stored yet")

		plan := store.OutputUpdate{Kind: "plan", Plan: []store.OutputPlanEntry{{Content: "read", Priority: "high", Status: "done"}, {Content: "write"}}}
		call := store.OutputUpdate{Kind: "tool_call", ToolCallID: "c1", Title: "ls", ToolKind: "read", Status: "pending"}
		batches := [][]store.OutputUpdate{
			{textUpdate("thought", "hmm"), textUpdate("text", "Hello, ")},
			{call, plan},
			{textUpdate("text", "wörld \x00 done")},
		}
		// Batch numbers rise but may skip (a batch that failed to store).
		numbers := []int{1, 2, 4}
		for i, us := range batches {
			kept := b.append(t, numbers[i], us...)
			require.Equal(t, us, kept.Updates)
			require.False(t, kept.Truncated)
		}
		got := b.read(t)
		require.Len(t, got, 3)
		for i, g := range got {
			require.Equal(t, b.turn.ID, g.TurnID)
			require.Equal(t, numbers[i], g.Batch)
			require.Equal(t, batches[i], g.Updates)
			require.False(t, g.Truncated)
			require.Equal(t, epoch.Add(time.Duration(numbers[i])*time.Second).UTC().Truncate(time.Microsecond), g.At)
		}

		other, err := b.st.TurnOutput(t.Context(), b.other, b.turn.ID)
		require.NoError(t, err)
		require.Empty(t, other, "another workspace sees nothing")
	})

	t.Run("TurnOutputAppend_fencedAndOrdered", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := t.Context()
		b.append(t, 1, textUpdate("text", "a"))

		for _, tt := range []struct {
			name string
			edit func(p *store.TurnOutputAppendParams)
			want error
		}{
			{"batchZero", func(p *store.TurnOutputAppendParams) { p.Batch = 0 }, jam.ErrInvalid},
			{"noKind", func(p *store.TurnOutputAppendParams) { p.Updates = []store.OutputUpdate{{Text: "x"}} }, jam.ErrInvalid},
			{"empty", func(p *store.TurnOutputAppendParams) { p.Updates = nil }, jam.ErrInvalid},
			{"zeroTime", func(p *store.TurnOutputAppendParams) { p.At = time.Time{} }, jam.ErrInvalid},
			{"badTurnID", func(p *store.TurnOutputAppendParams) { p.TurnID = "nope" }, jam.ErrInvalid},
			{"unknownTurn", func(p *store.TurnOutputAppendParams) { p.TurnID = jam.New[jam.TurnID](b.minter) }, jam.ErrNotFound},
			{"otherWorkspace", func(p *store.TurnOutputAppendParams) { p.WorkspaceID = b.other }, jam.ErrNotFound},
			{"staleGeneration", func(p *store.TurnOutputAppendParams) { p.LeaseGeneration++ }, jam.ErrLeaseLost},
			{"otherLease", func(p *store.TurnOutputAppendParams) { p.LeaseID = jam.New[jam.LeaseID](b.minter) }, jam.ErrLeaseLost},
			{"sameBatch", func(p *store.TurnOutputAppendParams) { p.Batch = 1 }, jam.ErrConflict},
		} {
			p := b.params(2, textUpdate("text", "b"))
			tt.edit(&p)
			_, err := b.st.TurnOutputAppend(ctx, p)
			require.ErrorIs(t, err, tt.want, tt.name)
		}
		b.append(t, 3, textUpdate("text", "c"))
		_, err := b.st.TurnOutputAppend(ctx, b.params(2, textUpdate("text", "b")))
		require.ErrorIs(t, err, jam.ErrConflict, "a batch before the last stored one")

		b.move(t, jam.TurnRunning, jam.TurnSucceeded)
		_, err = b.st.TurnOutputAppend(ctx, b.params(4, textUpdate("text", "late")))
		require.ErrorIs(t, err, jam.ErrLeaseLost, "the turn has ended")

		got := b.read(t)
		require.Len(t, got, 2)
		require.Equal(t, "a", got[0].Updates[0].Text)
		require.Equal(t, "c", got[1].Updates[0].Text)
	})

	t.Run("TurnOutputAppend_textBoundKeepsToolCalls", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// 1 MiB less a byte of three-byte runes, so the bound falls inside a
		// rune and the cut must move back to its start.
		chunk := strings.Repeat("€", (1<<20)/3)
		n := 0
		for sum := 0; sum <= store.TurnOutputMaxText; sum += len(chunk) {
			n++
			b.append(t, n, textUpdate("text", chunk))
		}
		last := b.read(t)[n-1]
		require.True(t, last.Truncated, "the batch that crossed the bound says so")

		call := store.OutputUpdate{Kind: "tool_call", ToolCallID: "c9", Title: "make test", Status: "pending"}
		// One byte is left: too little for a euro sign.
		kept := b.append(t, n+1, textUpdate("thought", "€ more"), call, textUpdate("text", "more"))
		require.Equal(t, []store.OutputUpdate{call}, kept.Updates, "tool calls are kept after the text is full")
		require.True(t, kept.Truncated)
		kept = b.append(t, n+2, textUpdate("text", "still more"))
		require.Empty(t, kept.Updates)

		got := b.read(t)
		require.Len(t, got, n+1, "a batch that keeps nothing more is not stored")
		text := 0
		for _, g := range got {
			for _, u := range g.Updates {
				require.True(t, utf8.ValidString(u.Text), "text is cut on a rune boundary")
				text += len(u.Text)
			}
		}
		require.LessOrEqual(t, text, store.TurnOutputMaxText)
		require.Equal(t, store.TurnOutputMaxText-1, text, "all but the byte too few for a euro sign")
		require.Equal(t, []store.OutputUpdate{call}, got[n].Updates)
		require.True(t, got[n].Truncated)
		require.False(t, got[0].Truncated)
	})

	t.Run("TurnOutputAppend_byteBound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		title := strings.Repeat("t", 1<<20)
		n := 0
		for stored := 0; stored <= store.TurnOutputMaxBytes; stored += len(title) {
			n++
			b.append(t, n, store.OutputUpdate{Kind: "tool_call", ToolCallID: "c", Title: title})
		}
		kept := b.append(t, n+1, store.OutputUpdate{Kind: "plan", Plan: []store.OutputPlanEntry{{Content: "x"}}})
		require.Empty(t, kept.Updates, "beyond the byte bound nothing is kept")
		require.True(t, kept.Truncated)

		size := 0
		got := b.read(t)
		for _, g := range got {
			raw, err := json.Marshal(g.Updates)
			require.NoError(t, err)
			size += len(raw)
		}
		require.LessOrEqual(t, size, store.TurnOutputMaxBytes)
		require.Greater(t, size, store.TurnOutputMaxBytes-2*len(title))
		require.True(t, got[len(got)-1].Truncated)
	})
}
