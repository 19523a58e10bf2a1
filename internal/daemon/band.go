package daemon

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/cli"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/hub"
)

// bandLink is the daemon's connection to Band or to its embedded hub.
type bandLink struct {
	mode    string // "embedded" or "remote"
	url     string
	keyFile string // the owner key file of the embedded hub
	hub     *hub.Hub
	http    *band.HTTP
	user    *band.Client
	userID  string
	handle  string
	err     error // the last failure to reach Band, if any
}

// startBand starts the embedded hub (or points at a remote Band) and
// checks the person's credential.
func (d *daemon) startBand(ctx context.Context, stack *stopStack) error {
	link := &bandLink{http: band.NewHTTP(band.HTTPConfig{Timeout: d.cfg.BandTimeout})}
	stack.push("band http client", func(context.Context) error { link.http.CloseIdle(); return nil })
	key := d.cfg.BandKey
	if d.cfg.Band == config.BandEmbedded {
		dir := filepath.Join(d.cfg.DataDir, "hub")
		if err := datadir.Prepare(dir); err != nil {
			return err
		}
		lock, err := datadir.Acquire(dir)
		if err != nil {
			return fmt.Errorf("embedded hub: %w", err)
		}
		stack.push("hub data directory lock", func(context.Context) error { return lock.Release() })
		h, err := hub.New(hub.Config{Addr: d.cfg.HubAddr, DataDir: dir, Logger: d.log})
		if err != nil {
			return fmt.Errorf("embedded hub: %w", err)
		}
		if err := h.Start(ctx); err != nil {
			return fmt.Errorf("start embedded hub: %w", err)
		}
		// Idle client connections go first: one that a cancelled request or
		// socket dial left open (the transport pools it; websocket dials use
		// the default client) would hold the hub's drain for 5 s.
		stack.push("embedded hub", func(ctx context.Context) error {
			link.http.CloseIdle()
			http.DefaultClient.CloseIdleConnections()
			return h.Stop(ctx)
		})
		link.mode, link.url, link.hub = "embedded", h.URL(), h
		link.keyFile = filepath.Join(dir, "owner.key")
		key = h.OwnerKey()
	} else {
		link.mode, link.url = "remote", d.cfg.Band
	}
	user, err := band.NewClient(link.http, link.url, band.APIKey(key))
	if err != nil {
		return err
	}
	link.user = user
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if p, err := user.Profile(pctx); err != nil {
		if link.mode == "embedded" {
			return fmt.Errorf("embedded hub profile: %w", err)
		}
		// A remote Band may be down or unreachable now; the daemon still
		// runs and reports it.
		link.err = err
		d.log.Warn("band unreachable", "url", link.url, "err", err)
	} else {
		link.userID, link.handle = p.ID, p.Handle
	}
	d.band = link
	return nil
}

func (l *bandLink) status() wire.BandStatus {
	st := wire.BandStatus{Mode: l.mode, URL: l.url, OwnerKeyFile: l.keyFile, UserID: l.userID, Handle: l.handle}
	if l.err != nil {
		st.Error = l.err.Error()
	}
	return st
}

// RunHub runs the hub alone for "jam hub": it locks the hub's data
// directory so no daemon's embedded hub shares it, then runs the hub.
func RunHub(ctx context.Context, opts cli.HubOptions) error {
	cfg := config.Config{LogLevel: opts.LogLevel, LogFormat: "text"}
	if cfg.LogLevel == "" {
		cfg.LogLevel = config.DefaultLogLevel
	}
	if err := datadir.Prepare(opts.DataDir); err != nil {
		return err
	}
	lock, err := datadir.Acquire(opts.DataDir)
	if err != nil {
		return err
	}
	defer lock.Release()
	return hub.Run(ctx, hub.Config{Addr: opts.Addr, DataDir: opts.DataDir, Logger: newLogger(cfg, opts.IO.ErrOut)}, opts.IO.Out)
}
