package store_test

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

func TestValidateConnectionName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"work", true},
		{"0", true},
		{"a.b-c_d", true},
		{"9" + strings.Repeat("z", store.MaxConnectionNameLen-1), true},
		{"", false},
		{"Work", false},
		{"-work", false},
		{".work", false},
		{"_work", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
		{"a\x00", false},
		{strings.Repeat("z", store.MaxConnectionNameLen+1), false},
	}
	for _, tt := range tests {
		err := store.ValidateConnectionName(tt.name)
		if tt.ok {
			require.NoError(t, err, "%q", tt.name)
		} else {
			require.ErrorIs(t, err, jam.ErrInvalid, "%q", tt.name)
		}
	}
}

func TestValidateConnectionBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url string
		ok  bool
	}{
		{"", true},
		{"https://ghe.example.com/api/v3", true},
		{"http://127.0.0.1:8080", true},
		{"https://ghe.example.com/api/v3/", true},
		{"https://user:secret-token@ghe.example.com/api", false},
		{"https://secret-token@ghe.example.com/api", false},
		{"https://ghe.example.com/api?access_token=secret-token", false},
		{"https://ghe.example.com/api#secret-token", false},
		{"https://ghe.example.com/api?", false},
		{"ftp://ghe.example.com", false},
		{"ghe.example.com/api", false},
		{"/api/v3", false},
		{"https://", false},
		{"https:secret-token", false},
		{"https://ghe.example.com/\x00", false},
		{"https://ghe.example.com/" + strings.Repeat("p", store.MaxConnectionBaseURL), false},
	}
	for _, tt := range tests {
		err := store.ValidateConnectionBaseURL(tt.url)
		if tt.ok {
			require.NoError(t, err, "%q", tt.url)
			continue
		}
		require.ErrorIs(t, err, jam.ErrInvalid, "%q", tt.url)
		require.NotContains(t, err.Error(), "secret-token", "the error never repeats the URL")
	}
}

func TestConnection_Canonical(t *testing.T) {
	t.Parallel()
	m := jam.NewMinter(time.Now, nil)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("x", 3600))
	c := store.Connection{ID: jam.New[jam.ConnectionID](m), WorkspaceID: jam.New[jam.WorkspaceID](m), Provider: store.ProviderModal, Name: "m",
		CurrentVersion: 7, Removed: true, RemovedAt: at, UpdatedAt: at.Add(time.Hour), CreatedAt: at}
	got, err := c.Canonical([]byte("s"))
	require.NoError(t, err)
	require.Equal(t, 1, got.CurrentVersion)
	require.False(t, got.Removed)
	require.True(t, got.RemovedAt.IsZero())
	require.Equal(t, at.UTC().Truncate(time.Microsecond), got.CreatedAt)
	require.Equal(t, got.CreatedAt, got.UpdatedAt)
	for name, secret := range map[string][]byte{"empty": nil, "long": make([]byte, store.MaxCredentialSecret+1)} {
		_, err := c.Canonical(secret)
		require.ErrorIs(t, err, jam.ErrInvalid, name)
	}
	_, err = c.Canonical(make([]byte, store.MaxCredentialSecret))
	require.NoError(t, err)
	for _, p := range store.ConnectionProviders() {
		require.NoError(t, store.ValidateConnectionProvider(p))
	}
	require.ErrorIs(t, store.ValidateConnectionProvider("gitlab"), jam.ErrInvalid)
}

var connectionNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// FuzzValidateConnectionName: the validator accepts exactly the
// documented pattern.
func FuzzValidateConnectionName(f *testing.F) {
	for _, s := range []string{"work", "", "A", "a.b-c_d", "-x", strings.Repeat("a", 64), "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := store.ValidateConnectionName(name)
		if connectionNameRE.MatchString(name) != (err == nil) {
			t.Fatalf("%q: pattern %v, validator %v", name, connectionNameRE.MatchString(name), err)
		}
		if err != nil && !errors.Is(err, jam.ErrInvalid) {
			t.Fatalf("%q: %v does not wrap ErrInvalid", name, err)
		}
	})
}

// FuzzValidateConnectionBaseURL: an accepted URL is absolute http(s)
// with a host and no userinfo, query or fragment; a refusal is
// ErrInvalid and never repeats the input.
func FuzzValidateConnectionBaseURL(f *testing.F) {
	for _, s := range []string{"", "https://ghe.example.com/api/v3", "https://u:p@h/", "http://h?q", "h", "https://h#f", "http://[::1]:80/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		err := store.ValidateConnectionBaseURL(v)
		if err != nil {
			if !errors.Is(err, jam.ErrInvalid) {
				t.Fatalf("%q: %v does not wrap ErrInvalid", v, err)
			}
			if len(v) > 8 && strings.Contains(err.Error(), v) {
				t.Fatalf("%q: the error repeats the input: %v", v, err)
			}
			return
		}
		if v == "" {
			return
		}
		u, perr := url.Parse(v)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("%q accepted: %+v %v", v, u, perr)
		}
	})
}
