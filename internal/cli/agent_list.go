package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// AgentListOptions are the inputs of "jam agent list".
type AgentListOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
}

func newAgentListCmd(io *IOStreams, deps Deps, runF func(context.Context, *AgentListOptions) error) *cobra.Command {
	opts := &AgentListOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the agents with their state, queues and bindings",
		Long: `List the agents: peer key, handle, the state of the agent's socket
(connecting, up, reconnecting, superseded, stopped; "degraded" for an owned
agent whose latest turn failed or that cannot serve one of its rooms, with
a line saying why), how many messages wait
in its bound queues and in its unrouted bucket, and its bindings (as
alias=room). Owned agents then get a line each with their desired runtime
configuration: command, model, the names of their environment variables
(values are never shown), handshake bound, and the desired and effective
generations with what is pending.`,
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
			return runAgentList(c.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runAgentList(ctx context.Context, opts *AgentListOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	agents, err := client.Agents(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.AgentList{Agents: nonNil(agents)})
	}
	if len(agents) == 0 {
		fmt.Fprintln(opts.IO.Out, "no agents; add one with: jam agent add NAME")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "PEER\tHANDLE\tSTATE\tQUEUED\tUNROUTED\tBINDINGS")
	for _, a := range agents {
		state := a.State
		if a.Health == wire.HealthDegraded {
			state = wire.HealthDegraded
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", a.Peer, orDash(a.Handle), orDash(state), a.Queued, a.Unrouted, bindingsCell(a.Bindings))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range agents {
		if a.Runtime != nil {
			fmt.Fprintf(opts.IO.Out, "owned %s: %s\n", a.Peer, runtimeLine(a.Runtime))
		}
		if a.Health == wire.HealthDegraded {
			fmt.Fprintf(opts.IO.Out, "degraded %s: %s\n", a.Peer, oneLine(a.HealthReason))
		}
	}
	return nil
}

// runtimeLine sums up an owned agent's desired configuration and its
// generations. Environment values never reach the client; only names.
func runtimeLine(r *wire.AgentRuntimeStatus) string {
	d := r.Desired
	parts := []string{fmt.Sprintf("%s %q", d.Harness, strings.Join(d.Command, " "))}
	if d.Model != "" {
		parts = append(parts, "model "+d.Model)
	}
	if len(d.EnvNames) > 0 {
		parts = append(parts, "env "+strings.Join(d.EnvNames, ",")+" (values hidden)")
	}
	if d.HandshakeTimeout != "" {
		parts = append(parts, "handshake "+d.HandshakeTimeout)
	}
	if d.Sandbox != "" {
		sb := "sandbox " + d.Sandbox
		if d.Network == "off" {
			sb += " (no network)"
		}
		parts = append(parts, sb)
	}
	gen := fmt.Sprintf("generation %d", r.DesiredGeneration)
	if r.EffectiveGeneration != r.DesiredGeneration {
		gen += fmt.Sprintf(" (effective %d; pending: %s)", r.EffectiveGeneration, orDash(r.PendingChange))
	}
	return strings.Join(append(parts, gen), ", ")
}

// bindingsCell shows an agent's bindings as alias=room, comma-separated.
func bindingsCell(bs []wire.Binding) string {
	if len(bs) == 0 {
		return "-"
	}
	cells := make([]string, len(bs))
	for i, b := range bs {
		cells[i] = b.Room
		if b.Alias != "" {
			cells[i] = b.Alias + "=" + b.Room
		}
	}
	return strings.Join(cells, ",")
}
