package acp

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
)

// TestTurnUsageUpdate maps an ACP usage_update (OpenCode sends them) to
// the turn's usage so far: the growth of the session's cumulative cost
// since the turn began.
func TestTurnUsageUpdate(t *testing.T) {
	t.Parallel()
	cost := func(usd float64) *harness.Update {
		return &harness.Update{Kind: harness.UpdateUsage, Usage: &harness.Usage{CostUSD: usd}}
	}
	cases := []struct {
		name   string
		update string
		base   float64
		want   *harness.Update
	}{
		{"first turn", `{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.25,"currency":"USD"}}`, 0, cost(0.25)},
		{"a later turn counts from its start", `{"sessionUpdate":"usage_update","cost":{"amount":0.75,"currency":"USD"}}`, 0.5, cost(0.25)},
		{"currency spelled in lower case", `{"sessionUpdate":"usage_update","cost":{"amount":1,"currency":"usd"}}`, 0, cost(1)},
		{"no growth yet", `{"sessionUpdate":"usage_update","cost":{"amount":0.5,"currency":"USD"}}`, 0.5, nil},
		{"context size only: not a turn's tokens", `{"sessionUpdate":"usage_update","used":10,"size":100}`, 0, nil},
		{"another currency", `{"sessionUpdate":"usage_update","cost":{"amount":1,"currency":"EUR"}}`, 0, nil},
		{"a negative cost", `{"sessionUpdate":"usage_update","cost":{"amount":-1,"currency":"USD"}}`, 0, nil},
		{"not a usage update", `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var su SessionUpdate
			require.NoError(t, json.Unmarshal([]byte(tc.update), &su))
			got, ok := turnUsageUpdate(su, tc.base)
			if tc.want == nil {
				require.False(t, ok)
				require.Zero(t, got)
				return
			}
			require.True(t, ok)
			require.Equal(t, tc.want.Kind, got.Kind)
			require.InDelta(t, tc.want.Usage.CostUSD, got.Usage.CostUSD, 1e-12)
		})
	}
	_, ok := turnUsageUpdate(SessionUpdate{SessionUpdate: UpdateUsage, Cost: &Cost{Amount: math.Inf(1), Currency: "USD"}}, 0)
	require.False(t, ok, "an infinite cost is not reported")
	_, ok = turnUsageUpdate(SessionUpdate{SessionUpdate: UpdateUsage, Cost: &Cost{Amount: math.NaN(), Currency: "USD"}}, 0)
	require.False(t, ok, "NaN is not reported")
}

// TestProcess_streamsTheTurnsCost: a usage_update during a prompt reaches
// it as the turn's usage, counted from the cost the session had when the
// prompt began; one outside a prompt only moves that base.
func TestProcess_streamsTheTurnsCost(t *testing.T) {
	t.Parallel()
	h := &process{prompts: map[string]func(harness.Update){}}
	usage := func(amount float64) Update {
		return Update{SessionID: "s1", SessionUpdate: SessionUpdate{SessionUpdate: UpdateUsage, Cost: &Cost{Amount: amount, Currency: "USD"}}}
	}
	h.route(usage(0.5)) // an earlier turn's cost, seen after it ended
	var got []float64
	h.startPrompt("s1", func(u harness.Update) {
		if u.Kind == harness.UpdateUsage {
			got = append(got, u.Usage.CostUSD)
		}
	})
	h.route(usage(0.6))
	h.route(usage(0.9))
	h.endPrompt("s1")
	h.route(usage(1.0))
	require.Len(t, got, 2)
	require.InDelta(t, 0.1, got[0], 1e-12)
	require.InDelta(t, 0.4, got[1], 1e-12)
}
