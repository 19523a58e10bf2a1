package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// newConnectionCmd groups the commands that manage connections.
func newConnectionCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "connection",
		Short: "Manage the credentials of external services (GitHub, model providers)",
		Long: `Manage connections: one external authority each (github, anthropic,
openai, opencode_zen, modal or band) under a name, holding a credential
the daemon keeps sealed in its store. band connections hold Band keys:
jam account add and jam agent add make them, and the account and agent
commands rotate and remove them. Replacing a credential (rotate) appends
a version and disables the old one; old versions are kept, disabled.

A secret is read from standard input, or from the environment variable
--secret-env names; never from a flag's value, which other local users
could read. No command prints a secret.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(
		newConnectionAddCmd(io, deps, nil),
		newConnectionListCmd(io, deps, nil),
		newConnectionRotateCmd(io, deps, nil),
		newConnectionRemoveCmd(io, deps, nil),
	)
	return cmd
}

// connectionSecret reads a secret from the variable envVar names, or
// from stdin when envVar is "". The value is never echoed.
func connectionSecret(streams *IOStreams, lookupEnv func(string) (string, bool), envVar string) (string, error) {
	if envVar != "" {
		if lookupEnv == nil {
			lookupEnv = os.LookupEnv
		}
		v, ok := lookupEnv(envVar)
		if !ok || v == "" {
			return "", &usageError{err: fmt.Errorf("$%s is not set or empty", envVar)}
		}
		return v, nil
	}
	if streams.Interactive {
		fmt.Fprintln(streams.ErrOut, "reading the secret from standard input (one line; pipe it in to keep it off the screen)")
	}
	v, err := readSecret(streams)
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", &usageError{err: errors.New("a secret is required: on standard input, or name a variable with --secret-env")}
	}
	return v, nil
}

// printConnection prints one connection, or its JSON.
func printConnection(streams *IOStreams, asJSON bool, verb string, c wire.Connection) error {
	if asJSON {
		return printJSON(streams, c)
	}
	fmt.Fprintf(streams.Out, "%s connection %s/%s (%s, version %d)\n", verb, c.Provider, c.Name, c.ID, c.Version)
	return nil
}
