package daemon

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/shellwords"
	"github.com/jamhq/jam/internal/store"
)

func wireRuntime(c store.TemplateConfig) wire.AgentRuntime {
	return wire.AgentRuntime{Harness: c.Harness, Command: c.Command, Model: c.Model, Repo: c.Repo, Placement: string(c.Placement), Permission: c.Permission}
}

func wireRuntimeStatus(t store.Template) *wire.AgentRuntimeStatus {
	return &wire.AgentRuntimeStatus{Template: string(t.ID), Desired: wireRuntime(t.Desired), DesiredGeneration: t.DesiredGeneration,
		Effective: wireRuntime(t.Effective), EffectiveGeneration: t.EffectiveGeneration, PendingChange: t.PendingChange}
}

// Sessions implements api.Runtime.
func (d *daemon) Sessions(ctx context.Context) ([]wire.Session, error) {
	ws := d.workspace.ID
	ss, err := d.store.SessionList(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Session, 0, len(ss))
	for _, s := range ss {
		w := wire.Session{ID: string(s.ID), Agent: s.Peer.String(), Room: string(s.Room), Template: string(s.TemplateID),
			Lifecycle: string(s.Lifecycle), ProviderThread: s.ProviderThread, Created: s.CreatedAt}
		wt, err := d.store.WorktreeForSession(ctx, ws, s.ID)
		switch {
		case err == nil:
			w.Worktree, w.Branch = wt.Path, wt.Branch
		case !errors.Is(err, jam.ErrNotFound):
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Turns implements api.Runtime.
func (d *daemon) Turns(ctx context.Context, session string) ([]wire.Turn, error) {
	id, err := jam.ParseID[jam.SessionID](session)
	if err != nil {
		return nil, err
	}
	if _, err := d.store.SessionGet(ctx, d.workspace.ID, id); err != nil {
		return nil, err
	}
	ts, err := d.store.TurnList(ctx, d.workspace.ID, id)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Turn, 0, len(ts))
	for _, t := range ts {
		out = append(out, wire.Turn{ID: string(t.ID), Seq: t.Seq, State: string(t.State), Reason: t.Reason, Message: string(t.SourceMessageID),
			Lease: string(t.LeaseID), LeaseGeneration: t.LeaseGeneration, Created: t.CreatedAt, Updated: t.UpdatedAt})
	}
	return out, nil
}

// AgentConfig implements api.Runtime: it changes the desired configuration
// (the desired generation goes up); the agent's next process runs it.
func (d *daemon) AgentConfig(ctx context.Context, agent string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error) {
	p, err := d.peer(ctx, agent)
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	t, err := d.store.TemplateForPeer(ctx, d.workspace.ID, p.Key)
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	rt := wireRuntime(t.Desired)
	keys := make([]string, 0, len(r.Set))
	for k := range r.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var changes []string
	for _, k := range keys {
		v := r.Set[k]
		switch k {
		case "command":
			argv, err := shellwords.Split(v)
			if err != nil {
				return wire.AgentRuntimeStatus{}, err
			}
			rt.Command = argv
		case "model":
			rt.Model = v
		case "repo":
			rt.Repo = v
		case "placement":
			rt.Placement = v
		case "permission":
			rt.Permission = v
		default:
			return wire.AgentRuntimeStatus{}, fmt.Errorf("%w: unknown runtime key %q (known: command, model, repo, placement, permission)", jam.ErrInvalid, k)
		}
		changes = append(changes, k+"="+v)
	}
	c, err := runtimeConfig(&rt)
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	t, err = d.store.TemplateConfigure(ctx, store.TemplateConfigureParams{WorkspaceID: d.workspace.ID, ID: t.ID, Desired: c,
		Change: strings.Join(changes, ", "), At: time.Now()})
	if err != nil {
		return wire.AgentRuntimeStatus{}, err
	}
	return *wireRuntimeStatus(t), nil
}

// CancelTurn implements api.Runtime.
func (d *daemon) CancelTurn(ctx context.Context, turn string) error {
	id, err := jam.ParseID[jam.TurnID](turn)
	if err != nil {
		return err
	}
	if d.msg == nil || d.msg.runtime == nil {
		return fmt.Errorf("%w: owned runtimes are not running", jam.ErrUnavailable)
	}
	return d.msg.runtime.Cancel(ctx, id)
}
