package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// stmtCache holds statements prepared once on one database handle, for
// hot paths that run the same few statements per row: with the pure-Go
// driver, preparing a statement costs about as much as running it.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt // guarded by mu
}

// prepare prepares on db every query not prepared yet. It must run
// outside any transaction of db: the writer has one connection, and a
// prepare waits for it. It never holds the cache's lock while it waits, so
// a transaction that holds the connection can always finish (inTx takes
// the lock).
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB, queries ...string) error {
	for _, q := range queries {
		c.mu.Lock()
		_, ok := c.stmts[q]
		c.mu.Unlock()
		if ok {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		c.mu.Lock()
		if _, ok := c.stmts[q]; ok {
			c.mu.Unlock()
			st.Close() // another caller prepared it meanwhile
			continue
		}
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		c.stmts[q] = st
		c.mu.Unlock()
	}
	return nil
}

// inTx returns query, prepared earlier by prepare, bound to tx.
func (c *stmtCache) inTx(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.stmts[query]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("statement not prepared: %.40s…", query)
	}
	return tx.StmtContext(ctx, st), nil
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, q)
	}
	return errors.Join(errs...)
}
