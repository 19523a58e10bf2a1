package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// UsageOptions are the inputs of "jam usage".
type UsageOptions struct {
	IO      *IOStreams
	DataDir string
	By      string
	Since   string
	JSON    bool
}

func newUsageCmd(io *IOStreams, deps Deps) *cobra.Command {
	opts := &UsageOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "usage [--by agent|room|session|day] [--since D] [--json]",
		Short: "Show what owned agents' turns used: tokens and cost",
		Long: `Show what owned agents' turns used, one row per agent (the default),
room, session or day (UTC): the turns, the input, output, cached and
reasoning tokens, and the cost, with a total line. --since keeps the
turns that started since D: a duration (90m, 24h), a number of days (7d),
a date (2026-03-14, from midnight UTC) or an RFC 3339 time.

A cost the agent reports (Claude Code does) is shown as reported. Otherwise
jamd estimates it from the price table, prices.toml in the data directory
(US dollars per million input, output and cached input tokens per model);
an estimated cost is marked "~". A turn whose model has no price has an
unknown cost, counted apart ("+ N unpriced"), never as zero. --json prints
costs as integer micro-dollars (cost_micros).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			// --since is read by the daemon, against its clock.
			if !slices.Contains([]string{wire.UsageByAgent, wire.UsageByRoom, wire.UsageBySession, wire.UsageByDay}, opts.By) {
				return &usageError{err: fmt.Errorf("--by %q is not agent, room, session or day", opts.By)}
			}
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			return runUsage(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.By, "by", wire.UsageByAgent, "group by agent, room, session or day")
	cmd.Flags().StringVar(&opts.Since, "since", "", "only turns that started since: a duration (24h, 7d), a date or an RFC 3339 time")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runUsage(ctx context.Context, opts *UsageOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	rep, err := client.Usage(ctx, opts.By, opts.Since)
	if err != nil {
		return err
	}
	if opts.JSON {
		rep.Rows = nonNil(rep.Rows)
		return printJSON(opts.IO, rep)
	}
	return printUsage(opts.IO.Out, rep)
}

// printUsage prints a usage report as a table with a total line.
func printUsage(w io.Writer, rep wire.UsageReport) error {
	if len(rep.Rows) == 0 {
		fmt.Fprintln(w, "no turns")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := strings.ToUpper(rep.By)
	agent := rep.By == wire.UsageByAgent
	if agent {
		head += "\tNAME"
	}
	fmt.Fprintln(tw, head+"\tTURNS\tINPUT\tOUTPUT\tCACHED\tREASONING\tCOST")
	line := func(key, name string, s wire.UsageSum) {
		if agent {
			key += "\t" + name
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\n", key, s.Turns, s.InputTokens, s.OutputTokens, s.CachedTokens, s.ReasoningTokens, sumCost(s))
	}
	for _, r := range rep.Rows {
		line(r.Key, r.Name, r.UsageSum)
	}
	line("TOTAL", "", rep.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Truncated {
		fmt.Fprintln(w, "(more groups than shown; the total covers them all)")
	}
	if rep.Total.Estimated > 0 {
		fmt.Fprintln(w, "~ estimated from the price table (prices.toml in the data directory)")
	}
	return nil
}

// sumCost is a sum's cost as shown: "$0.0421", "~$0.0421" when any part
// is estimated, "+ N unpriced" for turns without a known cost, "unknown"
// when none has one, "-" when nothing was used.
func sumCost(s wire.UsageSum) string {
	var out string
	switch {
	case s.Costed > 0:
		out = dollars(s.CostMicros)
		if s.Estimated > 0 {
			out = "~" + out
		}
	case s.Unpriced > 0:
		return "unknown"
	default:
		return "-"
	}
	if s.Unpriced > 0 {
		out += " + " + strconv.FormatInt(s.Unpriced, 10) + " unpriced"
	}
	return out
}

// dollars formats micro-dollars as US dollars, with at least two
// decimals and at most six, exactly.
func dollars(micros int64) string {
	sign := ""
	if micros < 0 {
		sign, micros = "-", -micros
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", micros%1_000_000), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s$%d.%s", sign, micros/1_000_000, frac)
}

// executionCost is one execution's cost as shown.
func executionCost(u *wire.ExecutionUsage) string {
	switch {
	case u.CostMicros == nil:
		return "cost unknown"
	case u.CostEstimated:
		return "~" + dollars(*u.CostMicros) + " (estimated)"
	}
	return dollars(*u.CostMicros)
}

// usageLine is a turn's usage on one line.
func usageLine(u *wire.ExecutionUsage) string {
	s := fmt.Sprintf("%d input, %d output, %d cached, %d reasoning tokens; %s", u.InputTokens, u.OutputTokens, u.CachedTokens, u.ReasoningTokens, executionCost(u))
	if u.Model != "" {
		s += "; model " + u.Model
	}
	return s
}
