package cli

import (
	"github.com/spf13/cobra"
)

// newRoomCmd groups the commands that manage rooms.
func newRoomCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "room",
		Short: "Create, list and show Band rooms, post in them, and add agents to them",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(
		newRoomCreateCmd(io, deps, nil),
		newRoomListCmd(io, deps, nil),
		newRoomAddCmd(io, deps, nil),
		newRoomShowCmd(io, deps, nil),
		newRoomPostCmd(io, deps, nil),
		newRoomLeaveCmd(io, deps),
	)
	return cmd
}
