package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// AccountListOptions are the inputs of "jam account list".
type AccountListOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
}

func newAccountListCmd(io *IOStreams, deps Deps, runF func(context.Context, *AccountListOptions) error) *cobra.Command {
	opts := &AccountListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the Band accounts",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAccountList(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runAccountList(ctx context.Context, opts *AccountListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	accounts, err := client.Accounts(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.AccountList{Accounts: nonNil(accounts)})
	}
	if len(accounts) == 0 {
		fmt.Fprintln(opts.IO.Out, "no accounts; add one with: jam account add --band URL")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "PROFILE\tHANDLE\tUSER\tBAND")
	for _, a := range accounts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Profile, orDash(a.Handle), orDash(a.UserID), a.BandURL)
	}
	return tw.Flush()
}
