package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// ApproveOptions are the inputs of "jam approvals" and "jam approve".
type ApproveOptions struct {
	IO       *IOStreams
	DataDir  string
	ID       string
	Decision string
	JSON     bool
}

// newApprovalsCmd is "jam approvals".
func newApprovalsCmd(io *IOStreams, deps Deps) *cobra.Command {
	opts := &ApproveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "approvals [--json]",
		Short: "List the questions owned agents ask you (agents whose --permission is ask)",
		Long: `An owned agent whose permission policy is ask stops before it acts (runs a
command, edits a file) and asks you: the question is posted in its room,
mentioning you, and listed here until you answer it with jam approve (or in
the web UI), or until approval_timeout passes (then it is denied).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			return runApprovals(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the approvals as JSON")
	return cmd
}

func runApprovals(ctx context.Context, opts *ApproveOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.Approvals(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(wire.Approvals{Approvals: list})
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.Out, "no agent is waiting for an answer")
		return nil
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tAGENT\tASKS TO\tTURN\tDENIED IN")
	for _, a := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Agent, a.Title, a.Turn, time.Until(a.Deadline).Round(time.Second))
	}
	return w.Flush()
}

// newApproveCmd is "jam approve".
func newApproveCmd(io *IOStreams, deps Deps) *cobra.Command {
	opts := &ApproveOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "approve ID allow|always|deny [--json]",
		Short: "Answer an agent's question: allow it once, always (for the session and kind of tool), or deny it",
		Args:  cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.ID, opts.Decision = cfg.DataDir, args[0], args[1]
			return runApprove(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the answer as JSON")
	return cmd
}

func runApprove(ctx context.Context, opts *ApproveOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	a, err := client.Approve(ctx, opts.ID, wire.ApproveRequest{Decision: opts.Decision})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(a)
	}
	fmt.Fprintf(opts.IO.Out, "%s: %s may %s%s\n", a.Approval.ID, a.Approval.Agent, verbOf(a.Decision), a.Approval.Title)
	return nil
}

// verbOf words a decision for the line jam approve prints.
func verbOf(d string) string {
	switch d {
	case "always":
		return "from now on in this session "
	case "deny":
		return "not "
	}
	return ""
}
