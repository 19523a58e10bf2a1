package daemon

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// openStore opens the store cfg.Store selects, sealing with d.box: the
// SQLite file of the data directory, whose removal or replacement the
// storage health watches, or the PostgreSQL database of a postgres://
// URL, whose health is what its errors and its Info say. Its errors are
// one line and never show the URL's password.
func (d *daemon) openStore(ctx context.Context) (store.Store, error) {
	if config.IsPostgresURL(d.cfg.Store) {
		pg, err := postgres.Open(ctx, postgres.Config{URL: d.cfg.Store, Logger: d.log, Sealer: d.box})
		if err != nil {
			return nil, d.redactStoreErr(err)
		}
		return pg, nil
	}
	path := filepath.Join(d.cfg.DataDir, datadir.StoreFile)
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, Logger: d.log, Sealer: d.box})
	if err != nil {
		return nil, err
	}
	if err := d.storage.watch(path); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// storeStatus is the store's part of the status: what it was at the
// start, the schema version it reports now, and its problem while there
// is one (a refused write, the database file gone, or the store not
// answering).
func (d *daemon) storeStatus(ctx context.Context) (s storeStatusResult) {
	ctx, cancel := context.WithTimeout(ctx, storeStatusTimeout)
	defer cancel()
	s.info = d.storeInfo
	s.problem = d.storage.problem()
	info, err := d.store.Info(ctx)
	switch {
	case err != nil && s.problem == "":
		s.problem = d.redactStore(fmt.Sprintf("the store does not answer: %v", err))
	case err == nil:
		s.info.SchemaVersion = info.SchemaVersion
	}
	return s
}

type storeStatusResult struct {
	info    store.Info
	problem string
}

// storeStatusTimeout bounds the store's answer to a status request: a
// server that does not answer is reported, not waited for.
const storeStatusTimeout = 2 * time.Second

// redactStore masks the password of the store URL wherever it shows in
// msg. The stores never put it in an error; this is the daemon's own
// guard for the texts it passes on (status, the start error).
func (d *daemon) redactStore(msg string) string {
	if !config.IsPostgresURL(d.cfg.Store) {
		return msg
	}
	for _, sec := range storeSecrets(d.cfg.Store) {
		msg = strings.ReplaceAll(msg, sec, "xxxxx")
	}
	return msg
}

// redactStoreErr is err with its text passed through redactStore; the
// chain stays for errors.Is (the exit code depends on it).
func (d *daemon) redactStoreErr(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: d.redactStore(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// storeSecrets are the spellings of the password of a store URL (in the
// userinfo or a password parameter), raw and decoded, of 4 bytes or more.
func storeSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) < 4 {
			return
		}
		out = append(out, s)
		if d, err := url.PathUnescape(s); err == nil && d != s && len(d) >= 4 {
			out = append(out, d)
		}
		if d, err := url.QueryUnescape(s); err == nil && d != s && len(d) >= 4 {
			out = append(out, d)
		}
	}
	_, rest, _ := strings.Cut(raw, "://")
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		if _, pw, ok := strings.Cut(rest[:i], ":"); ok {
			add(pw)
		}
	}
	if _, q, ok := strings.Cut(rest, "?"); ok {
		for _, kv := range strings.FieldsFunc(q, func(r rune) bool { return r == '&' || r == '?' || r == '#' }) {
			if k, v, _ := strings.Cut(kv, "="); strings.Contains(strings.ToLower(k), "pass") {
				add(v)
			}
		}
	}
	// Longest first: masking one never leaves part of a longer one.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}
