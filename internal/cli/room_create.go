package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// RoomCreateOptions are the inputs of "jam room create".
type RoomCreateOptions struct {
	IO      *IOStreams
	DataDir string
	Title   string
	Agents  []string
	Account string
	JSON    bool
}

func newRoomCreateCmd(io *IOStreams, deps Deps, runF func(context.Context, *RoomCreateOptions) error) *cobra.Command {
	opts := &RoomCreateOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "create TITLE [--agent A]... [--account P]",
		Short: "Create a room, optionally with agents in it; prints its id",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Title = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRoomCreate(c.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Agents, "agent", nil, "add this agent to the room (repeatable)")
	cmd.Flags().StringVar(&opts.Account, "account", "", "account profile that owns the room (default: the only account)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runRoomCreate(ctx context.Context, opts *RoomCreateOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	room, err := client.RoomCreate(ctx, wire.RoomCreateRequest{Title: opts.Title, Account: opts.Account, Agents: opts.Agents})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, room)
	}
	fmt.Fprintln(opts.IO.Out, room.ID)
	return nil
}
