package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// ReplyOptions are the inputs of "jam reply".
type ReplyOptions struct {
	IO       *IOStreams
	DataDir  string
	Message  string
	Text     string
	Agent    string
	Mentions []string
	JSON     bool
}

func newReplyCmd(io *IOStreams, deps Deps, runF func(context.Context, *ReplyOptions) error) *cobra.Command {
	opts := &ReplyOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "reply MSG TEXT [--agent A] [--mention X]...",
		Short: "Answer a queued message in its room, which settles it",
		Long: `Answer a queued message in its room as the agent it was queued for, and
settle it. TEXT "-" reads the text from stdin. --mention adds a participant
to mention (repeatable); mentions written in the text as @handle count too.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Message, opts.Text = args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runReply(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "the agent that replies (default: the one the message is queued for)")
	cmd.Flags().StringArrayVar(&opts.Mentions, "mention", nil, "mention this participant (repeatable)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func runReply(ctx context.Context, opts *ReplyOptions) error {
	text, err := readText(opts.IO, opts.Text)
	if err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	res, err := client.Reply(ctx, opts.Message, wire.ReplyRequest{Agent: opts.Agent, Text: text, Mentions: opts.Mentions})
	if err != nil {
		return err
	}
	if opts.JSON {
		res.Posted, res.Mentions = nonNil(res.Posted), nonNil(res.Mentions)
		return printJSON(opts.IO, res)
	}
	fmt.Fprintf(opts.IO.Out, "replied to %s: posted %s", opts.Message, orDash(strings.Join(res.Posted, ", ")))
	if len(res.Mentions) > 0 {
		fmt.Fprintf(opts.IO.Out, ", mentioning %s", strings.Join(mentionNames(res), ", "))
	}
	fmt.Fprintln(opts.IO.Out)
	return nil
}

// mentionNames names a reply's recipients as @handle, or by id where the
// daemon knows no handle.
func mentionNames(res wire.ReplyResult) []string {
	out := make([]string, len(res.Mentions))
	for i, id := range res.Mentions {
		out[i] = id
		if i < len(res.Handles) && res.Handles[i] != "" {
			out[i] = "@" + res.Handles[i]
		}
	}
	return out
}
