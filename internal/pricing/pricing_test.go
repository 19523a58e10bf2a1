package pricing

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

const sample = `
# US dollars per million tokens
[models."claude-sonnet-4-5"]
input = 3.00
output = 15.00
cached_input = 0.30

[models."gpt-5*"]
input = 1.25
output = 10.00
cached_input = 0.125

[models."gpt-5-mini*"]
input = 0.25
output = 2

[models."*"]
input = 0.000001
output = 0.000001
`

func TestParse_lookup(t *testing.T) {
	t.Parallel()
	tbl, err := Parse([]byte(sample))
	require.NoError(t, err)
	require.Equal(t, 4, tbl.Len())
	tests := []struct {
		model string
		want  Price
		ok    bool
	}{
		{"claude-sonnet-4-5", Price{Input: 3_000_000, Output: 15_000_000, CachedInput: 300_000}, true},
		{"gpt-5", Price{Input: 1_250_000, Output: 10_000_000, CachedInput: 125_000}, true},
		{"gpt-5-codex", Price{Input: 1_250_000, Output: 10_000_000, CachedInput: 125_000}, true},
		// The longest prefix wins; cached_input defaults to input.
		{"gpt-5-mini-2025", Price{Input: 250_000, Output: 2_000_000, CachedInput: 250_000}, true},
		// "*" alone matches any other model.
		{"claude-sonnet-4-5-20250929", Price{Input: 1, Output: 1, CachedInput: 1}, true},
		{"", Price{}, false},
	}
	for _, tt := range tests {
		got, ok := tbl.Lookup(tt.model)
		require.Equal(t, tt.ok, ok, tt.model)
		require.Equal(t, tt.want, got, tt.model)
	}
	var zero Table
	_, ok := zero.Lookup("gpt-5")
	require.False(t, ok, "the zero table prices nothing")
}

func TestParse_invalid(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"not toml", `[models`, "price table"},
		{"unknown top key", "currency = \"EUR\"\n", `unknown key "currency"`},
		{"unknown entry key", "[models.m]\ninput = 1\noutput = 1\nreasoning = 2\n", `unknown key "models.m.reasoning"`},
		{"no output", "[models.m]\ninput = 1\n", "needs input and output"},
		{"negative", "[models.m]\ninput = -1\noutput = 1\n", "input: -1 is not a price"},
		{"huge", "[models.m]\ninput = 1\noutput = 1e9\n", "output: 1e+09 is not a price"},
		{"nan", "[models.m]\ninput = nan\noutput = 1\n", "is not a price"},
		{"inf", "[models.m]\ninput = inf\noutput = 1\n", "is not a price"},
		{"string price", "[models.m]\ninput = \"1\"\noutput = 1\n", "price table"},
		{"empty name", "[models.\"\"]\ninput = 1\noutput = 1\n", "empty model name"},
		{"inner star", "[models.\"g*t\"]\ninput = 1\noutput = 1\n", `"*" only ends a name`},
		{"too big", strings.Repeat("#", MaxFileBytes+1), "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.in))
			require.ErrorIs(t, err, jam.ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	sonnet := Price{Input: 3_000_000, Output: 15_000_000, CachedInput: 300_000}
	tests := []struct {
		name string
		p    Price
		u    store.ExecutionUsage
		want int64
	}{
		{"nothing", sonnet, store.ExecutionUsage{}, 0},
		// 1000×3 + 2000×0.3 + 500×15 = 3000 + 600 + 7500 micro-dollars.
		{"each kind", sonnet, store.ExecutionUsage{InputTokens: 1000, CachedTokens: 2000, OutputTokens: 500, ReasoningTokens: 400}, 11_100},
		// Reasoning is part of the output: not priced again.
		{"reasoning not priced again", sonnet, store.ExecutionUsage{OutputTokens: 1, ReasoningTokens: 1_000_000}, 15},
		// 1 token at 1.25 $/M is 1.25 µ$: rounded down; 2 tokens 2.5: up.
		{"rounds below half down", Price{Input: 1_250_000}, store.ExecutionUsage{InputTokens: 1}, 1},
		{"rounds half up", Price{Input: 1_250_000}, store.ExecutionUsage{InputTokens: 2}, 3},
		// Rounded once, on the sum: 0.4 + 0.4 = 0.8 µ$ is 1, not 0 + 0.
		{"rounds the sum once", Price{Input: 400_000, Output: 400_000}, store.ExecutionUsage{InputTokens: 1, OutputTokens: 1}, 1},
		{"a million tokens is the price", Price{Output: 10_000_000}, store.ExecutionUsage{OutputTokens: 1_000_000}, 10_000_000},
		{"saturates", Price{Input: maxPrice * 1_000_000}, store.ExecutionUsage{InputTokens: math.MaxInt64}, math.MaxInt64},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, Estimate(tt.p, tt.u), tt.name)
	}
}

func TestMicros(t *testing.T) {
	t.Parallel()
	tests := []struct {
		usd  float64
		want int64
		ok   bool
	}{
		{0, 0, true},
		{0.0123456, 12_346, true},
		{0.0000004, 0, true},
		{0.0000005, 1, true},
		{1.5, 1_500_000, true},
		{-0.01, 0, false},
		{math.NaN(), 0, false},
		{math.Inf(1), 0, false},
		{1e300, 0, false},
	}
	for _, tt := range tests {
		got, ok := Micros(tt.usd)
		require.Equal(t, tt.ok, ok, "%v", tt.usd)
		require.Equal(t, tt.want, got, "%v", tt.usd)
	}
}

func TestSettle(t *testing.T) {
	t.Parallel()
	tbl, err := Parse([]byte(sample))
	require.NoError(t, err)
	tests := []struct {
		name  string
		model string
		u     harness.Usage
		want  *store.ExecutionUsage
	}{
		{name: "nothing reported", want: nil},
		{name: "reported cost kept as reported", model: "claude-sonnet-4-5",
			u:    harness.Usage{InputTokens: 1000, OutputTokens: 500, CostUSD: 0.0421},
			want: &store.ExecutionUsage{InputTokens: 1000, OutputTokens: 500, CostMicros: 42_100, CostKnown: true, Model: "claude-sonnet-4-5"}},
		{name: "reported cost without a model", u: harness.Usage{OutputTokens: 3, CostUSD: 0.000002},
			want: &store.ExecutionUsage{OutputTokens: 3, CostMicros: 2, CostKnown: true}},
		{name: "estimated from the table", model: "gpt-5-codex",
			u:    harness.Usage{InputTokens: 1000, CachedTokens: 8000, OutputTokens: 100, ReasoningTokens: 60},
			want: &store.ExecutionUsage{InputTokens: 1000, CachedTokens: 8000, OutputTokens: 100, ReasoningTokens: 60, CostMicros: 1250 + 1000 + 1000, CostKnown: true, CostEstimated: true, Model: "gpt-5-codex"}},
		{name: "no model: unknown", u: harness.Usage{InputTokens: 5},
			want: &store.ExecutionUsage{InputTokens: 5}},
		{name: "model only, no tokens: unknown", model: "gpt-5",
			want: &store.ExecutionUsage{Model: "gpt-5"}},
		{name: "negative counts are zero", model: "gpt-5", u: harness.Usage{InputTokens: -5, OutputTokens: 1_000_000},
			want: &store.ExecutionUsage{OutputTokens: 1_000_000, CostMicros: 10_000_000, CostKnown: true, CostEstimated: true, Model: "gpt-5"}},
		{name: "a bad reported cost is estimated instead", model: "gpt-5", u: harness.Usage{OutputTokens: 1_000_000, CostUSD: math.Inf(1)},
			want: &store.ExecutionUsage{OutputTokens: 1_000_000, CostMicros: 10_000_000, CostKnown: true, CostEstimated: true, Model: "gpt-5"}},
		{name: "a model name is made storable", model: "m\x00\xff" + strings.Repeat("é", store.UsageModelMax), u: harness.Usage{InputTokens: 1},
			// (priced by the "*" entry: a millionth of a micro-dollar rounds to 0)
			want: &store.ExecutionUsage{InputTokens: 1, CostKnown: true, CostEstimated: true, Model: "m\uFFFD\uFFFD" + strings.Repeat("é", (store.UsageModelMax-7)/2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tbl.Settle(tt.model, tt.u)
			require.Equal(t, tt.want, got)
			if got != nil {
				require.NoError(t, got.Validate())
			}
		})
	}
	var none Table
	require.Equal(t, &store.ExecutionUsage{InputTokens: 1, Model: "gpt-5"}, none.Settle("gpt-5", harness.Usage{InputTokens: 1}), "without a table the cost is unknown")
}

func TestFile_readAgainWhenChanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	f, err := OpenFile(path)
	require.NoError(t, err, "a missing file is an empty table")
	tbl, err := f.Table()
	require.NoError(t, err)
	require.Zero(t, tbl.Len())

	write := func(s string, mod time.Time) {
		require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
		require.NoError(t, os.Chtimes(path, mod, mod))
	}
	at := time.Now().Add(-time.Hour)
	write("[models.a]\ninput = 1\noutput = 2\n", at)
	tbl, err = f.Table()
	require.NoError(t, err)
	p, ok := tbl.Lookup("a")
	require.True(t, ok)
	require.Equal(t, Price{Input: 1_000_000, Output: 2_000_000, CachedInput: 1_000_000}, p)

	// A change that does not parse keeps the last good table; its error
	// is reported once.
	write("[models.a]\ninput = -1\noutput = 2\n", at.Add(time.Minute))
	tbl, err = f.Table()
	require.ErrorIs(t, err, jam.ErrInvalid)
	_, ok = tbl.Lookup("a")
	require.True(t, ok)
	tbl, err = f.Table()
	require.NoError(t, err)
	_, ok = tbl.Lookup("a")
	require.True(t, ok)

	write("[models.b]\ninput = 1\noutput = 2\n", at.Add(2*time.Minute))
	tbl, err = f.Table()
	require.NoError(t, err)
	_, ok = tbl.Lookup("a")
	require.False(t, ok)
	_, ok = tbl.Lookup("b")
	require.True(t, ok)

	require.NoError(t, os.Remove(path))
	tbl, err = f.Table()
	require.NoError(t, err)
	require.Zero(t, tbl.Len(), "a removed file prices nothing")

	write("[models.a]\ninput = x\n", at)
	_, err = OpenFile(path)
	require.ErrorIs(t, err, jam.ErrInvalid, "a table that does not parse stops the start")
	require.ErrorContains(t, err, FileName)
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("[models.\"a*\"]\ninput = 1\noutput = 1\n"))
	f.Add([]byte("[models]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl, err := Parse(data)
		if err != nil {
			require.ErrorIs(t, err, jam.ErrInvalid)
			return
		}
		for _, m := range []string{"a", "gpt-5", string(data)} {
			if p, ok := tbl.Lookup(m); ok {
				require.GreaterOrEqual(t, min(p.Input, p.Output, p.CachedInput), int64(0))
				require.GreaterOrEqual(t, Estimate(p, store.ExecutionUsage{InputTokens: 1 << 40, OutputTokens: 1 << 40, CachedTokens: 1 << 40}), int64(0))
			}
		}
	})
}
