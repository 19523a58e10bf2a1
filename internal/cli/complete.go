package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
)

// Shell completion (jam completion bash|zsh|fish) of what the daemon
// knows: agents, rooms, sessions, turns, queued messages, change sets and
// delegations. Every command's positional arguments are completed from
// its usage line (ROOM, SESSION, TURN, AGENT, MSG, CHANGESET,
// DELEGATION), and the --agent and --room flags likewise, so a new
// command gets completion by naming its arguments. With no daemon,
// nothing is offered and the shell falls back to its own completion.

// completeTimeout bounds the daemon calls of one completion.
const completeTimeout = 2 * time.Second

// completeTurnSessions bounds the sessions whose turns are offered (the
// newest ones).
const completeTurnSessions = 20

// completers are the argument placeholders completion knows.
var completers = map[string]func(ctx context.Context, c *apiclient.Client) ([]string, error){
	"AGENT":      completeAgentNames,
	"ROOM":       completeRoomIDs,
	"SESSION":    completeSessionIDs,
	"TURN":       completeTurnIDs,
	"MSG":        completeMessageIDs,
	"CHANGESET":  completeChangeSetIDs,
	"DELEGATION": completeDelegationIDs,
}

// addCompletion walks the command tree and gives every command whose
// usage names known placeholders their completion, and the --agent and
// --room flags theirs.
func addCompletion(cmd *cobra.Command, deps Deps) {
	if args := usageArgs(cmd.Use); cmd.ValidArgsFunction == nil && len(args) > 0 {
		cmd.ValidArgsFunction = func(c *cobra.Command, done []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(done) >= len(args) {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			f := completers[args[len(done)]]
			if f == nil {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return fromDaemon(c, deps, f)
		}
	}
	for flag, kind := range map[string]string{"agent": "AGENT", "room": "ROOM"} {
		if cmd.Flags().Lookup(flag) == nil {
			continue
		}
		f := completers[kind]
		_ = cmd.RegisterFlagCompletionFunc(flag, func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
			return fromDaemon(c, deps, f)
		})
	}
	for _, sub := range cmd.Commands() {
		addCompletion(sub, deps)
	}
}

// usageArgs are the positional placeholders of a usage line: the words
// after the command's name up to the first optional or flag part.
func usageArgs(use string) []string {
	fields := strings.Fields(use)
	var out []string
	for _, f := range fields[min(1, len(fields)):] {
		if strings.HasPrefix(f, "[") || strings.HasPrefix(f, "-") {
			break
		}
		out = append(out, strings.TrimSuffix(f, "..."))
	}
	return out
}

// fromDaemon runs a completer against the daemon of the command's data
// directory.
func fromDaemon(c *cobra.Command, deps Deps, f func(context.Context, *apiclient.Client) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	cfg, err := loadClientConfig(c, deps)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	client := newClient(cfg.DataDir)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	out, err := f(ctx, client)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// described is a completion with its description, as cobra takes it.
func described(value, desc string) string {
	desc = oneLine(desc)
	if desc == "" {
		return value
	}
	return value + "\t" + desc
}

func completeAgentNames(ctx context.Context, c *apiclient.Client) ([]string, error) {
	as, err := c.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(as))
	for _, a := range as {
		out = append(out, described(a.Name, a.Peer))
	}
	return out, nil
}

func completeRoomIDs(ctx context.Context, c *apiclient.Client) ([]string, error) {
	rs, err := c.Rooms(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, described(r.ID, r.Title))
	}
	return out, nil
}

func completeSessionIDs(ctx context.Context, c *apiclient.Client) ([]string, error) {
	ss, err := c.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, described(s.ID, fmt.Sprintf("%s in room %s", s.Agent, s.Room)))
	}
	return out, nil
}

func completeTurnIDs(ctx context.Context, c *apiclient.Client) ([]string, error) {
	ss, err := c.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	ss = ss[max(0, len(ss)-completeTurnSessions):] // oldest first: the newest
	var out []string
	for _, s := range ss {
		ts, err := c.Turns(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, described(t.ID, fmt.Sprintf("%s, turn %d of %s", t.State, t.Seq, s.Agent)))
		}
	}
	return out, nil
}

func completeChangeSetIDs(ctx context.Context, c *apiclient.Client) ([]string, error) {
	list, err := c.ChangeSets(ctx, wire.ChangeSetQuery{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, cs := range list {
		out = append(out, described(cs.ID, cs.Origin+", "+summary(cs)))
	}
	return out, nil
}

func completeDelegationIDs(ctx context.Context, c *apiclient.Client) ([]string, error) {
	list, err := c.Delegations(ctx, wire.DelegationQuery{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, d := range list {
		out = append(out, described(d.ID, d.State+", "+d.Role+" by "+d.Agent))
	}
	return out, nil
}

func completeMessageIDs(ctx context.Context, c *apiclient.Client) ([]string, error) {
	in, err := c.Inbox(ctx, wire.InboxQuery{})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(in.Messages))
	for _, m := range in.Messages {
		text := m.Content
		if r := []rune(text); len(r) > 40 {
			text = string(r[:40]) + "…"
		}
		out = append(out, described(m.ID, m.SenderName+": "+text))
	}
	return out, nil
}
