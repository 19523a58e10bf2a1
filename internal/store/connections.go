package store

import (
	"context"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Connections: the external authorities of a workspace (a GitHub token,
// a model provider's API key) and their credentials. A connection's
// secret lives only in its CredentialVersions, which are append-only:
// replacing a credential appends version N+1 and disables N in one
// transaction, and no version is ever deleted or changed except to be
// disabled. The invariants every dialect keeps in SQL:
//
//   - a connection not removed holds exactly one active (not disabled)
//     version, its CurrentVersion; a removed one holds none (a partial
//     unique index allows at most one active version per connection, and
//     each write disables before it inserts, in one transaction);
//   - versions count 1, 2, ... without a gap: a rotation takes its number
//     from the connection row it updates (current_version + 1), so two
//     rotations at once serialize on that row and both succeed with
//     distinct versions;
//   - a (provider, name) pair names at most one connection of a workspace
//     that is not removed (a partial unique index); a removed
//     connection's name can be taken again;
//   - a secret is sealed at rest with the daemon key, its aad naming the
//     workspace, the connection and the version, so a value moved to
//     another row or version does not open; a store without a key refuses
//     to write or read one (jam.ErrUnavailable). Only CredentialCurrent
//     returns a secret.

// ConnectionProvider names the kind of external authority.
type ConnectionProvider string

// The providers a connection may be of.
const (
	ProviderGitHub      ConnectionProvider = "github"
	ProviderAnthropic   ConnectionProvider = "anthropic"
	ProviderOpenAI      ConnectionProvider = "openai"
	ProviderOpenCodeZen ConnectionProvider = "opencode_zen"
	ProviderModal       ConnectionProvider = "modal"
	// ProviderBand holds a Band account's person key or an agent's key.
	// jam makes these connections itself (jam account add, jam agent
	// add), never by hand.
	ProviderBand ConnectionProvider = "band"
)

// ConnectionProviders lists the known providers, in the order the CLI
// shows them.
func ConnectionProviders() []ConnectionProvider {
	return []ConnectionProvider{ProviderGitHub, ProviderAnthropic, ProviderOpenAI, ProviderOpenCodeZen, ProviderModal, ProviderBand}
}

// Connection is one external authority of a workspace.
type Connection struct {
	ID          jam.ConnectionID
	WorkspaceID jam.WorkspaceID
	Provider    ConnectionProvider
	// Name is [a-z0-9][a-z0-9_.-]{0,62}, unique per workspace and
	// provider among the connections not removed.
	Name string
	// BaseURL is the API base of the authority ("" for its public one;
	// a GitHub Enterprise API, say): an absolute http(s) URL without
	// userinfo, query or fragment.
	BaseURL string
	// CurrentVersion is the number of the active credential version (of
	// the last one, once removed).
	CurrentVersion int
	Removed        bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// RemovedAt is when the connection was removed (zero while it is not).
	RemovedAt time.Time
}

// CredentialVersion is one secret of a connection.
type CredentialVersion struct {
	ConnectionID jam.ConnectionID
	WorkspaceID  jam.WorkspaceID
	// Version counts 1, 2, ... per connection.
	Version int
	// Secret is the credential (1 to MaxCredentialSecret bytes), sealed
	// at rest; only Connections.CredentialCurrent fills it.
	Secret   []byte
	Disabled bool
	// CreatedAt is when the version was added, DisabledAt when a
	// rotation or the removal disabled it (zero while active).
	CreatedAt  time.Time
	DisabledAt time.Time
}

// Connections stores connections and their credential versions. Every
// write is one transaction whose conditions the database checks, so two
// handles on one database keep the invariants of the package doc.
type Connections interface {
	// ConnectionCreate stores c (CurrentVersion, Removed, RemovedAt and
	// UpdatedAt are ignored: version 1, live, UpdatedAt CreatedAt) with
	// secret as its active version 1, in one transaction. A name taken
	// by a live connection of the provider, or a taken id, is
	// jam.ErrAlreadyExists; an unknown workspace jam.ErrNotFound.
	ConnectionCreate(ctx context.Context, c Connection, secret []byte) (Connection, error)
	// ConnectionRotate appends version CurrentVersion+1 with secret and
	// disables the active one, in one transaction. A removed connection,
	// or one holding MaxCredentialVersions versions, is jam.ErrConflict.
	ConnectionRotate(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID, secret []byte, at time.Time) (Connection, error)
	// ConnectionRemove marks the connection removed and disables its
	// active version; removed already is jam.ErrConflict.
	ConnectionRemove(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID, at time.Time) (Connection, error)
	// ConnectionGet returns one connection, removed or not.
	ConnectionGet(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (Connection, error)
	// ConnectionByName returns the live connection of the provider with
	// the name.
	ConnectionByName(ctx context.Context, ws jam.WorkspaceID, provider ConnectionProvider, name string) (Connection, error)
	// ConnectionList returns the workspace's connections, removed ones
	// included, oldest first, at most MaxConnectionList.
	ConnectionList(ctx context.Context, ws jam.WorkspaceID) ([]Connection, error)
	// CredentialCurrent returns the active version of a live connection
	// with its Secret opened; a removed connection is jam.ErrNotFound.
	CredentialCurrent(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) (CredentialVersion, error)
	// CredentialVersions returns every version of the connection, oldest
	// first, without secrets.
	CredentialVersions(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) ([]CredentialVersion, error)
}
