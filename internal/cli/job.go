package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// JobOptions are the inputs of the "jam job" commands.
type JobOptions struct {
	IO      *IOStreams
	DataDir string
	ID      string
	State   string
	Kind    string
	Limit   int
	JSON    bool
}

// newJobCmd groups the commands about the daemon's durable jobs.
func newJobCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Inspect, retry and cancel the daemon's durable jobs",
		Long: `Jobs are the daemon's durable internal continuations (a delivery's
build, push and pull request, say): each is claimed by a worker under a
lease, retried with backoff when an attempt fails, and dead once its
attempts are spent or its error is one no retry can mend. A job survives
a restart of jamd: a worker that died holding one has it claimed again
once its lease lapses.

States: queued, running, succeeded, failed (an attempt failed; due again
at its run-after time), dead, cancelled.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	listOpts := &JobOptions{IO: io}
	list := &cobra.Command{
		Use:   "list [--state STATE] [--kind KIND] [--limit N] [--json]",
		Short: "List jobs, newest first",
		Args:  cobra.NoArgs,
		RunE:  clientCommand(deps, listOpts, runJobList),
	}
	list.Flags().StringVar(&listOpts.State, "state", "", "only jobs in this state")
	list.Flags().StringVar(&listOpts.Kind, "kind", "", "only jobs of this kind")
	list.Flags().IntVar(&listOpts.Limit, "limit", 0, fmt.Sprintf("at most this many (1 to %d; default 100)", wire.MaxJobLimit))
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	for _, c := range []struct {
		use, short string
		call       func(ctx context.Context, opts *JobOptions) (wire.Job, error)
	}{
		{"show JOB [--json]", "Show a job: state, attempts, lease, latest error, result", func(ctx context.Context, opts *JobOptions) (wire.Job, error) {
			client := newClient(opts.DataDir)
			defer client.Close()
			return client.Job(ctx, opts.ID)
		}},
		{"retry JOB [--json]", "Queue a dead or cancelled job again, its attempts counted anew", func(ctx context.Context, opts *JobOptions) (wire.Job, error) {
			client := newClient(opts.DataDir)
			defer client.Close()
			return client.JobRetry(ctx, opts.ID)
		}},
		{"cancel JOB [--json]", "Cancel a queued, failed or running job (a running one's worker is stopped)", func(ctx context.Context, opts *JobOptions) (wire.Job, error) {
			client := newClient(opts.DataDir)
			defer client.Close()
			return client.JobCancel(ctx, opts.ID)
		}},
	} {
		opts := &JobOptions{IO: io}
		sub := &cobra.Command{
			Use:   c.use,
			Short: c.short,
			Args:  cobra.ExactArgs(1),
			RunE: clientCommand(deps, opts, func(ctx context.Context, opts *JobOptions) error {
				j, err := c.call(ctx, opts)
				if err != nil {
					return err
				}
				if opts.JSON {
					return printJSON(opts.IO, j)
				}
				printJob(opts.IO, j)
				return nil
			}),
		}
		sub.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
		cmd.AddCommand(sub)
	}
	return cmd
}

func runJobList(ctx context.Context, opts *JobOptions) error {
	client := newClient(opts.DataDir)
	defer client.Close()
	list, err := client.Jobs(ctx, wire.JobQuery{State: opts.State, Kind: opts.Kind, Limit: opts.Limit})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, wire.Jobs{Jobs: nonNil(list)})
	}
	if len(list) == 0 {
		fmt.Fprintln(opts.IO.Out, "no jobs")
		return nil
	}
	tw := newTable(opts.IO.Out)
	fmt.Fprintln(tw, "ID\tKIND\tSTATE\tATTEMPT\tUPDATED\tERROR")
	for _, j := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Kind, j.State, j.Attempt, j.MaxAttempts,
			j.Updated.UTC().Format(time.RFC3339), orDash(firstLine(j.Error, 60)))
	}
	return tw.Flush()
}

// printJob prints one job, a field a line.
func printJob(streams *IOStreams, j wire.Job) {
	tw := newTable(streams.Out)
	fmt.Fprintf(tw, "job\t%s\n", j.ID)
	fmt.Fprintf(tw, "kind\t%s\n", j.Kind)
	fmt.Fprintf(tw, "state\t%s\n", j.State)
	fmt.Fprintf(tw, "attempt\t%d of %d (generation %d)\n", j.Attempt, j.MaxAttempts, j.Generation)
	if j.IdempotencyKey != "" {
		fmt.Fprintf(tw, "key\t%s\n", j.IdempotencyKey)
	}
	if j.State == "queued" || j.State == "failed" {
		fmt.Fprintf(tw, "due\t%s\n", j.RunAfter.UTC().Format(time.RFC3339))
	}
	if j.Owner != "" {
		fmt.Fprintf(tw, "owner\t%s\n", j.Owner)
	}
	if j.LeaseUntil != nil {
		fmt.Fprintf(tw, "lease until\t%s\n", j.LeaseUntil.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "created\t%s\n", j.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(tw, "updated\t%s\n", j.Updated.UTC().Format(time.RFC3339))
	if j.Error != "" {
		fmt.Fprintf(tw, "error\t%s\n", j.Error)
	}
	if len(j.Result) > 0 {
		fmt.Fprintf(tw, "result\t%s\n", j.Result)
	}
	_ = tw.Flush()
}

// firstLine is s's first line, cut to n runes with "…".
func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func (o *JobOptions) setClient(dataDir, arg string) { o.DataDir, o.ID = dataDir, arg }
