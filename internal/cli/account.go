package cli

import (
	"github.com/spf13/cobra"
)

// newAccountCmd groups the commands that manage Band accounts.
func newAccountCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "account",
		Short: "Manage the Band accounts the daemon signs in with",
		Long: `Manage the Band accounts the daemon signs in with.

An account is a person's Band user key under a profile name; agents and
rooms belong to an account. The daemon keeps the key sealed in its store.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(
		newAccountAddCmd(io, deps, nil),
		newAccountListCmd(io, deps, nil),
		newAccountRemoveCmd(io, deps),
	)
	return cmd
}
