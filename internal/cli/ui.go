package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// UIOptions are the inputs of "jam ui".
type UIOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
}

func newUICmd(io *IOStreams, deps Deps, runF func(context.Context, *UIOptions) error) *cobra.Command {
	opts := &UIOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Print a one-time sign-in link to the web UI",
		Long: `Print a one-time sign-in link to the daemon's web UI.

Opening the link signs the browser in with a session cookie, and the link
stops working. Run it again for another browser. The web UI is served on
the daemon's http_addr (127.0.0.1:7420 by default).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runUI(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runUI(ctx context.Context, opts *UIOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	res, err := client.UILogin(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, res)
	}
	fmt.Fprintln(opts.IO.Out, res.URL)
	return nil
}
