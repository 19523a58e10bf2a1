package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/jam"
)

// Runtime is the part of the seam that holds owned runtimes: templates,
// sessions, turns (with their journal), leases and worktrees.
type Runtime interface {
	Templates
	Sessions
	Turns
	TurnOutputs
	Executions
	SessionMessages
	Leases
	Worktrees
}

// Templates holds owned agents' desired and effective configuration.
type Templates interface {
	// TemplatePut creates the template of a peer: desired generation 1,
	// nothing effective yet. A peer has one template (jam.ErrAlreadyExists).
	TemplatePut(ctx context.Context, t Template) (Template, error)

	// TemplateGet returns one template.
	TemplateGet(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID) (Template, error)

	// TemplateForPeer returns the template of a peer.
	TemplateForPeer(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey) (Template, error)

	// TemplateList returns the workspace's templates.
	TemplateList(ctx context.Context, ws jam.WorkspaceID) ([]Template, error)

	// TemplateConfigure replaces the desired configuration, bumps the
	// desired generation and records what changed.
	TemplateConfigure(ctx context.Context, p TemplateConfigureParams) (Template, error)

	// TemplateApplied records that a lease started with the desired
	// configuration of generation: effective catches up and the pending
	// change empties. A generation that is no longer the desired one is
	// jam.ErrConflict (the configuration changed again meanwhile).
	TemplateApplied(ctx context.Context, ws jam.WorkspaceID, id jam.TemplateID, generation int64, at time.Time) (Template, error)
}

// Sessions holds owned runtime sessions.
type Sessions interface {
	// SessionCreate creates a room's session, with its overrides; a peer
	// has at most one open session per room (jam.ErrAlreadyExists).
	SessionCreate(ctx context.Context, s Session) (Session, error)

	// SessionGet returns one session.
	SessionGet(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID) (Session, error)

	// SessionForRoom returns the room's session of (peer, room): the open
	// one, else the newest archived one (which a message resumes).
	SessionForRoom(ctx context.Context, ws jam.WorkspaceID, key jam.PeerKey, room jam.RoomID) (Session, error)

	// SessionList returns the workspace's sessions, oldest first.
	SessionList(ctx context.Context, ws jam.WorkspaceID) ([]Session, error)

	// SessionSetThread records the agent's own session id.
	SessionSetThread(ctx context.Context, ws jam.WorkspaceID, id jam.SessionID, thread string, at time.Time) error

	// SessionSetLifecycle moves a session from one lifecycle state to
	// another: open ⇄ archived, and either to closed, which is final
	// (jam.ErrInvalid to leave it). A session not in From is
	// jam.ErrConflict.
	SessionSetLifecycle(ctx context.Context, p SessionSetLifecycleParams) error
}

// Turns holds turns and their journal; transitions are fenced by the lease.
type Turns interface {
	// TurnEnqueue appends a queued turn to its session (Seq assigned) and
	// journals it, in one transaction.
	TurnEnqueue(ctx context.Context, t Turn) (Turn, error)

	// TurnGet returns one turn.
	TurnGet(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) (Turn, error)

	// TurnList returns a session's turns in order.
	TurnList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]Turn, error)

	// TurnTransition moves a turn and journals the move, in one
	// transaction, which also starts or ends the turn's execution. See
	// TurnTransitionParams for the fencing rules.
	TurnTransition(ctx context.Context, p TurnTransitionParams) (Turn, error)

	// TurnJournal returns a turn's transitions in order.
	TurnJournal(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]TurnJournalEntry, error)
}

// TurnOutputs holds what a turn streamed, bounded per turn.
type TurnOutputs interface {
	// TurnOutputAppend stores one batch of a running turn's output, within
	// the turn's bounds (BoundTurnOutput), and returns what was kept. The
	// write is fenced like a transition: the turn must be running (or
	// cancelling) on p.LeaseID at p.LeaseGeneration, else jam.ErrLeaseLost.
	// Batches rise: a batch number not above the turn's last stored one is
	// jam.ErrConflict. A batch that keeps nothing of a turn already
	// truncated is not stored.
	TurnOutputAppend(ctx context.Context, p TurnOutputAppendParams) (TurnOutputBatch, error)

	// TurnOutput returns a turn's stored output batches in order; none for
	// a turn that stored nothing.
	TurnOutput(ctx context.Context, ws jam.WorkspaceID, id jam.TurnID) ([]TurnOutputBatch, error)
}

// Executions reads the evidence of each agent execution and the usage it reported.
type Executions interface {
	// ExecutionList returns a turn's executions, oldest first; none for a
	// turn that never left queued, or that was recorded before executions
	// were.
	ExecutionList(ctx context.Context, ws jam.WorkspaceID, turn jam.TurnID) ([]Execution, error)

	// UsageReport sums the usage of the workspace's ended executions
	// that started at or after q.Since, grouped by q.By, in the query
	// itself (a running one has recorded nothing yet):
	// at most UsageMaxRows groups, in key order, and the total of all of
	// them.
	UsageReport(ctx context.Context, q UsageQuery) (UsageReport, error)
}

// SessionMessages holds messages accepted into a session.
type SessionMessages interface {
	// MessageAccept records an accepted session message (Seq assigned), in
	// one transaction with what its routing does: a queue message enqueues
	// its turn (p.Turn, journalled), a steer message names the running
	// turn it reached (which must still be running, else
	// jam.ErrConflict), a note is stored alone.
	MessageAccept(ctx context.Context, p MessageAcceptParams) (SessionMessage, Turn, error)

	// MessageGet returns one session message.
	MessageGet(ctx context.Context, ws jam.WorkspaceID, id jam.MessageID) (SessionMessage, error)

	// MessageList returns a session's messages in order.
	MessageList(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) ([]SessionMessage, error)
}

// Leases holds the fenced leases under which sessions run.
type Leases interface {
	// LeaseAcquire ends the holder's live lease, if any (reason
	// lease_replaced), and starts a new one with the next generation, in
	// one transaction.
	LeaseAcquire(ctx context.Context, p LeaseAcquireParams) (Lease, error)

	// LeaseEnd ends a live lease; ending one already ended is
	// jam.ErrConflict.
	LeaseEnd(ctx context.Context, ws jam.WorkspaceID, id jam.LeaseID, reason string, at time.Time) error

	// LeaseLive returns the holder's live lease.
	LeaseLive(ctx context.Context, ws jam.WorkspaceID, holder string) (Lease, error)
}

// Worktrees holds the sessions' git worktrees.
type Worktrees interface {
	// WorktreePut records a session's worktree (or updates it by id).
	WorktreePut(ctx context.Context, w Worktree) (Worktree, error)

	// WorktreeForSession returns a session's worktree.
	WorktreeForSession(ctx context.Context, ws jam.WorkspaceID, session jam.SessionID) (Worktree, error)

	// WorktreeList returns the workspace's worktrees, oldest first.
	WorktreeList(ctx context.Context, ws jam.WorkspaceID) ([]Worktree, error)

	// WorktreeSetState moves a worktree from one state to another; a
	// worktree not in From is jam.ErrConflict.
	WorktreeSetState(ctx context.Context, p WorktreeSetStateParams) (Worktree, error)
}

// TemplateConfig is the desired (or effective) configuration of one agent
// identity.
type TemplateConfig struct {
	// Harness names the adapter ("acp").
	Harness string `json:"harness"`
	// Command is the agent's argv.
	Command []string `json:"command"`
	// Model is passed to the agent when it takes one; optional.
	Model     string        `json:"model,omitempty"`
	Placement jam.Placement `json:"placement"`
	// Repo is the repository sessions get worktrees of; "" gives each
	// session an empty workspace directory.
	Repo string `json:"repo,omitempty"`
	// Permission answers the agent's permission requests: allow, reject or
	// ask (the person is asked).
	Permission string `json:"permission"`
	// Env is added to the agent's environment, in order, on top of an
	// allowlist of the daemon's own. Values are often credentials: each is sealed with the
	// daemon's key, bound to EnvTemplate and its name.
	Env []EnvVar `json:"env,omitempty"`
	// EnvTemplate is the template the values of Env are sealed for (the
	// launcher, which gets only the configuration, opens them with it).
	EnvTemplate jam.TemplateID `json:"env_template,omitempty"`
	// HandshakeTimeout bounds the agent's protocol handshake; 0 is the
	// harness's default.
	HandshakeTimeout time.Duration `json:"handshake_timeout,omitempty"`
	// Sandbox names the executor the agent's process runs under (bwrap,
	// local); "" (templates made before sandboxes) is the daemon's
	// default.
	Sandbox string `json:"sandbox,omitempty"`
	// NoNetwork cuts the agent off the network (only its own loopback);
	// it needs a sandbox that can (bwrap).
	NoNetwork bool `json:"no_network,omitempty"`
	// ReadOnly are further absolute paths the sandboxed agent may read
	// (tools or data outside the system directories).
	ReadOnly []string `json:"read_only,omitempty"`
	// CommitTurns commits each succeeded turn's change set to the
	// session's branch, with trailers naming the turn and change set.
	// It changes nothing of the process: no restart when it changes.
	CommitTurns bool `json:"commit_turns,omitempty"`

	// Template and Session say whose process the launcher starts: the
	// runtime sets them on the configuration it launches (Session only
	// for a dedicated placement, whose process serves one session). Never
	// stored.
	Template jam.TemplateID `json:"-"`
	Session  jam.SessionID  `json:"-"`
	// Dir and Resume are set by the runtime for a harness whose process
	// serves one session (Manifest Sessions one): Dir is the session's
	// worktree, the process's working directory; Resume, for a harness
	// that resumes at launch, the session's provider thread to start on
	// ("" for a new one). Never stored.
	Dir    string `json:"-"`
	Resume string `json:"-"`
}

// EnvVar is one environment variable of an agent, its value sealed.
type EnvVar struct {
	Name   string `json:"name"`
	Sealed []byte `json:"sealed"`
}

// Template is a runtime template.
type Template struct {
	ID                  jam.TemplateID
	WorkspaceID         jam.WorkspaceID
	Peer                jam.PeerKey
	Desired             TemplateConfig
	DesiredGeneration   int64
	Effective           TemplateConfig
	EffectiveGeneration int64
	// PendingChange names what changed since the effective generation;
	// "" when nothing is outstanding.
	PendingChange string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Outstanding reports whether a configuration change waits to be applied.
func (t Template) Outstanding() bool { return t.DesiredGeneration != t.EffectiveGeneration }

// TemplateConfigureParams change a template's desired configuration.
type TemplateConfigureParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.TemplateID
	Desired     TemplateConfig
	// Change describes the change for operators ("model=x").
	Change string
	At     time.Time
}

// Session is one room's conversation with an owned agent.
type Session struct {
	ID          jam.SessionID
	WorkspaceID jam.WorkspaceID
	TemplateID  jam.TemplateID
	Peer        jam.PeerKey
	Room        jam.RoomID
	Lifecycle   jam.SessionLifecycle
	// Role is what the session does in a piece of work (a delegation's
	// child runs in the delegation's role); fixed when the session is
	// created, jam.RoleDeveloper when none is given.
	Role           jam.SessionRole
	ProviderThread string
	// Overrides are the configuration keys the session sets differently
	// from its template; fixed when the session is created.
	Overrides SessionOverrides
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SessionSetLifecycleParams move a session between lifecycle states.
type SessionSetLifecycleParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.SessionID
	From, To    jam.SessionLifecycle
	At          time.Time
}

// SessionOverrides are the runtime keys one session sets differently from
// its template. Keys have a scope: Repo is per session (the session's
// worktree is of that repository) and any placement honours it; Command is
// per process, so a shared process, which runs the template's command for
// all the agent's rooms, cannot.
type SessionOverrides struct {
	// Command replaces the template's argv; nil keeps it.
	Command []string `json:"command,omitempty"`
	// Repo replaces the template's repository; "" keeps it.
	Repo string `json:"repo,omitempty"`
}

// IsZero reports whether the session runs its template's configuration as
// is.
func (o SessionOverrides) IsZero() bool { return len(o.Command) == 0 && o.Repo == "" }

// Apply returns c with the overridden keys replaced: the configuration the
// session's own process runs.
func (o SessionOverrides) Apply(c TemplateConfig) TemplateConfig {
	if len(o.Command) > 0 {
		c.Command = slices.Clone(o.Command)
	}
	if o.Repo != "" {
		c.Repo = o.Repo
	}
	return c
}

// DiffersPerProcess reports whether o sets a per-process key to something
// other than c has: a process started with c cannot serve the session.
func (o SessionOverrides) DiffersPerProcess(c TemplateConfig) bool {
	return len(o.Command) > 0 && !slices.Equal(o.Command, c.Command)
}

// Turn is one accepted work request of a session.
type Turn struct {
	ID          jam.TurnID
	WorkspaceID jam.WorkspaceID
	SessionID   jam.SessionID
	// Seq orders the session's turns; assigned by the store.
	Seq     int64
	Routing jam.Routing
	// MessageID is the session message the turn answers; "" for turns
	// recorded before session messages existed.
	MessageID jam.MessageID
	// SourceMessageID is the Band message the turn settles; "" for a
	// message sent to the session directly.
	SourceMessageID jam.PlatformMessageID
	State           jam.TurnState
	Reason          string
	// Detail says in words why the turn ended as it did (the error's
	// text); "" when its last move carried none.
	Detail          string
	LeaseID         jam.LeaseID
	LeaseGeneration int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// SessionMessage is one accepted piece of authored input to a session.
// Its content never changes; only the consumption of a note is recorded
// later.
type SessionMessage struct {
	ID          jam.MessageID
	WorkspaceID jam.WorkspaceID
	SessionID   jam.SessionID
	// Seq orders the session's messages; assigned by the store.
	Seq int64
	// Requested is the routing the author asked for; Routing is the one
	// that took effect (a steer the harness cannot take is queued).
	Requested jam.Routing
	Routing   jam.Routing
	// Text is the authored text; "" for a Band message, whose content
	// stays sealed with it (SourceMessageID).
	Text            string
	SourceMessageID jam.PlatformMessageID
	// TurnID is the turn the message belongs to: for queue the turn that
	// answers it, for steer the running turn it reached, for a note the
	// turn that consumed it ("" until then).
	TurnID     jam.TurnID
	CreatedAt  time.Time
	ConsumedAt time.Time
}

// Pending reports whether m is a note no turn has consumed yet.
func (m SessionMessage) Pending() bool { return m.Routing == jam.RoutingNote && m.TurnID == "" }

// MessageAcceptParams record a session message. For Routing queue, Turn
// is the turn to enqueue for it (its MessageID and SourceMessageID are
// set from the message); for steer, SteeredTurn is the running turn the
// message reached.
type MessageAcceptParams struct {
	Message     SessionMessage
	Turn        Turn
	SteeredTurn jam.TurnID
}

// TurnTransitionParams move a turn from From to To.
//
// Fencing: moving a queued turn to preparing binds it to LeaseID and
// LeaseGeneration, which must name the live lease. Every later move of
// the active turn must carry the same lease id and generation, else
// jam.ErrLeaseLost; and unless the move is to interrupted (which the
// supervisor records after the lease died) the lease must still be live,
// else jam.ErrLeaseLost too. A turn not in From is jam.ErrConflict; a move
// the state machine does not allow is jam.ErrInvalid.
type TurnTransitionParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.TurnID
	From, To    jam.TurnState
	Reason      string
	// Detail is the human-readable why of a move to a terminal state
	// (jam.ErrInvalid with any other move): the error's text. The store
	// keeps it as BoundTurnDetail leaves it, on the turn and its journal
	// entry. It is shown to whoever may read the turn, so it must never
	// hold secret material.
	Detail          string
	LeaseID         jam.LeaseID
	LeaseGeneration int64
	At              time.Time
	// ConsumeNotes are the session's pending notes the turn's prompt
	// carries; only with a move to running, which marks them consumed by
	// the turn in the same transaction. A note that is not pending is
	// jam.ErrConflict.
	ConsumeNotes []jam.MessageID
	// Execution is the id of the attempt a move from queued to preparing
	// starts (required with that move, jam.ErrInvalid otherwise; ignored
	// with any other). The execution is recorded in the same transaction,
	// on the lease the turn is bound to; a later move of the active turn
	// to a terminal state ends it there too, with the state as its
	// outcome and the move's reason.
	Execution jam.ExecutionID
	// Usage is what the turn used, as far as the agent reported it; only
	// with a move to a terminal state (jam.ErrInvalid with any other),
	// nil for nothing reported. It is written on the execution the move
	// ends, in the same transaction and under the same fence; a later
	// move (the execution has ended) never rewrites it.
	Usage *ExecutionUsage
}

// ExecutionUsage is what one execution used: tokens, cost and model.
// InputTokens counts the input not read from cache, CachedTokens the input
// read from cache, OutputTokens the output, reasoning included;
// ReasoningTokens is the reasoning part of the output, for information.
type ExecutionUsage struct {
	InputTokens     int64
	OutputTokens    int64
	CachedTokens    int64
	ReasoningTokens int64
	// CostMicros is the cost in millionths of a US dollar, when CostKnown;
	// an unknown cost (the agent reported none and the model has no
	// price) is not zero.
	CostMicros int64
	CostKnown  bool
	// CostEstimated says the cost was computed from jam's price table,
	// not reported by the agent.
	CostEstimated bool
	// Model is the model that answered, "" when unknown.
	Model string
}

// Validate checks what a dialect stores: no negative count or cost, and
// a cost only when known.
func (u ExecutionUsage) Validate() error {
	for _, n := range []int64{u.InputTokens, u.OutputTokens, u.CachedTokens, u.ReasoningTokens, u.CostMicros} {
		if n < 0 {
			return fmt.Errorf("%w: usage: a negative count", jam.ErrInvalid)
		}
	}
	if !u.CostKnown && (u.CostMicros != 0 || u.CostEstimated) {
		return fmt.Errorf("%w: usage: a cost that is not known", jam.ErrInvalid)
	}
	if len(u.Model) > UsageModelMax {
		return fmt.Errorf("%w: usage: a model name of more than %d bytes", jam.ErrInvalid, UsageModelMax)
	}
	return nil
}

// UsageModelMax bounds the bytes of an execution's model name.
const UsageModelMax = 256

// UsageBy is what a usage report groups by.
type UsageBy string

// Usage groupings.
const (
	UsageByAgent   UsageBy = "agent"
	UsageByRoom    UsageBy = "room"
	UsageBySession UsageBy = "session"
	// UsageByDay groups by the UTC day the execution started.
	UsageByDay UsageBy = "day"
)

// UsageGroupings are the valid UsageBy values.
var UsageGroupings = []UsageBy{UsageByAgent, UsageByRoom, UsageBySession, UsageByDay}

// UsageMaxRows bounds the groups of one usage report.
const UsageMaxRows = 1000

// UsageQuery asks for a usage report.
type UsageQuery struct {
	WorkspaceID jam.WorkspaceID
	By          UsageBy
	// Since keeps executions that started at or after it; zero keeps all.
	Since time.Time
}

// UsageReport is the usage of a workspace's executions, by group.
type UsageReport struct {
	Rows []UsageRow
	// Total sums every execution the query kept, also those of groups
	// beyond UsageMaxRows (Truncated).
	Total     UsageSum
	Truncated bool
}

// UsageRow is one group of a usage report. The field its grouping names
// is set: Peer (agent), Room, Session, or Day (UTC midnight).
type UsageRow struct {
	Peer    jam.PeerKey
	Room    jam.RoomID
	Session jam.SessionID
	Day     time.Time
	UsageSum
}

// UsageSum sums the usage of executions.
type UsageSum struct {
	// Turns counts the distinct turns the executions attempted.
	Turns           int64
	InputTokens     int64
	OutputTokens    int64
	CachedTokens    int64
	ReasoningTokens int64
	// CostMicros sums the known costs; Costed counts the executions with
	// one and Estimated those whose cost was estimated. Unpriced counts
	// executions that reported usage but have no known cost.
	CostMicros int64
	Costed     int64
	Estimated  int64
	Unpriced   int64
}

// Execution states.
const (
	ExecutionRunning = "running"
	ExecutionEnded   = "ended"
)

// Execution is one attempt to perform a turn on a lease: operational
// evidence, not another unit of work.
type Execution struct {
	ID              jam.ExecutionID
	WorkspaceID     jam.WorkspaceID
	SessionID       jam.SessionID
	TurnID          jam.TurnID
	LeaseID         jam.LeaseID
	LeaseGeneration int64
	// Pid is the lease's process when the attempt started.
	Pid   int
	State string
	// Outcome is the terminal state the turn ended in, and Reason its
	// reason; both "" while the execution runs.
	Outcome jam.TurnState
	Reason  string
	// Usage is what the attempt used, as its end recorded it; zero while
	// it runs and for attempts that reported nothing.
	Usage     ExecutionUsage
	StartedAt time.Time
	EndedAt   time.Time
}

// TurnJournalEntry is one recorded transition.
type TurnJournalEntry struct {
	Seq             int64
	TurnID          jam.TurnID
	From, To        jam.TurnState
	Reason          string
	Detail          string
	LeaseGeneration int64
	At              time.Time
}

// TurnDetailMax bounds the bytes of a turn's detail: enough for an error
// chain, not a log.
const TurnDetailMax = 2 << 10

// BoundTurnDetail returns a turn's detail as the store keeps it: invalid
// UTF-8 and control characters other than newline and tab replaced by
// U+FFFD (so a detail cannot move a terminal's cursor or forge lines of
// another format), surrounding space trimmed, and cut to TurnDetailMax
// bytes on a rune boundary, ending in "…" when cut.
func BoundTurnDetail(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		if (unicode.IsControl(r) && r != '\n' && r != '\t') || r == '\u2028' || r == '\u2029' {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	s = strings.TrimSpace(b.String())
	if len(s) <= TurnDetailMax {
		return s
	}
	const more = "…"
	return clipUTF8(s, TurnDetailMax-len(more)) + more
}

// Bounds of the output stored for one turn, so that an agent streaming
// without end cannot fill the disk through one turn. Text counts the text
// of every update (answer and thinking); Bytes counts every stored update
// in its JSON form plus outputRowBytes per stored batch.
const (
	TurnOutputMaxText  = 4 << 20
	TurnOutputMaxBytes = 8 << 20
	// outputRowBytes is what one stored batch costs beyond its updates.
	outputRowBytes = 64
)

// OutputUpdate is one piece of a turn's streamed output, as stored: the
// harness's update (its JSON form, whose names harness pins).
type OutputUpdate = harness.Update

// OutputPlanEntry is one step of an agent's plan.
type OutputPlanEntry = harness.PlanEntry

// TurnOutputAppendParams store one batch of a running turn's output.
// LeaseID and LeaseGeneration are those the turn runs under.
type TurnOutputAppendParams struct {
	WorkspaceID     jam.WorkspaceID
	TurnID          jam.TurnID
	LeaseID         jam.LeaseID
	LeaseGeneration int64
	// Batch numbers the turn's batches from 1.
	Batch   int
	Updates []OutputUpdate
	At      time.Time
}

// TurnOutputBatch is one stored batch of a turn's output.
type TurnOutputBatch struct {
	TurnID  jam.TurnID
	Batch   int
	Updates []OutputUpdate
	// Truncated says that output of this batch or an earlier one was not
	// kept (beyond the turn's bounds).
	Truncated bool
	At        time.Time
}

// OutputUsage is what a turn's stored output uses of its bounds.
type OutputUsage struct {
	Text, Bytes int64
	// Truncated: some output was not kept.
	Truncated bool
}

// BoundTurnOutput returns what of a batch a turn with usage u can still
// keep, and the usage after it. Text beyond TurnOutputMaxText is cut (on
// a UTF-8 boundary; u.Text then stays at the bound, so no later text is
// kept) and an update left with nothing is dropped, so tool calls and
// plans are still kept after the text is full; once an update
// does not fit in TurnOutputMaxBytes, it and everything after it is
// dropped (u.Bytes then stays at the bound). Dialects store what it keeps.
func BoundTurnOutput(batch []OutputUpdate, u OutputUsage) ([]OutputUpdate, OutputUsage) {
	if u.Bytes+outputRowBytes > TurnOutputMaxBytes {
		if len(batch) > 0 {
			u.Truncated = true
		}
		return nil, u
	}
	u.Bytes += outputRowBytes
	kept := make([]OutputUpdate, 0, len(batch))
	for _, up := range batch {
		if room := TurnOutputMaxText - u.Text; int64(len(up.Text)) > room {
			// Full: the text count saturates, so no later text is kept
			// after the cut.
			up.Text = clipUTF8(up.Text, int(max(room, 0)))
			u.Text = TurnOutputMaxText - int64(len(up.Text))
			u.Truncated = true
			if up.Text == "" && up.ToolCallID == "" && up.Title == "" && up.ToolKind == "" && up.Status == "" && len(up.Plan) == 0 && up.Usage == nil {
				continue
			}
		}
		size := int64(outputJSONSize(up))
		if u.Bytes+size > TurnOutputMaxBytes {
			// Full: the usage saturates, so later batches keep nothing.
			u.Bytes, u.Truncated = TurnOutputMaxBytes, true
			break
		}
		u.Text += int64(len(up.Text))
		u.Bytes += size
		kept = append(kept, up)
	}
	return kept, u
}

// outputJSONSize is the length of an update's JSON form.
func outputJSONSize(up OutputUpdate) int {
	b, err := json.Marshal(up)
	if err != nil {
		// Strings and slices of strings always encode.
		panic(fmt.Sprintf("encode output update: %v", err))
	}
	return len(b)
}

// clipUTF8 cuts s to at most n bytes on a UTF-8 boundary.
func clipUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Lease states.
const (
	LeaseLive  = "live"
	LeaseEnded = "ended"
)

// Lease is one agent process serving a holder.
type Lease struct {
	ID          jam.LeaseID
	WorkspaceID jam.WorkspaceID
	// Holder is the template id (shared placement) or session id
	// (dedicated) the lease serves.
	Holder     string
	Generation int64
	State      string
	Reason     string
	Pid        int
	StartedAt  time.Time
	EndedAt    time.Time
}

// LeaseAcquireParams start a lease.
type LeaseAcquireParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.LeaseID
	Holder      string
	Pid         int
	At          time.Time
}

// Worktree states. An active worktree is checked out and used by its
// session's turns; an archived one has no directory but keeps its branch;
// a removed one has neither. Turns of a session whose worktree is not
// active wait until it is restored.
const (
	WorktreeActive   = "active"
	WorktreeArchived = "archived"
	WorktreeRemoved  = "removed"
)

// WorktreeSetStateParams move a worktree between states.
type WorktreeSetStateParams struct {
	WorkspaceID jam.WorkspaceID
	ID          jam.WorktreeID
	From, To    string
	At          time.Time
}

// Worktree is a session's working tree.
type Worktree struct {
	ID          jam.WorktreeID
	WorkspaceID jam.WorkspaceID
	SessionID   jam.SessionID
	// Repo is the repository it is a worktree of; "" for a plain
	// workspace directory.
	Repo      string
	Path      string
	Branch    string
	State     string
	CreatedAt time.Time
	UpdatedAt time.Time
}
