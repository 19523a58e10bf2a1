package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// ChangeSetOptions are the inputs of the "jam changeset" and "jam
// checkpoint" commands.
type ChangeSetOptions struct {
	IO      *IOStreams
	DataDir string
	// Ref is the change set (or, for list and checkpoint list, the
	// session) the command is about.
	Ref   string
	Turn  string
	Limit int
	JSON  bool
	Stat  bool
	// Since is the checkpoint a capture starts from (0: the session's
	// first).
	Since int
	// Dir is where apply applies the patch (default the current
	// directory); Check only checks that it applies.
	Dir   string
	Check bool
	// Color is auto (a terminal without NO_COLOR), always or never.
	Color string
}

// newChangeSetCmd groups the commands that read captured change sets.
func newChangeSetCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "changeset",
		Short: "List, show, diff, capture and apply change sets",
		Long: `A change set is what a turn changed in its session's worktree: the
difference between the checkpoint taken when the turn started and the one
taken when it ended, as a manifest (each path with its kind, modes and
SHA-256 before and after) and a binary patch (git diff --binary
--full-index), sealed by a subject digest. It is immutable. A change set of
a failed, cancelled or interrupted turn is marked salvage; one captured
on request (jam changeset capture) is marked request.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	listOpts := &ChangeSetOptions{IO: io}
	list := &cobra.Command{
		Use:   "list [SESSION] [--turn TURN] [--limit N] [--json]",
		Short: "List change sets, newest first: the workspace's or one session's",
		Args:  cobra.MaximumNArgs(1),
		RunE:  clientCommand(deps, listOpts, runChangeSetList),
	}
	list.Flags().StringVar(&listOpts.Turn, "turn", "", "only the change sets of this turn")
	list.Flags().IntVar(&listOpts.Limit, "limit", 0, fmt.Sprintf("at most this many (1 to %d; default %d)", wire.MaxChangeSetLimit, wire.DefaultChangeSetLimit))
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	showOpts := &ChangeSetOptions{IO: io}
	show := &cobra.Command{
		Use:   "show CHANGESET [--json]",
		Short: "Show a change set's manifest and figures",
		Args:  cobra.ExactArgs(1),
		RunE:  clientCommand(deps, showOpts, runChangeSetShow),
	}
	show.Flags().BoolVar(&showOpts.JSON, "json", false, "print JSON")
	diffOpts := &ChangeSetOptions{IO: io}
	diff := &cobra.Command{
		Use:   "diff CHANGESET [--stat] [--color auto|always|never]",
		Short: "Print a change set's patch (coloured on a terminal), or its per-file figures",
		Args:  cobra.ExactArgs(1),
		RunE:  clientCommand(deps, diffOpts, runChangeSetDiff),
	}
	diff.Flags().BoolVar(&diffOpts.Stat, "stat", false, "print each file's added and deleted lines instead of the patch")
	diff.Flags().StringVar(&diffOpts.Color, "color", "auto", "colour the patch: auto (on a terminal without NO_COLOR), always or never")
	captureOpts := &ChangeSetOptions{IO: io}
	capture := &cobra.Command{
		Use:   "capture SESSION [--since N] [--json]",
		Short: "Checkpoint a session's worktree now and capture the change set since a checkpoint",
		Long: `Takes a checkpoint of the session's worktree now and captures the change
set from checkpoint N (its number in jam checkpoint list; by default the
session's first) to it, marked request. Prints it as jam changeset show
does.`,
		Args: cobra.ExactArgs(1),
		RunE: clientCommand(deps, captureOpts, runChangeSetCapture),
	}
	capture.Flags().IntVar(&captureOpts.Since, "since", 0, "capture from this checkpoint (its number in jam checkpoint list; default the first)")
	capture.Flags().BoolVar(&captureOpts.JSON, "json", false, "print JSON")
	applyOpts := &ChangeSetOptions{IO: io}
	apply := &cobra.Command{
		Use:   "apply CHANGESET [--to DIR] [--check] [--json]",
		Short: "Apply a change set's patch to a directory and verify the result against its manifest",
		Long: `Applies the change set's patch (git apply --binary; the index is not
touched) to DIR, by default the current directory, which must hold the
change set's base: the top of a git work tree, or a plain directory in
none. git apply changes all of the files or none of them. Then every path
of the manifest is checked: its SHA-256, its executable bit, a symbolic
link as one, deleted and renamed-away paths gone. --check only checks
that the patch applies and changes nothing. A change set whose patch was
over the bound and not kept cannot be applied.`,
		Args: cobra.ExactArgs(1),
		RunE: clientCommand(deps, applyOpts, runChangeSetApply),
	}
	apply.Flags().StringVar(&applyOpts.Dir, "to", "", "apply in this directory (default the current one)")
	apply.Flags().BoolVar(&applyOpts.Check, "check", false, "only check that the patch applies; change nothing")
	apply.Flags().BoolVar(&applyOpts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list, show, diff, capture, apply)
	return cmd
}

// newCheckpointCmd groups the commands about sessions' checkpoints.
func newCheckpointCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "List the checkpoints of a session's worktree",
		Long: `jam snapshots a session's worktree as a git commit on a private ref
(refs/jam/checkpoints/SESSION/N) when each turn starts and when it ends,
without touching the person's index, HEAD or branches. A checkpoint holds
untracked files and leaves out ignored and credential files; it holds files
only, never a process's state.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	opts := &ChangeSetOptions{IO: io}
	list := &cobra.Command{
		Use:   "list SESSION [--json]",
		Short: "List a session's checkpoints, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir, opts.Ref = cfg.DataDir, args[0]
			return runCheckpointList(c.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	return cmd
}

func runChangeSetList(ctx context.Context, opts *ChangeSetOptions) error {
	if opts.Limit < 0 || opts.Limit > wire.MaxChangeSetLimit {
		return &usageError{err: fmt.Errorf("--limit %d is outside 1 to %d", opts.Limit, wire.MaxChangeSetLimit)}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.ChangeSets(ctx, wire.ChangeSetQuery{Session: opts.Ref, Turn: opts.Turn, Limit: opts.Limit})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.ChangeSets{ChangeSets: nonNil(list)})
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHANGESET\tSESSION\tTURN\tORIGIN\tCHANGES\tCREATED")
	for _, cs := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", cs.ID, cs.Session, dash(cs.Turn), cs.Origin, summary(cs), cs.Created.Local().Format(time.DateTime))
	}
	return w.Flush()
}

// summary reads like "3 files changed, +12 −4", or "no changes".
func summary(cs wire.ChangeSet) string {
	if len(cs.Files) == 0 {
		return "no changes"
	}
	files := "files"
	if len(cs.Files) == 1 {
		files = "file"
	}
	return fmt.Sprintf("%d %s changed, +%d −%d", len(cs.Files), files, cs.Additions, cs.Deletions)
}

func runChangeSetShow(ctx context.Context, opts *ChangeSetOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	cs, err := client.ChangeSet(ctx, opts.Ref)
	if err != nil {
		return err
	}
	return printChangeSet(opts, cs)
}

func runChangeSetCapture(ctx context.Context, opts *ChangeSetOptions) error {
	if opts.Since < 0 {
		return &usageError{err: fmt.Errorf("--since %d is not a checkpoint number (1, 2, …)", opts.Since)}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	cs, err := client.CaptureChangeSet(ctx, opts.Ref, opts.Since)
	if err != nil {
		return err
	}
	return printChangeSet(opts, cs)
}

// printChangeSet prints a change set's figures and manifest, or with
// opts.JSON the change set.
func printChangeSet(opts *ChangeSetOptions, cs wire.ChangeSet) error {
	if opts.JSON {
		cs.Files = nonNil(cs.Files)
		return printJSON(opts.IO, cs)
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(w, "%s\t%s\n", k, v) }
	row("change set", cs.ID)
	row("session", cs.Session)
	row("turn", dash(cs.Turn))
	row("origin", cs.Origin)
	row("changes", summary(cs))
	row("base", fmt.Sprintf("%s (checkpoint %s)", cs.BaseCommit, cs.BaseCheckpoint))
	row("end", fmt.Sprintf("%s (checkpoint %s)", cs.EndCommit, cs.EndCheckpoint))
	patch := fmt.Sprintf("%d bytes", cs.PatchBytes)
	if cs.PatchOmitted {
		patch += " (over the bound, not kept: the checkpoints' commits reproduce it)"
	}
	row("patch", patch)
	row("digest", cs.SubjectDigest)
	row("created", cs.Created.Local().Format(time.DateTime))
	if err := w.Flush(); err != nil {
		return err
	}
	if len(cs.Files) == 0 {
		return nil
	}
	fmt.Fprintln(opts.IO.Out)
	w = tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "KIND\tPATH\tMODE\t+\t−\tSIZE\tSHA-256")
	for _, f := range cs.Files {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", fileKind(f), filePath(f), fileMode(f), lines(f, f.Additions), lines(f, f.Deletions), f.Size, short(f.NewSHA256, f.OldSHA256))
	}
	return w.Flush()
}

func fileKind(f wire.ChangeSetFile) string {
	k := f.Kind
	if f.Symlink {
		k += " symlink"
	}
	if f.Binary {
		k += " binary"
	}
	return k
}

func filePath(f wire.ChangeSetFile) string {
	if f.OldPath != "" {
		return f.OldPath + " → " + f.Path
	}
	return f.Path
}

func fileMode(f wire.ChangeSetFile) string {
	switch {
	case f.OldMode == f.NewMode:
		return f.NewMode
	case f.OldMode == "":
		return f.NewMode
	case f.NewMode == "":
		return f.OldMode
	}
	return f.OldMode + " → " + f.NewMode
}

func lines(f wire.ChangeSetFile, n int) string {
	if f.Binary {
		return "-"
	}
	return fmt.Sprint(n)
}

// short shows the first 12 hex digits of the new side's digest (the old
// side's for a delete).
func short(digests ...string) string {
	for _, d := range digests {
		if d != "" {
			return d[:min(12, len(d))]
		}
	}
	return "-"
}

func runChangeSetDiff(ctx context.Context, opts *ChangeSetOptions) error {
	var color bool
	switch opts.Color {
	case "auto":
		color = opts.IO.Color
	case "always":
		color = true
	case "never":
	default:
		return &usageError{err: fmt.Errorf("--color %q is not auto, always or never", opts.Color)}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	if opts.Stat {
		cs, err := client.ChangeSet(ctx, opts.Ref)
		if err != nil {
			return err
		}
		return printStat(opts.IO, cs)
	}
	patch, err := client.ChangeSetPatch(ctx, opts.Ref)
	if err != nil {
		return err
	}
	if !color {
		_, err := opts.IO.Out.Write(patch)
		return err
	}
	return writeColored(opts.IO, patch)
}

// printStat prints each file's figures as git diff --stat does, and the
// summary.
func printStat(io *IOStreams, cs wire.ChangeSet) error {
	w := tabwriter.NewWriter(io.Out, 0, 4, 1, ' ', 0)
	for _, f := range cs.Files {
		figures := fmt.Sprintf("+%d −%d", f.Additions, f.Deletions)
		if f.Binary {
			figures = fmt.Sprintf("binary, %d bytes", f.Size)
		}
		fmt.Fprintf(w, " %s\t| %s\n", filePath(f), figures)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(io.Out, " %s\n", summary(cs))
	return err
}

// ANSI colours of a patch's lines, as git colours them.
const (
	ansiReset = "\x1b[m"
	ansiBold  = "\x1b[1m"
	ansiCyan  = "\x1b[36m"
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
)

// writeColored writes patch with headers bold, hunk headers cyan, removed
// lines red and added ones green. Bytes of the patch that are control
// characters are written as they are, as git does: the terminal is the
// person's.
func writeColored(io *IOStreams, patch []byte) error {
	out := bufio.NewWriter(io.Out)
	inHeader := false
	for line := range bytes.Lines(patch) {
		text := strings.TrimSuffix(string(line), "\n")
		color := ""
		switch {
		case strings.HasPrefix(text, "diff --git "):
			inHeader, color = true, ansiBold
		case strings.HasPrefix(text, "@@"):
			inHeader, color = false, ansiCyan
		case inHeader:
			color = ansiBold
		case strings.HasPrefix(text, "-"):
			color = ansiRed
		case strings.HasPrefix(text, "+"):
			color = ansiGreen
		}
		if color == "" {
			out.WriteString(text)
		} else {
			out.WriteString(color + text + ansiReset)
		}
		if len(text) < len(line) {
			out.WriteByte('\n')
		}
	}
	return out.Flush()
}

func runCheckpointList(ctx context.Context, opts *ChangeSetOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	cps, err := client.Checkpoints(ctx, opts.Ref)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.Checkpoints{Checkpoints: nonNil(cps)})
	}
	w := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "N\tCHECKPOINT\tTURN\tPHASE\tCOMMIT\tCREATED")
	for _, c := range cps {
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", c.Seq, c.ID, dash(c.Turn), c.Phase, c.Commit[:min(12, len(c.Commit))], c.Created.Local().Format(time.DateTime))
	}
	return w.Flush()
}

func (o *ChangeSetOptions) setClient(dataDir, arg string) { o.DataDir, o.Ref = dataDir, arg }
