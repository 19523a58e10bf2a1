package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// AccountAddOptions are the inputs of "jam account add".
type AccountAddOptions struct {
	IO      *IOStreams
	DataDir string
	BandURL string
	// Key is the user key, "-" to read it from stdin, or "" for the
	// configured band_key ($JAM_BAND_KEY).
	Key           string
	ConfiguredKey string
	Profile       string
	JSON          bool
}

func newAccountAddCmd(io *IOStreams, deps Deps, runF func(context.Context, *AccountAddOptions) error) *cobra.Command {
	opts := &AccountAddOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "add --band URL [--key KEY | --key -] [--profile P]",
		Short: "Sign in to Band with a user key",
		Long: `Sign in to a Band deployment with the person's user key (band_u_…) and
keep the account under a profile name.

The key comes from --key, from stdin with "--key -", or else from
$JAM_BAND_KEY (or band_key in the configuration file). Prefer stdin or the
environment: a key on the command line is visible to other local users.
The key is never printed. Adding a profile that exists replaces its key.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.ConfiguredKey = cfg.BandKey
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAccountAdd(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.BandURL, "band", "", "REST base URL of the Band deployment, e.g. https://app.band.ai (required)")
	cmd.Flags().StringVar(&opts.Key, "key", "", `the person's Band user key, or "-" to read it from stdin (default $JAM_BAND_KEY)`)
	cmd.Flags().StringVar(&opts.Profile, "profile", "", "profile name of the account (default: the daemon's default profile)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runAccountAdd(ctx context.Context, opts *AccountAddOptions) error {
	if opts.BandURL == "" {
		return &usageError{err: errors.New("--band is required (the Band REST base URL, e.g. https://app.band.ai)")}
	}
	key := opts.Key
	if key == "-" {
		var err error
		if key, err = readSecret(opts.IO); err != nil {
			return err
		}
	} else if key == "" {
		key = opts.ConfiguredKey
	}
	if key == "" {
		return &usageError{err: errors.New("a Band user key is required: --key KEY, --key - (stdin) or $JAM_BAND_KEY")}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	acct, err := client.AccountAdd(ctx, wire.AccountAddRequest{Profile: opts.Profile, BandURL: opts.BandURL, Key: key})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, acct)
	}
	fmt.Fprintf(opts.IO.Out, "added account %s: %s (user %s) on %s\n", acct.Profile, acct.Handle, acct.UserID, acct.BandURL)
	return nil
}
