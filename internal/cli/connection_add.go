package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// ConnectionAddOptions are the inputs of "jam connection add".
type ConnectionAddOptions struct {
	IO        *IOStreams
	DataDir   string
	Provider  string
	Name      string
	BaseURL   string
	SecretEnv string
	JSON      bool
	lookupEnv func(string) (string, bool)
}

func newConnectionAddCmd(io *IOStreams, deps Deps, runF func(context.Context, *ConnectionAddOptions) error) *cobra.Command {
	opts := &ConnectionAddOptions{IO: io, lookupEnv: deps.Env}
	cmd := &cobra.Command{
		Use:   "add PROVIDER NAME [--base-url URL] [--secret-env VAR]",
		Short: "Add a connection with its credential",
		Long: `Add a connection: PROVIDER is github, anthropic, openai, opencode_zen or
modal; NAME is [a-z0-9][a-z0-9_.-]{0,62}, unique per provider. The secret
comes from standard input (its first line), or from the environment
variable --secret-env names. --base-url is the API base of a GitHub
Enterprise server (without credentials in it). band connections (Band
keys) are made by jam account add and jam agent add, not here.

An agent's environment names the connection as connection:PROVIDER/NAME.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Provider, opts.Name = cfg.DataDir, args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runConnectionAdd(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "API base URL (GitHub Enterprise), e.g. https://ghe.example.com/api/v3")
	cmd.Flags().StringVar(&opts.SecretEnv, "secret-env", "", "read the secret from this environment variable instead of stdin")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runConnectionAdd(ctx context.Context, opts *ConnectionAddOptions) error {
	secret, err := connectionSecret(opts.IO, opts.lookupEnv, opts.SecretEnv)
	if err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	c, err := client.ConnectionAdd(ctx, wire.ConnectionAddRequest{Provider: opts.Provider, Name: opts.Name, BaseURL: opts.BaseURL, Secret: secret})
	if err != nil {
		return err
	}
	return printConnection(opts.IO, opts.JSON, "added", c)
}
