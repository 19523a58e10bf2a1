package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// RoomAddOptions are the inputs of "jam room add".
type RoomAddOptions struct {
	IO      *IOStreams
	DataDir string
	Room    string
	Agent   string
}

func newRoomAddCmd(io *IOStreams, deps Deps, runF func(context.Context, *RoomAddOptions) error) *cobra.Command {
	opts := &RoomAddOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "add ROOM AGENT",
		Short: "Add an agent to a room",
		Args:  cobra.ExactArgs(2),
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
	return cmd
}

func runRoomAdd(ctx context.Context, opts *RoomAddOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	if err := client.RoomAdd(ctx, opts.Room, wire.RoomAddRequest{Agent: opts.Agent}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "added %s to room %s\n", opts.Agent, opts.Room)
	return nil
}
