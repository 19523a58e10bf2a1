package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres/pgtest"
)

// openTest opens a Store on a fresh database and closes it when t ends.
func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	u := migratedURL(t)
	s, err := Open(t.Context(), Config{URL: u})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, u
}

func loadMigrations(t *testing.T) []store.Migration {
	t.Helper()
	migs, err := store.LoadMigrations(migrationFS, "migrations")
	require.NoError(t, err)
	return migs
}

// TestMigrations_sameNumbersAsSQLite keeps the two dialects' migration
// lists in step: version N is the same schema on both.
func TestMigrations_sameNumbersAsSQLite(t *testing.T) {
	migs := loadMigrations(t)
	sqliteMigs, err := store.LoadMigrations(sqliteMigrationsFS(), ".")
	require.NoError(t, err)
	require.Len(t, migs, len(sqliteMigs))
	for i := range migs {
		require.Equal(t, sqliteMigs[i].Name, migs[i].Name, "migration %d", i+1)
	}
}

func TestOpen_concurrentOnEmptyDatabase(t *testing.T) {
	u := pgtest.URL(t)
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), Config{URL: u})
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "open %d", i)
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	var rows, distinct int
	require.NoError(t, stores[0].pool.QueryRow(t.Context(),
		`SELECT COUNT(*), COUNT(DISTINCT version) FROM schema_migrations`).Scan(&rows, &distinct))
	require.Equal(t, len(loadMigrations(t)), rows)
	require.Equal(t, rows, distinct)
}

func TestOpen_refusesOtherSchema(t *testing.T) {
	u := pgtest.URL(t)
	migs := loadMigrations(t)
	s, err := open(t.Context(), Config{URL: u}, migs)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = open(t.Context(), Config{URL: u}, migs[:len(migs)-1])
	require.ErrorContains(t, err, "newer than this jam build")

	edited := append([]store.Migration(nil), migs...)
	edited[2].SQL += "\n-- edited\n"
	_, err = open(t.Context(), Config{URL: u}, edited)
	require.ErrorContains(t, err, "migration 0003_retirement was changed after it was applied")

	// A build that knows one more migration applies it.
	more := append(append([]store.Migration(nil), migs...), store.Migration{Version: len(migs) + 1, Name: "extra", SQL: "CREATE TABLE extra (id BIGINT)"})
	s, err = open(t.Context(), Config{URL: u}, more)
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, len(migs)+1, info.SchemaVersion)
	require.NoError(t, s.Close())
}

func TestOpen_failedMigrationLeavesNothing(t *testing.T) {
	u := pgtest.URL(t)
	migs := loadMigrations(t)
	bad := append(append([]store.Migration(nil), migs...), store.Migration{Version: len(migs) + 1, Name: "bad",
		SQL: "CREATE TABLE half (id BIGINT); SELECT no_such_function()"})
	_, err := open(t.Context(), Config{URL: u}, bad)
	require.ErrorContains(t, err, fmt.Sprintf("apply migration %04d_bad", len(migs)+1))
	s, err := open(t.Context(), Config{URL: u}, migs)
	require.NoError(t, err)
	defer s.Close()
	var n int
	require.NoError(t, s.pool.QueryRow(t.Context(), `SELECT COUNT(*) FROM pg_tables WHERE tablename = 'half'`).Scan(&n))
	require.Zero(t, n)
}

func TestInfoAndCheck(t *testing.T) {
	s, u := openTest(t)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, "postgres", info.Driver)
	require.Equal(t, len(loadMigrations(t)), info.SchemaVersion)
	require.NotEmpty(t, info.ServerVersion)
	db := u[strings.LastIndex(u, "/")+1:]
	db, _, _ = strings.Cut(db, "?")
	require.Regexp(t, `^127\.0\.0\.1:[0-9]+/`+db+`$`, info.Location)
	require.NoError(t, s.Check(t.Context()))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close twice")
	_, err = s.Info(t.Context())
	require.ErrorIs(t, err, jam.ErrUnavailable, "a closed store is unavailable")
}

func TestMapErr(t *testing.T) {
	s, _ := openTest(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, `INSERT INTO workspaces (id, name, created_at) VALUES ('a', 'x', 1)`)
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `INSERT INTO workspaces (id, name, created_at) VALUES ('b', 'x', 1)`)
	require.ErrorIs(t, mapErr(err), jam.ErrAlreadyExists)
	require.ErrorContains(t, mapErr(err), "workspaces_name_key")
	_, err = s.pool.Exec(ctx, `INSERT INTO settings (workspace_id, key, value, updated_at) VALUES ('nope', 'k', 'v', 1)`)
	require.ErrorIs(t, mapErr(err), jam.ErrNotFound)
	require.Nil(t, mapErr(nil))
	require.ErrorIs(t, mapErr(pgx.ErrNoRows), pgx.ErrNoRows)
}

// TestMapErr_lostConnection ends a connection's backend from another
// one, as a server crash or restart does: the statement that finds it gone
// and every later one on that connection (pgconn's "conn closed") are
// jam.ErrUnavailable, which callers retry, and never an answer to act on.
func TestMapErr_lostConnection(t *testing.T) {
	s, _ := openTest(t)
	ctx := t.Context()
	c, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	defer c.Release()
	var pid int
	require.NoError(t, c.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	_, err = s.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
	require.NoError(t, err)
	_, err = c.Exec(ctx, `SELECT 1`)
	require.Error(t, err)
	require.ErrorIs(t, mapErr(err), jam.ErrUnavailable, "the statement that finds the connection gone: %v", err)
	_, err = c.Exec(ctx, `SELECT 1`)
	require.Error(t, err)
	require.ErrorIs(t, mapErr(err), jam.ErrUnavailable, "a statement on the closed connection: %v", err)
}

// TestInTx_retriesSerializationFailure has two REPEATABLE READ
// transactions read one row and both write it: the server aborts the
// second writer with a serialization failure, and inTx runs it again.
func TestInTx_retriesSerializationFailure(t *testing.T) {
	s, _ := openTest(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, `CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL); INSERT INTO counter VALUES (1, 0)`)
	require.NoError(t, err)

	read := make(chan struct{}, 2)
	bothRead := make(chan struct{})
	var once [2]sync.Once
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			errs[i] = s.inTx(ctx, pgx.RepeatableRead, func(tx pgx.Tx) error {
				var n int
				if err := tx.QueryRow(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
					return err
				}
				once[i].Do(func() {
					read <- struct{}{}
					<-bothRead
				})
				_, err := tx.Exec(ctx, `UPDATE counter SET n = $1 WHERE id = 1`, n+1)
				return err
			})
		})
	}
	<-read
	<-read
	close(bothRead)
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	var n int
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT n FROM counter`).Scan(&n))
	require.Equal(t, 2, n, "both increments kept")
}

// fakeServer accepts PostgreSQL connections on loopback, asks for a
// cleartext password and refuses it as the server does (SQLSTATE
// 28P01). It returns the address and the passwords it received.
func fakeServer(t *testing.T) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	got := make(chan string, 16)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				be := pgproto3.NewBackend(c, c)
				msg, err := be.ReceiveStartupMessage()
				if err != nil {
					return
				}
				if _, ok := msg.(*pgproto3.SSLRequest); ok {
					if _, err := c.Write([]byte("N")); err != nil {
						return
					}
					if _, err = be.ReceiveStartupMessage(); err != nil {
						return
					}
				}
				be.Send(&pgproto3.AuthenticationCleartextPassword{})
				if be.Flush() != nil {
					return
				}
				be.SetAuthType(pgproto3.AuthTypeCleartextPassword)
				m, err := be.Receive()
				if err != nil {
					return
				}
				if pw, ok := m.(*pgproto3.PasswordMessage); ok {
					got <- pw.Password
				}
				be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", Code: codeInvalidPassword, Message: `password authentication failed for user "jam"`})
				_ = be.Flush()
			})
		}
	})
	return ln.Addr().String(), got
}

func TestOpen_errorsAreOneLineWithoutPassword(t *testing.T) {
	const pw = "Hunter2-s3cret"
	fake, received := fakeServer(t)
	cases := []struct {
		name, url string
		is        error
		want      string
	}{
		{"empty", "", jam.ErrInvalid, "postgres store: invalid url: the url is empty"},
		{"not a url", "host=db password=" + pw, jam.ErrInvalid, "postgres store: invalid url: want postgres://user@host:port/database"},
		{"other scheme", "mysql://jam:" + pw + "@db/jam", jam.ErrInvalid, "postgres store: invalid url mysql://jam:xxxxx@db/jam: want postgres://"},
		{"bad port", "postgres://jam:" + pw + "@db:port/jam", jam.ErrInvalid, "postgres store: invalid url postgres://jam:xxxxx@db:port/jam: "},
		{"bad escape", "postgres://jam:" + pw + "%zz@db/jam", jam.ErrInvalid, "postgres store: invalid url postgres://jam:xxxxx@db/jam: "},
		{"bad sslmode", "postgres://jam@db/jam?sslmode=sometimes&password=" + pw, jam.ErrInvalid, "postgres store: invalid url postgres://jam@db/jam?sslmode=sometimes&password=xxxxx: "},
		{"no database", "postgres://jam:" + pw + "@127.0.0.1:1", jam.ErrInvalid, "the url names no database"},
		{"unreachable", "postgres://jam:" + pw + "@127.0.0.1:1/jam?sslmode=disable", jam.ErrUnavailable, "postgres store: cannot reach 127.0.0.1:1: connection refused"},
		{"wrong password", "postgres://jam:" + pw + "@" + fake + "/jam?sslmode=disable", jam.ErrUnavailable, `postgres store: authentication failed for user "jam" at ` + fake + `/jam: password authentication failed for user "jam"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.Context(), Config{URL: tc.url})
			require.Error(t, err)
			require.ErrorIs(t, err, tc.is)
			msg := err.Error()
			require.Contains(t, msg, tc.want)
			require.NotContains(t, msg, "\n")
			require.NotContains(t, msg, pw)
			require.NotContains(t, msg, "Hunter2")
		})
	}
	require.Equal(t, pw, <-received, "the fake server was asked, with the password")
}

func TestOpen_databaseMissing(t *testing.T) {
	u := pgtest.URL(t)
	missing := strings.Replace(u, "/jam_test_", "/jam_missing_", 1)
	_, err := Open(t.Context(), Config{URL: missing})
	require.ErrorIs(t, err, jam.ErrUnavailable)
	require.Regexp(t, `^postgres store: database "jam_missing_[0-9a-f]+" does not exist on 127\.0\.0\.1:[0-9]+$`, err.Error())
}

func TestOpen_cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Open(ctx, Config{URL: pgtest.URL(t)})
	require.Error(t, err)
	require.True(t, errors.Is(err, context.Canceled) || errors.Is(err, jam.ErrUnavailable), "%v", err)
}
