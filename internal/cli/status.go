package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/datadir"
)

// StatusOptions are the inputs of "jam status".
type StatusOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
	// Wait is how long to wait for a starting daemon to answer.
	Wait time.Duration
}

func newStatusCmd(io *IOStreams, deps Deps, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Report whether the daemon is running, and its state",
		Long: `Report whether a daemon is running on the data directory, and its state.

Exits 0 when the daemon is running and 3 when it is not. With --wait it
first waits up to that long for a starting daemon to answer.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := loadConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runStatus(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().DurationVar(&opts.Wait, "wait", 0, "wait up to this long for the daemon to answer, e.g. 10s")
	return cmd
}

func runStatus(ctx context.Context, opts *StatusOptions) error {
	if opts.Wait < 0 {
		return &usageError{err: errors.New("--wait must not be negative")}
	}
	client := apiclient.New(filepath.Join(opts.DataDir, datadir.SocketFile))
	defer client.Close()

	var st wire.Status
	var err error
	if opts.Wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, opts.Wait)
		st, err = client.WaitReady(wctx, 50*time.Millisecond)
		cancel()
	} else {
		st, err = client.Status(ctx)
	}
	if errors.Is(err, apiclient.ErrNotRunning) {
		if opts.JSON {
			// The state alone: a stopped daemon has no version, store or
			// start time to report, and zero values would read as ones.
			if werr := printJSON(opts.IO, struct {
				State string `json:"state"`
			}{wire.StateStopped}); werr != nil {
				return werr
			}
			return &exitError{code: ExitNotRunning}
		}
		fmt.Fprintf(opts.IO.Out, "jamd is not running (data dir %s)\n", opts.DataDir)
		return &exitError{code: ExitNotRunning}
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, st)
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "jamd is %s (pid %d, up %s)\n", st.State, st.PID, (time.Duration(st.UptimeSeconds * float64(time.Second))).Round(time.Second))
	fmt.Fprintf(w, "  version      %s\n", st.Version)
	fmt.Fprintf(w, "  data dir     %s\n", st.DataDir)
	fmt.Fprintf(w, "  control api  unix:%s\n", st.Socket)
	if st.HTTPAddr != "" {
		fmt.Fprintf(w, "  http api     http://%s\n", st.HTTPAddr)
	}
	fmt.Fprintf(w, "  store        %s\n", storeLine(st.Store))
	if st.Store.Error != "" {
		fmt.Fprintf(w, "  store error  %s\n", st.Store.Error)
	}
	switch c := st.Store.Check; c.State {
	case wire.StoreCheckOK:
		fmt.Fprintf(w, "  store check  ok (%.1f s)\n", c.Seconds)
	case wire.StoreCheckFailed:
		fmt.Fprintf(w, "  store check  FAILED: %s\n", c.Detail)
	case wire.StoreCheckRunning:
		fmt.Fprintf(w, "  store check  running\n")
	}
	fmt.Fprintf(w, "  workspace    %s (%s)\n", st.Workspace.Name, st.Workspace.ID)
	if b := st.Band; b.Mode == "embedded" {
		fmt.Fprintf(w, "  hub          %s (owner key in %s)\n", b.URL, b.OwnerKeyFile)
	} else if b.Mode != "" {
		fmt.Fprintf(w, "  band         %s\n", b.URL)
	}
	if st.Band.Error != "" {
		fmt.Fprintf(w, "  band error   %s\n", st.Band.Error)
	}
	if p := st.PreviousRun; p != nil {
		if p.Clean {
			fmt.Fprintf(w, "  last run     pid %d, stopped cleanly at %s\n", p.PID, p.StoppedAt.Local().Format(time.DateTime))
		} else {
			fmt.Fprintf(w, "  last run     pid %d, started %s, ended without a clean stop\n", p.PID, p.StartedAt.Local().Format(time.DateTime))
		}
	}
	return nil
}

// storeLine is the store as status shows it: the driver, where it is
// (a file, or host:port/database without credentials) and its versions,
// e.g. "postgres db.example:5432/jam (PostgreSQL 15.4, schema 16)".
func storeLine(s wire.StoreStatus) string {
	if s.ServerVersion == "" {
		return fmt.Sprintf("%s %s (schema %d)", s.Driver, s.Location, s.SchemaVersion)
	}
	engine := map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[s.Driver]
	if engine == "" {
		engine = s.Driver
	}
	return fmt.Sprintf("%s %s (%s %s, schema %d)", s.Driver, s.Location, engine, s.ServerVersion, s.SchemaVersion)
}

func printJSON(io *IOStreams, v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
