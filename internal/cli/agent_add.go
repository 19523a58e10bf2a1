package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/shellwords"
)

// AgentAddOptions are the inputs of "jam agent add".
type AgentAddOptions struct {
	IO          *IOStreams
	DataDir     string
	Name        string
	Description string
	Account     string
	// Key imports an existing agent by its API key; "-" reads it from stdin.
	Key string
	// Owned-runtime flags: Command makes the agent owned.
	Harness, Command, Model, Repo, Placement, Permission string
	// Sandbox (bwrap or local; "" is jamd's default), Network (on or off)
	// and ReadOnly (further paths a sandboxed agent may read).
	Sandbox, Network string
	ReadOnly         []string
	// CommitTurns commits each succeeded turn's change set to the
	// session's branch.
	CommitTurns bool
	// Env are --env entries: NAME=VALUE, or NAME to pass this command's
	// own value of NAME.
	Env              []string
	HandshakeTimeout time.Duration
	JSON             bool
	// lookupEnv reads this command's environment.
	lookupEnv func(string) (string, bool)
}

func newAgentAddCmd(io *IOStreams, deps Deps, runF func(context.Context, *AgentAddOptions) error) *cobra.Command {
	opts := &AgentAddOptions{IO: io, lookupEnv: deps.Env}
	if opts.lookupEnv == nil {
		opts.lookupEnv = os.LookupEnv
	}
	cmd := &cobra.Command{
		Use:   "add NAME [--description D] [--account P] [--key KEY | --key -] [--harness KIND] [--command CMD] [--repo PATH] [--placement shared|dedicated] [--permission allow|reject|ask] [--model M] [--env NAME[=VALUE]]... [--handshake-timeout D] [--sandbox bwrap|local] [--network on|off] [--read-only PATH]... [--commit-turns]",
		Short: "Register a new agent on Band, or import one by its key",
		Long: `Register a new agent on Band under an account, or, with --key, import an
existing agent by its API key ("--key -" reads it from stdin). Prints the
agent's handle and its peer key ("profile/scope"), which other commands
accept with --agent.

With --harness or --command the agent is owned: jamd starts CMD (split like
a shell would, nothing expanded) and drives it through the harness KIND,
answering every message routed to it. The kinds, and the command each runs
when --command is not given:

` + harnessKindsHelp() + `

A named kind's command is the CLI's executable and your own options: jam
adds the arguments that make it speak its protocol (copilot --acp
--no-auto-update, opencode acp). --command without --harness is acp, an ACP
agent started as given. A CLI finds its credentials only in what --env
gives it (see below): for copilot, COPILOT_GITHUB_TOKEN, or your own model
provider's COPILOT_PROVIDER_BASE_URL, COPILOT_PROVIDER_API_KEY and
COPILOT_MODEL (with COPILOT_OFFLINE=true to keep it off GitHub).

Each room the agent is in gets its own session and working directory: a
git worktree of --repo on the branch jam/<session>, or an empty directory.
Both are checked before anything is registered: CMD's executable must be
found (an absolute path, or on jamd's PATH) and be executable, and --repo
must be a git repository; else the add fails with invalid_argument (exit
code 2) saying which (for a kind's CLI that is missing, how to install
it). A message the agent cannot serve later (its command gone, its
repository no longer one, a turn failed or cancelled) shows in the room as
failed with the reason, stays queued, and makes "jam agent list" show the
agent degraded until a turn succeeds.
--placement shared (the default) runs one process for all the agent's rooms;
dedicated runs one per room. --permission answers the agent's permission
requests (default reject), through each harness's own approval mechanism.
--model puts every session on that model (the agent must offer it, else
the session fails to start and says what the agent offers; copilot gets
it as its own --model option). --env adds a variable to the agent's
environment: NAME=VALUE, or NAME alone to pass this command's value of NAME
(which keeps it out of the process list). Values are stored encrypted and
never shown. The environment is otherwise only PATH, LANG, LC_*, TERM and
TZ of jamd's, and HOME and TMPDIR naming the agent's own directories under
jamd's data directory. --handshake-timeout bounds the
agent's protocol handshake (default 2m).

--sandbox bwrap (the default where bubblewrap is installed) runs the agent
under bubblewrap: it sees the system directories read-only, its worktrees
and what git needs of their repository, its own home and temp directory,
the paths its command names, and nothing else (not jam's key, token,
control socket, store, or other agents' worktrees). --sandbox local runs it
with jamd's own view of the files. --network off (bwrap only) leaves the
agent only a loopback of its own. --read-only PATH lets a sandboxed agent
read PATH too (repeatable). --harness demo is jam's demo agent, to try
this with.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Name = args[0]
			if c.Flags().Changed("command") && strings.TrimSpace(opts.Command) == "" {
				return &usageError{err: fmt.Errorf("--command is empty: give the command that runs the agent, or leave --command out")}
			}
			if opts.Repo != "" && opts.Command == "" && opts.Harness == "" {
				return &usageError{err: fmt.Errorf("--repo is for owned agents: add --command or --harness (an attached agent has no repository)")}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runAgentAdd(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Description, "description", "", "what the agent does, shown on Band")
	cmd.Flags().StringVar(&opts.Account, "account", "", "account profile (default: the only account)")
	cmd.Flags().StringVar(&opts.Key, "key", "", `import the existing agent with this API key ("-" reads it from stdin)`)
	cmd.Flags().StringVar(&opts.Command, "command", "", "make the agent owned: the command that runs it (default: its harness's CLI)")
	cmd.Flags().StringVar(&opts.Harness, "harness", "", "make the agent owned, driven as one of: "+harnessKindsFlag()+" (default acp with --command)")
	cmd.Flags().StringVar(&opts.Repo, "repo", "", "the repository owned sessions get worktrees of (absolute path)")
	cmd.Flags().StringVar(&opts.Placement, "placement", "shared", "shared: one process for all rooms; dedicated: one per room")
	cmd.Flags().StringVar(&opts.Permission, "permission", "reject", "answer to the agent's permission requests: allow, reject, or ask (the person answers with jam approve or in the web UI)")
	cmd.Flags().StringVar(&opts.Model, "model", "", "the model an owned agent's sessions use")
	cmd.Flags().StringArrayVar(&opts.Env, "env", nil, "add NAME=VALUE (or NAME: this command's value) to an owned agent's environment; repeatable")
	cmd.Flags().DurationVar(&opts.HandshakeTimeout, "handshake-timeout", 0, "bound on an owned agent's protocol handshake, 1s to 30m (default 2m)")
	cmd.Flags().StringVar(&opts.Sandbox, "sandbox", "", "what an owned agent runs under: bwrap or local (default: bwrap where bubblewrap works)")
	cmd.Flags().StringVar(&opts.Network, "network", "", "on (the default) or off: an owned agent under bwrap without network")
	cmd.Flags().StringArrayVar(&opts.ReadOnly, "read-only", nil, "a further absolute path a sandboxed agent may read; repeatable")
	cmd.Flags().BoolVar(&opts.CommitTurns, "commit-turns", false, "commit each succeeded turn's change set to the session's branch, with trailers naming the turn and change set")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

// envEntries resolves --env entries: NAME=VALUE as is, NAME from lookup.
// The daemon validates names and values.
func envEntries(entries []string, lookup func(string) (string, bool)) ([]string, error) {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if strings.Contains(e, "=") {
			out = append(out, e)
			continue
		}
		v, ok := lookup(e)
		if !ok {
			return nil, &usageError{err: fmt.Errorf("--env %s: %s is not set in this environment (give --env %s=VALUE)", e, e, e)}
		}
		out = append(out, e+"="+v)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func runAgentAdd(ctx context.Context, opts *AgentAddOptions) error {
	key := opts.Key
	if key == "-" {
		var err error
		if key, err = readSecret(opts.IO); err != nil {
			return err
		}
		if key == "" {
			return &usageError{err: fmt.Errorf("--key -: standard input holds no key")}
		}
	}
	req := wire.AgentAddRequest{Name: opts.Name, Description: opts.Description, Account: opts.Account, Key: key}
	if opts.Command != "" || opts.Harness != "" {
		var argv []string
		if opts.Command != "" {
			var err error
			if argv, err = shellwords.Split(opts.Command); err != nil {
				return &usageError{err: fmt.Errorf("--command: %w", err)}
			}
		}
		kind := opts.Harness
		if kind == "" {
			kind = "acp" // a command alone is an ACP agent, as before kinds
		}
		var err error
		req.Runtime = &wire.AgentRuntime{Harness: kind, Command: argv, Model: opts.Model, Repo: opts.Repo, Placement: opts.Placement, Permission: opts.Permission,
			Sandbox: opts.Sandbox, Network: opts.Network, ReadOnly: opts.ReadOnly, CommitTurns: opts.CommitTurns}
		if req.Runtime.Env, err = envEntries(opts.Env, opts.lookupEnv); err != nil {
			return err
		}
		if opts.HandshakeTimeout != 0 {
			req.Runtime.HandshakeTimeout = opts.HandshakeTimeout.String()
		}
	} else if len(opts.Env) > 0 || opts.HandshakeTimeout != 0 || opts.Model != "" || opts.Sandbox != "" || opts.Network != "" || len(opts.ReadOnly) > 0 || opts.CommitTurns {
		return &usageError{err: fmt.Errorf("--env, --model, --handshake-timeout, --sandbox, --network, --read-only and --commit-turns are for owned agents: add --harness or --command")}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	agent, err := client.AgentAdd(ctx, req)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, agent)
	}
	fmt.Fprintf(opts.IO.Out, "added agent %s: handle %s, peer %s\n", agent.Name, agent.Handle, agent.Peer)
	return nil
}

// harnessKindsHelp lists the harness kinds and their default commands,
// one a line, for the help.
func harnessKindsHelp() string {
	var b strings.Builder
	for i, k := range harness.Kinds {
		if i > 0 {
			b.WriteString("\n")
		}
		if k.Builtin != nil {
			fmt.Fprintf(&b, "  %-9s %s: jamd's own executable (%s), no --command", k.Name, k.CLI, strings.Join(k.Builtin, " "))
			continue
		}
		if len(k.Command) == 0 {
			fmt.Fprintf(&b, "  %-9s %s: needs --command", k.Name, k.CLI)
			continue
		}
		fmt.Fprintf(&b, "  %-9s %s: %s (install: %s)", k.Name, k.CLI, strings.Join(k.Command, " "), k.Install)
	}
	return b.String()
}

// harnessKindsFlag lists the kinds with their default commands, for the
// flag's line.
func harnessKindsFlag() string {
	parts := make([]string, 0, len(harness.Kinds))
	for _, k := range harness.Kinds {
		if k.Builtin != nil {
			parts = append(parts, k.Name+" (jamd's own "+strings.Join(k.Builtin, " ")+")")
			continue
		}
		if len(k.Command) == 0 {
			parts = append(parts, k.Name+" (needs --command)")
			continue
		}
		parts = append(parts, k.Name+" (runs "+strings.Join(k.Command, " ")+")")
	}
	return strings.Join(parts, ", ")
}
