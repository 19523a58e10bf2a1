package harnessturn

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Target is the most jam may add to a turn at the median.
const Target = 100 * time.Millisecond

// WriteTable writes the results side by side, one line per harness, as
// aligned text or as Markdown: the direct way's and jam's median, p90 and
// p99, jam's settlement, the overhead at the median and p99 (jam's post
// to reply minus direct), whether the median is within Target, and the
// first turn of each way (with the process start).
func WriteTable(w io.Writer, results []Result, markdown bool) error {
	head := []string{"harness", "turns", "direct p50", "p90", "p99", "jam reply p50", "p90", "p99", "jam settled p50", "p99",
		"overhead p50", "overhead p99", "≤ 100 ms at p50", "first turn direct", "first turn jam"}
	var lines [][]string
	for _, r := range results {
		if r.Skipped != "" {
			lines = append(lines, []string{r.Harness, "—", "skipped: " + firstLine(r.Skipped)})
			continue
		}
		p50, p99 := r.Overhead()
		ok := "yes"
		if p50 > Target {
			ok = "no"
		}
		lines = append(lines, []string{r.Harness, fmt.Sprint(r.Direct.Count),
			ms(r.Direct.P50), ms(r.Direct.P90), ms(r.Direct.P99),
			ms(r.Reply.P50), ms(r.Reply.P90), ms(r.Reply.P99),
			ms(r.Settled.P50), ms(r.Settled.P99),
			signed(p50), signed(p99), ok, ms(r.FirstDirect), ms(r.FirstReply)})
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
		fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(head)-1))
		for _, l := range lines {
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t\n", strings.Join(head, "\t"))
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(l, "\t"))
	}
	return tw.Flush()
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

func signed(d time.Duration) string {
	return fmt.Sprintf("%+.0f", float64(d)/float64(time.Millisecond))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// WritePhases writes, per harness, the median of each phase of a turn
// through jam (from jamd's event stream), beside the direct way's median
// turn: "turn running → reply seen" holds the CLI's own turn.
func WritePhases(w io.Writer, results []Result, markdown bool) error {
	var names []string
	for _, r := range results {
		if len(r.Phases) > 0 {
			for _, p := range r.Phases {
				names = append(names, p.Name)
			}
			break
		}
	}
	if names == nil {
		return nil
	}
	head := append(append([]string{"harness"}, names...), "direct turn p50", "jam reply p50")
	var lines [][]string
	for _, r := range results {
		if r.Skipped != "" || len(r.Phases) != len(names) {
			continue
		}
		l := []string{r.Harness}
		for _, p := range r.Phases {
			l = append(l, ms(p.Median))
		}
		lines = append(lines, append(l, ms(r.Direct.P50), ms(r.Reply.P50)))
	}
	if markdown {
		fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
		fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---:|", len(head)-1))
		for _, l := range lines {
			fmt.Fprintf(w, "| %s |\n", strings.Join(l, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t\n", strings.Join(head, "\t"))
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t\n", strings.Join(l, "\t"))
	}
	return tw.Flush()
}
