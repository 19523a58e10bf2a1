package suite

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// Row is one line of the table: a figure of jam beside the same figure of
// a baseline measured in the same run.
type Row struct {
	Scenario string  `json:"scenario"`
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit"`
	Jam      float64 `json:"jam"`
	Baseline float64 `json:"baseline"`
	// BaselineName names what Baseline measured.
	BaselineName string `json:"baseline_name"`
	// Ratio is Jam / Baseline (0 when Baseline is 0).
	Ratio float64 `json:"ratio"`
	// Better says which direction of the ratio is good: "higher" or
	// "lower".
	Better string `json:"better"`
}

func row(scenario, metric, unit string, jam, base float64, baseName, better string) Row {
	r := Row{Scenario: scenario, Metric: metric, Unit: unit, Jam: jam, Baseline: base, BaselineName: baseName, Better: better}
	if base != 0 {
		r.Ratio = jam / base
	}
	return r
}

// printTable writes rows as an aligned text table.
func printTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmetric\tjam\tbaseline\tratio\t")
	last := ""
	for _, r := range rows {
		scen := r.Scenario
		if scen == last {
			scen = ""
		}
		last = r.Scenario
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s\t\n", scen, r.Metric+" ("+r.Unit+")", num(r.Jam), num(r.Baseline), r.BaselineName, ratio(r))
	}
	return tw.Flush()
}

// markdownTable writes rows as a Markdown table (for BENCHMARKS.md).
func markdownTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| scenario | metric | jam | baseline | ratio (jam ÷ baseline) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|")
	last := ""
	for _, r := range rows {
		scen := r.Scenario
		if scen == last {
			scen = ""
		}
		last = r.Scenario
		fmt.Fprintf(w, "| %s | %s (%s) | %s | %s %s | %s |\n", scen, r.Metric, r.Unit, num(r.Jam), num(r.Baseline), r.BaselineName, ratio(r))
	}
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case a >= 1000:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ratio(r Row) string {
	if r.Baseline == 0 {
		return "—"
	}
	arrow := "↑"
	if r.Better == "lower" {
		arrow = "↓"
	}
	return fmt.Sprintf("%s× %s", num(r.Ratio), arrow)
}
