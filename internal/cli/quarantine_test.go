package cli_test

import (
	"context"
	"testing"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
)

func TestQuarantineCommands(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	rec := wire.QuarantinedRecord{ID: 7, Source: "spool", Seq: 42, Peer: "local/coder", Room: "r1", MessageID: "m1",
		Reason: "open: message authentication failed", QuarantinedAt: at, SealedBytes: 90}
	runCases(t, []cmdCase{
		{
			name:       "list",
			backend:    backend{QuarantineFunc: func(context.Context) ([]wire.QuarantinedRecord, error) { return []wire.QuarantinedRecord{rec}, nil }},
			inv:        invocation{args: []string{"quarantine", "list"}},
			wantStdout: "ID  WHEN                 SOURCE  AGENT        ROOM  MESSAGE  REASON\n7   2026-03-14 15:09:26  spool   local/coder  r1    m1       open: message authentication failed\n",
		},
		{
			name:       "list empty",
			backend:    backend{QuarantineFunc: func(context.Context) ([]wire.QuarantinedRecord, error) { return nil, nil }},
			inv:        invocation{args: []string{"quarantine", "list"}},
			wantStdout: "no quarantined records\n",
		},
		{
			name:     "list --json",
			backend:  backend{QuarantineFunc: func(context.Context) ([]wire.QuarantinedRecord, error) { return nil, nil }},
			inv:      invocation{args: []string{"quarantine", "list", "--json"}},
			wantJSON: `{"records":[]}`,
		},
	})
}
