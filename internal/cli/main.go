package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/config"
)

// RunDaemonFunc runs a daemon in the foreground until ctx ends. The main
// package injects the daemon's Run so this package does not import it.
type RunDaemonFunc func(ctx context.Context, cfg config.Config, io *IOStreams) error

// Deps are what the commands need from outside the package.
type Deps struct {
	RunDaemon RunDaemonFunc
	RunHub    RunHubFunc
	// RunDemoAgent serves "jam demo-agent"; nil in binaries without it.
	RunDemoAgent RunDemoAgentFunc
	// CopyStore serves "jam store copy"; nil in binaries without it.
	CopyStore CopyStoreFunc
	// Env looks up environment variables; os.LookupEnv when nil.
	Env config.Env
}

// Main runs the jam command line with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, io *IOStreams, deps Deps) int {
	return execute(ctx, "jam", newRootCmd(io, deps), args, io)
}

// MainDaemon runs the jamd command line: the daemon in the foreground, with
// the same flags as "jam up".
func MainDaemon(ctx context.Context, args []string, io *IOStreams, deps Deps) int {
	cmd := newUpCmd(io, deps, nil)
	cmd.Use = "jamd"
	cmd.Short = "jamd runs the jam daemon in the foreground"
	addVersionFlag(cmd, io)
	plainBoolFlags(cmd)
	return execute(ctx, "jamd", cmd, args, io)
}

func execute(ctx context.Context, program string, cmd *cobra.Command, args []string, io *IOStreams) int {
	cmd.SetArgs(args)
	cmd.SetIn(io.In)
	cmd.SetOut(io.Out)
	cmd.SetErr(io.ErrOut)
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	argsAreUsage(cmd)
	ran, err := cmd.ExecuteContextC(ctx)
	if err != nil && ctx.Err() != nil && ran != nil && ran.Name() != "up" && program == "jam" {
		// A client command stopped by a signal (Ctrl-C during jam wait):
		// the call it broke off is no news, the exit code says it all.
		// The daemon's own errors at a stop are still printed.
		return int(ExitInterrupted)
	}
	code := exitCodeOf(err)
	if err != nil {
		if _, quiet := err.(*exitError); !quiet || err.Error() != "" {
			fmt.Fprintf(io.ErrOut, "%s: %s\n", program, oneLine(err.Error()))
		}
	}
	return int(code)
}

// argsAreUsage makes wrong positional arguments, anywhere in the command
// tree, usage errors like wrong flags.
func argsAreUsage(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &usageError{err: fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		argsAreUsage(sub)
	}
}

// boolNoOpt is how pflag writes a boolean flag's optional value in help
// (--json[=true|false]); jam's help shows the flag alone (--json).
const boolNoOpt = "[=true|false]"

func init() {
	cobra.AddTemplateFunc("plainBools", func(s string) string {
		// The same width of spaces keeps the usage column aligned.
		return strings.ReplaceAll(s, boolNoOpt, strings.Repeat(" ", len(boolNoOpt)))
	})
}

// plainBoolFlags makes cmd's help, and its subcommands', show boolean
// flags without pflag's "[=true|false]".
func plainBoolFlags(cmd *cobra.Command) {
	t := cmd.UsageTemplate()
	t = strings.ReplaceAll(t, ".FlagUsages | trimTrailingWhitespaces", ".FlagUsages | plainBools | trimTrailingWhitespaces")
	cmd.SetUsageTemplate(t)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newRootCmd(io *IOStreams, deps Deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "jam",
		Short: "jam hosts AI coding agents in multi-agent chat rooms",
		Long: `jam hosts AI coding agents in multi-agent chat rooms.

jamd, the daemon, keeps every message addressed to an agent durably, routes
it to exactly one runtime session and settles it only on an explicit reply
or acknowledgement. "jam up" runs the daemon in the foreground; the other
commands talk to a running daemon through its control socket in the data
directory.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	config.RegisterFlags(root.PersistentFlags(), "data_dir")
	plainBoolFlags(root)
	defer addCompletion(root, deps) // once every command is added
	root.AddCommand(
		newUpCmd(io, deps, nil),
		newStatusCmd(io, deps, nil),
		newHubCmd(io, deps, nil),
		newVersionCmd(io, nil),
		newAccountCmd(io, deps),
		newConnectionCmd(io, deps),
		newJobCmd(io, deps),
		newDeliverCmd(io, deps),
		newMergeCmd(io, deps),
		newApprovalsCmd(io, deps),
		newApproveCmd(io, deps),
		newDelegationCmd(io, deps),
		newDeliveryCmd(io, deps),
		newOperationCmd(io, deps),
		newAgentCmd(io, deps),
		newRoomCmd(io, deps),
		newBindCmd(io, deps, nil),
		newUnbindCmd(io, deps, nil),
		newInboxCmd(io, deps, nil),
		newWaitCmd(io, deps, nil),
		newReplyCmd(io, deps, nil),
		newAckCmd(io, deps, nil),
		newSendCmd(io, deps, nil),
		newEventsCmd(io, deps, nil),
		newNoticeCmd(io, deps, nil),
		newDemoAgentCmd(io, deps, nil),
		newSessionCmd(io, deps),
		newTurnCmd(io, deps),
		newUsageCmd(io, deps),
		newWorktreeCmd(io, deps),
		newChangeSetCmd(io, deps),
		newCheckpointCmd(io, deps),
		newQuarantineCmd(io, deps),
		newUICmd(io, deps, nil),
		newStoreCmd(io, deps),
	)
	return root
}

// loadConfig reads the configuration visible to cmd: its own and its
// parents' flags, the environment and the config file.
func loadConfig(cmd *cobra.Command, deps Deps) (config.Config, error) {
	return config.Load(config.LoadParams{Flags: cmd.Flags(), Env: deps.Env})
}
