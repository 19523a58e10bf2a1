package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
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
	show := &cobra.Command{
		Use:   "show SESSION [--json]",
		Short: "Show a session: agent, room, worktree, agent's session, and its turns",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			return runSessionShow(c.Context(), &SessionListOptions{IO: io, DataDir: cfg.DataDir, JSON: opts.JSON}, args[0])
		},
	}
	show.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list, show)
	return cmd
}

// findSession returns the session with id, or a not-found error.
func findSession(ctx context.Context, client *apiclient.Client, id string) (wire.Session, error) {
	ss, err := client.Sessions(ctx)
	if err != nil {
		return wire.Session{}, err
	}
	for _, s := range ss {
		if s.ID == id {
			return s, nil
		}
	}
	return wire.Session{}, fmt.Errorf("%w: no session %s", jam.ErrNotFound, id)
}

func runSessionShow(ctx context.Context, opts *SessionListOptions, id string) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	s, err := findSession(ctx, client, id)
	if err != nil {
		return err
	}
	turns, err := client.Turns(ctx, id)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, map[string]any{"session": s, "turns": nonNil(turns)})
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s\t%s\n", k, v)
		}
	}
	row("session", s.ID)
	row("agent", s.Agent)
	row("room", s.Room)
	row("state", s.Lifecycle)
	row("worktree", strings.TrimSpace(s.Worktree+" "+s.WorktreeState))
	row("branch", s.Branch)
	row("agent session", s.ProviderThread)
	row("current turn", strings.TrimSpace(s.CurrentTurn+" "+s.CurrentTurnState))
	row("created", s.Created.Format(time.DateTime))
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out)
	return printTurns(opts.IO, turns)
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
