package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/wire"
)

// NoticeOptions are the inputs of "jam notice".
type NoticeOptions struct {
	IO      *IOStreams
	DataDir string
	Room    string
	Text    string
	Agent   string
	JSON    bool
}

func newNoticeCmd(io *IOStreams, deps Deps, runF func(context.Context, *NoticeOptions) error) *cobra.Command {
	opts := &NoticeOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "notice ROOM TEXT [--agent A] [--json]",
		Short: "Queue a local notice for an agent; it never reaches Band",
		Long: `Queue a local notice for an agent in a room, and print its id. The notice is
delivered to the session bound to the room exactly like a message (jam inbox,
jam wait), but nothing about it is posted, claimed or settled on Band, and
it cannot be replied to: the agent settles it with jam ack. TEXT "-" reads
the text from stdin.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			opts.Room, opts.Text = args[0], args[1]
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runNotice(c.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Agent, "agent", "", "the agent to notify: peer key, scope, handle or name (default: the only agent)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the notice's id as JSON")
	return cmd
}

func runNotice(ctx context.Context, opts *NoticeOptions) error {
	text, err := readText(opts.IO, opts.Text)
	if err != nil {
		return err
	}
	client := newClient(opts.DataDir)
	defer client.Close()
	res, err := client.Notice(ctx, wire.NoticeRequest{Agent: opts.Agent, Room: opts.Room, Text: text})
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(opts.IO, res)
	}
	fmt.Fprintln(opts.IO.Out, res.ID)
	return nil
}
