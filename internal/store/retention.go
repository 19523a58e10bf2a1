package store

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/jam"
)

// RuntimeRetention bounds what owned runtimes keep of their history: the
// turns of a session, with their output, executions and journal, and the
// session's messages. It only ever deletes what is over: a turn that is
// not terminal, its output and its executions are never pruned, nor a
// session message still waiting for a turn (a pending note, or a message
// whose turn is not over), nor the message a kept turn answers.
type RuntimeRetention interface {
	// RuntimePrune applies p to every session of every workspace.
	RuntimePrune(ctx context.Context, p RuntimePruneParams) (RuntimePruned, error)
}

// RuntimePruneParams are the bounds RuntimePrune applies per session.
type RuntimePruneParams struct {
	// KeepTurns is how many of a session's newest turns are kept; older
	// terminal turns are deleted with their output, executions and
	// journal.
	KeepTurns int
	// KeepMessages is how many of a session's newest messages are kept;
	// older ones are deleted once they are over (see RuntimeRetention).
	KeepMessages int
	// MaxOutputBytes bounds the stored output of a session's turns,
	// counted newest turn first (each turn's stored bytes, as
	// TurnOutputMaxBytes counts them): the output of the terminal turns
	// past it is deleted, the turns themselves kept. At least
	// TurnOutputMaxBytes, so the newest turn keeps its output.
	MaxOutputBytes int64
}

// Default retention bounds, applied by the daemon.
const (
	DefaultKeepTurns      = 200
	DefaultKeepMessages   = 500
	DefaultMaxOutputBytes = 64 << 20
)

// Validate checks the bounds.
func (p RuntimePruneParams) Validate() error {
	switch {
	case p.KeepTurns < 1:
		return fmt.Errorf("%w: keep turns %d, want at least 1", jam.ErrInvalid, p.KeepTurns)
	case p.KeepMessages < 1:
		return fmt.Errorf("%w: keep messages %d, want at least 1", jam.ErrInvalid, p.KeepMessages)
	case p.MaxOutputBytes < TurnOutputMaxBytes:
		return fmt.Errorf("%w: session output bound %d is under one turn's (%d)", jam.ErrInvalid, p.MaxOutputBytes, TurnOutputMaxBytes)
	}
	return nil
}

// MaxQueuedPerPeer bounds the queue rows of one peer (an agent), routed
// or not. Queue rows are messages not yet settled, so they are never
// pruned; past the bound, moves to the queue are refused and the messages
// wait in the spool, whose own per-peer bound then holds them back on
// Band. Well above the 100,000-message backlog the benchmarks recover.
const MaxQueuedPerPeer = 250_000

// RuntimePruned counts what RuntimePrune deleted.
type RuntimePruned struct {
	Turns      int // turns, with their executions and journal
	Executions int
	Journal    int // turn journal entries
	Output     int // turn output batches
	Messages   int // session messages
}

// Total is everything deleted.
func (p RuntimePruned) Total() int {
	return p.Turns + p.Executions + p.Journal + p.Output + p.Messages
}
