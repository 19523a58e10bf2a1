package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/pricing"
	"github.com/jamhq/jam/internal/store"
)

// openPrices opens the price table in the data directory; a table that
// does not parse stops the start, so a typo is seen at once. The returned
// function reads the file again when it changed: a change that does not
// parse is logged and the last good table stays.
func openPrices(dataDir string, log *slog.Logger) (func() pricing.Table, error) {
	f, err := pricing.OpenFile(filepath.Join(dataDir, pricing.FileName))
	if err != nil {
		return nil, err
	}
	return func() pricing.Table {
		t, err := f.Table()
		if err != nil {
			log.Warn("price table not read again; the last one stays", "err", err)
		}
		return t
	}, nil
}

// Usage implements api.Usage: one grouped query of the store, with the
// agents' names for an agent report.
func (d *daemon) Usage(ctx context.Context, r wire.UsageRequest) (wire.UsageReport, error) {
	rep, err := d.store.UsageReport(ctx, store.UsageQuery{WorkspaceID: d.workspace.ID, By: store.UsageBy(r.By), Since: r.Since})
	if err != nil {
		return wire.UsageReport{}, err
	}
	names := map[string]string{}
	if r.By == wire.UsageByAgent {
		peers, err := d.store.PeerList(ctx, d.workspace.ID)
		if err != nil {
			return wire.UsageReport{}, err
		}
		for _, p := range peers {
			names[p.Key.String()] = p.Name
		}
	}
	out := wire.UsageReport{By: r.By, Since: r.Since, Rows: make([]wire.UsageRow, 0, len(rep.Rows)), Total: wireUsageSum(rep.Total), Truncated: rep.Truncated}
	for _, row := range rep.Rows {
		w := wire.UsageRow{UsageSum: wireUsageSum(row.UsageSum)}
		switch r.By {
		case wire.UsageByAgent:
			w.Key = row.Peer.String()
			w.Name = names[w.Key]
		case wire.UsageByRoom:
			w.Key = string(row.Room)
		case wire.UsageBySession:
			w.Key = string(row.Session)
		case wire.UsageByDay:
			w.Key = row.Day.UTC().Format(time.DateOnly)
		}
		out.Rows = append(out.Rows, w)
	}
	return out, nil
}

func wireUsageSum(s store.UsageSum) wire.UsageSum {
	return wire.UsageSum{Turns: s.Turns, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CachedTokens: s.CachedTokens,
		ReasoningTokens: s.ReasoningTokens, CostMicros: s.CostMicros, Costed: s.Costed, Estimated: s.Estimated, Unpriced: s.Unpriced}
}

// wireExecutionUsage is an execution's usage on the wire; nil when it
// recorded nothing.
func wireExecutionUsage(u store.ExecutionUsage) *wire.ExecutionUsage {
	if u == (store.ExecutionUsage{}) {
		return nil
	}
	w := &wire.ExecutionUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CachedTokens,
		ReasoningTokens: u.ReasoningTokens, CostEstimated: u.CostEstimated, Model: u.Model}
	if u.CostKnown {
		c := u.CostMicros
		w.CostMicros = &c
	}
	return w
}
