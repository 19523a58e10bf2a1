package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/config"
)

// StoreCopyOptions are the inputs of "jam store copy".
type StoreCopyOptions struct {
	IO      *IOStreams
	DataDir string
	// To is the postgres:// URL of the target database. It may hold a
	// password: it is never printed.
	To string
	// JSON prints the result as JSON.
	JSON bool
}

// StoreCopyResult is what a copy did.
type StoreCopyResult struct {
	// Target is where the rows went, without credentials.
	Target string `json:"target"`
	// Rows is the number of rows of each table, equal on both sides.
	Rows map[string]int64 `json:"rows"`
	// Sampled is how many sealed values were opened with the daemon key
	// in the target and found equal to the source's.
	Sampled int `json:"sampled"`
}

// CopyStoreFunc copies a stopped daemon's store. The main package
// injects it (the daemon package wires the stores).
type CopyStoreFunc func(ctx context.Context, opts StoreCopyOptions) (StoreCopyResult, error)

func newStoreCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage the daemon's store",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newStoreCopyCmd(io, deps, nil))
	return cmd
}

func newStoreCopyCmd(io *IOStreams, deps Deps, runF func(context.Context, *StoreCopyOptions) error) *cobra.Command {
	opts := &StoreCopyOptions{IO: io}
	var to string
	cmd := &cobra.Command{
		Use:   "copy [--to postgres://user@host:port/database]",
		Short: "Copy a stopped daemon's SQLite store into an empty PostgreSQL database",
		Long: `Copy the SQLite store of the data directory (jam.db) into an empty
PostgreSQL database, then verify it: every table has as many rows on both
sides, and a sample of the sealed values opens with the daemon key to the
same content. Sealed values are copied as they are; the daemon key
(daemon.key in the data directory) stays the key of the new store.

The daemon must be stopped: the copy holds the data directory's lock. The
target is --to, or else the configured store ($JAM_STORE, or store in the
config file) when it is a postgres:// URL. A password on the command line
is visible to other users of the machine (ps): prefer $JAM_STORE, the
config file, $PGPASSWORD or ~/.pgpass. Afterwards run jamd with that store.

Exit codes: 0 copied and verified; 1 the copy or its verification failed
(nothing is kept of a failed copy); 2 bad arguments or url; 5 the daemon
runs, or the target database is not empty; 7 the server cannot be
reached or refused the login.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.To = to
			if opts.To == "" && config.IsPostgresURL(cfg.Store) {
				opts.To = cfg.Store
			}
			if !config.IsPostgresURL(opts.To) {
				return &usageError{err: errors.New("no target: give --to postgres://user@host:port/database, or set $JAM_STORE to one")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runStoreCopy(c.Context(), opts, deps.CopyStore)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&to, "to", "", "the postgres:// URL of the empty target database (default: the configured store)")
	return cmd
}

func runStoreCopy(ctx context.Context, opts *StoreCopyOptions, copyF CopyStoreFunc) error {
	if copyF == nil {
		return errors.New("this binary cannot copy a store")
	}
	res, err := copyF(ctx, *opts)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, res)
	}
	var total int64
	tables := make([]string, 0, len(res.Rows))
	for t, n := range res.Rows {
		tables = append(tables, t)
		total += n
	}
	slices.Sort(tables)
	w := opts.IO.Out
	fmt.Fprintf(w, "copied %d rows in %d tables to postgres %s; counts equal, %d sealed values open to the same content\n", total, len(tables), res.Target, res.Sampled)
	for _, t := range tables {
		if res.Rows[t] > 0 {
			fmt.Fprintf(w, "  %-22s %d\n", t, res.Rows[t])
		}
	}
	fmt.Fprintf(w, "start jamd with store = %q (the password elsewhere: $JAM_STORE, the config file or ~/.pgpass)\n", "postgres://…@"+res.Target)
	return nil
}
