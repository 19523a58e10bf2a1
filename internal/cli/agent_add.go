package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// AgentAddOptions are the inputs of "jam agent add".
type AgentAddOptions struct {
	IO          *IOStreams
	DataDir     string
	Name        string
	Description string
	Account     string
	// Key imports an existing agent by its API key; "-" reads it from stdin.
	Key  string
	JSON bool
}

func newAgentAddCmd(io *IOStreams, deps Deps, runF func(context.Context, *AgentAddOptions) error) *cobra.Command {
	opts := &AgentAddOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "add NAME [--description D] [--account P] [--key KEY | --key -]",
		Short: "Register a new agent on Band, or import one by its key",
		Long: `Register a new agent on Band under an account, or, with --key, import an
existing agent by its API key ("--key -" reads it from stdin). Prints the
agent's handle and its peer key ("profile/scope"), which other commands
accept with --agent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Name = args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAgentAdd(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Description, "description", "", "what the agent does, shown on Band")
	cmd.Flags().StringVar(&opts.Account, "account", "", "account profile (default: the only account)")
	cmd.Flags().StringVar(&opts.Key, "key", "", `import the existing agent with this API key ("-" reads it from stdin)`)
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runAgentAdd(ctx context.Context, opts *AgentAddOptions) error {
	key := opts.Key
	if key == "-" {
		var err error
		if key, err = readSecret(opts.IO); err != nil {
			return err
		}
		if key == "" {
			return &usageError{err: fmt.Errorf("--key -: standard input holds no key")}
		}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	agent, err := client.AgentAdd(ctx, wire.AgentAddRequest{Name: opts.Name, Description: opts.Description, Account: opts.Account, Key: key})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, agent)
	}
	fmt.Fprintf(opts.IO.Out, "added agent %s: handle %s, peer %s\n", agent.Name, agent.Handle, agent.Peer)
	return nil
}
