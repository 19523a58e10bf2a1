package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// TurnListOptions are the inputs of "jam turn list".
type TurnListOptions struct {
	IO      *IOStreams
	DataDir string
	Session string
	JSON    bool
}

// newTurnCmd groups the commands about turns.
func newTurnCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "turn",
		Short: "Show the turns of owned agents' sessions",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	opts := &TurnListOptions{IO: io}
	list := &cobra.Command{
		Use:   "list SESSION [--json]",
		Short: "List a session's turns: state, reason, message, lease generation",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Session = cfg.DataDir, args[0]
			return runTurnList(c.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cancel := &cobra.Command{
		Use:   "cancel TURN",
		Short: "Cancel a queued or running turn; it settles nothing",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			client := newClient(cfg.DataDir)
			defer client.Close()
			if err := client.CancelTurn(c.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "cancelling %s\n", args[0])
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show TURN [--json]",
		Short: "Show a turn: its state, its executions, and what the agent streamed (thoughts, tool calls, answer)",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			return runTurnShow(c.Context(), &TurnListOptions{IO: io, DataDir: cfg.DataDir, JSON: opts.JSON}, args[0])
		},
	}
	show.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list, show, cancel, newTurnRetryCmd(io, deps))
	return cmd
}

// findTurn returns the turn with id, with its executions, and its
// session.
func findTurn(ctx context.Context, client *apiclient.Client, id string) (wire.Turn, wire.Session, error) {
	t, err := client.Turn(ctx, id)
	if err != nil {
		return wire.Turn{}, wire.Session{}, err
	}
	ss, err := client.Sessions(ctx)
	if err != nil {
		return wire.Turn{}, wire.Session{}, err
	}
	for _, s := range ss {
		if s.ID == t.Session {
			return t, s, nil
		}
	}
	return wire.Turn{}, wire.Session{}, fmt.Errorf("%w: no session %s of turn %s", jam.ErrNotFound, t.Session, id)
}

func runTurnShow(ctx context.Context, opts *TurnListOptions, id string) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	t, s, err := findTurn(ctx, client, id)
	if err != nil {
		return err
	}
	out, err := client.TurnOutput(ctx, id)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, map[string]any{"turn": t, "session": s.ID, "output": out})
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "turn %s (#%d of %s, %s in room %s): %s", t.ID, t.Seq, s.ID, s.Agent, s.Room, t.State)
	if t.Reason != "" {
		fmt.Fprintf(w, " (%s)", t.Reason)
	}
	fmt.Fprintln(w)
	if t.Detail != "" {
		// Later lines of a multi-line detail line up under the first.
		fmt.Fprintf(w, "why: %s\n", strings.ReplaceAll(t.Detail, "\n", "\n     "))
	}
	if t.Message != "" {
		fmt.Fprintf(w, "answers message %s\n", t.Message)
	} else if t.Input != "" {
		fmt.Fprintf(w, "answers %s (sent to the session directly)\n", t.Input)
	}
	if t.Usage != nil {
		fmt.Fprintf(w, "usage: %s\n", usageLine(t.Usage))
	}
	if err := printExecutions(w, t.Executions); err != nil {
		return err
	}
	if !out.Kept {
		fmt.Fprintln(w, "no output kept (the turn streamed nothing, or ran before the daemon stored output)")
		return nil
	}
	fmt.Fprintln(w)
	last := ""
	for _, u := range out.Updates {
		switch u.Kind {
		case "text", "thought":
			if u.Kind != last {
				fmt.Fprintf(w, "\n[%s]\n", map[string]string{"text": "answer", "thought": "thinking"}[u.Kind])
			}
			fmt.Fprint(w, u.Text)
		case "tool_call", "tool_call_update":
			fmt.Fprintf(w, "\n[tool] %s %s %s\n", u.ToolCallID, u.Title, u.Status)
		case "plan":
			fmt.Fprintln(w, "\n[plan]")
			for _, p := range u.Plan {
				fmt.Fprintf(w, "  - %s (%s)\n", p.Content, p.Status)
			}
		}
		last = u.Kind
	}
	fmt.Fprintln(w)
	if out.Truncated {
		fmt.Fprintln(w, "… (later output was not kept)")
	}
	return nil
}

// printExecutions prints a turn's attempts as a table: the lease and
// process each ran on, and how it ended.
func printExecutions(w io.Writer, es []wire.Execution) error {
	if len(es) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EXECUTION\tLEASE\tGEN\tPID\tSTARTED\tENDED\tOUTCOME\tREASON")
	for _, e := range es {
		ended, outcome := "-", e.State
		if !e.Ended.IsZero() {
			ended, outcome = e.Ended.UTC().Format(time.DateTime), e.Outcome
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", e.ID, e.Lease, e.LeaseGeneration, e.Pid, e.Started.UTC().Format(time.DateTime), ended, outcome, e.Reason)
	}
	return tw.Flush()
}

func runTurnList(ctx context.Context, opts *TurnListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	ts, err := client.Turns(ctx, opts.Session)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, map[string]any{"turns": nonNil(ts)})
	}
	return printTurns(opts.IO, ts)
}

// printTurns prints turns as a table; a WHY column, with the short form
// of each turn's detail, when any turn has one.
func printTurns(io *IOStreams, ts []wire.Turn) error {
	why := slices.ContainsFunc(ts, func(t wire.Turn) bool { return t.Detail != "" })
	w := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprint(w, "SEQ\tTURN\tSTATE\tREASON\tMESSAGE\tLEASE GEN")
	if why {
		fmt.Fprint(w, "\tWHY")
	}
	fmt.Fprintln(w)
	for _, t := range ts {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d", t.Seq, t.ID, t.State, t.Reason, t.Message, t.LeaseGeneration)
		if why {
			fmt.Fprintf(w, "\t%s", shortDetail(t.Detail))
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

// shortDetailRunes bounds a turn's detail in a table.
const shortDetailRunes = 60

// shortDetail is the first line of a turn's detail, tabs as spaces, cut
// to shortDetailRunes (jam turn show prints it whole).
func shortDetail(d string) string {
	d, _, more := strings.Cut(d, "\n")
	// A tab would end the table's cell.
	d = strings.ReplaceAll(d, "\t", " ")
	if r := []rune(d); len(r) > shortDetailRunes {
		d, more = string(r[:shortDetailRunes-1]), true
	}
	if more {
		d += "…"
	}
	return d
}
