package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// SessionListOptions are the inputs of "jam session list".
type SessionListOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
}

// newSessionCmd groups the commands about owned agents' sessions.
func newSessionCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Show owned agents' sessions (one per room)",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	opts := &SessionListOptions{IO: io}
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the sessions: id, agent, room, working directory",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			return runSessionList(c.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	return cmd
}

func runSessionList(ctx context.Context, opts *SessionListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	ss, err := client.Sessions(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, map[string]any{"sessions": nonNil(ss)})
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tAGENT\tROOM\tSTATE\tWORKTREE")
	for _, s := range ss {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.Agent, s.Room, s.Lifecycle, s.Worktree)
	}
	return w.Flush()
}
