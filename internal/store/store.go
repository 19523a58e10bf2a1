package store

import (
	"context"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Store is the seam every storage dialect implements. Methods are named
// NounVerb and take a *Params struct when they write more than one value.
// All methods are safe for concurrent use.
type Store interface {
	// Messaging holds accounts, peers, bindings and the inbound pipeline.
	Messaging
	// Runtime holds owned runtimes: templates, sessions, turns, leases
	// and worktrees.
	Runtime
	Events
	RoomCache // the human room feed's cache and attention items
	// Quarantine keeps spool and queue records that can no longer be read.
	Quarantine
	// RuntimeRetention prunes the owned runtimes' history.
	RuntimeRetention
	// Checkpoints and ChangeSets hold what turns leave behind.
	Checkpoints
	ChangeSets
	// Jobs holds the daemon's durable internal continuations.
	Jobs
	// Connections holds external authorities and their sealed,
	// append-only credential versions.
	Connections
	// Operations and Deliveries hold long actions, their evidence, and
	// the deliveries of change sets to a remote.
	Operations
	Deliveries
	// Delegations holds parents' assignments of work to child sessions
	// and their immutable results.
	Delegations

	Workspaces
	Settings
	DaemonRuns

	// Info describes the open store.
	Info(ctx context.Context) (Info, error)
	// Check runs the dialect's consistency check and returns an error
	// wrapping jam.ErrUnavailable if it finds damage.
	Check(ctx context.Context) error

	// Close releases the store. It is safe to call more than once.
	Close() error
}

// Workspaces holds the tenancy boundaries.
type Workspaces interface {
	// WorkspaceEnsure returns the workspace named p.Name, creating it with
	// p.ID when no workspace has that name. An ID that already belongs to a
	// workspace of another name is jam.ErrAlreadyExists.
	WorkspaceEnsure(ctx context.Context, p WorkspaceEnsureParams) (Workspace, error)
	// WorkspaceGet returns one workspace.
	WorkspaceGet(ctx context.Context, id jam.WorkspaceID) (Workspace, error)
	// WorkspaceList returns every workspace, oldest first.
	WorkspaceList(ctx context.Context) ([]Workspace, error)
}

// Settings holds workspace-scoped key/value settings.
type Settings interface {
	// SettingGet returns one setting of one workspace.
	SettingGet(ctx context.Context, ws jam.WorkspaceID, key string) (Setting, error)
	// SettingPut creates or replaces one setting.
	SettingPut(ctx context.Context, p SettingPutParams) (Setting, error)
	// SettingDelete removes one setting; deleting a missing key is
	// jam.ErrNotFound.
	SettingDelete(ctx context.Context, ws jam.WorkspaceID, key string) error
}

// DaemonRuns records each run of a daemon on a node.
type DaemonRuns interface {
	// DaemonRunStart records that a daemon started and returns the new run
	// together with the previous run of the same node, if any.
	DaemonRunStart(ctx context.Context, p DaemonRunStartParams) (DaemonRunStartResult, error)
	// DaemonRunStop records the clean stop of a run: jam.ErrNotFound for an
	// unknown run, jam.ErrConflict for one already stopped.
	DaemonRunStop(ctx context.Context, id int64, at time.Time) error
}

// Info describes an open store.
type Info struct {
	// Driver names the dialect: "sqlite" or "postgres".
	Driver string `json:"driver"`
	// Location is the database file, or the connection target without
	// credentials.
	Location string `json:"location"`
	// SchemaVersion is the highest applied migration.
	SchemaVersion int `json:"schema_version"`
	// ServerVersion is the database engine's version: the SQLite library
	// linked in, or what the PostgreSQL server reports.
	ServerVersion string `json:"server_version"`
}

// Workspace is the tenancy boundary.
type Workspace struct {
	ID        jam.WorkspaceID
	Name      string
	CreatedAt time.Time
}

// WorkspaceEnsureParams are the inputs of Store.WorkspaceEnsure.
type WorkspaceEnsureParams struct {
	// ID is used only when the workspace is created.
	ID   jam.WorkspaceID
	Name string
	At   time.Time
}

// Setting is one workspace-scoped key/value pair.
type Setting struct {
	WorkspaceID jam.WorkspaceID
	Key         string
	Value       string
	UpdatedAt   time.Time
}

// SettingPutParams are the inputs of Store.SettingPut.
type SettingPutParams struct {
	WorkspaceID jam.WorkspaceID
	Key         string
	Value       string
	At          time.Time
}

// Limits enforced by every dialect, through the validators of this package
// ([WorkspaceEnsureParams.Validate], [SettingPutParams.Validate]). Names
// count characters; setting keys and values count bytes. All text must be
// valid UTF-8 without NUL bytes (PostgreSQL's TEXT accepts nothing else),
// and zero times are invalid.
const (
	MaxWorkspaceNameLen = 64
	MaxSettingKeyLen    = 128
	MaxSettingValueLen  = 64 << 10
)

// DaemonRun records one run of a daemon process.
type DaemonRun struct {
	ID        int64
	Node      string
	PID       int
	Version   string
	StartedAt time.Time
	// StoppedAt is zero while the run is live or if it ended without a
	// clean stop.
	StoppedAt time.Time
}

// Clean reports whether the run ended with a recorded clean stop.
func (r DaemonRun) Clean() bool { return !r.StoppedAt.IsZero() }

// DaemonRunStartParams are the inputs of Store.DaemonRunStart.
type DaemonRunStartParams struct {
	// Node names the machine or daemon instance; one SQLite store has one.
	Node    string
	PID     int
	Version string
	At      time.Time
}

// DaemonRunStartResult is the outcome of Store.DaemonRunStart.
type DaemonRunStartResult struct {
	Run DaemonRun
	// Previous is the node's run before this one; nil on first start.
	Previous *DaemonRun
}
