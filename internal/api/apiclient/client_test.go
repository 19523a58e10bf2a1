package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/api"
	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backend answers Status with pid 7 and err, and every other method with
// its Func field; a method whose field is nil answers not_implemented.
type backend struct {
	err error

	AccountsFunc   func(ctx context.Context) ([]wire.Account, error)
	AccountAddFunc func(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error)
	AgentsFunc     func(ctx context.Context) ([]wire.Agent, error)
	AgentAddFunc   func(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error)
	RoomsFunc      func(ctx context.Context, account string) ([]wire.Room, error)
	RoomCreateFunc func(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error)
	RoomAddFunc    func(ctx context.Context, room string, r wire.RoomAddRequest) error
	BindFunc       func(ctx context.Context, r wire.BindRequest) (wire.Binding, error)
	UnbindFunc     func(ctx context.Context, binding string) error
	InboxFunc      func(ctx context.Context, agent, room string, unrouted bool) (wire.Inbox, error)
	WaitInboxFunc  func(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error)
	ReplyFunc      func(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error)
	AckFunc        func(ctx context.Context, msg string, r wire.AckRequest) error
	SendFunc       func(ctx context.Context, r wire.SendRequest) (wire.SendResult, error)
}

var _ api.Backend = backend{}

var errUnset = fmt.Errorf("fake backend: method not set: %w", jam.ErrNotImplemented)

func (b backend) Status(context.Context) (wire.Status, error) {
	return wire.Status{State: wire.StateRunning, PID: 7}, b.err
}

func (b backend) Accounts(ctx context.Context) ([]wire.Account, error) {
	if b.AccountsFunc == nil {
		return nil, errUnset
	}
	return b.AccountsFunc(ctx)
}

func (b backend) AccountAdd(ctx context.Context, r wire.AccountAddRequest) (wire.Account, error) {
	if b.AccountAddFunc == nil {
		return wire.Account{}, errUnset
	}
	return b.AccountAddFunc(ctx, r)
}

func (b backend) Agents(ctx context.Context) ([]wire.Agent, error) {
	if b.AgentsFunc == nil {
		return nil, errUnset
	}
	return b.AgentsFunc(ctx)
}

func (b backend) AgentAdd(ctx context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
	if b.AgentAddFunc == nil {
		return wire.Agent{}, errUnset
	}
	return b.AgentAddFunc(ctx, r)
}

func (b backend) Rooms(ctx context.Context, account string) ([]wire.Room, error) {
	if b.RoomsFunc == nil {
		return nil, errUnset
	}
	return b.RoomsFunc(ctx, account)
}

func (b backend) RoomCreate(ctx context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
	if b.RoomCreateFunc == nil {
		return wire.Room{}, errUnset
	}
	return b.RoomCreateFunc(ctx, r)
}

func (b backend) RoomAdd(ctx context.Context, room string, r wire.RoomAddRequest) error {
	if b.RoomAddFunc == nil {
		return errUnset
	}
	return b.RoomAddFunc(ctx, room, r)
}

func (b backend) Bind(ctx context.Context, r wire.BindRequest) (wire.Binding, error) {
	if b.BindFunc == nil {
		return wire.Binding{}, errUnset
	}
	return b.BindFunc(ctx, r)
}

func (b backend) Unbind(ctx context.Context, binding string) error {
	if b.UnbindFunc == nil {
		return errUnset
	}
	return b.UnbindFunc(ctx, binding)
}

func (b backend) Inbox(ctx context.Context, agent, room string, unrouted bool) (wire.Inbox, error) {
	if b.InboxFunc == nil {
		return wire.Inbox{}, errUnset
	}
	return b.InboxFunc(ctx, agent, room, unrouted)
}

func (b backend) WaitInbox(ctx context.Context, r wire.WaitRequest) (wire.Inbox, error) {
	if b.WaitInboxFunc == nil {
		return wire.Inbox{}, errUnset
	}
	return b.WaitInboxFunc(ctx, r)
}

func (b backend) Reply(ctx context.Context, msg string, r wire.ReplyRequest) (wire.ReplyResult, error) {
	if b.ReplyFunc == nil {
		return wire.ReplyResult{}, errUnset
	}
	return b.ReplyFunc(ctx, msg, r)
}

func (b backend) Ack(ctx context.Context, msg string, r wire.AckRequest) error {
	if b.AckFunc == nil {
		return errUnset
	}
	return b.AckFunc(ctx, msg, r)
}

func (b backend) Send(ctx context.Context, r wire.SendRequest) (wire.SendResult, error) {
	if b.SendFunc == nil {
		return wire.SendResult{}, errUnset
	}
	return b.SendFunc(ctx, r)
}

func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "jamc")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func startServer(t *testing.T, socket string, b api.Backend) *api.Server {
	t.Helper()
	srv, err := api.New(api.Config{SocketPath: socket, Logger: slog.New(slog.DiscardHandler)}, b)
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { require.NoError(t, srv.Stop(context.Background())) })
	return srv
}

func TestClient_Status(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	startServer(t, socket, backend{})
	c := apiclient.New(socket)
	defer c.Close()
	st, err := c.Status(t.Context())
	require.NoError(t, err)
	require.Equal(t, 7, st.PID)
}

func TestClient_errorEnvelope(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	startServer(t, socket, backend{err: jam.ErrUnavailable})
	c := apiclient.New(socket)
	defer c.Close()
	_, err := c.Status(t.Context())
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.Equal(t, wire.CodeUnavailable, ae.Code)
	require.Equal(t, http.StatusServiceUnavailable, ae.HTTPStatus)
}

func TestClient_notRunning(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	require.NoError(t, err)
	// Closing a unix listener unlinks its file; recreate the file without a
	// listener, as a killed daemon leaves it.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())

	cases := []struct {
		name   string
		socket string
	}{
		{name: "no socket", socket: filepath.Join(dir, "missing.sock")},
		{name: "stale socket", socket: stale},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := apiclient.New(tc.socket)
			defer c.Close()
			_, err := c.Status(t.Context())
			require.ErrorIs(t, err, apiclient.ErrNotRunning)
			require.ErrorContains(t, err, tc.socket)
		})
	}
}

func TestClient_nonEnvelopeError(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	l, err := net.Listen("unix", socket)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(l) })
	defer func() { srv.Close(); wg.Wait() }()

	c := apiclient.New(socket)
	defer c.Close()
	_, err = c.Status(t.Context())
	var ae *apiclient.Error
	require.True(t, errors.As(err, &ae), "got %v", err)
	require.Equal(t, wire.CodeInternal, ae.Code)
	require.Equal(t, http.StatusBadGateway, ae.HTTPStatus)
}

func TestClient_WaitReady(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(shortDir(t), "s.sock")
	c := apiclient.New(socket)
	defer c.Close()

	// Nothing listens: WaitReady gives up when its context ends.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err := c.WaitReady(ctx, 10*time.Millisecond)
	cancel()
	require.ErrorIs(t, err, apiclient.ErrNotRunning)

	// A daemon that starts while WaitReady polls is found.
	type result struct {
		st  wire.Status
		err error
	}
	done := make(chan result, 1)
	polling := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		close(polling)
		st, err := c.WaitReady(t.Context(), 5*time.Millisecond)
		done <- result{st, err}
	})
	<-polling
	startServer(t, socket, backend{})
	r := <-done
	wg.Wait()
	require.NoError(t, r.err)
	require.Equal(t, 7, r.st.PID)
}
