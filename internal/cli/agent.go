package cli

import (
	"github.com/spf13/cobra"
)

// newAgentCmd groups the commands that manage agents.
func newAgentCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Manage the Band agents jam hosts",
		Long: `Manage the Band agents jam hosts.

An agent (a peer) is one Band agent under one account, named "profile/scope".
Wherever a command takes an agent, it accepts the peer key, the scope, the
agent's handle or its name; with one agent, it may be left out.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(
		newAgentAddCmd(io, deps, nil),
		newAgentListCmd(io, deps, nil),
		newAgentConfigCmd(io, deps, nil),
		newAgentRemoveCmd(io, deps),
		newAgentRestartCmd(io, deps),
	)
	return cmd
}
