package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// DelegationOptions are the inputs of the "jam delegation" commands.
type DelegationOptions struct {
	IO      *IOStreams
	DataDir string
	ID      string
	Parent  string
	Limit   int
	JSON    bool
}

// newDelegationCmd groups the commands about agents' delegations.
func newDelegationCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delegation",
		Short: "List, show and cancel the work agents delegate to other agents",
		Long: `An owned agent can delegate work (a review, a test run) to another agent: jam
starts a child session of that agent with the parent's instructions and
pinned inputs (a change set, a commit), and only the child's result that
satisfies the delegation's contract (a JSON Schema) counts as its verdict.

States: pending (its child not started), running, submitted (its result is
recorded for good), failed (its child could not start, or its results kept
breaking the contract), cancelled.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}

	listOpts := &DelegationOptions{IO: io}
	list := &cobra.Command{
		Use:   "list [--parent SESSION] [--limit N] [--json]",
		Short: "List delegations, newest first",
		Args:  cobra.NoArgs,
		RunE:  clientCommand(deps, listOpts, runDelegationList),
	}
	list.Flags().StringVar(&listOpts.Parent, "parent", "", "only the delegations of this parent session")
	list.Flags().IntVar(&listOpts.Limit, "limit", 0, fmt.Sprintf("at most this many (1 to %d; default 100)", wire.MaxDelegationLimit))
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)

	showOpts := &DelegationOptions{IO: io}
	show := &cobra.Command{
		Use:   "show DELEGATION [--json]",
		Short: "Show a delegation: its sessions, instructions, inputs, attempts and result",
		Args:  cobra.ExactArgs(1),
		RunE:  clientCommand(deps, showOpts, runDelegationShow),
	}
	show.Flags().BoolVar(&showOpts.JSON, "json", false, "print JSON (with the contract's schema)")
	cmd.AddCommand(show)

	cancelOpts := &DelegationOptions{IO: io}
	cancel := &cobra.Command{
		Use:   "cancel DELEGATION [--json]",
		Short: "Cancel a pending or running delegation (its child's later result is refused)",
		Args:  cobra.ExactArgs(1),
		RunE:  clientCommand(deps, cancelOpts, runDelegationCancel),
	}
	cancel.Flags().BoolVar(&cancelOpts.JSON, "json", false, "print JSON")
	cmd.AddCommand(cancel)
	return cmd
}

func runDelegationList(ctx context.Context, opts *DelegationOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.Delegations(ctx, wire.DelegationQuery{Parent: opts.Parent, Limit: opts.Limit})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.Delegations{Delegations: nonNil(list)})
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.Out, "no delegations")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "ID\tROLE\tAGENT\tSTATE\tVERDICT\tPARENT\tCHILD\tCREATED")
	for _, d := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Role, d.Agent, d.State, orDash(d.Verdict), d.Parent, orDash(d.Child),
			d.Created.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func runDelegationShow(ctx context.Context, opts *DelegationOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	detail, err := client.Delegation(ctx, opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, detail)
	}
	printDelegation(opts.IO, detail.Delegation)
	fmt.Fprintln(opts.IO.Out, "\ninstructions:")
	fmt.Fprintln(opts.IO.Out, indent(terminalSafe(detail.Delegation.Instructions)))
	if r := detail.Result; r != nil {
		fmt.Fprintf(opts.IO.Out, "\nresult (submitted %s, sha256 %s):\n", r.Submitted.UTC().Format(time.RFC3339), r.Digest)
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, r.Result, "", "  "); err != nil {
			pretty.Reset()
			pretty.Write(r.Result)
		}
		fmt.Fprintln(opts.IO.Out, indent(terminalSafe(pretty.String())))
	}
	return nil
}

func runDelegationCancel(ctx context.Context, opts *DelegationOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	d, err := client.DelegationCancel(ctx, opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, d)
	}
	fmt.Fprintf(opts.IO.Out, "%s: %s (%s by %s)\n", d.ID, d.State, d.Role, d.Agent)
	return nil
}

// printDelegation prints a delegation's fields, one a line.
func printDelegation(streams *IOStreams, d wire.Delegation) {
	tw := newTable(streams.Out)
	fmt.Fprintf(tw, "delegation\t%s\n", d.ID)
	fmt.Fprintf(tw, "state\t%s\n", d.State)
	if d.Verdict != "" {
		fmt.Fprintf(tw, "verdict\t%s\n", d.Verdict)
	}
	fmt.Fprintf(tw, "role\t%s\n", d.Role)
	fmt.Fprintf(tw, "agent\t%s\n", d.Agent)
	fmt.Fprintf(tw, "contract\t%s\n", d.Contract)
	fmt.Fprintf(tw, "parent\t%s\n", sessionLine(d.Parent, d.ParentAgent, d.ParentRoom))
	if d.Child == "" {
		fmt.Fprintf(tw, "child\tnot started\n")
	} else {
		fmt.Fprintf(tw, "child\t%s\n", sessionLine(d.Child, "", d.ChildRoom))
	}
	if d.Inputs.ChangeSet != "" {
		fmt.Fprintf(tw, "change set\t%s\n", d.Inputs.ChangeSet)
	}
	if d.Inputs.Commit != "" {
		fmt.Fprintf(tw, "commit\t%s\n", d.Inputs.Commit)
	}
	fmt.Fprintf(tw, "attempts\t%d of %d refused\n", d.Attempts, d.MaxAttempts)
	if d.Reason != "" {
		fmt.Fprintf(tw, "reason\t%s\n", d.Reason)
	}
	if d.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", terminalSafe(d.Error))
	}
	fmt.Fprintf(tw, "created\t%s\n", d.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "updated\t%s\n", d.Updated.UTC().Format(time.RFC3339))
	_ = tw.Flush()
}

// sessionLine is a session with what is known of its agent and room.
func sessionLine(id, agent, room string) string {
	var parts []string
	if agent != "" {
		parts = append(parts, "of "+agent)
	}
	if room != "" {
		parts = append(parts, "in room "+room)
	}
	if len(parts) == 0 {
		return id
	}
	return id + " (" + strings.Join(parts, ", ") + ")"
}

// indent puts two spaces before each line of s.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// terminalSafe replaces the control characters of s, but for newline and
// tab, with U+FFFD: what agents write must not drive the terminal.
func terminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func (o *DelegationOptions) setClient(dataDir, arg string) { o.DataDir, o.ID = dataDir, arg }
