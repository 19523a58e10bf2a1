package api

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/connlimit"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/metrics"
)

// Backend is what the handlers need from the daemon.
type Backend interface {
	Status(ctx context.Context) (wire.Status, error)
	Messaging
	// Events subscribes to the event stream from r.After (see EventStream).
	Events(ctx context.Context, r wire.EventsRequest) (EventStream, error)
	Runtime
	Usage
	Lifecycle
	Results
	Connections
	Jobs
	Deliveries
	Approvals
	Delegations
}

// Runtime is the daemon's owned-runtime surface.
type Runtime interface {
	Sessions(ctx context.Context) ([]wire.Session, error)
	Turns(ctx context.Context, session string) ([]wire.Turn, error)
	// Turn returns one turn with its session and executions.
	Turn(ctx context.Context, turn string) (wire.Turn, error)
	// SessionMessages lists a session's accepted messages.
	SessionMessages(ctx context.Context, session string) ([]wire.SessionMessage, error)
	// SessionSend accepts a person's message to a session.
	SessionSend(ctx context.Context, session string, r wire.SessionSendRequest) (wire.SessionSendResult, error)
	// CancelTurn cancels a queued or running turn.
	CancelTurn(ctx context.Context, turn string) error
	// AgentConfig changes an owned agent's desired configuration.
	AgentConfig(ctx context.Context, agent string, r wire.AgentConfigRequest) (wire.AgentRuntimeStatus, error)
	// TurnOutput returns what a turn streamed, as far as it is kept.
	TurnOutput(ctx context.Context, turn string) (wire.TurnOutput, error)
	// Worktrees lists the sessions' worktrees.
	Worktrees(ctx context.Context) ([]wire.Worktree, error)
	// Quarantine lists the records taken out of the inbound pipeline
	// because they could no longer be read, oldest first.
	Quarantine(ctx context.Context) ([]wire.QuarantinedRecord, error)
	// WorktreeArchive, WorktreeRemove and WorktreeRestore change a
	// session's worktree.
	WorktreeArchive(ctx context.Context, session string) (wire.Worktree, error)
	WorktreeRemove(ctx context.Context, session string, r wire.WorktreeRemoveRequest) (wire.Worktree, error)
	WorktreeRestore(ctx context.Context, session string, r wire.WorktreeRestoreRequest) (wire.Worktree, error)
}

// Messaging is the daemon's messaging surface: accounts, agents, rooms,
// bindings, and the attached-agent inbox. Errors wrap the jam sentinels.
type Messaging interface {
	Accounts(ctx context.Context) ([]wire.Account, error)
	AccountAdd(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error)
	Agents(ctx context.Context) ([]wire.Agent, error)
	AgentAdd(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error)
	Rooms(ctx context.Context, account string) ([]wire.Room, error)
	RoomCreate(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error)
	RoomAdd(ctx context.Context, room string, r wire.RoomAddRequest) error
	Bind(ctx context.Context, r wire.BindRequest) (wire.Binding, error)
	Unbind(ctx context.Context, binding string) error
	// Inbox lists the oldest queued messages q selects.
	Inbox(ctx context.Context, q wire.InboxQuery) (wire.Inbox, error)
	// WaitInbox returns as soon as a message is queued, or empty on timeout.
	WaitInbox(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error)
	Reply(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error)
	Ack(ctx context.Context, msg string, r wire.AckRequest) error
	Send(ctx context.Context, r wire.SendRequest) (wire.SendResult, error)
	RoomMessages(ctx context.Context, room, account string, limit int) (wire.RoomMessages, error)
	RoomPost(ctx context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error)
	RoomParticipants(ctx context.Context, room, account string) ([]wire.Participant, error)
	// Notice queues a local notice for an agent; it never reaches Band.
	Notice(ctx context.Context, r wire.NoticeRequest) (wire.NoticeResult, error)
}

// Config configures a Server.
type Config struct {
	// SocketPath is the unix socket to serve on. Required.
	SocketPath string
	// HTTPAddr is a loopback TCP address to serve on as well; "" disables.
	HTTPAddr string
	// TokenPath receives the bearer token for the TCP listener (mode 0600).
	// Required when HTTPAddr is set.
	TokenPath string
	// Logger receives request failures. Required.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies; default 1 MiB.
	MaxBodyBytes int64
	// ReadHeaderTimeout bounds the reading of a request's headers; default
	// 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, headers and body,
	// so a body that never comes does not hold a connection; default 30s.
	// Once the body is read the handler runs without a read deadline.
	ReadTimeout time.Duration
	// WriteTimeout bounds an answer, from the end of the request's
	// headers; default 2m. A long poll (waitInbox) extends it by its wait,
	// and an event stream sets a deadline per write instead.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long; default
	// 60s.
	IdleTimeout time.Duration
	// MaxSocketConns and MaxHTTPConns cap the connections held on the unix
	// socket and on the TCP listener, each on its own, so a flood of TCP
	// connections never keeps the CLI out; defaults 256 and 512. At the
	// cap the connection idle longest is closed (see package connlimit).
	MaxSocketConns int
	MaxHTTPConns   int
	// Heartbeat is the interval of the comment lines that keep a
	// Server-Sent Events stream alive; default 15s.
	Heartbeat time.Duration
	// UI, when set, is the web UI of the TCP listener (see UI).
	UI UI
	// HTTPFallback: when HTTPAddr's port is taken, listen on a free port
	// of the same host instead of failing (for the default address, so a
	// second daemon on the machine still starts).
	HTTPFallback bool
	// WrapHandler, when set, wraps the outermost handler of each listener:
	// a test's OpenAPI validator of every answer (apitest.OpenAPI's
	// Middleware). Nil in the daemon users run.
	WrapHandler func(http.Handler) http.Handler
	// Metrics, when set, is served at GET /metrics (on the TCP listener
	// behind the bearer token, as the API is) and records each request's
	// duration by route pattern. Nil: /metrics answers not_found.
	Metrics *metrics.Metrics
}

// UI is the web UI on the TCP listener: it serves every path outside the
// API's, and vouches for the browser sessions it signed in, which the
// API then accepts as it accepts the bearer token.
type UI interface {
	// ServeHTTP serves the UI's pages, assets and sign-in.
	http.Handler
	// Authorize returns nil when r, a request to the API without the
	// bearer token, comes from a signed-in UI page; an error wrapping
	// jam.ErrUnauthenticated when it carries no valid session, or one
	// wrapping jam.ErrPermissionDenied when it fails the UI's CSRF checks.
	Authorize(r *http.Request) error
	// LoginToken mints a one-time token that signs a browser in.
	LoginToken() (string, error)
}

func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 1 << 20
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
		c.IdleTimeout = 60 * time.Second
	}
	if c.MaxSocketConns == 0 {
		c.MaxSocketConns = 256
	}
	if c.MaxHTTPConns == 0 {
		c.MaxHTTPConns = 512
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = 15 * time.Second
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.SocketPath == "":
		return errors.New("api: socket path is required")
	case c.HTTPAddr != "" && c.TokenPath == "":
		return errors.New("api: a token path is required with an HTTP address")
	case c.Logger == nil:
		return errors.New("api: logger is required")
	}
	// sockaddr_un holds 108 bytes including the terminating NUL.
	if len(c.SocketPath) > 107 {
		return fmt.Errorf("%w: control socket path %s is %d bytes, over the 107 a unix socket allows; choose a shorter data directory", jam.ErrInvalid, c.SocketPath, len(c.SocketPath))
	}
	return nil
}

// Server serves the control API. Start it once; Stop it once or more.
type Server struct {
	cfg     Config
	backend Backend
	log     *slog.Logger
	handler http.Handler
	// metricsHandler serves cfg.Metrics (nil when it is).
	metricsHandler http.Handler

	mu       sync.Mutex
	servers  []*http.Server // guarded by mu
	httpAddr string         // guarded by mu
	token    string         // guarded by mu
	// held is the context of held-open requests (waitInbox), derived in
	// Start from the daemon's and cancelled with jam.ErrStopping at the
	// start of Stop, so a long poll never holds up the drain.
	held     context.Context         // guarded by mu
	stopHeld context.CancelCauseFunc // guarded by mu
	wg       sync.WaitGroup
}

// New builds a Server; nothing listens until Start.
func New(cfg Config, backend Backend) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, backend: backend, log: cfg.Logger.With("component", "api")}
	if cfg.Metrics != nil {
		s.metricsHandler = cfg.Metrics.Handler()
	}
	s.handler = s.routes()
	return s, nil
}

// transport records which listener a request came through.
type transport int

const (
	viaSocket transport = iota + 1
	viaTCP
)

type transportKey struct{}

// Start listens on the socket (and the TCP address, if configured) and
// serves until Stop. Requests inherit ctx, the daemon's context.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.servers) > 0 {
		return errors.New("api: already started")
	}
	held, stopHeld := context.WithCancelCause(ctx)
	defer func() {
		// On failure nothing serves, so nothing is held.
		if len(s.servers) == 0 {
			stopHeld(nil)
		}
	}()
	// A socket file left by a daemon that died is stale: the caller holds
	// the data-directory lock, so no live daemon owns it.
	if err := os.Remove(s.cfg.SocketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", s.cfg.SocketPath, err)
	}
	// Bound under a 077 umask: mode 0600 from its first instant.
	ul, err := datadir.ListenUnix(s.cfg.SocketPath)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.SocketPath, err)
	}
	listeners := []struct {
		l  net.Listener
		tr transport
		h  http.Handler
	}{{ul, viaSocket, s.handler}}

	if s.cfg.HTTPAddr != "" {
		token, err := writeToken(s.cfg.TokenPath)
		if err != nil {
			ul.Close()
			return err
		}
		tl, err := net.Listen("tcp", s.cfg.HTTPAddr)
		if err != nil && s.cfg.HTTPFallback && errors.Is(err, syscall.EADDRINUSE) {
			host, _, _ := net.SplitHostPort(s.cfg.HTTPAddr)
			s.log.Warn("http address in use; listening on a free port instead", "addr", s.cfg.HTTPAddr)
			tl, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
		}
		if err != nil {
			ul.Close()
			return fmt.Errorf("listen on %s: %w", s.cfg.HTTPAddr, err)
		}
		s.token = token
		s.httpAddr = tl.Addr().String()
		listeners = append(listeners, struct {
			l  net.Listener
			tr transport
			h  http.Handler
		}{tl, viaTCP, s.requireToken(s.handler)})
	}

	for _, ln := range listeners {
		tr := ln.tr
		limit, name := s.cfg.MaxSocketConns, "control socket"
		if tr == viaTCP {
			limit, name = s.cfg.MaxHTTPConns, "http api"
		}
		l := connlimit.New(ln.l, limit, name, s.log)
		h := s.bounded(ln.h)
		if wrapHandler != nil {
			h = wrapHandler(h)
		}
		if s.cfg.WrapHandler != nil {
			h = s.cfg.WrapHandler(h)
		}
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
			ReadTimeout:       s.cfg.ReadTimeout,
			WriteTimeout:      s.cfg.WriteTimeout,
			IdleTimeout:       s.cfg.IdleTimeout,
			ConnState:         l.ConnState,
			BaseContext:       func(net.Listener) context.Context { return ctx },
			ConnContext: func(c context.Context, _ net.Conn) context.Context {
				return context.WithValue(c, transportKey{}, tr)
			},
			// Accept errors (out of descriptors) and protocol errors.
			ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		}
		s.servers = append(s.servers, srv)
		s.wg.Go(func() {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("serve", "addr", l.Addr().String(), "err", err)
			}
		})
	}
	s.held, s.stopHeld = held, stopHeld
	return nil
}

// bounded is the outermost handler of both listeners: API answers get
// nosniff and no-store. (The server's ReadTimeout bounds the reading of a
// request, body included; net/http lifts the read deadline itself once the
// body is read, so a handler that runs longer keeps its context.)
func (s *Server) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(transportKey{}) == viaSocket || isAPIPath(r.URL.Path) {
			h := w.Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// holdWrite extends the answer's write deadline by d, for a request held
// open that long (the waitInbox long poll).
func (s *Server) holdWrite(w http.ResponseWriter, d time.Duration) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d + s.cfg.WriteTimeout))
}

// HTTPAddr returns the bound TCP address, or "" when TCP is off.
func (s *Server) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.httpAddr
}

// Stop ends held-open requests (waitInbox answers "stopping"), stops
// accepting, waits for in-flight requests until ctx expires, then closes
// the rest, and returns once every serving goroutine has exited. It
// removes the socket file. Safe before Start and twice.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	stopHeld := s.stopHeld // held stays: cancelled, it refuses late polls
	s.mu.Unlock()
	if stopHeld != nil {
		// End long polls first: Shutdown waits for every request to finish.
		stopHeld(jam.ErrStopping)
	}
	var errs []error
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			// Draining ran out of time: cut the remaining connections.
			errs = append(errs, fmt.Errorf("drain api: %w", err))
			srv.Close()
		}
	}
	s.wg.Wait()
	if len(servers) > 0 {
		if err := os.Remove(s.cfg.SocketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeToken writes a fresh random token to path with mode 0600, replacing
// any earlier one atomically.
func writeToken(path string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate api token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return "", fmt.Errorf("write api token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write api token: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write api token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write api token: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write api token: %w", err)
	}
	return token, nil
}

// requireToken guards the TCP listener: the request must name a loopback
// host (which defeats DNS rebinding from a browser page on another
// origin), and an API request must carry the bearer token or, with a UI
// configured, a session the UI vouches for. Every other path is the UI's.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			s.writeError(w, r, &apiError{code: wire.CodePermissionDenied, msg: "host " + clip(r.Host) + " is not a loopback name"})
			return
		}
		ui := s.cfg.UI
		if ui != nil && !isAPIPath(r.URL.Path) {
			ui.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		token := s.token
		s.mu.Unlock()
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			if ui != nil && r.Header.Get("Authorization") == "" {
				err := ui.Authorize(r)
				if err == nil {
					next.ServeHTTP(w, r)
					return
				}
				if errors.Is(err, jam.ErrPermissionDenied) {
					s.writeError(w, r, err)
					return
				}
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="jam"`)
			s.writeError(w, r, &apiError{code: wire.CodeUnauthenticated, msg: "missing or wrong bearer token (see api.token in the data directory)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isAPIPath reports whether a path on the TCP listener belongs to the API
// (the bearer token guards it) rather than the web UI. /metrics is the
// API's.
func isAPIPath(p string) bool {
	return p == "/v1" || strings.HasPrefix(p, "/v1/") || p == "/api" || strings.HasPrefix(p, "/api/") || p == "/metrics"
}

// UILoginURL mints a one-time sign-in link to the web UI.
func (s *Server) UILoginURL() (string, error) {
	s.mu.Lock()
	addr := s.httpAddr
	s.mu.Unlock()
	if s.cfg.UI == nil || addr == "" {
		return "", fmt.Errorf("%w: the web ui is off (http_addr is off)", jam.ErrUnavailable)
	}
	token, err := s.cfg.UI.LoginToken()
	if err != nil {
		return "", err
	}
	return "http://" + addr + "/?token=" + token, nil
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// writeJSON writes v with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	if err := enc.Encode(v); err != nil {
		s.log.Debug("write response", "err", err)
	}
}

// writeError writes err in the error envelope.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code, msg := classify(err)
	if code == wire.CodeInternal {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	s.writeJSON(w, statusOf(code), wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: msg}})
}
