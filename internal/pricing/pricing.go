// Package pricing turns what a turn used into what it cost.
//
// A cost the agent's CLI reports (Claude Code's total_cost_usd, an ACP
// agent's usage_update) is kept as reported. Otherwise the cost is
// estimated from the price table, a TOML file in the data directory
// (FileName), which a person writes:
//
//	# US dollars per million tokens
//	[models."claude-sonnet-4-5"]
//	input = 3.00
//	output = 15.00
//	cached_input = 0.30
//
//	[models."gpt-5*"]      # any model whose name starts with gpt-5
//	input = 1.25
//	output = 10.00
//	cached_input = 0.125
//
// A model is matched by its exact name first, else by the longest entry
// ending in "*" whose text before the "*" starts the name. A model without
// a price, or a turn that reported no model, has an unknown cost: not zero.
//
// Invariants: money is integer micro-dollars (millionths of a US dollar)
// from the moment a price or a reported cost is read; prices keep six
// decimals of a dollar per million tokens. An estimate is
// input×input + cached×cached_input + output×output, the tokens as
// [store.ExecutionUsage] counts them (input without the cached part,
// output with the reasoning part), computed exactly and rounded once, half
// up, to a micro-dollar. A reported cost is rounded half away from zero to
// a micro-dollar. Nothing is estimated for a turn that reported no tokens.
package pricing

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// FileName is the price table's name in the data directory.
const FileName = "prices.toml"

// MaxFileBytes bounds the price table's file.
const MaxFileBytes = 1 << 20

// maxPrice bounds a price, in US dollars per million tokens.
const maxPrice = 1_000_000

// Price is what a model costs, in micro-dollars per million tokens (so
// 1.25 dollars per million is 1_250_000).
type Price struct {
	Input, Output, CachedInput int64
}

// Table is a price table; the zero Table prices nothing.
type Table struct {
	exact  map[string]Price
	prefix []prefixPrice // longest prefix first
}

type prefixPrice struct {
	prefix string
	price  Price
}

// Len is the number of models the table prices.
func (t Table) Len() int { return len(t.exact) + len(t.prefix) }

// Lookup returns model's price: the exact entry, else the longest
// matching prefix entry.
func (t Table) Lookup(model string) (Price, bool) {
	if model == "" {
		return Price{}, false
	}
	if p, ok := t.exact[model]; ok {
		return p, true
	}
	for _, p := range t.prefix {
		if strings.HasPrefix(model, p.prefix) {
			return p.price, true
		}
	}
	return Price{}, false
}

// fileEntry is one model's entry as the file spells it.
type fileEntry struct {
	Input       *float64 `toml:"input"`
	Output      *float64 `toml:"output"`
	CachedInput *float64 `toml:"cached_input"`
}

// Parse reads a price table. Every entry needs input and output;
// cached_input defaults to input. An unknown key, a negative, huge or
// non-finite price, an empty model name or a "*" anywhere but at the end
// is jam.ErrInvalid, naming the entry.
func Parse(data []byte) (Table, error) {
	if len(data) > MaxFileBytes {
		return Table{}, fmt.Errorf("%w: price table: more than %d bytes", jam.ErrInvalid, MaxFileBytes)
	}
	var doc struct {
		Models map[string]fileEntry `toml:"models"`
	}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
	if err != nil {
		return Table{}, fmt.Errorf("%w: price table: %v", jam.ErrInvalid, oneLine(err))
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Table{}, fmt.Errorf("%w: price table: unknown key %q", jam.ErrInvalid, und[0].String())
	}
	t := Table{exact: map[string]Price{}}
	for name, e := range doc.Models {
		p, err := e.price()
		if err != nil {
			return Table{}, fmt.Errorf("%w: price table: model %q: %v", jam.ErrInvalid, name, err)
		}
		stem, prefix := strings.CutSuffix(name, "*")
		switch {
		case stem == "" && !prefix:
			return Table{}, fmt.Errorf("%w: price table: an empty model name", jam.ErrInvalid)
		case strings.Contains(stem, "*"):
			return Table{}, fmt.Errorf("%w: price table: model %q: \"*\" only ends a name", jam.ErrInvalid, name)
		case prefix:
			t.prefix = append(t.prefix, prefixPrice{prefix: stem, price: p})
		default:
			t.exact[name] = p
		}
	}
	sort.Slice(t.prefix, func(i, j int) bool {
		a, b := t.prefix[i].prefix, t.prefix[j].prefix
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a < b
	})
	return t, nil
}

func (e fileEntry) price() (Price, error) {
	if e.Input == nil || e.Output == nil {
		return Price{}, errors.New("needs input and output")
	}
	if e.CachedInput == nil {
		e.CachedInput = e.Input
	}
	var p Price
	for _, f := range []struct {
		name string
		v    float64
		to   *int64
	}{{"input", *e.Input, &p.Input}, {"output", *e.Output, &p.Output}, {"cached_input", *e.CachedInput, &p.CachedInput}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > maxPrice {
			return Price{}, fmt.Errorf("%s: %v is not a price from 0 to %d dollars per million tokens", f.name, f.v, maxPrice)
		}
		*f.to = int64(math.Round(f.v * 1e6))
	}
	return p, nil
}

// oneLine is err's text on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// Estimate is what u costs at p, in micro-dollars: exact, rounded once,
// half up; saturated at math.MaxInt64.
func Estimate(p Price, u store.ExecutionUsage) int64 {
	sum := new(big.Int)
	for _, term := range [][2]int64{{u.InputTokens, p.Input}, {u.CachedTokens, p.CachedInput}, {u.OutputTokens, p.Output}} {
		sum.Add(sum, new(big.Int).Mul(big.NewInt(max(term[0], 0)), big.NewInt(term[1])))
	}
	// sum is in micro-dollars per million: add half a million, divide.
	sum.Add(sum, big.NewInt(500_000))
	sum.Quo(sum, big.NewInt(1_000_000))
	if !sum.IsInt64() {
		return math.MaxInt64
	}
	return sum.Int64()
}

// Micros is a reported cost in US dollars as micro-dollars, rounded half
// away from zero; false for a cost that is not a finite, non-negative
// amount.
func Micros(usd float64) (int64, bool) {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 || usd > math.MaxInt64/1e6 {
		return 0, false
	}
	return int64(math.Round(usd * 1e6)), true
}

// Settle is the usage an execution stores for a turn's reported usage and
// model: nil when the turn reported neither. A cost the CLI reported
// (CostUSD above zero) is kept as reported, not estimated, unless the
// adapter itself marked it estimated; otherwise a turn with tokens whose
// model t prices gets an estimate; otherwise the cost is unknown.
func (t Table) Settle(model string, u harness.Usage) *store.ExecutionUsage {
	if u.IsZero() && model == "" {
		return nil
	}
	model = cleanModel(model)
	out := &store.ExecutionUsage{InputTokens: max(u.InputTokens, 0), OutputTokens: max(u.OutputTokens, 0),
		CachedTokens: max(u.CachedTokens, 0), ReasoningTokens: max(u.ReasoningTokens, 0), Model: model}
	if u.CostUSD > 0 {
		if c, ok := Micros(u.CostUSD); ok {
			out.CostMicros, out.CostKnown, out.CostEstimated = c, true, u.CostEstimated
			return out
		}
	}
	if out.InputTokens+out.OutputTokens+out.CachedTokens == 0 {
		return out
	}
	if p, ok := t.Lookup(model); ok {
		out.CostMicros, out.CostKnown, out.CostEstimated = Estimate(p, *out), true, true
	}
	return out
}

// cleanModel is a model name as the store keeps it: valid UTF-8 without
// NUL, at most store.UsageModelMax bytes.
func cleanModel(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= store.UsageModelMax {
		return s
	}
	return strings.ToValidUTF8(s[:store.UsageModelMax], "")
}

// File is a price table read from a file, read again when the file
// changes, so that a new price applies from the next turn without a
// restart. Safe for concurrent use.
type File struct {
	path string
	mu   sync.Mutex
	// stamp is the file's size and time when table was read; table is
	// the last table read that parsed.
	stamp stamp
	table Table
}

type stamp struct {
	exists bool
	size   int64
	mod    time.Time
}

// OpenFile reads the price table at path: a missing file is an empty
// table; a file that does not parse is an error.
func OpenFile(path string) (*File, error) {
	f := &File{path: path}
	st, t, err := f.read()
	if err != nil {
		return nil, err
	}
	f.stamp, f.table = st, t
	return f, nil
}

// read reads the file (no lock is held).
func (f *File) read() (stamp, Table, error) {
	fi, err := os.Stat(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return stamp{}, Table{}, nil
	}
	if err != nil {
		return stamp{}, Table{}, fmt.Errorf("price table: %w", err)
	}
	st := stamp{exists: true, size: fi.Size(), mod: fi.ModTime()}
	if fi.Size() > MaxFileBytes {
		return st, Table{}, fmt.Errorf("%w: price table %s: more than %d bytes", jam.ErrInvalid, FileName, MaxFileBytes)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return st, Table{}, fmt.Errorf("price table: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return st, Table{}, fmt.Errorf("%s: %w", FileName, err)
	}
	return st, t, nil
}

// Table returns the table as the file now says; when the file changed
// and no longer parses, the last good table and the error (once per
// change, nil afterwards).
func (f *File) Table() (Table, error) {
	cur := stamp{}
	if fi, err := os.Stat(f.path); err == nil {
		cur = stamp{exists: true, size: fi.Size(), mod: fi.ModTime()}
	}
	f.mu.Lock()
	same := cur == f.stamp
	t := f.table
	f.mu.Unlock()
	if same {
		return t, nil
	}
	st, nt, err := f.read()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stamp = st
	if err != nil {
		return f.table, err
	}
	f.table = nt
	return nt, nil
}
