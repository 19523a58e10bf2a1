package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jamhq/jam/internal/jam"
)

// Path is the one path the server answers on.
const Path = "/mcp"

// Defaults of Config.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultCallsPerSecond = 10
	DefaultBurst          = 20
	DefaultMaxConcurrent  = 4
	DefaultMaxSessions    = 4096
	DefaultMaxTextBytes   = 64 << 10
	DefaultMaxRecipients  = 32
	DefaultMaxReasonBytes = 1 << 10
	DefaultCallTimeout    = time.Minute
)

// The http.Server's timeouts.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 30 * time.Second
	idleTimeout       = 60 * time.Second
)

// Config configures a Server. Zero bounds take their defaults.
type Config struct {
	// Actions does what the tools ask; required.
	Actions Actions
	// Logger is required. Calls are logged at debug, never their text.
	Logger *slog.Logger

	// MaxBodyBytes bounds a request's body; a longer one is answered 413.
	// Default 1 MiB.
	MaxBodyBytes int64
	// CallsPerSecond and Burst bound one session's tool calls (a token
	// bucket); a call over the rate is answered rate_limited. Default 10
	// a second with bursts of 20.
	CallsPerSecond float64
	Burst          int
	// MaxConcurrent bounds one session's calls inside Actions at once; one
	// more is answered rate_limited, not queued. Default 4.
	MaxConcurrent int
	// MaxSessions bounds the grants held at once (Grant fails beyond it).
	// Default 4096.
	MaxSessions int
	// MaxTextBytes bounds the text of room_reply and room_send (default
	// 64 KiB), MaxRecipients the entries of to and of mentions (default
	// 32), MaxReasonBytes room_no_reply's reason (default 1 KiB).
	MaxTextBytes   int
	MaxRecipients  int
	MaxReasonBytes int
	// CallTimeout bounds one call inside Actions; a call that runs out is
	// answered unavailable. Default a minute.
	CallTimeout time.Duration
	// URL is the endpoint Grant hands out when the caller serves Handler
	// itself (on a loopback listener, at Path) instead of calling Listen.
	URL string
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.CallsPerSecond == 0 {
		c.CallsPerSecond = DefaultCallsPerSecond
	}
	def(&c.Burst, DefaultBurst)
	def(&c.MaxConcurrent, DefaultMaxConcurrent)
	def(&c.MaxSessions, DefaultMaxSessions)
	def(&c.MaxTextBytes, DefaultMaxTextBytes)
	def(&c.MaxRecipients, DefaultMaxRecipients)
	def(&c.MaxReasonBytes, DefaultMaxReasonBytes)
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Actions == nil:
		return errors.New("mcp: actions are required")
	case c.Logger == nil:
		return errors.New("mcp: logger is required")
	case c.MaxBodyBytes < 1, c.CallsPerSecond <= 0, c.Burst < 1, c.MaxConcurrent < 1, c.MaxSessions < 1,
		c.MaxTextBytes < 1, c.MaxRecipients < 1, c.MaxReasonBytes < 1, c.CallTimeout <= 0:
		return errors.New("mcp: bounds must be positive")
	case int64(c.MaxTextBytes) > c.MaxBodyBytes:
		return errors.New("mcp: the text bound is larger than the body bound")
	}
	return nil
}

func (c Config) limits() limits {
	return limits{maxText: c.MaxTextBytes, maxRecipients: c.MaxRecipients, maxReason: c.MaxReasonBytes}
}

// Server is jam's MCP server. It is safe for concurrent use.
type Server struct {
	cfg     Config
	log     *slog.Logger
	lim     limits
	key     [sha256.Size]byte // derives tokens; never leaves the server
	handler http.Handler

	// base is cancelled by Close (cause jam.ErrStopping) once the graceful
	// wait is over, which cancels the calls still inside Actions.
	base   context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // the serving goroutine

	mu        sync.Mutex
	bySession map[jam.SessionID]*grant     // guarded by mu
	byHash    map[[sha256.Size]byte]*grant // guarded by mu
	serial    uint64                       // guarded by mu; the last grant's
	url       string                       // guarded by mu
	srv       *http.Server                 // guarded by mu; nil until Listen
	listening bool                         // guarded by mu; Listen was called
	closed    bool                         // guarded by mu
}

// New builds a Server; it serves nothing until Listen (or until the
// caller mounts Handler).
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "mcp"),
		lim:       cfg.limits(),
		url:       cfg.URL,
		bySession: map[jam.SessionID]*grant{},
		byHash:    map[[sha256.Size]byte]*grant{},
	}
	if _, err := rand.Read(s.key[:]); err != nil {
		return nil, fmt.Errorf("mcp: token key: %w", err)
	}
	s.base, s.cancel = context.WithCancelCause(context.Background())
	s.handler = s.newHandler()
	return s, nil
}

// Listen binds a loopback TCP address ("127.0.0.1:0" when addr is empty)
// and serves until Close, on a goroutine the server owns. It fails for an
// address that is not loopback, and when called twice or after Close.
func (s *Server) Listen(addr string) error {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("mcp listen: %w: %v", jam.ErrInvalid, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("mcp listen: %w: %q is not a loopback IP address", jam.ErrInvalid, host)
	}
	s.mu.Lock()
	if s.listening || s.closed {
		s.mu.Unlock()
		return errors.New("mcp listen: already listening or closed")
	}
	s.listening = true
	s.mu.Unlock()

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		s.mu.Lock()
		s.listening = false
		s.mu.Unlock()
		return fmt.Errorf("mcp listen: %w", err)
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return s.base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ln.Close()
		return errors.New("mcp listen: closed")
	}
	s.srv = srv
	s.url = "http://" + ln.Addr().String() + Path
	s.wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("mcp server stopped", "error", err)
		}
	})
	return nil
}

// URL is the endpoint: http://127.0.0.1:PORT/mcp once listening, else
// Config.URL.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close stops serving. It lets calls under way finish until ctx ends,
// then cancels the calls still inside Actions and closes the connections;
// it returns once the serving goroutine has exited, with ctx's error if
// the calls did not finish in time. Close is safe twice and before
// Listen; the grants are dropped.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	already := s.closed
	s.closed = true
	clear(s.bySession)
	clear(s.byHash)
	s.mu.Unlock()
	if already {
		s.wg.Wait()
		return nil
	}
	var err error
	if srv != nil {
		if err = srv.Shutdown(ctx); err != nil {
			s.cancel(jam.ErrStopping)
			srv.Close()
			err = fmt.Errorf("mcp close: %w", err)
		}
	}
	s.cancel(jam.ErrStopping)
	s.wg.Wait()
	return err
}

// Handler serves the MCP endpoint at Path, for tests and for a daemon
// that mounts it on its own loopback listener (with Config.URL set).
func (s *Server) Handler() http.Handler { return s.handler }

// closing reports whether Close has begun.
func (s *Server) closing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// sdkServer builds the SDK's server with jam's tools.
func (s *Server) sdkServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: ServerName, Title: "jam", Version: serverVersion()}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(s.log),
		// Tools only, and a fixed list: no logging to the client, no
		// list-changed notifications.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, t := range s.tools() {
		srv.AddTool(t.def, s.toolHandler(t))
	}
	return srv
}
