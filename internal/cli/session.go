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
	send := &SessionSendOptions{IO: io}
	sendCmd := &cobra.Command{
		Use:   "send SESSION TEXT [--note | --steer] [--json]",
		Short: "Send a message to a session: a new turn (default), a note for the next turn, or a steer for the running one",
		Long: `Send a message to an owned agent's session directly, without Band.

By default the message is queued: it becomes a turn after any active one,
and its answer is the turn's output (jam turn show). --note adds context
without a turn: the session's next turn carries it. --steer hands the
message to the running turn when the agent's harness can take it, and
queues it otherwise (ACP agents cannot be steered); the answer says which.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			send.DataDir, send.Session, send.Text = cfg.DataDir, args[0], args[1]
			return runSessionSend(c.Context(), send)
		},
	}
	sendCmd.Flags().BoolVar(&send.Note, "note", false, "add context for the next turn; starts no turn")
	sendCmd.Flags().BoolVar(&send.Steer, "steer", false, "reach the running turn if the harness can take it, else queue")
	sendCmd.Flags().BoolVar(&send.JSON, "json", false, "print JSON")
	cmd.AddCommand(list, show, sendCmd, newSessionArchiveCmd(io, deps), newSessionCloseCmd(io, deps))
	return cmd
}

// SessionSendOptions are the inputs of "jam session send".
type SessionSendOptions struct {
	IO          *IOStreams
	DataDir     string
	Session     string
	Text        string
	Note, Steer bool
	JSON        bool
}

func runSessionSend(ctx context.Context, opts *SessionSendOptions) error {
	routing := jam.RoutingQueue
	switch {
	case opts.Note && opts.Steer:
		return &usageError{err: fmt.Errorf("--note and --steer exclude each other")}
	case opts.Note:
		routing = jam.RoutingNote
	case opts.Steer:
		routing = jam.RoutingSteer
	}
	if strings.TrimSpace(opts.Text) == "" {
		return &usageError{err: fmt.Errorf("the message is empty")}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	res, err := client.SessionSend(ctx, opts.Session, wire.SessionSendRequest{Text: opts.Text, Routing: string(routing)})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, res)
	}
	switch {
	case res.RoutingEffective == string(jam.RoutingNote):
		fmt.Fprintf(opts.IO.Out, "noted %s: the next turn of %s carries it\n", res.Message.ID, opts.Session)
	case res.RoutingEffective == string(jam.RoutingSteer):
		fmt.Fprintf(opts.IO.Out, "steered %s into running turn %s\n", res.Message.ID, res.Message.Turn)
	case routing == jam.RoutingSteer:
		fmt.Fprintf(opts.IO.Out, "queued %s as turn %s (no running turn could take steering)\n", res.Message.ID, res.Turn)
	default:
		fmt.Fprintf(opts.IO.Out, "queued %s as turn %s\n", res.Message.ID, res.Turn)
	}
	return nil
}

// findSession returns the session id names (the id or a unique prefix),
// or a not-found error.
func findSession(ctx context.Context, client *apiclient.Client, id string) (wire.Session, error) {
	ss, err := client.Sessions(ctx)
	if err != nil {
		return wire.Session{}, err
	}
	cands := make([]jam.RefCandidate, 0, len(ss))
	for _, s := range ss {
		cands = append(cands, jam.RefCandidate{ID: s.ID})
	}
	// The daemon's rules for a session reference: the id, or a prefix.
	got, err := jam.PickRef("session", id, jam.WithPrefix(jam.SessionID("").Prefix(), id), cands)
	if err != nil {
		return wire.Session{}, err
	}
	for _, s := range ss {
		if s.ID == got {
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
	if o := s.Overrides; o != nil {
		// The room's own configuration, in place of the agent's.
		row("room command", strings.Join(o.Command, " "))
		row("room repository", o.Repo)
	}
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
