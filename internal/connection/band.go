package connection

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// Band connections: a Band account's person key and each agent's key
// live in a connection of provider band that jam makes, rotates and
// removes with the account or agent (SetBand, RemoveBand). By hand they
// can only be listed: Add refuses the provider, and Rotate and Remove
// refuse a band connection an account or agent uses.

// BandAccountName is the name of the band connection holding the person
// key of the account of profile: "account.PROFILE" when that is a
// connection name, else "account-" and 16 hex digits of the SHA-256 of
// the profile (no profile's readable name starts so).
func BandAccountName(profile string) string {
	if n := "account." + profile; store.ValidateConnectionName(n) == nil {
		return n
	}
	return "account-" + hash16(profile)
}

// BandAgentName is the name of the band connection holding the key of
// the agent of peer key: "agent.PROFILE.SCOPE" when the profile has no
// '.' and that is a connection name, else "agent." and 16 hex digits of
// the SHA-256 of the key ("profile/scope"): a readable name has at least
// two dots after "agent", a hashed one one, so they never meet.
func BandAgentName(key jam.PeerKey) string {
	if !strings.Contains(key.Profile, ".") {
		if n := "agent." + key.Profile + "." + key.Scope; store.ValidateConnectionName(n) == nil {
			return n
		}
	}
	return "agent." + hash16(key.String())
}

func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// SetBand makes the band connection named name hold secret and returns
// it. The connection id names (an account's or peer's, "" for none) is
// used while it is live: rotated when its secret differs, kept as is when
// it is the same. Otherwise the live band connection of the name is used
// the same way (one left by a write that never reached its row), or a
// new one is added. Calling it again with the same secret changes
// nothing, so a caller that stops between this and writing its row can
// run it again.
func (s *Service) SetBand(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID, name string, secret []byte) (store.Connection, error) {
	if err := store.ValidateConnectionName(name); err != nil {
		return store.Connection{}, err
	}
	if id != "" {
		c, err := s.st.ConnectionGet(ctx, ws, id)
		switch {
		case err == nil && !c.Removed && c.Provider == store.ProviderBand:
			return s.bandHolds(ctx, ws, c, secret)
		case err != nil && !errors.Is(err, jam.ErrNotFound):
			return store.Connection{}, err
		}
	}
	for range 2 {
		c, err := s.st.ConnectionByName(ctx, ws, store.ProviderBand, name)
		switch {
		case err == nil:
			return s.bandHolds(ctx, ws, c, secret)
		case !errors.Is(err, jam.ErrNotFound):
			return store.Connection{}, err
		}
		c, err = s.add(ctx, ws, store.ProviderBand, name, "", secret)
		if !errors.Is(err, jam.ErrAlreadyExists) {
			return c, err
		}
		// Added by another writer since the read: use that one.
	}
	return store.Connection{}, fmt.Errorf("band connection %s: %w: added and removed while being set", name, jam.ErrConflict)
}

// bandHolds returns c holding secret: as it is when its current secret is
// secret, else rotated to it.
func (s *Service) bandHolds(ctx context.Context, ws jam.WorkspaceID, c store.Connection, secret []byte) (store.Connection, error) {
	cur, err := s.st.CredentialCurrent(ctx, ws, c.ID)
	if err != nil {
		return store.Connection{}, fmt.Errorf("band connection %s: %w", c.Name, err)
	}
	if bytes.Equal(cur.Secret, secret) {
		return c, nil
	}
	return s.rotate(ctx, ws, c, secret)
}

// BandSecret returns the current secret of the live band connection id.
func (s *Service) BandSecret(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) ([]byte, error) {
	v, err := s.st.CredentialCurrent(ctx, ws, id)
	if err != nil {
		return nil, fmt.Errorf("band connection %s: %w", id, err)
	}
	return v.Secret, nil
}

// RemoveBand removes the band connection id, its account or agent gone;
// one removed already, or never stored, is not an error.
func (s *Service) RemoveBand(ctx context.Context, ws jam.WorkspaceID, id jam.ConnectionID) error {
	c, err := s.st.ConnectionGet(ctx, ws, id)
	if errors.Is(err, jam.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.Provider != store.ProviderBand {
		return fmt.Errorf("%w: connection %s/%s is not a band connection", jam.ErrInvalid, c.Provider, c.Name)
	}
	if c.Removed {
		return nil
	}
	_, err = s.remove(ctx, ws, c)
	if errors.Is(err, jam.ErrConflict) {
		return nil // removed by another writer since the read
	}
	return err
}

// bandUnused refuses (jam.ErrConflict) to rotate or remove by hand a band
// connection an account or agent uses, naming it.
func (s *Service) bandUnused(ctx context.Context, ws jam.WorkspaceID, c store.Connection, verb string) error {
	if c.Provider != store.ProviderBand {
		return nil
	}
	accts, err := s.st.AccountList(ctx, ws)
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	for _, a := range accts {
		if a.ConnectionID == c.ID {
			return fmt.Errorf("%s %s/%s: %w: it holds the key of account %s; jam account add and jam account remove manage it", verb, c.Provider, c.Name,
				jam.ErrConflict, a.Profile)
		}
	}
	peers, err := s.st.PeerList(ctx, ws)
	if err != nil {
		return fmt.Errorf("%s: %w", verb, err)
	}
	for _, p := range peers {
		if p.ConnectionID == c.ID {
			return fmt.Errorf("%s %s/%s: %w: it holds the key of agent %s; jam agent add and jam agent remove manage it", verb, c.Provider, c.Name,
				jam.ErrConflict, p.Key)
		}
	}
	return nil
}
