package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/version"
)

// VersionOptions are the inputs of "jam version".
type VersionOptions struct {
	IO   *IOStreams
	JSON bool
}

func newVersionCmd(io *IOStreams, runF func(context.Context, *VersionOptions) error) *cobra.Command {
	opts := &VersionOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this jam build",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runVersion(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runVersion(opts *VersionOptions) error {
	info := version.Get()
	if opts.JSON {
		return printJSON(opts.IO, info)
	}
	fmt.Fprintf(opts.IO.Out, "jam %s (%s, %s)", info.Version, info.GoVersion, info.Platform)
	if info.Commit != "" {
		fmt.Fprintf(opts.IO.Out, " commit %s", info.Commit)
		if info.Modified {
			fmt.Fprint(opts.IO.Out, " (modified)")
		}
	}
	fmt.Fprintln(opts.IO.Out)
	return nil
}

// addVersionFlag gives a command a --version flag that prints the version.
func addVersionFlag(cmd *cobra.Command, io *IOStreams) {
	cmd.Version = version.String()
	cmd.SetVersionTemplate(fmt.Sprintf("jamd %s\n", version.String()))
}
