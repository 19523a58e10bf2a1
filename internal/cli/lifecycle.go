package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// The lifecycle commands: jam agent remove and restart, jam room leave,
// jam session archive and close, jam turn retry and jam account remove.
// The destructive ones (remove, leave, close) ask for confirmation on a
// terminal; without one they refuse unless --yes (exit 2), and a "no"
// changes nothing (exit 1).

// LifecycleOptions are the inputs of a lifecycle command.
type LifecycleOptions struct {
	IO      *IOStreams
	DataDir string
	JSON    bool
	// Yes skips the confirmation.
	Yes bool
	// DeleteOnBand (agent remove) deletes the agent on Band as well.
	DeleteOnBand bool
}

const lifecycleExits = `
Exit codes: 0 done; 1 declined at the prompt, or another failure; 2 bad
arguments, or no terminal to confirm on without --yes; 3 jamd is not
running; 4 no such object; 5 the current state refuses it (conflict).`

// lifecycleCmd builds one lifecycle command; run gets the options and the
// arguments.
func lifecycleCmd(io *IOStreams, deps Deps, use, short, long string, nargs int, confirmable bool,
	run func(ctx context.Context, opts *LifecycleOptions, args []string) error) (*cobra.Command, *LifecycleOptions) {
	opts := &LifecycleOptions{IO: io}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + "\n" + lifecycleExits,
		Args:  cobra.ExactArgs(nargs),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := loadClientConfig(c, deps)
			if err != nil {
				return err
			}
			opts.DataDir = cfg.DataDir
			return run(c.Context(), opts, args)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON")
	if confirmable {
		cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	}
	return cmd, opts
}

// confirmed asks q on the terminal unless --yes; what describes the
// action for the refusal without a terminal. ask builds the question; it
// runs only when there is a terminal to ask on.
func confirmed(opts *LifecycleOptions, what string, ask func() (string, error)) error {
	if opts.Yes {
		return nil
	}
	if !opts.IO.Interactive {
		return &usageError{err: fmt.Errorf("refusing to %s without confirmation: no terminal to ask on (pass --yes)", what)}
	}
	q, err := ask()
	if err != nil {
		return err
	}
	ok, err := confirm(opts.IO, q)
	if err != nil {
		return err
	}
	if !ok {
		return &exitError{code: ExitError, msg: "nothing changed"}
	}
	return nil
}

// findAgent resolves what a user typed for an agent as jamd does: the
// peer key, the scope, the handle (with or without @) or the name.
func findAgent(ctx context.Context, client *apiclient.Client, ref string) (wire.Agent, error) {
	agents, err := client.Agents(ctx)
	if err != nil {
		return wire.Agent{}, err
	}
	var found []wire.Agent
	for _, a := range agents {
		scope := a.Peer[strings.IndexByte(a.Peer, '/')+1:]
		if a.Peer == ref || scope == ref || strings.EqualFold(a.Handle, strings.TrimPrefix(ref, "@")) || strings.EqualFold(a.Name, ref) {
			found = append(found, a)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return wire.Agent{}, &exitError{code: ExitNotFound, msg: fmt.Sprintf("no agent %q (see jam agent list)", ref)}
	}
	return wire.Agent{}, &usageError{err: fmt.Errorf("%d agents match %q; name one by its peer key", len(found), ref)}
}

// liveSessions are the agent's sessions that are not closed.
func liveSessions(ctx context.Context, client *apiclient.Client, peer string) ([]wire.Session, error) {
	ss, err := client.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var out []wire.Session
	for _, s := range ss {
		if s.Agent == peer && s.Lifecycle != "closed" {
			out = append(out, s)
		}
	}
	return out, nil
}

// count is n with its noun.
func count(n int, one, many string) string {
	return fmt.Sprintf("%d %s", n, plural(n, one, many))
}

// newAgentRemoveCmd is "jam agent remove".
func newAgentRemoveCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, opts := lifecycleCmd(io, deps, "remove NAME [--delete-on-band] [--yes] [--json]",
		"Remove an agent from jam: stop its processes, retire its rooms, keep it on Band",
		`Remove an agent from jam. Its processes stop (their leases end), its
sessions are closed (kept as history; their git worktrees are archived, so
the branches keep their work), its rooms' bindings are retired, and the
messages jam had queued for it leave jam's queue: they stay unsettled on
Band, which still holds them for the agent. Its runtime template, its peer
record and its sealed key are deleted. Afterwards jam agent list does not
show it, and the same name can be added again.

The agent itself is kept on Band (its rooms, its messages) unless
--delete-on-band, which deletes it there first (and stops, changing
nothing, when Band refuses). An attached agent is removed the same way.

NAME is what other commands accept: the peer key, the scope, the handle or
the name. On a terminal it asks for confirmation; --yes answers it.`, 1, true,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			err := confirmed(opts, "remove agent "+args[0], func() (string, error) {
				a, err := findAgent(ctx, client, args[0])
				if err != nil {
					return "", err
				}
				ss, err := liveSessions(ctx, client, a.Peer)
				if err != nil {
					return "", err
				}
				band := "Band's agent is kept."
				if opts.DeleteOnBand {
					band = "The agent is deleted on Band too."
				}
				return fmt.Sprintf("Remove agent %s (%s) and its %s' sessions (%s)? Its %s leave jam's queue, unsettled on Band. %s",
					a.Name, a.Peer, count(len(a.Bindings), "room", "rooms"), count(len(ss), "session", "sessions"),
					count(a.Queued+a.Unrouted, "queued message", "queued messages"), band), nil
			})
			if err != nil {
				return err
			}
			out, err := client.AgentRemove(ctx, args[0], wire.AgentRemoveRequest{DeleteOnBand: opts.DeleteOnBand})
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			where := "kept on Band"
			if out.DeletedOnBand {
				where = "deleted on Band"
			}
			fmt.Fprintf(opts.IO.Out, "removed %s: %s closed, %s retired, %s dropped from jam's queue (unsettled on Band); %s\n",
				out.Agent, count(out.Sessions, "session", "sessions"), count(out.Bindings, "binding", "bindings"),
				count(out.Dropped, "message", "messages"), where)
			return nil
		})
	cmd.Flags().BoolVar(&opts.DeleteOnBand, "delete-on-band", false, "delete the agent on Band as well")
	return cmd
}

// newAgentRestartCmd is "jam agent restart".
func newAgentRestartCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, _ := lifecycleCmd(io, deps, "restart NAME [--json]",
		"Replace an owned agent's processes at the next turn boundary",
		`Replace an owned agent's processes. A process no turn uses stops at once;
one a turn is running on stops when that turn ends (the turn finishes
first). The next turn starts a new process, on a lease of the next
generation, with the agent's desired configuration.

A configuration change (jam agent config) needs no restart: the next turn
that finds the agent's process idle replaces it, and jam agent list then
shows no outstanding change. An attached agent has no process: conflict.`, 1, false,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			out, err := client.AgentRestart(ctx, args[0])
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			fmt.Fprintf(opts.IO.Out, "restarting %s: %s stopped now, %s when the running turn ends; the next turn starts a new one\n",
				out.Agent, count(out.Stopped, "process", "processes"), count(out.Pending, "process", "processes"))
			return nil
		})
	return cmd
}

// newRoomLeaveCmd is "jam room leave".
func newRoomLeaveCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, _ := lifecycleCmd(io, deps, "leave ROOM AGENT [--yes] [--json]",
		"Take an agent out of a room: it leaves on Band, its session there is closed",
		`Take an agent out of a room. It is removed from the room on Band; its
session there is closed (its queued turns cancelled, a running one
cancelled, its git worktree archived: the branch keeps the work, nothing is
deleted), and its binding and the room's messages queued for it leave jam
(unsettled on Band). Adding it to the room again gives it a new session.

On a terminal it asks for confirmation; --yes answers it.`, 2, true,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			room, agent := args[0], args[1]
			client := newClient(opts.DataDir)
			defer client.Close()
			err := confirmed(opts, agent+" leaving room "+room, func() (string, error) {
				a, err := findAgent(ctx, client, agent)
				if err != nil {
					return "", err
				}
				q := fmt.Sprintf("Remove %s (%s) from room %s on Band?", a.Name, a.Peer, room)
				ss, err := liveSessions(ctx, client, a.Peer)
				if err != nil {
					return "", err
				}
				for _, s := range ss {
					if s.Room == room {
						q += fmt.Sprintf(" Its session %s there is closed and its worktree archived.", s.ID)
					}
				}
				return q, nil
			})
			if err != nil {
				return err
			}
			out, err := client.RoomLeave(ctx, room, wire.RoomLeaveRequest{Agent: agent})
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			fmt.Fprintf(opts.IO.Out, "%s left room %s", out.Agent, out.Room)
			if out.Session != "" {
				fmt.Fprintf(opts.IO.Out, "; session %s closed", out.Session)
			}
			fmt.Fprintf(opts.IO.Out, "; %s dropped from jam's queue (unsettled on Band)\n", count(out.Dropped, "message", "messages"))
			return nil
		})
	return cmd
}

// newSessionArchiveCmd is "jam session archive".
func newSessionArchiveCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, _ := lifecycleCmd(io, deps, "archive SESSION [--json]",
		"Archive a session: its worktree is archived, the next message resumes it",
		`Archive a session. Its git worktree's changes are committed to its branch
and the directory is deleted (the branch stays; a plain workspace
directory is kept as it is); the session and its history are kept. The
next message in its room (or jam session send) resumes it: the worktree is
checked out again and the turn runs. A session whose turn is running is a
conflict (cancel the turn first, or wait).`, 1, false,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			out, err := client.SessionArchive(ctx, args[0])
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			fmt.Fprintf(opts.IO.Out, "archived session %s (%s in room %s); the next message resumes it\n", out.ID, out.Agent, out.Room)
			return nil
		})
	return cmd
}

// newSessionCloseCmd is "jam session close".
func newSessionCloseCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, _ := lifecycleCmd(io, deps, "close SESSION [--yes] [--json]",
		"Close a session for good: it takes no further turns; the room gets a new session",
		`Close a session for good. Its queued turns are cancelled (their messages
stay unsettled), a running turn is cancelled, its git worktree is archived
(the branch keeps the work) and the session is kept as history, closed: it
takes no further turns, and jam session send to it is a conflict.

While its agent is still in the room, the room gets a new session at once
(same room configuration, a new worktree): the messages still waiting
there, and later ones, are answered in it, as a fresh conversation. To
stop the agent answering in the room, use jam room leave.

On a terminal it asks for confirmation; --yes answers it.`, 1, true,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			err := confirmed(opts, "close session "+args[0], func() (string, error) {
				ss, err := client.Sessions(ctx)
				if err != nil {
					return "", err
				}
				for _, s := range ss {
					if s.ID == args[0] {
						return fmt.Sprintf("Close session %s of %s in room %s? Its queued turns are cancelled and it takes no further turns; the room's next messages start a new session.",
							s.ID, s.Agent, s.Room), nil
					}
				}
				return "", &exitError{code: ExitNotFound, msg: fmt.Sprintf("no session %s (see jam session list)", args[0])}
			})
			if err != nil {
				return err
			}
			out, err := client.SessionClose(ctx, args[0])
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			fmt.Fprintf(opts.IO.Out, "closed session %s (%s in room %s)\n", out.ID, out.Agent, out.Room)
			return nil
		})
	return cmd
}

// newTurnRetryCmd is "jam turn retry".
func newTurnRetryCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, _ := lifecycleCmd(io, deps, "retry TURN [--json]",
		"Run a failed, cancelled or interrupted turn's message again, as a new turn",
		`Run a turn's message again. The turn must have failed, been cancelled or
been interrupted; its message was never settled, so it keeps its place in
the room's queue, and a new turn of the session answers it (after any turn
already queued there). A turn that succeeded, one whose message is settled
or gone, one whose message another turn answers or waits to answer, and a
turn of a closed session are a conflict (exit 5).`, 1, false,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			out, err := client.RetryTurn(ctx, args[0])
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			fmt.Fprintf(opts.IO.Out, "retrying %s as turn %s (#%d of %s)\n", args[0], out.ID, out.Seq, out.Session)
			return nil
		})
	return cmd
}

// newAccountRemoveCmd is "jam account remove".
func newAccountRemoveCmd(io *IOStreams, deps Deps) *cobra.Command {
	cmd, _ := lifecycleCmd(io, deps, "remove PROFILE [--yes] [--json]",
		"Remove an account no agent uses, with its sealed key",
		`Remove an account: its sealed key and its rooms' cache are deleted and its
room feed stops. Nothing changes on Band. An account agents still use is a
conflict naming them (remove them first with jam agent remove), as is the
account jamd was started with.

On a terminal it asks for confirmation; --yes answers it.`, 1, true,
		func(ctx context.Context, opts *LifecycleOptions, args []string) error {
			client := newClient(opts.DataDir)
			defer client.Close()
			err := confirmed(opts, "remove account "+args[0], func() (string, error) {
				accts, err := client.Accounts(ctx)
				if err != nil {
					return "", err
				}
				for _, a := range accts {
					if a.Profile == args[0] {
						return fmt.Sprintf("Remove account %s (@%s at %s)? Its sealed key is deleted.", a.Profile, a.Handle, a.BandURL), nil
					}
				}
				return "", &exitError{code: ExitNotFound, msg: fmt.Sprintf("no account %s (see jam account list)", args[0])}
			})
			if err != nil {
				return err
			}
			out, err := client.AccountRemove(ctx, args[0])
			if err != nil {
				return err
			}
			if opts.JSON {
				return printJSON(opts.IO, out)
			}
			fmt.Fprintf(opts.IO.Out, "removed account %s\n", out.Profile)
			return nil
		})
	return cmd
}
