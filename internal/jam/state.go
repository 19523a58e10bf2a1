package jam

import "fmt"

// TurnState is the state of a turn. A turn moves
// queued → preparing → running → succeeded | failed | cancelling, and
// cancelling → cancelled | interrupted. At most one turn per session is
// active (not terminal).
type TurnState string

// Turn states.
const (
	TurnQueued      TurnState = "queued"
	TurnPreparing   TurnState = "preparing"
	TurnRunning     TurnState = "running"
	TurnSucceeded   TurnState = "succeeded"
	TurnFailed      TurnState = "failed"
	TurnCancelling  TurnState = "cancelling"
	TurnCancelled   TurnState = "cancelled"
	TurnInterrupted TurnState = "interrupted"
)

// TurnStates lists every turn state in lifecycle order.
var TurnStates = []TurnState{TurnQueued, TurnPreparing, TurnRunning, TurnSucceeded, TurnFailed, TurnCancelling, TurnCancelled, TurnInterrupted}

// Terminal reports whether no transition leaves s.
func (s TurnState) Terminal() bool {
	switch s {
	case TurnSucceeded, TurnFailed, TurnCancelled, TurnInterrupted:
		return true
	}
	return false
}

// turnMoves lists the transitions each state allows. A queued turn may be
// cancelled, or refused (failed), before it starts; an active one may fail, be cancelled (through
// cancelling) or be interrupted when its lease dies.
var turnMoves = map[TurnState][]TurnState{
	TurnQueued:     {TurnPreparing, TurnCancelled, TurnFailed},
	TurnPreparing:  {TurnRunning, TurnFailed, TurnCancelling, TurnInterrupted},
	TurnRunning:    {TurnSucceeded, TurnFailed, TurnCancelling, TurnInterrupted},
	TurnCancelling: {TurnCancelled, TurnInterrupted, TurnFailed},
}

// CanMoveTo reports whether a turn in s may move to next.
func (s TurnState) CanMoveTo(next TurnState) bool {
	for _, n := range turnMoves[s] {
		if n == next {
			return true
		}
	}
	return false
}

// Active reports whether a turn in s holds its session: at most one turn
// per session is active.
func (s TurnState) Active() bool {
	return s == TurnPreparing || s == TurnRunning || s == TurnCancelling
}

// Turn reasons: why a turn waits, failed or ended as it did.
const (
	ReasonWaitingCapacity    = "waiting_capacity"
	ReasonCredentialInvalid  = "credential_invalid"
	ReasonOutcomeUnknown     = "outcome_unknown"
	ReasonProcessExited      = "process_exited"
	ReasonLeaseReplaced      = "lease_replaced"
	ReasonDaemonRestarted    = "daemon_restarted"
	ReasonHarnessError       = "harness_error"
	ReasonCancelledByUser    = "cancelled_by_user"
	ReasonSettlementFailed   = "settlement_failed"
	ReasonConfigIncompatible = "config_incompatible"
	// ReasonPlacementIncompatible: the session asks for a per-process
	// setting its shared host does not run; the turn is refused.
	ReasonPlacementIncompatible = "placement_incompatible"
	// ReasonNoDisposition: the turn completed without saying what to do
	// with its message (no reply, no no-reply, and no final text, or a
	// message from another agent answered only in final text); the
	// message stays queued.
	ReasonNoDisposition = "no_disposition"
	// ReasonHopLimit: the message came from an agent after too many agent
	// messages in a row in its room with no person in between; it is
	// acknowledged unanswered and the room is told.
	ReasonHopLimit = "hop_limit"
	// ReasonDispositionFailed: a staged disposition (a send, a reply)
	// could not be posted; the message stays queued.
	ReasonDispositionFailed = "disposition_failed"
)

// SessionLifecycle is a session's lifecycle state.
type SessionLifecycle string

// Session lifecycle states.
const (
	SessionOpen     SessionLifecycle = "open"
	SessionArchived SessionLifecycle = "archived"
	SessionClosed   SessionLifecycle = "closed"
)

// SessionLifecycles lists every session lifecycle state.
var SessionLifecycles = []SessionLifecycle{SessionOpen, SessionArchived, SessionClosed}

// SessionRole is the role a session plays in a piece of work.
type SessionRole string

// Session roles.
const (
	RoleDeveloper   SessionRole = "developer"
	RoleReview      SessionRole = "review"
	RoleTest        SessionRole = "test"
	RoleResearch    SessionRole = "research"
	RoleSecurity    SessionRole = "security"
	RoleIntegration SessionRole = "integration"
	RoleCoordinator SessionRole = "coordinator"
)

// SessionRoles lists every session role.
var SessionRoles = []SessionRole{RoleDeveloper, RoleReview, RoleTest, RoleResearch, RoleSecurity, RoleIntegration, RoleCoordinator}

// ParseSessionRole parses one of SessionRoles.
func ParseSessionRole(s string) (SessionRole, error) {
	return ParseEnum("session role", s, SessionRoles)
}

// Routing says how an accepted message reaches its session.
type Routing string

// Message routings. Queue is the default.
const (
	// RoutingNote adds context without starting a turn.
	RoutingNote Routing = "note"
	// RoutingQueue becomes a turn, after any active one.
	RoutingQueue Routing = "queue"
	// RoutingSteer reaches the running turn when the harness can take it,
	// and queues otherwise.
	RoutingSteer Routing = "steer"
)

// Routings lists every routing.
var Routings = []Routing{RoutingNote, RoutingQueue, RoutingSteer}

// Placement says how many sessions share one executor lease.
type Placement string

// Placements.
const (
	// PlacementShared keeps one live lease per agent identity for all its rooms.
	PlacementShared Placement = "shared"
	// PlacementDedicated gives each session its own lease.
	PlacementDedicated Placement = "dedicated"
)

// Placements lists every placement.
var Placements = []Placement{PlacementShared, PlacementDedicated}

// RuntimeMode says who owns an agent's process.
type RuntimeMode string

// Runtime modes.
const (
	// RuntimeAttached: the person runs the agent; it pulls and settles
	// messages with jam inbox, wait, reply and ack.
	RuntimeAttached RuntimeMode = "attached"
	// RuntimeOwned: jamd starts the agent on a lease and drives it.
	RuntimeOwned RuntimeMode = "owned"
)

// RuntimeModes lists every runtime mode.
var RuntimeModes = []RuntimeMode{RuntimeAttached, RuntimeOwned}

// ParseEnum parses s as one of the values listed in all; what names the
// kind of value in the error.
func ParseEnum[T ~string](what, s string, all []T) (T, error) {
	for _, v := range all {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w: unknown %s %q (want one of %v)", ErrInvalid, what, clip(s), all)
}
