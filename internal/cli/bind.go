package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// BindOptions are the inputs of "jam bind".
type BindOptions struct {
	IO      *IOStreams
	DataDir string
	Room    string
	Agent   string
	Alias   string
	JSON    bool
}

func newBindCmd(io *IOStreams, deps Deps, runF func(context.Context, *BindOptions) error) *cobra.Command {
	opts := &BindOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "bind ROOM --agent A [--alias X]",
		Short: "Bind an agent's session to a room, so its messages there are queued",
		Long: `Bind an agent's session to a room: from now on the agent's messages in
that room are queued for this binding, and messages that waited unrouted
(or for another binding) move to it. Prints the binding's id; "jam unbind"
takes the id or the alias.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Room = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runBind(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "the agent: peer key, scope, handle or name (required)")
	cmd.Flags().StringVar(&opts.Alias, "alias", "", "a name for the binding (default: chosen by the daemon)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runBind(ctx context.Context, opts *BindOptions) error {
	if opts.Agent == "" {
		return &usageError{err: errors.New("--agent is required")}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	b, err := client.Bind(ctx, wire.BindRequest{Agent: opts.Agent, Room: opts.Room, Alias: opts.Alias})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, b)
	}
	fmt.Fprintf(opts.IO.Out, "bound %s to room %s as %s: binding %s, session %s\n", b.Peer, b.Room, b.Alias, b.ID, b.SessionID)
	if b.Moved > 0 {
		fmt.Fprintf(opts.IO.Out, "moved %d queued %s to this binding\n", b.Moved, plural(b.Moved, "message", "messages"))
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
