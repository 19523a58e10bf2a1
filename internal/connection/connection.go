package connection

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// RefPrefix starts an env value that names a connection.
const RefPrefix = "connection:"

// Store is what the service needs of the store: the connections, and
// the accounts and peers whose keys band connections hold.
type Store interface {
	store.Connections
	AccountList(ctx context.Context, ws jam.WorkspaceID) ([]store.Account, error)
	PeerList(ctx context.Context, ws jam.WorkspaceID) ([]store.Peer, error)
}

// Config configures a Service.
type Config struct {
	// Now is the clock (time.Now by default).
	Now func() time.Time
	// Minter mints connection ids (one on Now and crypto/rand by default).
	Minter *jam.Minter
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Minter == nil {
		c.Minter = jam.NewMinter(c.Now, nil)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Service adds, rotates, removes, lists and resolves connections.
type Service struct {
	cfg Config
	st  Store
	log *slog.Logger
}

// New returns a service over st.
func New(cfg Config, st Store) *Service {
	cfg = cfg.withDefaults()
	return &Service{cfg: cfg, st: st, log: cfg.Logger.With("component", "connection")}
}

// Add stores a new connection with secret as its version 1. A band
// connection is jam.ErrInvalid: jam makes those itself (SetBand).
func (s *Service) Add(ctx context.Context, ws jam.WorkspaceID, provider store.ConnectionProvider, name, baseURL string, secret []byte) (store.Connection, error) {
	if provider == store.ProviderBand {
		return store.Connection{}, fmt.Errorf("add connection %s/%s: %w: band connections are made by jam account add and jam agent add", provider,
			quoteShort(name), jam.ErrInvalid)
	}
	return s.add(ctx, ws, provider, name, baseURL, secret)
}

func (s *Service) add(ctx context.Context, ws jam.WorkspaceID, provider store.ConnectionProvider, name, baseURL string, secret []byte) (store.Connection, error) {
	c := store.Connection{ID: jam.New[jam.ConnectionID](s.cfg.Minter), WorkspaceID: ws, Provider: provider, Name: name, BaseURL: baseURL,
		CreatedAt: s.cfg.Now()}
	c, err := s.st.ConnectionCreate(ctx, c, secret)
	if err != nil {
		return store.Connection{}, fmt.Errorf("add connection %s/%s: %w", provider, name, err)
	}
	s.log.InfoContext(ctx, "connection added", "connection", c.ID, "provider", c.Provider, "name", c.Name)
	return c, nil
}

// Rotate appends secret as the next version of the connection ref names
// and disables the current one. A band connection an account or agent
// uses is jam.ErrConflict, naming it: jam account add and jam agent add
// manage those.
func (s *Service) Rotate(ctx context.Context, ws jam.WorkspaceID, ref string, secret []byte) (store.Connection, error) {
	c, err := s.Get(ctx, ws, ref)
	if err != nil {
		return store.Connection{}, fmt.Errorf("rotate: %w", err)
	}
	if err := s.bandUnused(ctx, ws, c, "rotate"); err != nil {
		return store.Connection{}, err
	}
	return s.rotate(ctx, ws, c, secret)
}

func (s *Service) rotate(ctx context.Context, ws jam.WorkspaceID, c store.Connection, secret []byte) (store.Connection, error) {
	c, err := s.st.ConnectionRotate(ctx, ws, c.ID, secret, s.cfg.Now())
	if err != nil {
		return store.Connection{}, fmt.Errorf("rotate: %w", err)
	}
	s.log.InfoContext(ctx, "connection rotated", "connection", c.ID, "provider", c.Provider, "name", c.Name, "version", c.CurrentVersion)
	return c, nil
}

// Remove marks the connection ref names removed and disables its
// credential. A band connection an account or agent uses is
// jam.ErrConflict, naming it: jam account remove and jam agent remove
// remove those.
func (s *Service) Remove(ctx context.Context, ws jam.WorkspaceID, ref string) (store.Connection, error) {
	c, err := s.Get(ctx, ws, ref)
	if err != nil {
		return store.Connection{}, fmt.Errorf("remove: %w", err)
	}
	if err := s.bandUnused(ctx, ws, c, "remove"); err != nil {
		return store.Connection{}, err
	}
	return s.remove(ctx, ws, c)
}

func (s *Service) remove(ctx context.Context, ws jam.WorkspaceID, c store.Connection) (store.Connection, error) {
	c, err := s.st.ConnectionRemove(ctx, ws, c.ID, s.cfg.Now())
	if err != nil {
		return store.Connection{}, fmt.Errorf("remove: %w", err)
	}
	s.log.InfoContext(ctx, "connection removed", "connection", c.ID, "provider", c.Provider, "name", c.Name)
	return c, nil
}

// List returns the live connections of the workspace, oldest first.
func (s *Service) List(ctx context.Context, ws jam.WorkspaceID) ([]store.Connection, error) {
	all, err := s.st.ConnectionList(ctx, ws)
	if err != nil {
		return nil, err
	}
	return store.LiveConnections(all), nil
}

// Get returns the connection ref names: an id (removed or not), a live
// "PROVIDER/NAME", or a bare NAME that exactly one live connection has
// (two providers' connections of that name are jam.ErrConflict, naming
// both to choose from).
func (s *Service) Get(ctx context.Context, ws jam.WorkspaceID, ref string) (store.Connection, error) {
	switch {
	case strings.HasPrefix(ref, jam.ConnectionID("").Prefix()):
		id, err := jam.ParseID[jam.ConnectionID](ref)
		if err != nil {
			return store.Connection{}, err
		}
		return s.st.ConnectionGet(ctx, ws, id)
	case strings.Contains(ref, "/"):
		provider, name, err := parsePair(ref)
		if err != nil {
			return store.Connection{}, err
		}
		return s.st.ConnectionByName(ctx, ws, provider, name)
	}
	if err := store.ValidateConnectionName(ref); err != nil {
		return store.Connection{}, fmt.Errorf("%w (want a connection id, PROVIDER/NAME or NAME)", err)
	}
	live, err := s.List(ctx, ws)
	if err != nil {
		return store.Connection{}, err
	}
	var found []store.Connection
	for _, c := range live {
		if c.Name == ref {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return store.Connection{}, fmt.Errorf("connection %s: %w", ref, jam.ErrNotFound)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, c := range found {
		names[i] = string(c.Provider) + "/" + c.Name
	}
	return store.Connection{}, fmt.Errorf("connection %s: %w: %d connections have the name; name one of %s", ref, jam.ErrConflict, len(found),
		strings.Join(names, ", "))
}

// Resolve returns the current secret of the live connection ref names,
// ref being "connection:PROVIDER/NAME", and the connection.
func (s *Service) Resolve(ctx context.Context, ws jam.WorkspaceID, ref string) ([]byte, store.Connection, error) {
	provider, name, err := ParseRef(ref)
	if err != nil {
		return nil, store.Connection{}, err
	}
	if provider == store.ProviderBand {
		// A Band key is jam's own credential for an account or agent:
		// handing it to an agent's process would let one agent act as
		// another.
		return nil, store.Connection{}, fmt.Errorf("%w: %s names a band connection, which holds a Band key jam uses itself; no agent is given one", jam.ErrInvalid, quoteShort(ref))
	}
	c, err := s.st.ConnectionByName(ctx, ws, provider, name)
	if err != nil {
		return nil, store.Connection{}, fmt.Errorf("resolve %s/%s: %w", provider, name, err)
	}
	// A connection removed between the two reads has no current
	// credential: jam.ErrNotFound, as if it had never been.
	v, err := s.st.CredentialCurrent(ctx, ws, c.ID)
	if err != nil {
		return nil, store.Connection{}, fmt.Errorf("resolve %s/%s: %w", provider, name, err)
	}
	return v.Secret, c, nil
}

// IsRef reports whether an env value names a connection (starts with
// RefPrefix); ParseRef then checks it.
func IsRef(v string) bool { return strings.HasPrefix(v, RefPrefix) }

// ParseRef parses "connection:PROVIDER/NAME". A malformed reference is
// jam.ErrInvalid; the error quotes it only when it is short (an env
// value may be a pasted secret).
func ParseRef(ref string) (store.ConnectionProvider, string, error) {
	rest, ok := strings.CutPrefix(ref, RefPrefix)
	if !ok {
		return "", "", fmt.Errorf("%w: %s is not %sPROVIDER/NAME", jam.ErrInvalid, quoteShort(ref), RefPrefix)
	}
	return parsePair(rest)
}

// parsePair parses "PROVIDER/NAME".
func parsePair(v string) (store.ConnectionProvider, string, error) {
	p, name, ok := strings.Cut(v, "/")
	if !ok {
		return "", "", fmt.Errorf("%w: %s is not PROVIDER/NAME", jam.ErrInvalid, quoteShort(v))
	}
	provider := store.ConnectionProvider(p)
	if store.ValidateConnectionProvider(provider) != nil {
		return "", "", fmt.Errorf("%w: provider %s is not one of %s", jam.ErrInvalid, quoteShort(p), providerList())
	}
	if store.ValidateConnectionName(name) != nil {
		return "", "", fmt.Errorf("%w: connection name %s is not [a-z0-9][a-z0-9_.-]{0,62}", jam.ErrInvalid, quoteShort(name))
	}
	return provider, name, nil
}

func providerList() string {
	var out []string
	for _, p := range store.ConnectionProviders() {
		out = append(out, string(p))
	}
	return strings.Join(out, ", ")
}

// quoteShort quotes v if it is short enough to be a reference, else
// says only how long it is.
func quoteShort(v string) string {
	if len(v) <= 80 {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("a value of %d bytes", len(v))
}
