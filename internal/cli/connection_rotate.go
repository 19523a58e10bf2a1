package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// ConnectionRotateOptions are the inputs of "jam connection rotate".
type ConnectionRotateOptions struct {
	IO        *IOStreams
	DataDir   string
	Ref       string
	SecretEnv string
	JSON      bool
	lookupEnv func(string) (string, bool)
}

func newConnectionRotateCmd(io *IOStreams, deps Deps, runF func(context.Context, *ConnectionRotateOptions) error) *cobra.Command {
	opts := &ConnectionRotateOptions{IO: io, lookupEnv: deps.Env}
	cmd := &cobra.Command{
		Use:   "rotate NAME|PROVIDER/NAME|ID [--secret-env VAR]",
		Short: "Replace a connection's credential (appends a version)",
		Long: `Replace a connection's credential: the new secret becomes the next
version and the current one is disabled (kept, never used again). The
secret comes from standard input, or from the variable --secret-env names.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Ref = cfg.DataDir, args[0]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runConnectionRotate(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.SecretEnv, "secret-env", "", "read the secret from this environment variable instead of stdin")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runConnectionRotate(ctx context.Context, opts *ConnectionRotateOptions) error {
	secret, err := connectionSecret(opts.IO, opts.lookupEnv, opts.SecretEnv)
	if err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	c, err := client.ConnectionRotate(ctx, opts.Ref, wire.ConnectionRotateRequest{Secret: secret})
	if err != nil {
		return err
	}
	return printConnection(opts.IO, opts.JSON, "rotated", c)
}
