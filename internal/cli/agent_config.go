package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// AgentConfigOptions are the inputs of "jam agent config".
type AgentConfigOptions struct {
	IO      *IOStreams
	DataDir string
	Agent   string
	Set     map[string]string
	JSON    bool
}

func newAgentConfigCmd(io *IOStreams, deps Deps, runF func(context.Context, *AgentConfigOptions) error) *cobra.Command {
	opts := &AgentConfigOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "config AGENT KEY=VALUE...",
		Short: "Change an owned agent's runtime configuration",
		Long: `Change an owned agent's runtime configuration: command, model, repo,
placement, permission, handshake_timeout (a duration; 0 is the default,
2m), sandbox (bwrap or local; sandbox= is jamd's default), network (on, or
off: bwrap only), read_only (further paths a sandboxed agent may read,
separated by ":"; read_only= clears them), commit_turns (true: each
succeeded turn's change set is also committed to the session's branch,
with trailers naming the turn and change set; takes effect at the next
turn, without a new process) or env.NAME (a variable of the agent's
environment; env.NAME= unsets it). The change raises the desired generation; the agent's next process
runs it, and until then "jam agent list" shows the desired and effective
generations and what is pending. An environment value is stored encrypted
and never shown: the pending change names only the variable (env.NAME).
A new command or repo is checked as jam agent add checks it. After a
change, the agent's messages still queued (those a failed turn left, or
of rooms it could not serve) are offered again, to run the new
configuration.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Agent, opts.Set = cfg.DataDir, args[0], map[string]string{}
			for _, kv := range args[1:] {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return &usageError{err: fmt.Errorf("%q is not KEY=VALUE", kv)}
				}
				opts.Set[k] = v
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAgentConfig(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runAgentConfig(ctx context.Context, opts *AgentConfigOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	st, err := client.AgentConfig(ctx, opts.Agent, wire.AgentConfigRequest{Set: opts.Set})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, st)
	}
	if st.EffectiveGeneration == 0 {
		// No process has run: the whole configuration applies at the
		// first start, so nothing is pending against an effective one.
		fmt.Fprintf(opts.IO.Out, "desired generation %d; applies when its first process starts\n", st.DesiredGeneration)
		return nil
	}
	fmt.Fprintf(opts.IO.Out, "desired generation %d, effective %d; pending: %s\n", st.DesiredGeneration, st.EffectiveGeneration, orDash(st.PendingChange))
	return nil
}
