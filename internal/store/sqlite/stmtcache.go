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
// prepare while a transaction holds it would wait forever.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB, queries ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range queries {
		if _, ok := c.stmts[q]; ok {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		if c.stmts == nil {
			c.stmts = map[string]*sql.Stmt{}
		}
		c.stmts[q] = st
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
