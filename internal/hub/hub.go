package hub

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/connlimit"
	"github.com/jamhq/jam/internal/jam"
)

// File names inside Config.DataDir.
const (
	dbFile       = "hub.db"
	ownerKeyFile = "owner.key"
)

// Config configures a [Hub].
type Config struct {
	// Addr is the TCP listen address. Default "127.0.0.1:0".
	Addr string
	// DataDir holds hub.db and owner.key; created with mode 0700 if
	// missing. Required.
	DataDir string
	// Logger receives the hub's structured log. Nil discards it.
	Logger *slog.Logger
	// HeartbeatTimeout closes a socket silent for this long. Default 45s.
	HeartbeatTimeout time.Duration
	// ActivityTTL is how long a "working" report lasts. Default 10s.
	ActivityTTL time.Duration
	// OwnerEmail and OwnerHandle name the owner user created on first
	// start. Defaults "owner@localhost" and "owner". A later start finds
	// the owner by email and keeps its stored handle.
	OwnerEmail  string
	OwnerHandle string
	// SocketQueue bounds each socket's outbound queue, in frames; a socket
	// whose queue overflows is closed. Default 256.
	SocketQueue int
	// MaxConns caps the connections the hub holds, WebSockets included;
	// at the cap the one idle longest is closed (see package connlimit).
	// Default 1024.
	MaxConns int
	// ReadHeaderTimeout, ReadTimeout (a whole request, body included),
	// WriteTimeout (an answer) and IdleTimeout (a keep-alive connection
	// between requests) bound slow or silent clients. Defaults 10s, 30s,
	// 2m and 2m. A WebSocket is not bound by them once upgraded: its
	// heartbeat timeout and per-frame write timeout apply.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
}

var handlePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = 45 * time.Second
	}
	if c.ActivityTTL == 0 {
		c.ActivityTTL = protocol.ActivityTTL
	}
	if c.OwnerEmail == "" {
		c.OwnerEmail = "owner@localhost"
	}
	if c.OwnerHandle == "" {
		c.OwnerHandle = "owner"
	}
	if c.SocketQueue == 0 {
		c.SocketQueue = 256
	}
	if c.MaxConns == 0 {
		c.MaxConns = 1024
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = 10 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 2 * time.Minute
	}
	if c.IdleTimeout == 0 {
		// Longer than the 90 s after which jam's Band client drops an idle
		// connection, so the client, not the hub, closes it first.
		c.IdleTimeout = 2 * time.Minute
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.DataDir == "":
		return fmt.Errorf("%w: hub data dir is required", jam.ErrInvalid)
	case c.HeartbeatTimeout < 0:
		return fmt.Errorf("%w: heartbeat timeout %s must be positive", jam.ErrInvalid, c.HeartbeatTimeout)
	case c.ActivityTTL < 0:
		return fmt.Errorf("%w: activity TTL %s must be positive", jam.ErrInvalid, c.ActivityTTL)
	case c.SocketQueue < 1:
		return fmt.Errorf("%w: socket queue %d must be positive", jam.ErrInvalid, c.SocketQueue)
	case c.MaxConns < 1:
		return fmt.Errorf("%w: connection cap %d must be positive", jam.ErrInvalid, c.MaxConns)
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0:
		return fmt.Errorf("%w: server timeouts must be positive", jam.ErrInvalid)
	case !handlePattern.MatchString(c.OwnerHandle):
		return fmt.Errorf("%w: owner handle %q must be lower-case letters, digits, '_', '.' or '-'", jam.ErrInvalid, c.OwnerHandle)
	case !strings.Contains(c.OwnerEmail, "@"):
		return fmt.Errorf("%w: owner email %q has no '@'", jam.ErrInvalid, c.OwnerEmail)
	}
	return nil
}

// Hub is the embedded Band-compatible server. See the package doc.
type Hub struct {
	cfg     Config
	log     *slog.Logger
	now     func() time.Time
	handler http.Handler
	broker  *broker
	act     *activity

	// db is nil before Start and after Stop; handlers answer 503 then.
	db atomic.Pointer[db]

	mu       sync.Mutex // guards the fields below
	state    int
	srv      *http.Server
	url      string
	ownerKey string
	cancel   context.CancelCauseFunc

	// trackMu guards closing and every wg.Add, so no goroutine is added
	// once Stop has begun waiting.
	trackMu sync.Mutex
	closing bool
	wg      sync.WaitGroup

	// writeMu serialises every write transaction with the pushes it
	// causes, so sockets see events in commit order.
	writeMu sync.Mutex
}

// Hub lifecycle states.
const (
	stateNew = iota
	stateStarted
	stateStopped
)

// New builds a Hub; nothing is opened until Start.
func New(cfg Config) (*Hub, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("new hub: %w", err)
	}
	h := &Hub{cfg: cfg, log: cfg.Logger.With("component", "hub"), now: time.Now}
	h.broker = newBroker(h.log)
	h.act = newActivity()
	h.handler = noSniffNoStore(h.routes())
	return h, nil
}

// noSniffNoStore marks every answer as not to be content-sniffed nor
// cached: they are JSON for one key holder.
func noSniffNoStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// Start opens and migrates the store, ensures the owner user and its key
// file, listens and serves. It returns once the hub is listening.
func (h *Hub) Start(ctx context.Context) (err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != stateNew {
		return errors.New("start hub: already started")
	}
	if err := os.MkdirAll(h.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("start hub: %w", err)
	}
	d, err := openDB(ctx, filepath.Join(h.cfg.DataDir, dbFile))
	if err != nil {
		return fmt.Errorf("start hub: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.close())
		}
	}()
	key, err := h.ensureOwner(ctx, d)
	if err != nil {
		return fmt.Errorf("start hub: %w", err)
	}
	ln, err := net.Listen("tcp", h.cfg.Addr)
	if err != nil {
		return fmt.Errorf("start hub: %w", err)
	}
	limited := connlimit.New(ln, h.cfg.MaxConns, "hub", h.log)
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	srv := &http.Server{
		Handler:           h.handler,
		ReadHeaderTimeout: h.cfg.ReadHeaderTimeout,
		ReadTimeout:       h.cfg.ReadTimeout,
		WriteTimeout:      h.cfg.WriteTimeout,
		IdleTimeout:       h.cfg.IdleTimeout,
		ConnState:         limited.ConnState,
		BaseContext:       func(net.Listener) context.Context { return runCtx },
		// Accept errors (out of descriptors) and protocol errors.
		ErrorLog: slog.NewLogLogger(h.log.Handler(), slog.LevelWarn),
	}
	h.db.Store(d)
	h.srv, h.cancel, h.ownerKey = srv, cancel, key
	h.url = "http://" + ln.Addr().String()
	h.state = stateStarted
	h.wg.Go(func() { h.act.loop(runCtx, h.expireActivity) })
	h.wg.Go(func() {
		if err := srv.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("serve", "addr", ln.Addr().String(), "err", err)
		}
	})
	h.log.Info("hub listening", "url", h.url, "data_dir", h.cfg.DataDir)
	return nil
}

// Stop closes every socket (code 1012, service restart, so clients
// reconnect), drains HTTP requests until ctx ends and then cuts the rest,
// waits for every goroutine the hub started, and closes the store. It is
// safe before Start and more than once.
func (h *Hub) Stop(ctx context.Context) error {
	h.mu.Lock()
	if h.state != stateStarted {
		h.state = stateStopped
		h.mu.Unlock()
		return nil
	}
	h.state = stateStopped
	srv, cancel := h.srv, h.cancel
	h.mu.Unlock()

	h.trackMu.Lock()
	h.closing = true
	h.trackMu.Unlock()
	// Each socket's writer sends the close frame and waits for the
	// handshake; the base context is cancelled only after that (or when
	// ctx ends), because cancelling it tears the connections down at once
	// and a client would see a drop instead of 1012.
	for _, s := range h.broker.closeAll(websocket.StatusServiceRestart, "hub stopping") {
		select {
		case <-s.writerDone:
		case <-ctx.Done():
		}
	}

	var errs []error
	if err := srv.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("drain hub http: %w", err))
		errs = append(errs, srv.Close())
	}
	cancel(jam.ErrStopping)
	h.wg.Wait()
	if d := h.db.Swap(nil); d != nil {
		if err := d.close(); err != nil {
			errs = append(errs, fmt.Errorf("close hub db: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop hub: %w", err)
	}
	h.log.Info("hub stopped")
	return nil
}

// track registers a goroutine with the hub's WaitGroup; false once Stop
// has begun.
func (h *Hub) track() bool {
	h.trackMu.Lock()
	defer h.trackMu.Unlock()
	if h.closing {
		return false
	}
	h.wg.Add(1)
	return true
}

// URL is the REST base, "http://127.0.0.1:PORT"; "" before Start.
func (h *Hub) URL() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.url
}

// OwnerKey is the owner's user API key; "" before Start.
func (h *Hub) OwnerKey() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ownerKey
}

// Handler is the hub's HTTP handler, REST and WebSocket. It answers 503
// unless the hub is started.
func (h *Hub) Handler() http.Handler { return h.handler }

// ensureOwner finds or creates the owner user and returns a working user
// key for it: the one in owner.key if it still verifies, else a new one,
// written to owner.key (mode 0600) before the transaction commits.
func (h *Hub) ensureOwner(ctx context.Context, d *db) (string, error) {
	var key string
	err := inTx(ctx, d.writer, func(tx *sql.Tx) error {
		u, err := scanUser(tx.QueryRowContext(ctx, userSelectByEmail, h.cfg.OwnerEmail))
		if errors.Is(err, sql.ErrNoRows) {
			now := h.now().UnixMicro()
			u = userRow{ID: newUUID(), Email: h.cfg.OwnerEmail, Handle: h.cfg.OwnerHandle}
			_, err = tx.ExecContext(ctx, userInsert, u.ID, u.Email, u.Handle, now, now)
		}
		if err != nil {
			return fmt.Errorf("owner user: %w", err)
		}
		path := filepath.Join(h.cfg.DataDir, ownerKeyFile)
		if b, err := os.ReadFile(path); err == nil {
			k := strings.TrimSpace(string(b))
			var userID, agentID sql.NullString
			err := tx.QueryRowContext(ctx, apiKeySelect, hashKey(k)).Scan(&userID, &agentID)
			if err == nil && userID.String == u.ID {
				key = k
				return nil
			}
		}
		k := newKey(protocol.UserKeyPrefix)
		if _, err := tx.ExecContext(ctx, apiKeyInsertUser, hashKey(k), u.ID, h.now().UnixMicro()); err != nil {
			return fmt.Errorf("owner key: %w", err)
		}
		if err := writeFileAtomic(path, []byte(k+"\n")); err != nil {
			return fmt.Errorf("owner key: %w", err)
		}
		key = k
		return nil
	})
	return key, err
}

// writeFileAtomic writes b to path with mode 0600 through a temporary file
// and a rename, so a crash leaves the old file or the new one.
func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".owner-key-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	err = errors.Join(err, f.Chmod(0o600), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}

// URLFile names the file in the data directory that holds a running
// hub's URL while Run serves, so scripts can find a hub started on port 0.
const URLFile = "hub.url"

// Run starts a hub, writes its URL to URLFile, prints where it listens and
// where the owner key is, serves until ctx is done, then stops it within
// 5 s and removes URLFile.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	h, err := New(cfg)
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	urlFile := filepath.Join(h.cfg.DataDir, URLFile)
	werr := os.WriteFile(urlFile, []byte(h.URL()+"\n"), 0o600)
	if werr == nil {
		fmt.Fprintf(out, "hub listening on %s\n", h.URL())
		fmt.Fprintf(out, "owner key in %s\n", filepath.Join(h.cfg.DataDir, ownerKeyFile))
		<-ctx.Done()
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = h.Stop(stopCtx)
	if rerr := os.Remove(urlFile); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if werr != nil {
		return errors.Join(fmt.Errorf("write %s: %w", urlFile, werr), err)
	}
	return err
}
