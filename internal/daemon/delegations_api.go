package daemon

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/delegation"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// The control API's bound of GET /v1/delegations?limit= is the store's:
// the constant expression overflows, and the build fails, when they part.
const _ = uint(wire.MaxDelegationLimit-store.MaxDelegationLimit) + uint(store.MaxDelegationLimit-wire.MaxDelegationLimit)

// The delegation routes of the control API (api.Delegations).

// delegationService is the daemon's delegation service, or
// jam.ErrUnavailable while owned runtimes are not running.
func (d *daemon) delegationService() (*delegation.Service, error) {
	if d.msg == nil || d.msg.delegations == nil {
		return nil, fmt.Errorf("%w: owned runtimes are not running", jam.ErrUnavailable)
	}
	return d.msg.delegations, nil
}

// Delegations implements api.Delegations.
func (d *daemon) Delegations(ctx context.Context, q wire.DelegationQuery) ([]wire.Delegation, error) {
	svc, err := d.delegationService()
	if err != nil {
		return nil, err
	}
	var parent jam.SessionID
	if q.Parent != "" {
		if parent, err = jam.ParseID[jam.SessionID](q.Parent); err != nil {
			return nil, err
		}
	}
	list, err := svc.List(ctx, d.workspace.ID, parent, q.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Delegation, 0, len(list))
	for _, v := range list {
		// The verdict column needs a submitted delegation's result.
		result, err := d.submittedResult(ctx, v)
		if err != nil {
			return nil, fmt.Errorf("list delegations: %w", err)
		}
		out = append(out, d.wireDelegation(ctx, v, result))
	}
	return out, nil
}

// submittedResult is v's result when it is submitted, else nil.
func (d *daemon) submittedResult(ctx context.Context, v store.Delegation) (*store.DelegationResult, error) {
	if v.State != store.DelegationSubmitted {
		return nil, nil
	}
	r, err := d.store.DelegationResultGet(ctx, v.WorkspaceID, v.ID)
	if err != nil {
		return nil, fmt.Errorf("the result of %s: %w", v.ID, err)
	}
	return &r, nil
}

// Delegation implements api.Delegations.
func (d *daemon) Delegation(ctx context.Context, ref string) (wire.DelegationDetail, error) {
	svc, err := d.delegationService()
	if err != nil {
		return wire.DelegationDetail{}, err
	}
	id, err := jam.ParseID[jam.DelegationID](ref)
	if err != nil {
		return wire.DelegationDetail{}, err
	}
	st, err := svc.Status(ctx, d.workspace.ID, id)
	if err != nil {
		return wire.DelegationDetail{}, err
	}
	out := wire.DelegationDetail{Delegation: d.wireDelegation(ctx, st.Delegation, st.Result), Schema: json.RawMessage(st.Delegation.Contract)}
	if r := st.Result; r != nil {
		out.Result = &wire.DelegationResult{Result: json.RawMessage(r.Result), Digest: r.Digest, Submitted: r.At}
	}
	return out, nil
}

// DelegationCancel implements api.Delegations: the person cancels, so
// any delegation of the workspace, whoever its parent.
func (d *daemon) DelegationCancel(ctx context.Context, ref string) (wire.Delegation, error) {
	svc, err := d.delegationService()
	if err != nil {
		return wire.Delegation{}, err
	}
	id, err := jam.ParseID[jam.DelegationID](ref)
	if err != nil {
		return wire.Delegation{}, err
	}
	v, err := svc.Cancel(ctx, d.workspace.ID, "", id)
	if err != nil {
		return wire.Delegation{}, err
	}
	return d.wireDelegation(ctx, v, nil), nil
}

// wireDelegation is v on the wire, with its verdict read from result (a
// submitted delegation's; nil for none) and the rooms and the parent's
// agent read from its sessions. A session that cannot be read leaves its
// room (and for the parent, its agent) "" and is logged: the delegation
// itself is what was asked for.
func (d *daemon) wireDelegation(ctx context.Context, v store.Delegation, result *store.DelegationResult) wire.Delegation {
	out := wire.Delegation{ID: string(v.ID), Parent: string(v.Parent), Child: string(v.Child), Role: string(v.Role), Agent: v.Agent,
		Instructions: v.Instructions, Inputs: wire.DelegationInputs{ChangeSet: string(v.Inputs.ChangeSetID), Commit: v.Inputs.Commit},
		Contract: v.ContractName, State: string(v.State), Reason: v.Reason, Error: v.Error, Attempts: v.Attempts, MaxAttempts: v.MaxAttempts,
		Created: v.CreatedAt, Updated: v.UpdatedAt}
	if s, ok := d.delegationSession(ctx, v.ID, v.Parent); ok {
		out.ParentRoom, out.ParentAgent = string(s.Room), s.Peer.String()
	}
	if v.Child != "" {
		if s, ok := d.delegationSession(ctx, v.ID, v.Child); ok {
			out.ChildRoom = string(s.Room)
		}
	}
	if v.State == store.DelegationSubmitted && result != nil {
		out.Verdict = delegation.VerdictOf(v.ContractName, result.Result)
	}
	return out
}

// delegationSession reads a session of delegation id for wireDelegation.
func (d *daemon) delegationSession(ctx context.Context, id jam.DelegationID, sess jam.SessionID) (store.Session, bool) {
	s, err := d.store.SessionGet(ctx, d.workspace.ID, sess)
	if err != nil {
		d.log.Warn("delegation's session not read", "component", "delegation", "delegation", id, "session", sess, "err", err)
		return store.Session{}, false
	}
	return s, true
}
