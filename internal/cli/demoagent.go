package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// DemoAgentOptions are the inputs of "jam demo-agent".
type DemoAgentOptions struct {
	IO       *IOStreams
	StateDir string
}

// RunDemoAgentFunc serves the demo agent on the process's stdio until its
// input ends. The main package injects it.
type RunDemoAgentFunc func(ctx context.Context, opts DemoAgentOptions) error

func newDemoAgentCmd(io *IOStreams, deps Deps, runF func(context.Context, *DemoAgentOptions) error) *cobra.Command {
	opts := &DemoAgentOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "demo-agent [--state-dir D]",
		Short: "Run jam's demo agent (ACP over stdio); a demo, not an assistant",
		Long: `Run jam's demo agent: a small deterministic agent that speaks the Agent
Client Protocol (ACP) on stdin and stdout, for trying jam without an agent CLI.
It is a demo, not an assistant: it answers every prompt by restating it and
records the prompt in NOTES.md in its working directory (after asking for
permission). A prompt containing "[slow]" thinks for a few seconds first, to
show cancelling a turn. Sessions are kept in --state-dir so a new process can
resume them. jamd starts it itself, from its own executable, for an agent
added with --harness demo (as jam up --demo does).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(c.Context(), opts)
			}
			if deps.RunDemoAgent == nil {
				return errors.New("this binary cannot run the demo agent")
			}
			return deps.RunDemoAgent(c.Context(), *opts)
		},
	}
	cmd.Flags().StringVar(&opts.StateDir, "state-dir", "", "where sessions are kept (default: jam-demo-agent in the user's cache directory)")
	return cmd
}
