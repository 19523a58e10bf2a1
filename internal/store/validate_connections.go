package store

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/jamhq/jam/internal/jam"
)

// Validators of the connections aggregate.

// Bounds of a connection.
const (
	MaxConnectionNameLen = 63
	MaxConnectionBaseURL = 2048
	MaxCredentialSecret  = 16 << 10
	// MaxCredentialVersions bounds the versions of one connection (and so
	// CredentialVersions' answer): past it, add a new connection.
	MaxCredentialVersions = 1000
	// MaxConnectionList bounds ConnectionList's answer.
	MaxConnectionList = 1000
)

// ValidateConnectionProvider accepts a known provider.
func ValidateConnectionProvider(p ConnectionProvider) error {
	return oneOf("connection provider", p, ConnectionProviders())
}

// ValidateConnectionName accepts [a-z0-9][a-z0-9_.-]{0,62}.
func ValidateConnectionName(name string) error {
	ok := len(name) >= 1 && len(name) <= MaxConnectionNameLen && isLowerAlnum(name[0])
	for i := 1; ok && i < len(name); i++ {
		c := name[i]
		ok = isLowerAlnum(c) || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%w: connection name %q is not [a-z0-9][a-z0-9_.-]{0,%d}", jam.ErrInvalid, clipText(name), MaxConnectionNameLen-1)
	}
	return nil
}

func isLowerAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }

// clipText shortens a refused value for an error message.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// ValidateConnectionBaseURL accepts "" or an absolute http(s) URL with a
// host and no userinfo (a credential in a URL would be logged), query or
// fragment, of at most MaxConnectionBaseURL bytes. The error never
// repeats the URL: it may hold a secret.
func ValidateConnectionBaseURL(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > MaxConnectionBaseURL {
		return fmt.Errorf("%w: base url is %d bytes (at most %d)", jam.ErrInvalid, len(v), MaxConnectionBaseURL)
	}
	if err := ValidateText("base url", v); err != nil {
		return err
	}
	u, err := url.Parse(v)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%w: base url is not an absolute http(s) URL", jam.ErrInvalid)
	case u.User != nil:
		return fmt.Errorf("%w: base url holds userinfo; give the credential as the connection's secret", jam.ErrInvalid)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.RawFragment != "":
		return fmt.Errorf("%w: base url has a query or fragment", jam.ErrInvalid)
	}
	return nil
}

// ValidateCredentialSecret accepts 1 to MaxCredentialSecret bytes. The
// error names the length only.
func ValidateCredentialSecret(secret []byte) error {
	if len(secret) == 0 || len(secret) > MaxCredentialSecret {
		return fmt.Errorf("%w: secret is %d bytes (1 to %d)", jam.ErrInvalid, len(secret), MaxCredentialSecret)
	}
	return nil
}

// ValidateConnectionRef checks the (workspace, connection) pair a lookup
// takes.
func ValidateConnectionRef(ws jam.WorkspaceID, id jam.ConnectionID) error {
	if err := ValidateWorkspaceID(ws); err != nil {
		return err
	}
	_, err := jam.ParseID[jam.ConnectionID](string(id))
	return err
}

// ValidateConnectionByName checks the arguments of
// Connections.ConnectionByName.
func ValidateConnectionByName(ws jam.WorkspaceID, provider ConnectionProvider, name string) error {
	err := ValidateWorkspaceID(ws)
	if err == nil {
		err = ValidateConnectionProvider(provider)
	}
	if err == nil {
		err = ValidateConnectionName(name)
	}
	return err
}

// ValidateConnectionRotate checks the arguments of
// Connections.ConnectionRotate.
func ValidateConnectionRotate(ws jam.WorkspaceID, id jam.ConnectionID, secret []byte, at time.Time) error {
	err := ValidateConnectionRef(ws, id)
	if err == nil {
		err = ValidateCredentialSecret(secret)
	}
	if err == nil {
		err = ValidateTime("rotation time", at)
	}
	return err
}

// ValidateConnectionRemove checks the arguments of
// Connections.ConnectionRemove.
func ValidateConnectionRemove(ws jam.WorkspaceID, id jam.ConnectionID, at time.Time) error {
	err := ValidateConnectionRef(ws, id)
	if err == nil {
		err = ValidateTime("removal time", at)
	}
	return err
}

// Canonical validates a connection to create with its first secret and
// returns it in stored form: version 1, live, UpdatedAt CreatedAt, times
// at microsecond precision in UTC.
func (c Connection) Canonical(secret []byte) (Connection, error) {
	err := ValidateConnectionRef(c.WorkspaceID, c.ID)
	if err == nil {
		err = ValidateConnectionProvider(c.Provider)
	}
	if err == nil {
		err = ValidateConnectionName(c.Name)
	}
	if err == nil {
		err = ValidateConnectionBaseURL(c.BaseURL)
	}
	if err == nil {
		err = ValidateCredentialSecret(secret)
	}
	if err == nil {
		err = ValidateTime("created at", c.CreatedAt)
	}
	if err != nil {
		return Connection{}, err
	}
	c.CreatedAt = c.CreatedAt.UTC().Truncate(time.Microsecond)
	c.UpdatedAt = c.CreatedAt
	c.CurrentVersion, c.Removed, c.RemovedAt = 1, false, time.Time{}
	return c, nil
}

// Refusal says why a rotation or removal of c changed nothing (wrapping
// jam.ErrConflict): c is removed, or holds its last allowed version.
func (c Connection) Refusal(verb string) error {
	if c.Removed {
		return fmt.Errorf("%w: cannot %s connection %s/%s: it was removed", jam.ErrConflict, verb, c.Provider, c.Name)
	}
	if verb == "rotate" && c.CurrentVersion >= MaxCredentialVersions {
		return fmt.Errorf("%w: connection %s/%s holds %d versions, the most it may; add a new connection", jam.ErrConflict, c.Provider, c.Name, c.CurrentVersion)
	}
	return fmt.Errorf("%w: cannot %s connection %s/%s", jam.ErrConflict, verb, c.Provider, c.Name)
}

// LiveConnections drops the removed connections of cs.
func LiveConnections(cs []Connection) []Connection {
	return slices.DeleteFunc(slices.Clone(cs), func(c Connection) bool { return c.Removed })
}
