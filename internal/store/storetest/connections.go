package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
)

// ConnectionsStore is what [Connections] needs: connections of the
// messaging fixture's workspaces.
type ConnectionsStore interface {
	MessagingBase
	store.Connections
}

// Connections checks [store.Connections]: versions appended and disabled,
// removal and name reuse, bounds, tenancy, and two handles creating one
// name and rotating one connection at once.
func Connections[S ConnectionsStore](t *testing.T, o Opener[S]) {
	t.Helper()
	db := narrow(o, func(s S) handle {
		h := messagingBase(s)
		h.Connections = s
		return h
	})
	connectionCases(t, single(db))
	connectionRaces(t, db)
}

// connectionAt is a github connection of the bundle's workspace named
// name, created at epoch plus d.
func connectionAt(b *msgBundle, name string, d time.Duration) store.Connection {
	return store.Connection{ID: jam.New[jam.ConnectionID](b.minter), WorkspaceID: b.ws, Provider: store.ProviderGitHub, Name: name,
		CreatedAt: epoch.Add(d)}
}

func createConnection(t *testing.T, b *msgBundle, c store.Connection, secret string) store.Connection {
	t.Helper()
	got, err := b.st.ConnectionCreate(t.Context(), c, []byte(secret))
	require.NoError(t, err)
	return got
}

// activeVersions is the numbers of the versions not disabled.
func activeVersions(vs []store.CredentialVersion) []int {
	var out []int
	for _, v := range vs {
		if !v.Disabled {
			out = append(out, v.Version)
		}
	}
	return out
}

func connectionCases(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Connection_createGetList", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		c := connectionAt(b, "work", 0)
		c.BaseURL = "https://ghe.example.com/api/v3"
		got, err := b.st.ConnectionCreate(ctx, c, []byte("ghp_first"))
		require.NoError(t, err)
		want := c
		want.CreatedAt = epoch.UTC().Truncate(time.Microsecond)
		want.UpdatedAt, want.CurrentVersion = want.CreatedAt, 1
		require.Equal(t, want, got, "stored live at version 1, times in UTC microseconds")
		again, err := b.st.ConnectionGet(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, want, again)
		byName, err := b.st.ConnectionByName(ctx, b.ws, store.ProviderGitHub, "work")
		require.NoError(t, err)
		require.Equal(t, want, byName)
		_, err = b.st.ConnectionByName(ctx, b.ws, store.ProviderAnthropic, "work")
		require.ErrorIs(t, err, jam.ErrNotFound, "a name is per provider")

		cur, err := b.st.CredentialCurrent(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, store.CredentialVersion{ConnectionID: c.ID, WorkspaceID: b.ws, Version: 1, Secret: []byte("ghp_first"), CreatedAt: want.CreatedAt}, cur)
		vs, err := b.st.CredentialVersions(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, []store.CredentialVersion{{ConnectionID: c.ID, WorkspaceID: b.ws, Version: 1, CreatedAt: want.CreatedAt}}, vs,
			"the versions carry no secret")

		later := connectionAt(b, "anth", time.Second)
		later.Provider = store.ProviderAnthropic
		later = createConnection(t, b, later, "sk-ant")
		list, err := b.st.ConnectionList(ctx, b.ws)
		require.NoError(t, err)
		require.Equal(t, []store.Connection{want, later}, list, "oldest first")
		foreign, err := b.st.ConnectionList(ctx, b.other)
		require.NoError(t, err)
		require.Empty(t, foreign)
	})

	t.Run("Connection_everyProvider", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		for _, p := range store.ConnectionProviders() {
			c := connectionAt(b, "same", 0)
			c.Provider = p
			got := createConnection(t, b, c, "secret-"+string(p))
			byName, err := b.st.ConnectionByName(ctx, b.ws, p, "same")
			require.NoError(t, err, p)
			require.Equal(t, got, byName)
			v, err := b.st.CredentialCurrent(ctx, b.ws, got.ID)
			require.NoError(t, err, p)
			require.Equal(t, "secret-"+string(p), string(v.Secret))
		}
	})

	t.Run("Connection_rotateAppendsVersions", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		c := createConnection(t, b, connectionAt(b, "work", 0), "v1")
		for i, secret := range []string{"v2", "v3"} {
			r, err := b.st.ConnectionRotate(ctx, b.ws, c.ID, []byte(secret), epoch.Add(time.Duration(i+1)*time.Minute))
			require.NoError(t, err)
			require.Equal(t, i+2, r.CurrentVersion)
			requireTime(t, epoch.Add(time.Duration(i+1)*time.Minute), r.UpdatedAt)
			requireTime(t, c.CreatedAt, r.CreatedAt)
		}
		cur, err := b.st.CredentialCurrent(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, 3, cur.Version)
		require.Equal(t, []byte("v3"), cur.Secret)
		vs, err := b.st.CredentialVersions(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Len(t, vs, 3, "old versions are kept")
		require.Equal(t, []int{3}, activeVersions(vs), "only the newest is active")
		for i, v := range vs {
			require.Equal(t, i+1, v.Version)
			require.Nil(t, v.Secret)
		}
		requireTime(t, epoch.Add(time.Minute), vs[0].DisabledAt)
		requireTime(t, epoch.Add(2*time.Minute), vs[1].DisabledAt)
		requireTime(t, epoch.Add(2*time.Minute), vs[2].CreatedAt)
		require.True(t, vs[2].DisabledAt.IsZero())
	})

	t.Run("Connection_removeAndReuseName", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		c := createConnection(t, b, connectionAt(b, "work", 0), "v1")
		_, err := b.st.ConnectionRotate(ctx, b.ws, c.ID, []byte("v2"), epoch.Add(time.Minute))
		require.NoError(t, err)
		r, err := b.st.ConnectionRemove(ctx, b.ws, c.ID, epoch.Add(2*time.Minute))
		require.NoError(t, err)
		require.True(t, r.Removed)
		requireTime(t, epoch.Add(2*time.Minute), r.RemovedAt)
		require.Equal(t, 2, r.CurrentVersion, "the last version's number stays")

		_, err = b.st.CredentialCurrent(ctx, b.ws, c.ID)
		require.ErrorIs(t, err, jam.ErrNotFound, "a removed connection has no credential")
		vs, err := b.st.CredentialVersions(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Len(t, vs, 2)
		require.Empty(t, activeVersions(vs), "every version disabled")
		_, err = b.st.ConnectionByName(ctx, b.ws, store.ProviderGitHub, "work")
		require.ErrorIs(t, err, jam.ErrNotFound)
		_, err = b.st.ConnectionRotate(ctx, b.ws, c.ID, []byte("v3"), epoch.Add(3*time.Minute))
		require.ErrorIs(t, err, jam.ErrConflict, "a removed connection is not rotated")
		_, err = b.st.ConnectionRemove(ctx, b.ws, c.ID, epoch.Add(3*time.Minute))
		require.ErrorIs(t, err, jam.ErrConflict, "nor removed again")
		got, err := b.st.ConnectionGet(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, r, got, "the refused writes changed nothing")

		again := createConnection(t, b, connectionAt(b, "work", 4*time.Minute), "new")
		require.NotEqual(t, c.ID, again.ID)
		byName, err := b.st.ConnectionByName(ctx, b.ws, store.ProviderGitHub, "work")
		require.NoError(t, err)
		require.Equal(t, again.ID, byName.ID, "the name names the live connection")
		cur, err := b.st.CredentialCurrent(ctx, b.ws, again.ID)
		require.NoError(t, err)
		require.Equal(t, []byte("new"), cur.Secret)
		list, err := b.st.ConnectionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 2, "the list keeps the removed one")
		require.Equal(t, []store.Connection{again}, store.LiveConnections(list))
	})

	t.Run("Connection_namesAndIDsUnique", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		c := createConnection(t, b, connectionAt(b, "work", 0), "s")
		_, err := b.st.ConnectionCreate(ctx, connectionAt(b, "work", time.Second), []byte("s2"))
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "a live name of the provider is taken")
		dupID := connectionAt(b, "other", 0)
		dupID.ID = c.ID
		_, err = b.st.ConnectionCreate(ctx, dupID, []byte("s"))
		require.ErrorIs(t, err, jam.ErrAlreadyExists, "an id is taken once")
		otherProvider := connectionAt(b, "work", 0)
		otherProvider.Provider = store.ProviderOpenAI
		createConnection(t, b, otherProvider, "s")
		otherWS := connectionAt(b, "work", 0)
		otherWS.WorkspaceID = b.other
		createConnection(t, b, otherWS, "s")
		stray := connectionAt(b, "work", 0)
		stray.WorkspaceID = jam.New[jam.WorkspaceID](b.minter)
		_, err = b.st.ConnectionCreate(ctx, stray, []byte("s"))
		require.ErrorIs(t, err, jam.ErrNotFound, "a workspace that does not exist")
		list, err := b.st.ConnectionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 2, "no refused create stored a connection")
		vs, err := b.st.CredentialVersions(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Len(t, vs, 1, "no refused create stored a version")
	})

	t.Run("Connection_foreignWorkspaceNotFound", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		c := createConnection(t, b, connectionAt(b, "work", 0), "s")
		ws := b.other
		for name, err := range map[string]error{
			"get":            errOf(b.st.ConnectionGet(ctx, ws, c.ID)),
			"by name":        errOf(b.st.ConnectionByName(ctx, ws, c.Provider, c.Name)),
			"rotate":         errOf(b.st.ConnectionRotate(ctx, ws, c.ID, []byte("x"), epoch)),
			"remove":         errOf(b.st.ConnectionRemove(ctx, ws, c.ID, epoch)),
			"current":        errOf(b.st.CredentialCurrent(ctx, ws, c.ID)),
			"versions":       errOf(b.st.CredentialVersions(ctx, ws, c.ID)),
			"unknown":        errOf(b.st.ConnectionGet(ctx, b.ws, jam.New[jam.ConnectionID](b.minter))),
			"unknown rotate": errOf(b.st.ConnectionRotate(ctx, b.ws, jam.New[jam.ConnectionID](b.minter), []byte("x"), epoch)),
			"unknown remove": errOf(b.st.ConnectionRemove(ctx, b.ws, jam.New[jam.ConnectionID](b.minter), epoch)),
		} {
			require.ErrorIs(t, err, jam.ErrNotFound, name)
		}
		got, err := b.st.ConnectionGet(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, c, got, "nothing of another workspace's calls reached the connection")
		cur, err := b.st.CredentialCurrent(ctx, b.ws, c.ID)
		require.NoError(t, err)
		require.Equal(t, 1, cur.Version)
	})

	t.Run("Connection_bounds", func(t *testing.T) {
		t.Parallel()
		b := setupMessaging(t, open)
		ctx := t.Context()
		// At the bounds: accepted.
		edge := connectionAt(b, "0"+strings.Repeat("a.-_", 15)+"zz", 0)
		require.Len(t, edge.Name, store.MaxConnectionNameLen)
		edge.BaseURL = "https://h.example/" + strings.Repeat("p", store.MaxConnectionBaseURL-len("https://h.example/"))
		big := []byte(strings.Repeat("\x00\xff", store.MaxCredentialSecret/2))
		edge = createConnection(t, b, edge, string(big))
		cur, err := b.st.CredentialCurrent(ctx, b.ws, edge.ID)
		require.NoError(t, err)
		require.Equal(t, big, cur.Secret, "a secret is bytes, any bytes")

		conn := func(mod func(*store.Connection)) func() error {
			return func() error {
				c := connectionAt(b, "x", 0)
				mod(&c)
				return errOf(b.st.ConnectionCreate(ctx, c, []byte("s")))
			}
		}
		id := edge.ID
		tests := []struct {
			name string
			call func() error
		}{
			{"empty name", conn(func(c *store.Connection) { c.Name = "" })},
			{"upper-case name", conn(func(c *store.Connection) { c.Name = "Work" })},
			{"name from a dash", conn(func(c *store.Connection) { c.Name = "-work" })},
			{"name with a slash", conn(func(c *store.Connection) { c.Name = "a/b" })},
			{"long name", conn(func(c *store.Connection) { c.Name = strings.Repeat("n", store.MaxConnectionNameLen+1) })},
			{"unknown provider", conn(func(c *store.Connection) { c.Provider = "gitlab" })},
			{"base url with userinfo", conn(func(c *store.Connection) { c.BaseURL = "https://tok:x@ghe.example.com/api" })},
			{"base url relative", conn(func(c *store.Connection) { c.BaseURL = "/api/v3" })},
			{"base url of another scheme", conn(func(c *store.Connection) { c.BaseURL = "file:///etc" })},
			{"base url with a query", conn(func(c *store.Connection) { c.BaseURL = "https://ghe.example.com/?token=x" })},
			{"base url too long", conn(func(c *store.Connection) { c.BaseURL = edge.BaseURL + "p" })},
			{"zero creation", conn(func(c *store.Connection) { c.CreatedAt = time.Time{} })},
			{"malformed id", conn(func(c *store.Connection) { c.ID = "con_nope" })},
			{"wrong id prefix", conn(func(c *store.Connection) { c.ID = jam.ConnectionID(jam.New[jam.JobID](b.minter)) })},
			{"malformed workspace", conn(func(c *store.Connection) { c.WorkspaceID = "ws_nope" })},
			{"empty secret", func() error { return errOf(b.st.ConnectionCreate(ctx, connectionAt(b, "y", 0), nil)) }},
			{"secret over the bound", func() error { return errOf(b.st.ConnectionCreate(ctx, connectionAt(b, "y", 0), append(big, 1))) }},
			{"rotate empty secret", func() error { return errOf(b.st.ConnectionRotate(ctx, b.ws, id, []byte{}, epoch)) }},
			{"rotate secret over the bound", func() error { return errOf(b.st.ConnectionRotate(ctx, b.ws, id, append(big, 1), epoch)) }},
			{"rotate zero time", func() error { return errOf(b.st.ConnectionRotate(ctx, b.ws, id, []byte("s"), time.Time{})) }},
			{"remove zero time", func() error { return errOf(b.st.ConnectionRemove(ctx, b.ws, id, time.Time{})) }},
			{"get malformed id", func() error { return errOf(b.st.ConnectionGet(ctx, b.ws, "con_x")) }},
			{"get empty workspace", func() error { return errOf(b.st.ConnectionGet(ctx, "", id)) }},
			{"by name bad name", func() error { return errOf(b.st.ConnectionByName(ctx, b.ws, store.ProviderGitHub, "A")) }},
			{"by name bad provider", func() error { return errOf(b.st.ConnectionByName(ctx, b.ws, "gitlab", "a")) }},
			{"list malformed workspace", func() error { return errOf(b.st.ConnectionList(ctx, "ws_x")) }},
			{"current malformed id", func() error { return errOf(b.st.CredentialCurrent(ctx, b.ws, "x")) }},
			{"versions malformed id", func() error { return errOf(b.st.CredentialVersions(ctx, b.ws, "x")) }},
		}
		for _, tt := range tests {
			err := tt.call()
			require.ErrorIs(t, err, jam.ErrInvalid, tt.name)
			require.NotContains(t, err.Error(), "tok:x", "%s: the error does not repeat a URL's credential", tt.name)
		}
		list, err := b.st.ConnectionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, 1, "no refused create stored a connection")
		vs, err := b.st.CredentialVersions(ctx, b.ws, id)
		require.NoError(t, err)
		require.Len(t, vs, 1, "no refused rotation stored a version")
	})
}

// connectionRaces creates and rotates through two handles at once. A
// handle knows nothing of the other's writes: only the database (the
// partial unique index of live names, the lock of the connection row a
// rotation updates first, the index of active versions) keeps one name
// to one live connection and the versions distinct with one active.
func connectionRaces(t *testing.T, db Opener[store.Store]) {
	t.Run("ConnectionCreate_sameNameTwoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		for round := range raceRounds {
			name := fmt.Sprintf("work-%d", round)
			cs := [2]store.Connection{connectionAt(b, name, 0), connectionAt(b, name, time.Second)}
			var errs [2]error
			race(
				func() { _, errs[0] = handles[0].ConnectionCreate(ctx, cs[0], []byte("s0")) },
				func() { _, errs[1] = handles[1].ConnectionCreate(ctx, cs[1], []byte("s1")) },
			)
			won := -1
			for i, err := range errs {
				if err == nil {
					require.Equal(t, -1, won, "round %d: both creates of %s succeeded", round, name)
					won = i
					continue
				}
				require.ErrorIs(t, err, jam.ErrAlreadyExists, "round %d", round)
			}
			require.NotEqual(t, -1, won, "round %d: neither create succeeded: %v", round, errors.Join(errs[0], errs[1]))
			got, err := other.ConnectionByName(ctx, b.ws, store.ProviderGitHub, name)
			require.NoError(t, err)
			require.Equal(t, cs[won].ID, got.ID, "round %d: the name names the winner", round)
			cur, err := b.st.CredentialCurrent(ctx, b.ws, got.ID)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("s%d", won), string(cur.Secret))
		}
		list, err := other.ConnectionList(ctx, b.ws)
		require.NoError(t, err)
		require.Len(t, list, raceRounds, "one connection per name")
	})

	t.Run("ConnectionRotate_twoHandles", func(t *testing.T) {
		t.Parallel()
		b, other := twoHandles(t, db)
		ctx := t.Context()
		handles := [2]store.Store{b.st, other}
		c := createConnection(t, b, connectionAt(b, "work", 0), "v1")
		want := 1
		for round := range raceRounds {
			var got [2]store.Connection
			var errs [2]error
			secret := func(i int) []byte { return fmt.Appendf(nil, "r%d-h%d", round, i) }
			at := epoch.Add(time.Duration(round+1) * time.Second)
			race(
				func() { got[0], errs[0] = handles[0].ConnectionRotate(ctx, b.ws, c.ID, secret(0), at) },
				func() { got[1], errs[1] = handles[1].ConnectionRotate(ctx, b.ws, c.ID, secret(1), at) },
			)
			require.NoError(t, errs[0], "round %d", round)
			require.NoError(t, errs[1], "round %d", round)
			want += 2
			vs, err := b.st.CredentialVersions(ctx, b.ws, c.ID)
			require.NoError(t, err)
			require.Len(t, vs, want, "round %d: both rotations appended a version", round)
			for i, v := range vs {
				require.Equal(t, i+1, v.Version, "round %d: versions count without a gap", round)
			}
			require.Equal(t, []int{want}, activeVersions(vs), "round %d: exactly one version active, the newest", round)
			cur, err := other.CredentialCurrent(ctx, b.ws, c.ID)
			require.NoError(t, err)
			require.Equal(t, want, cur.Version)
			// The rotation that took the newest version wrote its secret.
			last := 0
			if got[1].CurrentVersion > got[0].CurrentVersion {
				last = 1
			}
			require.Equal(t, string(secret(last)), string(cur.Secret), "round %d", round)
			require.NotEqual(t, got[0].CurrentVersion, got[1].CurrentVersion, "round %d: distinct versions", round)
		}
	})
}
