package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/shellwords"
)

// RoomAddOptions are the inputs of "jam room add".
type RoomAddOptions struct {
	IO      *IOStreams
	DataDir string
	Room    string
	Agent   string
	// Repo and Command configure an owned agent's session in this room
	// differently from its template; "" keeps the template's.
	Repo, Command string
}

func newRoomAddCmd(io *IOStreams, deps Deps, runF func(context.Context, *RoomAddOptions) error) *cobra.Command {
	opts := &RoomAddOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "add ROOM AGENT [--repo PATH] [--command CMD]",
		Short: "Add an agent to a room",
		Long: `Add an agent to a room. For an owned agent, the room's session is made
first, and --repo and --command configure it differently from the agent's
template: --repo gives the room a worktree of another repository (any
placement); --command runs the room's turns with another command, which
needs placement dedicated (a process per room). Under placement shared the
one process runs the agent's command for all its rooms, so a different
--command is refused (exit code 5, error placement_incompatible) before
anything is made or the agent is added.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Room, opts.Agent = args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRoomAdd(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "an owned agent: the repository this room's worktree is of (absolute path)")
	cmd.Flags().StringVar(&opts.Command, "command", "", "an owned agent with placement dedicated: the command this room's process runs")
	return cmd
}

func runRoomAdd(ctx context.Context, opts *RoomAddOptions) error {
	req := wire.RoomAddRequest{Agent: opts.Agent, Overrides: wire.SessionOverrides{Repo: opts.Repo}}
	if opts.Command != "" {
		argv, err := shellwords.Split(opts.Command)
		if err != nil {
			return &usageError{err: fmt.Errorf("--command: %w", err)}
		}
		req.Overrides.Command = argv
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	if err := client.RoomAdd(ctx, opts.Room, req); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "added %s to room %s\n", opts.Agent, opts.Room)
	return nil
}
