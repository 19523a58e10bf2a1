package storetest

import (
	"context"
	"testing"

	"github.com/jamhq/jam/internal/store"
)

// Opener creates one fresh, empty database for t and returns a function
// that opens a handle on it. Every call of the returned function is a
// separate handle (its own connections, its own caches) on that ONE
// database, closed when the test that opened it ends (t.Cleanup); the race
// cases open two and write through both at once. The database itself is
// removed when the t given to the Opener ends.
type Opener[S any] func(t *testing.T) (open func(t *testing.T) S)

// Core is what every open store offers besides its aggregates.
type Core interface {
	// Info describes the open store.
	Info(ctx context.Context) (store.Info, error)
	// Check runs the dialect's consistency check.
	Check(ctx context.Context) error
	// Close releases the handle.
	Close() error
}

// The constraint of each entry point: the aggregate it exercises and the
// ones its fixtures need (the messaging and runtime fixtures create two
// workspaces, an account in each and one peer).
type (
	// SettingsStore is what [Settings] needs.
	SettingsStore interface {
		store.Workspaces
		store.Settings
	}
	// DaemonRunsStore is what [DaemonRuns] needs.
	DaemonRunsStore interface {
		store.Workspaces
		store.DaemonRuns
	}
	// MessagingBase is what the messaging fixture needs.
	MessagingBase interface {
		store.Workspaces
		store.Accounts
		store.Peers
	}
	// RoutingStore is what [Bindings], [Spool] and [Queue] need: a binding
	// moves queued rows, a spooled message moves into the queue.
	RoutingStore interface {
		MessagingBase
		store.Bindings
		store.Spool
		store.Queue
	}
	// RoomRetirementStore is what [RoomRetirement] needs.
	RoomRetirementStore interface {
		RoutingStore
		store.RoomRetirement
	}
	// RepliesStore is what [Replies] needs.
	RepliesStore interface {
		RoutingStore
		store.Replies
	}
	// RetentionStore is what [Retention] needs.
	RetentionStore interface {
		RoutingStore
		store.Replies
		store.Retention
	}
	// EventsStore is what [Events] needs.
	EventsStore interface {
		store.Workspaces
		store.Events
	}
	// RoomCacheStore is what [RoomCache] needs.
	RoomCacheStore interface {
		MessagingBase
		store.RoomCache
	}
	// QuarantineStore is what [Quarantine] needs.
	QuarantineStore interface {
		RoutingStore
		store.Quarantine
	}
	// TemplatesStore is what [Templates] needs.
	TemplatesStore interface {
		MessagingBase
		store.Templates
	}
	// SessionsStore is what [Sessions] and [Worktrees] need.
	SessionsStore interface {
		TemplatesStore
		store.Sessions
		store.Worktrees
	}
	// LeasesStore is what [Leases] needs.
	LeasesStore interface {
		MessagingBase
		store.Leases
	}
	// TurnsStore is what [Turns], [TurnOutputs], [Executions] and
	// [SessionMessages] need: a turn runs in a session on a lease.
	TurnsStore interface {
		SessionsStore
		store.Leases
		store.Turns
		store.TurnOutputs
		store.Executions
		store.SessionMessages
	}
	// ResultsStore is what [Results] needs: checkpoints and change sets
	// of sessions.
	ResultsStore interface {
		SessionsStore
		store.Checkpoints
		store.ChangeSets
	}
	// JobsStore is what [Jobs] needs: jobs, operations and deliveries
	// of the messaging fixture's workspaces.
	JobsStore interface {
		MessagingBase
		store.Jobs
		store.Operations
		store.Deliveries
	}
	// DelegationsStore is what [Delegations] needs: delegations of the
	// messaging fixture's workspaces.
	DelegationsStore interface {
		MessagingBase
		store.Delegations
	}
	// RuntimeRetentionStore is what [RuntimeRetention] needs.
	RuntimeRetentionStore interface {
		TurnsStore
		store.RuntimeRetention
	}
)

// handle is the store the cases see. Each entry point fills only the
// aggregates its constraint names; calling any other method panics on its
// nil interface, so a case that strays outside its entry point's
// constraint fails on every dialect, including one that implements all.
type handle struct {
	Core
	store.Workspaces
	store.Settings
	store.DaemonRuns
	store.Accounts
	store.Peers
	store.Bindings
	store.Spool
	store.Queue
	store.RoomRetirement
	store.Replies
	store.Retention
	store.Templates
	store.Sessions
	store.Turns
	store.TurnOutputs
	store.Executions
	store.SessionMessages
	store.Leases
	store.Worktrees
	store.Events
	store.RoomCache
	store.Quarantine
	store.RuntimeRetention
	store.Checkpoints
	store.ChangeSets
	store.Jobs
	store.Connections
	store.Operations
	store.Deliveries
	store.Delegations
}

var _ store.Store = handle{}

// narrow turns an Opener of S into an Opener of handles that expose only
// what fill copies from S.
func narrow[S any](o Opener[S], fill func(S) handle) Opener[store.Store] {
	return func(t *testing.T) func(t *testing.T) store.Store {
		open := o(t)
		return func(t *testing.T) store.Store { return fill(open(t)) }
	}
}

// single opens a fresh database and one handle on it per call.
func single(db Opener[store.Store]) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store { return db(t)(t) }
}

func messagingBase(s MessagingBase) handle {
	return handle{Workspaces: s, Accounts: s, Peers: s}
}

func routing(s RoutingStore) handle {
	h := messagingBase(s)
	h.Bindings, h.Spool, h.Queue = s, s, s
	return h
}

func sessions(s SessionsStore) handle {
	h := messagingBase(s)
	h.Templates, h.Sessions, h.Worktrees = s, s, s
	return h
}

func turns(s TurnsStore) handle {
	h := sessions(s)
	h.Leases, h.Turns, h.TurnOutputs, h.Executions, h.SessionMessages = s, s, s, s, s
	return h
}

// Exercise runs the whole conformance suite: every entry point below.
// Subtests run in parallel, each on a database of its own.
func Exercise[S store.Store](t *testing.T, o Opener[S]) {
	t.Helper()
	CoreCases(t, o)
	Workspaces(t, o)
	Settings(t, o)
	DaemonRuns(t, o)
	Accounts(t, o)
	Peers(t, o)
	Bindings(t, o)
	Spool(t, o)
	Queue(t, o)
	RoomRetirement(t, o)
	Replies(t, o)
	Retention(t, o)
	Events(t, o)
	RoomCache(t, o)
	Quarantine(t, o)
	Templates(t, o)
	Sessions(t, o)
	Worktrees(t, o)
	Leases(t, o)
	Turns(t, o)
	SessionMessages(t, o)
	TurnOutputs(t, o)
	Executions(t, o)
	RuntimeRetention(t, o)
	Results(t, o)
	Jobs(t, o)
	Connections(t, o)
	Delegations(t, o)
}

// Delegations checks [store.Delegations]: the state machine, the
// attempts' bound and fence, tenancy, sealing round trips, the
// immutability of results, and two handles submitting one delegation at
// once.
func Delegations[S DelegationsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle {
		h := messagingBase(s)
		h.Delegations = s
		return h
	})
	delegationCases(t, single(db))
	delegationRaces(t, db)
}

// Jobs checks [store.Jobs]: the state machine, idempotency, bounds, the
// generation fence and tenancy, and two handles claiming, and enqueueing
// one key, at once; and [store.Operations] and [store.Deliveries], the
// records of the long actions jobs carry out.
func Jobs[S JobsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle {
		h := messagingBase(s)
		h.Jobs, h.Operations, h.Deliveries = s, s, s
		return h
	})
	jobCases(t, single(db))
	jobRaces(t, db)
	operationCases(t, db)
	deliveryCases(t, db)
}

// Results checks [store.Checkpoints] and [store.ChangeSets], including
// two handles taking one session's next checkpoint at once.
func Results[S ResultsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle {
		h := sessions(s)
		h.Checkpoints, h.ChangeSets = s, s
		return h
	})
	resultCases(t, single(db))
	resultRaces(t, db)
}

// CoreCases checks Info and Check.
func CoreCases[S Core](t *testing.T, o Opener[S]) {
	t.Helper()
	coreCases(t, single(narrow(o, func(s S) handle { return handle{Core: s} })))
}

// Workspaces checks [store.Workspaces].
func Workspaces[S store.Workspaces](t *testing.T, o Opener[S]) {
	t.Helper()
	workspaceCases(t, single(narrow(o, func(s S) handle { return handle{Workspaces: s} })))
}

// Settings checks [store.Settings].
func Settings[S SettingsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	settingCases(t, single(narrow(o, func(s S) handle { return handle{Workspaces: s, Settings: s} })))
}

// DaemonRuns checks [store.DaemonRuns].
func DaemonRuns[S DaemonRunsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	daemonRunCases(t, single(narrow(o, func(s S) handle { return handle{Workspaces: s, DaemonRuns: s} })))
}

// Accounts checks [store.Accounts].
func Accounts[S MessagingBase](t *testing.T, o Opener[S]) {
	t.Helper()
	accountCases(t, single(narrow(o, func(s S) handle { return messagingBase(s) })))
}

// Peers checks [store.Peers].
func Peers[S MessagingBase](t *testing.T, o Opener[S]) {
	t.Helper()
	peerCases(t, single(narrow(o, func(s S) handle { return messagingBase(s) })))
}

// Bindings checks [store.Bindings], including two binds of one room
// racing through two handles.
func Bindings[S RoutingStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle { return routing(s) })
	bindingCases(t, single(db))
	bindingRaces(t, db)
}

// Spool checks [store.Spool], including one message appended twice at
// once through two handles.
func Spool[S RoutingStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle { return routing(s) })
	spoolCases(t, single(db))
	spoolRaces(t, db)
}

// Queue checks [store.Queue], including one row marked through two
// handles at once.
func Queue[S RoutingStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle { return routing(s) })
	queueCases(t, single(db))
	queueRaces(t, db)
}

// RoomRetirement checks [store.RoomRetirement].
func RoomRetirement[S RoomRetirementStore](t *testing.T, o Opener[S]) {
	t.Helper()
	retirementCases(t, single(narrow(o, func(s S) handle {
		h := routing(s)
		h.RoomRetirement = s
		return h
	})))
}

// Replies checks [store.Replies].
func Replies[S RepliesStore](t *testing.T, o Opener[S]) {
	t.Helper()
	replyCases(t, single(narrow(o, func(s S) handle {
		h := routing(s)
		h.Replies = s
		return h
	})))
}

// Retention checks [store.Retention].
func Retention[S RetentionStore](t *testing.T, o Opener[S]) {
	t.Helper()
	retentionCases(t, single(narrow(o, func(s S) handle {
		h := routing(s)
		h.Replies, h.Retention = s, s
		return h
	})))
}

// Events checks [store.Events].
func Events[S EventsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	eventCases(t, single(narrow(o, func(s S) handle { return handle{Workspaces: s, Events: s} })))
}

// RoomCache checks [store.RoomCache].
func RoomCache[S RoomCacheStore](t *testing.T, o Opener[S]) {
	t.Helper()
	roomCacheCases(t, single(narrow(o, func(s S) handle {
		h := messagingBase(s)
		h.RoomCache = s
		return h
	})))
}

// Quarantine checks [store.Quarantine].
func Quarantine[S QuarantineStore](t *testing.T, o Opener[S]) {
	t.Helper()
	quarantineCases(t, single(narrow(o, func(s S) handle {
		h := routing(s)
		h.Quarantine = s
		return h
	})))
}

// Templates checks [store.Templates].
func Templates[S TemplatesStore](t *testing.T, o Opener[S]) {
	t.Helper()
	templateCases(t, single(narrow(o, func(s S) handle {
		h := messagingBase(s)
		h.Templates = s
		return h
	})))
}

// Sessions checks [store.Sessions].
func Sessions[S SessionsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	sessionCases(t, single(narrow(o, func(s S) handle { return sessions(s) })))
}

// Worktrees checks [store.Worktrees].
func Worktrees[S SessionsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	worktreeCases(t, single(narrow(o, func(s S) handle { return sessions(s) })))
}

// Leases checks [store.Leases].
func Leases[S LeasesStore](t *testing.T, o Opener[S]) {
	t.Helper()
	leaseCases(t, single(narrow(o, func(s S) handle {
		h := messagingBase(s)
		h.Leases = s
		return h
	})))
}

// Turns checks [store.Turns], including a stale lease writing after its
// replacement through another handle.
func Turns[S TurnsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle { return turns(s) })
	turnCases(t, single(db))
	turnRaces(t, db)
}

// SessionMessages checks [store.SessionMessages].
func SessionMessages[S TurnsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	messageCases(t, single(narrow(o, func(s S) handle { return turns(s) })))
}

// TurnOutputs checks [store.TurnOutputs].
func TurnOutputs[S TurnsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	turnOutputCases(t, single(narrow(o, func(s S) handle { return turns(s) })))
}

// Executions checks [store.Executions].
func Executions[S TurnsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	executionCases(t, single(narrow(o, func(s S) handle { return turns(s) })))
}

// RuntimeRetention checks [store.RuntimeRetention].
func RuntimeRetention[S RuntimeRetentionStore](t *testing.T, o Opener[S]) {
	t.Helper()
	runtimeRetentionCases(t, single(narrow(o, func(s S) handle {
		h := turns(s)
		h.RuntimeRetention = s
		return h
	})))
}
