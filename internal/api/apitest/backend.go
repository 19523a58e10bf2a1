// Package apitest holds test support for the control API: a fake daemon
// whose every method answers with a function field, shared by the tests
// of the server, the client and the CLI.
package apitest

import (
	"context"
	"fmt"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

// Backend is a fake daemon for tests of the control API, its client and
// the CLI. It answers each method with its Func field; a method whose
// field is nil fails the request with not_implemented.
type Backend struct {
	StatusFunc     func(ctx context.Context) (wire.Status, error)
	AccountsFunc   func(ctx context.Context) ([]wire.Account, error)
	AccountAddFunc func(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error)
	AgentsFunc     func(ctx context.Context) ([]wire.Agent, error)
	AgentAddFunc   func(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error)
	RoomsFunc      func(ctx context.Context, account string) ([]wire.Room, error)
	RoomCreateFunc func(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error)
	RoomAddFunc    func(ctx context.Context, room string, r wire.RoomAddRequest) error
	BindFunc       func(ctx context.Context, r wire.BindRequest) (wire.Binding, error)
	UnbindFunc     func(ctx context.Context, binding string) error
	InboxFunc      func(ctx context.Context, q wire.InboxQuery) (wire.Inbox, error)
	WaitInboxFunc  func(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error)
	ReplyFunc      func(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error)
	AckFunc        func(ctx context.Context, msg string, r wire.AckRequest) error
	SendFunc       func(ctx context.Context, r wire.SendRequest) (wire.SendResult, error)
	NoticeFunc     func(ctx context.Context, r wire.NoticeRequest) (wire.NoticeResult, error)
	// Owned runtimes.
	SessionsFunc        func(ctx context.Context) ([]wire.Session, error)
	TurnsFunc           func(ctx context.Context, session string) ([]wire.Turn, error)
	SessionMessagesFunc func(ctx context.Context, session string) ([]wire.SessionMessage, error)
	SessionSendFunc     func(ctx context.Context, session string, r wire.SessionSendRequest) (wire.SessionSendResult, error)
	CancelTurnFunc      func(ctx context.Context, turn string) error
	AgentConfigFunc     func(ctx context.Context, agent string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error)
	TurnOutputFunc      func(ctx context.Context, turn string) (wire.TurnOutput, error)
	TurnFunc            func(ctx context.Context, turn string) (wire.Turn, error)
	// Usage.
	UsageFunc func(ctx context.Context, r wire.UsageRequest) (wire.UsageReport, error)
	// Worktrees.
	WorktreesFunc       func(ctx context.Context) ([]wire.Worktree, error)
	WorktreeArchiveFunc func(ctx context.Context, session string) (wire.Worktree, error)
	WorktreeRemoveFunc  func(ctx context.Context, session string, r wire.WorktreeRemoveRequest) (wire.Worktree, error)
	WorktreeRestoreFunc func(ctx context.Context, session string, r wire.WorktreeRestoreRequest) (wire.Worktree, error)
	// Quarantine.
	QuarantineFunc func(ctx context.Context) ([]wire.QuarantinedRecord, error)

	// The human room feed's methods (rooms.go).
	RoomMessagesFunc     func(ctx context.Context, room, account string, limit int) (wire.RoomMessages, error)
	RoomPostFunc         func(ctx context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error)
	RoomParticipantsFunc func(ctx context.Context, room, account string) ([]wire.Participant, error)

	// The event stream (events.go).
	EventsFunc func(ctx context.Context, r wire.EventsRequest) (wire.EventStream, error)

	// The lifecycle methods (lifecycle.go).
	Lifecycle

	// Checkpoints and change sets (results.go).
	Results

	// Connections (connections.go).
	ConnectionFuncs

	// Jobs (jobs.go).
	JobFuncs
	DeliveryFuncs
	ApprovalFuncs
	// Delegations (delegations.go).
	DelegationFuncs
}

// ErrUnset is what a method whose function field is nil returns.
var ErrUnset = fmt.Errorf("fake backend: method not set: %w", jam.ErrNotImplemented)

// Status answers with StatusFunc, or a running daemon when it is nil.
func (f Backend) Status(ctx context.Context) (wire.Status, error) {
	if f.StatusFunc == nil {
		return wire.Status{State: wire.StateRunning}, nil
	}
	return f.StatusFunc(ctx)
}

func (f Backend) Accounts(ctx context.Context) ([]wire.Account, error) {
	if f.AccountsFunc == nil {
		return nil, ErrUnset
	}
	return f.AccountsFunc(ctx)
}

func (f Backend) AccountAdd(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error) {
	if f.AccountAddFunc == nil {
		return wire.Account{}, ErrUnset
	}
	return f.AccountAddFunc(ctx, r)
}

func (f Backend) Agents(ctx context.Context) ([]wire.Agent, error) {
	if f.AgentsFunc == nil {
		return nil, ErrUnset
	}
	return f.AgentsFunc(ctx)
}

func (f Backend) AgentAdd(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
	if f.AgentAddFunc == nil {
		return wire.Agent{}, ErrUnset
	}
	return f.AgentAddFunc(ctx, r)
}

func (f Backend) Rooms(ctx context.Context, account string) ([]wire.Room, error) {
	if f.RoomsFunc == nil {
		return nil, ErrUnset
	}
	return f.RoomsFunc(ctx, account)
}

func (f Backend) RoomCreate(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
	if f.RoomCreateFunc == nil {
		return wire.Room{}, ErrUnset
	}
	return f.RoomCreateFunc(ctx, r)
}

func (f Backend) RoomAdd(ctx context.Context, room string, r wire.RoomAddRequest) error {
	if f.RoomAddFunc == nil {
		return ErrUnset
	}
	return f.RoomAddFunc(ctx, room, r)
}

func (f Backend) Bind(ctx context.Context, r wire.BindRequest) (wire.Binding, error) {
	if f.BindFunc == nil {
		return wire.Binding{}, ErrUnset
	}
	return f.BindFunc(ctx, r)
}

func (f Backend) Unbind(ctx context.Context, binding string) error {
	if f.UnbindFunc == nil {
		return ErrUnset
	}
	return f.UnbindFunc(ctx, binding)
}

func (f Backend) Inbox(ctx context.Context, q wire.InboxQuery) (wire.Inbox, error) {
	if f.InboxFunc == nil {
		return wire.Inbox{}, ErrUnset
	}
	return f.InboxFunc(ctx, q)
}

func (f Backend) WaitInbox(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error) {
	if f.WaitInboxFunc == nil {
		return wire.Inbox{}, ErrUnset
	}
	return f.WaitInboxFunc(ctx, r)
}

func (f Backend) Reply(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error) {
	if f.ReplyFunc == nil {
		return wire.ReplyResult{}, ErrUnset
	}
	return f.ReplyFunc(ctx, msg, r)
}

func (f Backend) Ack(ctx context.Context, msg string, r wire.AckRequest) error {
	if f.AckFunc == nil {
		return ErrUnset
	}
	return f.AckFunc(ctx, msg, r)
}

func (f Backend) Notice(ctx context.Context, r wire.NoticeRequest) (wire.NoticeResult, error) {
	if f.NoticeFunc == nil {
		return wire.NoticeResult{}, ErrUnset
	}
	return f.NoticeFunc(ctx, r)
}

func (f Backend) Send(ctx context.Context, r wire.SendRequest) (wire.SendResult, error) {
	if f.SendFunc == nil {
		return wire.SendResult{}, ErrUnset
	}
	return f.SendFunc(ctx, r)
}
