package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// DeliverOptions are the inputs of "jam deliver", "jam merge" and the
// "jam delivery" and "jam operation" commands.
type DeliverOptions struct {
	IO      *IOStreams
	DataDir string
	ID      string
	Request wire.DeliverRequest
	// Method, Yes and RequireReview are jam merge's.
	Method        string
	Yes           bool
	RequireReview bool
	// State, Kind, Subject and Limit select what a list shows.
	State   string
	Kind    string
	Subject string
	Limit   int
	NoWait  bool
	JSON    bool
	// Poll is how often a waiting command reads its operation.
	Poll time.Duration
}

// deliverCommand wraps run with the client configuration and the first
// argument as opts.ID.
func deliverCommand(deps Deps, opts *DeliverOptions, run func(context.Context, *DeliverOptions) error) func(*cobra.Command, []string) error {
	return clientCommand(deps, opts, run)
}

func (o *DeliverOptions) setClient(dataDir, arg string) { o.DataDir, o.ID = dataDir, arg }

// newDeliverCmd is "jam deliver".
func newDeliverCmd(io *IOStreams, deps Deps) *cobra.Command {
	opts := &DeliverOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "deliver CHANGESET --remote URL|PATH [--branch B] [--connection NAME] [--pr [--repo OWNER/NAME] [--base main] [--title T]] [--no-wait]",
		Short: "Deliver a change set: a commit on its base, pushed to a branch, and a draft pull request",
		Long: `Deliver builds a commit of the change set applied onto the commit its
session started from (in a temporary index: the agent's worktree is never
touched), checks its tree against every digest of the change set's
manifest, pushes it to a new branch of the remote (a branch already at
that commit is fine; one elsewhere is refused, never overwritten), and,
with --pr, opens one draft pull request on GitHub whose description names
the session, the turn and the change set.

The remote is an https URL (its token is the GitHub connection's, given to
git over a pipe, never in a URL or argv), an ssh URL, or a local path. The
connection defaults to the workspace's only GitHub connection for an https
remote; the pull request's repository is read from a github.com or GitHub
Enterprise URL, or named with --repo.

Each step is a durable job: jamd killed at any point resumes the delivery
where it stopped, with one branch and one pull request in the end.
Transient failures (GitHub's 5xx, rate limits, timeouts) are retried with
backoff; a refused token fails the delivery with credential_invalid.

Deliver waits, printing each step, and exits non-zero if the delivery
fails; --no-wait returns once the delivery is accepted. Asking again for
the same change set, remote and branch shows the first delivery.`,
		Args: cobra.ExactArgs(1),
		RunE: deliverCommand(deps, opts, runDeliver),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Request.Remote, "remote", "", "where to push: an https or ssh URL, or a local path (required)")
	f.StringVar(&opts.Request.Branch, "branch", "", "the branch to create (default jam/CHANGESET)")
	f.StringVar(&opts.Request.Connection, "connection", "", "the GitHub connection (NAME or github/NAME; default: the only one, for https)")
	f.BoolVar(&opts.Request.PR, "pr", false, "open a draft pull request of the branch")
	f.StringVar(&opts.Request.Repo, "repo", "", "the pull request's repository, OWNER/NAME (default: from the remote URL)")
	f.StringVar(&opts.Request.Base, "base", "", "the pull request's base branch (default: the repository's default branch)")
	f.StringVar(&opts.Request.Title, "title", "", "the pull request's title (default: from the change set)")
	f.BoolVar(&opts.NoWait, "no-wait", false, "return once the delivery is accepted")
	f.BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runDeliver(ctx context.Context, opts *DeliverOptions) error {
	if opts.Request.Remote == "" {
		return &usageError{fmt.Errorf("deliver needs --remote URL or PATH")}
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	req := opts.Request
	req.ChangeSet = opts.ID
	d, err := client.Deliver(ctx, req)
	if err != nil {
		return err
	}
	if !opts.NoWait {
		if _, err := waitOperation(ctx, client, opts, d.Operation); err != nil {
			return err
		}
		if d, err = client.Delivery(ctx, d.ID); err != nil {
			return err
		}
	}
	if opts.JSON {
		return printJSON(opts.IO, d)
	}
	printDelivery(opts.IO, d)
	return nil
}

// waitOperation polls the operation until it ends, printing each new
// evidence entry (every step's start, end and failed attempts) to ErrOut;
// a failed operation is its error, with its stable code.
func waitOperation(ctx context.Context, client *apiclient.Client, opts *DeliverOptions, id string) (wire.Operation, error) {
	poll := opts.Poll
	if poll <= 0 {
		poll = 300 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	seen := 0
	for {
		op, err := client.Operation(ctx, id)
		if err != nil {
			return op, err
		}
		for _, e := range op.Evidence {
			if e.Seq > seen {
				seen = e.Seq
				if !opts.JSON {
					fmt.Fprintf(opts.IO.ErrOut, "%s %s: %s\n", op.Kind, op.ID, evidenceLine(e))
				}
			}
		}
		switch op.State {
		case "succeeded":
			return op, nil
		case "failed", "cancelled":
			code := wire.Code(op.ErrorCode)
			if code == "" {
				code = wire.CodeInternal
			}
			return op, &apiclient.Error{Code: code, Message: fmt.Sprintf("%s %s %s: %s", op.Kind, op.ID, op.State, firstLine(op.Error, 400))}
		}
		select {
		case <-ctx.Done():
			return op, ctx.Err()
		case <-t.C:
		}
	}
}

// evidenceKeys are the details an evidence line shows, in order.
var evidenceKeys = []string{"commit", "remote_sha", "pr_url", "merge_sha", "code", "error"}

// evidenceLine is one evidence entry as a person reads it: the step, what
// happened, and the details that matter (a commit, a URL, an error).
func evidenceLine(e wire.Evidence) string {
	var d map[string]any
	_ = json.Unmarshal(e.Detail, &d)
	line := e.Step + " " + e.Event
	switch e.Event {
	case "start":
		line = e.Step + " started"
		if n, ok := d["attempt"].(float64); ok && n > 1 {
			line += fmt.Sprintf(" (attempt %d)", int(n))
		}
	case "end":
		line = e.Step + " done"
	case "error":
		line = e.Step + " failed"
		if final, _ := d["final"].(bool); !final {
			line += ", retrying"
		}
	}
	for _, k := range evidenceKeys {
		if v, ok := d[k].(string); ok && v != "" {
			line += " " + k + "=" + firstLine(v, 160)
		}
	}
	return line
}

// printDelivery prints one delivery, a field a line.
func printDelivery(streams *IOStreams, d wire.Delivery) {
	tw := newTable(streams.Out)
	fmt.Fprintf(tw, "delivery\t%s\n", d.ID)
	fmt.Fprintf(tw, "state\t%s\n", d.State)
	fmt.Fprintf(tw, "change set\t%s\n", d.ChangeSet)
	fmt.Fprintf(tw, "remote\t%s\n", d.Remote)
	fmt.Fprintf(tw, "branch\t%s\n", d.Branch)
	if d.Commit != "" {
		fmt.Fprintf(tw, "commit\t%s\n", d.Commit)
	}
	if d.PRNumber != 0 {
		fmt.Fprintf(tw, "pull request\t#%d %s\n", d.PRNumber, d.PRURL)
	} else if d.PR {
		fmt.Fprintf(tw, "pull request\t(to open in %s, into %s)\n", d.Repo, d.Base)
	}
	if d.PRState != "" {
		fmt.Fprintf(tw, "followed\t%s, checks %s, head %s\n", d.PRState, orDash(d.Checks), orDash(d.PRHeadSHA))
	}
	if d.ErrorCode != "" {
		fmt.Fprintf(tw, "error\t%s: %s\n", d.ErrorCode, d.Error)
	}
	fmt.Fprintf(tw, "operation\t%s\n", d.Operation)
	_ = tw.Flush()
}

// newMergeCmd is "jam merge".
func newMergeCmd(io *IOStreams, deps Deps) *cobra.Command {
	opts := &DeliverOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "merge DELIVERY --yes [--require-review] [--method squash|merge|rebase] [--no-wait]",
		Short: "Merge a delivery's pull request, behind its gates",
		Long: `Merge merges the delivery's pull request on GitHub as a separate,
gated operation. It is refused, naming the gate (gate_refused), unless:

  state     the delivery's pull request is open;
  approval  you approve it explicitly with --yes;
  head      the pull request's head is still the commit jam delivered;
  checks    its check runs and combined commit status are green;
  review    with --require-review, or merge_requires_review in the
            configuration: the newest review of the delivered change set,
            a validated delegation result, approves it.

The gates are read from GitHub at the moment you ask, and the merge names
the head it saw, so a head that moves meanwhile is refused too.`,
		Args: cobra.ExactArgs(1),
		RunE: deliverCommand(deps, opts, runMerge),
	}
	cmd.Flags().StringVar(&opts.Method, "method", "squash", "how to merge: squash, merge or rebase")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "approve the merge")
	cmd.Flags().BoolVar(&opts.RequireReview, "require-review", false, "also require an approving review of the change set")
	cmd.Flags().BoolVar(&opts.NoWait, "no-wait", false, "return once the merge is accepted")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runMerge(ctx context.Context, opts *DeliverOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	op, err := client.DeliveryMerge(ctx, opts.ID, wire.MergeRequest{Method: opts.Method, Approved: opts.Yes, RequireReview: opts.RequireReview})
	if err != nil {
		return err
	}
	if !opts.NoWait {
		if op, err = waitOperation(ctx, client, opts, op.ID); err != nil {
			return err
		}
	}
	if opts.JSON {
		return printJSON(opts.IO, op)
	}
	printOperation(opts.IO, op)
	return nil
}

// newDeliveryCmd is "jam delivery list|show|follow".
func newDeliveryCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delivery",
		Short: "List, show and follow deliveries of change sets",
		Long: `A delivery is the intent and outcome of delivering one change set to a
branch of a remote and, when asked, one draft pull request.

States: pending, building, pushing, pushed, pr_open, merged, closed,
failed. jamd follows the open pull requests every few minutes; follow
reads one now.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	listOpts := &DeliverOptions{IO: io}
	list := &cobra.Command{
		Use:   "list [--change-set CS] [--state STATE] [--limit N] [--json]",
		Short: "List deliveries, newest first",
		Args:  cobra.NoArgs,
		RunE:  deliverCommand(deps, listOpts, runDeliveryList),
	}
	list.Flags().StringVar(&listOpts.Request.ChangeSet, "change-set", "", "only deliveries of this change set")
	list.Flags().StringVar(&listOpts.State, "state", "", "only deliveries in this state")
	list.Flags().IntVar(&listOpts.Limit, "limit", 0, fmt.Sprintf("at most this many (1 to %d; default 100)", wire.MaxDeliveryLimit))
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	for _, c := range []struct {
		use, short string
		call       func(client *apiclient.Client, ctx context.Context, id string) (wire.Delivery, error)
	}{
		{"show DELIVERY [--json]", "Show a delivery: state, commit, branch, pull request, error", (*apiclient.Client).Delivery},
		{"follow DELIVERY [--json]", "Read the delivery's pull request from GitHub now (state, head, checks)", (*apiclient.Client).DeliveryFollow},
	} {
		opts := &DeliverOptions{IO: io}
		sub := &cobra.Command{
			Use:   c.use,
			Short: c.short,
			Args:  cobra.ExactArgs(1),
			RunE: deliverCommand(deps, opts, func(ctx context.Context, opts *DeliverOptions) error {
				client := newClient(opts.DataDir)
				defer client.Close()
				d, err := c.call(client, ctx, opts.ID)
				if err != nil {
					return err
				}
				if opts.JSON {
					return printJSON(opts.IO, d)
				}
				printDelivery(opts.IO, d)
				return nil
			}),
		}
		sub.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
		cmd.AddCommand(sub)
	}
	return cmd
}

func runDeliveryList(ctx context.Context, opts *DeliverOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.Deliveries(ctx, wire.DeliveryQuery{ChangeSet: opts.Request.ChangeSet, State: opts.State, Limit: opts.Limit})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.Deliveries{Deliveries: nonNil(list)})
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.Out, "no deliveries")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "ID\tCHANGE SET\tSTATE\tBRANCH\tPR\tUPDATED")
	for _, d := range list {
		pr := "-"
		if d.PRNumber != 0 {
			pr = fmt.Sprintf("#%d", d.PRNumber)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.ChangeSet, d.State, d.Branch, pr, d.Updated.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// newOperationCmd is "jam operation show".
func newOperationCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operation",
		Short: "List and show long actions and their evidence",
		Long: `An operation is the record of a long action a person asked for: deliver
and merge (which run on durable jobs), capture (jam changeset capture) and
worktree_archive, worktree_remove and worktree_restore. Each has a state
(pending, running, succeeded, failed, cancelled), a progress line, its
result or its error with a stable code, the jobs behind it, and
append-only evidence of every step.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	listOpts := &DeliverOptions{IO: io}
	list := &cobra.Command{
		Use:   "list [--kind KIND] [--subject ID] [--limit N] [--json]",
		Short: "List operations, newest first",
		Args:  cobra.NoArgs,
		RunE:  deliverCommand(deps, listOpts, runOperationList),
	}
	list.Flags().StringVar(&listOpts.Kind, "kind", "", "only operations of this kind")
	list.Flags().StringVar(&listOpts.Subject, "subject", "", "only operations on this subject (a delivery's or a session's id)")
	list.Flags().IntVar(&listOpts.Limit, "limit", 0, fmt.Sprintf("at most this many (1 to %d; default 100)", wire.MaxOperationLimit))
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	opts := &DeliverOptions{IO: io}
	show := &cobra.Command{
		Use:   "show OPERATION [--json]",
		Short: "Show an operation: state, progress, result or error, jobs, and every step's evidence",
		Args:  cobra.ExactArgs(1),
		RunE: deliverCommand(deps, opts, func(ctx context.Context, opts *DeliverOptions) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			op, err := client.Operation(ctx, opts.ID)
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, op)
			}
			printOperation(opts.IO, op)
			return nil
		}),
	}
	show.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.AddCommand(show)
	return cmd
}

func runOperationList(ctx context.Context, opts *DeliverOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.Operations(ctx, wire.OperationQuery{Kind: opts.Kind, Subject: opts.Subject, Limit: opts.Limit})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.Operations{Operations: nonNil(list)})
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.Out, "no operations")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "ID\tKIND\tSUBJECT\tSTATE\tUPDATED\tERROR")
	for _, op := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", op.ID, op.Kind, orDash(op.Subject), op.State, op.Updated.UTC().Format(time.RFC3339),
			orDash(firstLine(op.ErrorCode, 40)))
	}
	return tw.Flush()
}

// printOperation prints one operation and its evidence.
func printOperation(streams *IOStreams, op wire.Operation) {
	tw := newTable(streams.Out)
	fmt.Fprintf(tw, "operation\t%s\n", op.ID)
	fmt.Fprintf(tw, "kind\t%s %s\n", op.Kind, op.Subject)
	fmt.Fprintf(tw, "state\t%s\n", op.State)
	if op.Progress != "" {
		fmt.Fprintf(tw, "progress\t%s\n", op.Progress)
	}
	if op.ErrorCode != "" {
		fmt.Fprintf(tw, "error\t%s: %s\n", op.ErrorCode, op.Error)
	}
	if len(op.Result) > 0 {
		fmt.Fprintf(tw, "result\t%s\n", op.Result)
	}
	for _, j := range op.Jobs {
		fmt.Fprintf(tw, "job\t%s\n", j)
	}
	_ = tw.Flush()
	if len(op.Evidence) == 0 {
		return
	}
	fmt.Fprintln(streams.Out, "\nevidence:")
	tw = newTable(streams.Out)
	for _, e := range op.Evidence {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", e.Seq, e.At.UTC().Format(time.RFC3339), e.Step, e.Event, firstLine(string(e.Detail), 200))
	}
	_ = tw.Flush()
}
