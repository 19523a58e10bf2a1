package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStmtCache_prepareDoesNotBlockATransaction: a prepare waiting for the
// writer's one connection must not hold the cache's lock, or the
// transaction holding the connection, asking the cache for a statement,
// waits for the prepare forever.
func TestStmtCache_prepareDoesNotBlockATransaction(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "jam.db")})
	require.NoError(t, err)
	defer st.Close()
	const first, second = `SELECT 1`, `SELECT 2`
	var c stmtCache
	defer c.close()
	require.NoError(t, c.prepare(ctx, st.writer, first))

	tx, err := st.writer.BeginTx(ctx, nil) // holds the writer's connection
	require.NoError(t, err)
	preparing := make(chan error, 1)
	go func() { preparing <- c.prepare(ctx, st.writer, second) }() // waits for the connection

	// Give the prepare every chance to take the lock first: it is waiting
	// for the connection by the time it is blocked, whatever the order.
	for i := 0; i < 100; i++ {
		stmt, err := c.inTx(ctx, tx, first)
		require.NoError(t, err, "the transaction gets its statement while a prepare waits")
		var n int
		require.NoError(t, stmt.QueryRowContext(ctx).Scan(&n))
	}
	require.NoError(t, tx.Commit())
	require.NoError(t, <-preparing)
	_, err = c.inTx(ctx, mustTx(t, st), second)
	require.NoError(t, err)
}

func mustTx(t *testing.T, st *Store) *sql.Tx {
	t.Helper()
	tx, err := st.writer.BeginTx(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	return tx
}
