package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/jamhq/jam/internal/api/wire"
)

func TestUsageCommand(t *testing.T) {
	t.Parallel()
	report := func(wantBy string, wantSinceSet bool, rep wire.UsageReport) func(context.Context, wire.UsageRequest) (wire.UsageReport, error) {
		return func(_ context.Context, r wire.UsageRequest) (wire.UsageReport, error) {
			assert.Equal(t, wantBy, r.By)
			assert.Equal(t, wantSinceSet, !r.Since.IsZero())
			rep.By = r.By
			return rep, nil
		}
	}
	byAgent := wire.UsageReport{
		Rows: []wire.UsageRow{
			{Key: "local/claude", Name: "Claude", UsageSum: wire.UsageSum{Turns: 3, InputTokens: 1200, OutputTokens: 340, CachedTokens: 5000, ReasoningTokens: 20, CostMicros: 42_100, Costed: 3}},
			{Key: "local/codex", Name: "Codex", UsageSum: wire.UsageSum{Turns: 2, InputTokens: 1000, OutputTokens: 100, CostMicros: 3250, Costed: 1, Estimated: 1, Unpriced: 1}},
			{Key: "local/demo", Name: "Demo", UsageSum: wire.UsageSum{Turns: 1, InputTokens: 7, Unpriced: 1}},
			{Key: "local/quiet", Name: "Quiet", UsageSum: wire.UsageSum{Turns: 1}},
		},
		Total: wire.UsageSum{Turns: 7, InputTokens: 2207, OutputTokens: 440, CachedTokens: 5000, ReasoningTokens: 20, CostMicros: 45_350, Costed: 4, Estimated: 1, Unpriced: 2},
	}
	runCases(t, []cmdCase{
		{
			name:    "by agent is the default",
			backend: backend{UsageFunc: report("agent", false, byAgent)},
			inv:     invocation{args: []string{"usage"}},
			wantStdout: "AGENT         NAME    TURNS  INPUT  OUTPUT  CACHED  REASONING  COST\n" +
				"local/claude  Claude  3      1200   340     5000    20         $0.0421\n" +
				"local/codex   Codex   2      1000   100     0       0          ~$0.00325 + 1 unpriced\n" +
				"local/demo    Demo    1      7      0       0       0          unknown\n" +
				"local/quiet   Quiet   1      0      0       0       0          -\n" +
				"TOTAL                 7      2207   440     5000    20         ~$0.04535 + 2 unpriced\n" +
				"~ estimated from the price table (prices.toml in the data directory)\n",
		},
		{
			name: "by room since a week, as JSON",
			backend: backend{UsageFunc: report("room", true, wire.UsageReport{Rows: []wire.UsageRow{{Key: "r1", UsageSum: wire.UsageSum{Turns: 1, InputTokens: 5, OutputTokens: 2}}},
				Total: wire.UsageSum{Turns: 1, InputTokens: 5, OutputTokens: 2}})},
			inv: invocation{args: []string{"usage", "--by", "room", "--since", "7d", "--json"}},
			wantJSON: `{"by":"room","rows":[{"key":"r1","turns":1,"input_tokens":5,"output_tokens":2,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":0,"costed":0,"estimated":0,"unpriced":0}],
"total":{"turns":1,"input_tokens":5,"output_tokens":2,"cached_tokens":0,"reasoning_tokens":0,"cost_micros":0,"costed":0,"estimated":0,"unpriced":0}}`,
		},
		{
			name:       "nothing yet",
			backend:    backend{UsageFunc: report("day", true, wire.UsageReport{})},
			inv:        invocation{args: []string{"usage", "--by", "day", "--since", "2026-03-14"}},
			wantStdout: "no turns\n",
		},
		{
			name:       "bad grouping",
			inv:        invocation{args: []string{"usage", "--by", "model"}},
			wantCode:   2,
			wantStderr: "jam: --by \"model\" is not agent, room, session or day\n",
		},
		{
			name: "bad since, refused by the daemon",
			backend: backend{UsageFunc: func(context.Context, wire.UsageRequest) (wire.UsageReport, error) {
				t.Error("a refused since reaches the backend")
				return wire.UsageReport{}, nil
			}},
			inv:        invocation{args: []string{"usage", "--since", "yesterday"}},
			wantCode:   2,
			wantStderr: "jam: invalid argument: since \"yesterday\": not a duration, a date or a time (want a duration like 24h or 7d, a date like 2026-03-14, or an RFC 3339 time) (invalid_argument)\n",
		},
		{
			name: "turn show with usage",
			backend: backend{
				SessionsFunc: func(context.Context) ([]wire.Session, error) {
					return []wire.Session{{ID: "sess_1", Agent: "local/demo", Room: "r1"}}, nil
				},
				TurnFunc: func(context.Context, string) (wire.Turn, error) {
					cost := int64(3250)
					return wire.Turn{ID: "turn_1", Seq: 1, State: "succeeded", Reason: "end_turn", Session: "sess_1",
						Usage: &wire.ExecutionUsage{InputTokens: 1000, OutputTokens: 100, CachedTokens: 8000, ReasoningTokens: 60, CostMicros: &cost, CostEstimated: true, Model: "gpt-5-codex"}}, nil
				},
				TurnOutputFunc: func(context.Context, string) (wire.TurnOutput, error) { return wire.TurnOutput{}, nil },
			},
			inv: invocation{args: []string{"turn", "show", "turn_1"}},
			wantStdout: "turn turn_1 (#1 of sess_1, local/demo in room r1): succeeded (end_turn)\n" +
				"usage: 1000 input, 100 output, 8000 cached, 60 reasoning tokens; ~$0.00325 (estimated); model gpt-5-codex\n" +
				"no output kept (the turn streamed nothing, or ran before the daemon stored output)\n",
		},
		{
			name: "turn show with an unknown cost",
			backend: backend{
				SessionsFunc: func(context.Context) ([]wire.Session, error) {
					return []wire.Session{{ID: "sess_1", Agent: "local/demo", Room: "r1"}}, nil
				},
				TurnFunc: func(context.Context, string) (wire.Turn, error) {
					return wire.Turn{ID: "turn_1", Seq: 1, State: "interrupted", Session: "sess_1", Usage: &wire.ExecutionUsage{InputTokens: 20, OutputTokens: 7}}, nil
				},
				TurnOutputFunc: func(context.Context, string) (wire.TurnOutput, error) { return wire.TurnOutput{}, nil },
			},
			inv: invocation{args: []string{"turn", "show", "turn_1"}},
			wantStdout: "turn turn_1 (#1 of sess_1, local/demo in room r1): interrupted\n" +
				"usage: 20 input, 7 output, 0 cached, 0 reasoning tokens; cost unknown\n" +
				"no output kept (the turn streamed nothing, or ran before the daemon stored output)\n",
		},
	})
}
