package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// WorktreeOptions are the inputs of the "jam worktree" commands.
type WorktreeOptions struct {
	IO      *IOStreams
	DataDir string
	Session string
	JSON    bool
	// Yes skips the confirmation; Force discards uncommitted changes.
	Yes   bool
	Force bool
	// Checkpoint is the checkpoint restore starts from (0: the latest).
	Checkpoint int
}

// Worktree actions.
const (
	actionArchive = "archive"
	actionRemove  = "remove"
	actionRestore = "restore"
)

// newWorktreeCmd groups the commands about owned sessions' worktrees.
func newWorktreeCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worktree",
		Short: "List, archive, remove and restore owned sessions' worktrees",
		Long: `Each owned session works in its own git worktree on the branch jam/SESSION.

archive commits the worktree's uncommitted changes to its branch, deletes the
directory and keeps the branch. remove deletes the directory (git worktree
remove, then prune) and the branch; it refuses while the worktree has
uncommitted changes unless --force. Both refuse while a turn of the session
runs. A session whose worktree is archived or removed keeps its messages
queued until "jam worktree restore" checks the branch out again (or, after
a remove, makes a new one).

archive and remove ask for confirmation on a terminal; --yes answers it.
Without a terminal they refuse unless --yes is given.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List the worktrees: session, agent, state, uncommitted changes, branch, path",
		Args:  cobra.NoArgs,
	}
	listOpts := &WorktreeOptions{IO: io}
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	list.RunE = func(c *cobra.Command, _ []string) error {
		cfg, err := loadClientConfig(c, deps)
		if err != nil {
			return err
		}
		listOpts.DataDir = cfg.DataDir
		return runWorktreeList(c.Context(), listOpts)
	}
	action := func(name, short string) *cobra.Command {
		opts := &WorktreeOptions{IO: io}
		sub := &cobra.Command{
			Use:   name + " SESSION",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				cfg, err := loadClientConfig(c, deps)
				if err != nil {
					return err
				}
				opts.DataDir, opts.Session = cfg.DataDir, args[0]
				return runWorktreeAction(c.Context(), name, opts)
			},
		}
		sub.Flags().BoolVar(&opts.JSON, "json", false, "print the worktree as JSON")
		if name != actionRestore {
			sub.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
		}
		if name == actionRestore {
			sub.Use = name + " SESSION [--checkpoint N]"
			sub.Flags().IntVar(&opts.Checkpoint, "checkpoint", 0, "restore this checkpoint (its number in jam checkpoint list; default the latest)")
		}
		if name == actionRemove {
			sub.Flags().BoolVar(&opts.Force, "force", false, "discard uncommitted changes")
		}
		return sub
	}
	cmd.AddCommand(list,
		action(actionArchive, "Commit a worktree's changes to its branch and delete its directory; the branch stays"),
		action(actionRemove, "Delete a worktree's directory and branch"),
		action(actionRestore, "Check an archived or removed worktree out again; waiting turns run"))
	return cmd
}

func runWorktreeList(ctx context.Context, opts *WorktreeOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	wts, err := client.Worktrees(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, map[string]any{"worktrees": nonNil(wts)})
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SESSION\tAGENT\tSTATE\tCHANGES\tBRANCH\tPATH")
	for _, wt := range wts {
		changes := "-"
		if wt.State == "active" {
			changes = fmt.Sprint(wt.Changes)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", wt.Session, wt.Agent, wt.State, changes, dash(wt.Branch), wt.Path)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runWorktreeAction(ctx context.Context, action string, opts *WorktreeOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	if action != actionRestore && !opts.Yes {
		if !opts.IO.Interactive {
			return &usageError{err: fmt.Errorf("refusing to %s the worktree of %s without confirmation: no terminal to ask on (pass --yes)", action, opts.Session)}
		}
		wts, err := client.Worktrees(ctx)
		if err != nil {
			return err
		}
		var wt *wire.Worktree
		for i := range wts {
			if wts[i].Session == opts.Session {
				wt = &wts[i]
			}
		}
		if wt == nil {
			return &exitError{code: ExitNotFound, msg: fmt.Sprintf("no worktree for session %s (see jam worktree list)", opts.Session)}
		}
		ok, err := confirm(opts.IO, question(action, *wt, opts.Force))
		if err != nil {
			return err
		}
		if !ok {
			return &exitError{code: ExitError, msg: "nothing changed"}
		}
	}
	var wt wire.Worktree
	var err error
	switch action {
	case actionArchive:
		wt, err = client.WorktreeArchive(ctx, opts.Session)
	case actionRemove:
		wt, err = client.WorktreeRemove(ctx, opts.Session, wire.WorktreeRemoveRequest{Force: opts.Force})
	default:
		wt, err = client.WorktreeRestore(ctx, opts.Session, wire.WorktreeRestoreRequest{Checkpoint: opts.Checkpoint})
	}
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wt)
	}
	switch action {
	case actionArchive:
		fmt.Fprintf(opts.IO.Out, "archived the worktree of %s: %s deleted, branch %s kept\n", wt.Session, wt.Path, wt.Branch)
	case actionRemove:
		fmt.Fprintf(opts.IO.Out, "removed the worktree of %s: %s deleted%s\n", wt.Session, wt.Path, branchNote(wt.Branch))
	default:
		fmt.Fprintf(opts.IO.Out, "restored the worktree of %s at %s\n", wt.Session, wt.Path)
	}
	return nil
}

func branchNote(branch string) string {
	if branch == "" {
		return ""
	}
	return ", branch " + branch + " deleted"
}

// question describes what an action will do, for the confirmation.
func question(action string, wt wire.Worktree, force bool) string {
	var b strings.Builder
	switch action {
	case actionArchive:
		fmt.Fprintf(&b, "Archive the worktree of %s (%s)? ", wt.Session, wt.Path)
		if wt.Changes > 0 {
			fmt.Fprintf(&b, "Its %d uncommitted change(s) are committed to branch %s, ", wt.Changes, wt.Branch)
		} else {
			fmt.Fprintf(&b, "Branch %s is kept, ", wt.Branch)
		}
		b.WriteString("the directory is deleted, and the session's messages wait until it is restored.")
	case actionRemove:
		fmt.Fprintf(&b, "Remove the worktree of %s? This deletes %s", wt.Session, wt.Path)
		if wt.Branch != "" {
			fmt.Fprintf(&b, " and branch %s with every commit on it", wt.Branch)
		}
		if wt.Changes > 0 && force {
			fmt.Fprintf(&b, ", discarding %d uncommitted change(s)", wt.Changes)
		}
		b.WriteString(".")
	}
	return b.String()
}

// confirm asks a yes/no question on the terminal; anything but y or yes
// (or the end of the input) is no.
func confirm(streams *IOStreams, q string) (bool, error) {
	fmt.Fprintf(streams.ErrOut, "%s [y/N] ", q)
	line, err := bufio.NewReader(streams.In).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
