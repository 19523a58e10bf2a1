package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
)

// Helpers shared by the commands that talk to a running daemon.

// loadClientConfig reads the configuration of a command that talks to the
// daemon: only the inherited --data-dir and --config flags count, so a
// command's own flags (such as "account add --band") never collide with
// configuration keys of the same name.
func loadClientConfig(c *cobra.Command, deps Deps) (config.Config, error) {
	return config.Load(config.LoadParams{Flags: c.InheritedFlags(), Env: deps.Env})
}

// newClient returns a client for the daemon of dataDir.
func newClient(dataDir string) *apiclient.Client {
	return apiclient.New(filepath.Join(dataDir, datadir.SocketFile))
}

// maxText bounds a message read from stdin: the control API refuses
// bodies over 1 MiB.
const maxText = 1<<20 - 4<<10

// readText returns a message argument, or stdin when it is "-", without
// the trailing line breaks a shell pipe adds.
func readText(streams *IOStreams, arg string) (string, error) {
	text := arg
	if arg == "-" {
		raw, err := readLimited(streams.In, maxText)
		if err != nil {
			return "", err
		}
		text = strings.TrimRight(raw, "\r\n")
	}
	if strings.TrimSpace(text) == "" {
		return "", &usageError{err: errors.New("the message text is empty")}
	}
	return text, nil
}

// readSecret reads a key from stdin: its first line, trimmed.
func readSecret(streams *IOStreams) (string, error) {
	raw, err := readLimited(streams.In, 64<<10)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(raw, "\n")
	return strings.TrimSpace(line), nil
}

func readLimited(r io.Reader, limit int64) (string, error) {
	if r == nil {
		return "", &usageError{err: errors.New("no standard input to read")}
	}
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return "", fmt.Errorf("read standard input: %w", err)
	}
	if int64(len(raw)) > limit {
		return "", &usageError{err: fmt.Errorf("standard input is over %d bytes", limit)}
	}
	return string(raw), nil
}

// newTable returns a writer that aligns tab-separated columns; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// orDash shows an empty cell as "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// nonNil makes an absent list print as [] rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// clientOptions are a command's options that take the client
// configuration's data directory and the command's first argument (""
// when it has none).
type clientOptions interface {
	setClient(dataDir, arg string)
}

// clientCommand wraps run with the client configuration: opts gets the
// data directory and the first argument, then run runs with them.
func clientCommand[O clientOptions](deps Deps, opts O, run func(context.Context, O) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		cfg, err := loadClientConfig(c, deps)
		if err != nil {
			return err
		}
		arg := ""
		if len(args) > 0 {
			arg = args[0]
		}
		opts.setClient(cfg.DataDir, arg)
		return run(c.Context(), opts)
	}
}
