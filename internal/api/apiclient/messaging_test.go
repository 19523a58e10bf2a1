package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/jam"
)

func newClient(t *testing.T, b backend) *apiclient.Client {
	t.Helper()
	socket := filepath.Join(shortDir(t), "s.sock")
	startServer(t, socket, b)
	c := apiclient.New(socket)
	t.Cleanup(c.Close)
	return c
}

func TestClient_messagingRoundTrips(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	acct := wire.Account{ID: "acc1", Profile: "default", BandURL: "https://band.example", UserID: "u1", Handle: "ann", Created: created}
	agent := wire.Agent{Peer: "default/alice", Name: "alice", Handle: "alice", Account: "default", Bindings: []wire.Binding{{ID: "b1", Room: "r1"}}, Queued: 1, State: "up"}
	room := wire.Room{ID: "r/1", Title: "planning", Account: "default", Participants: []string{"alice"}}
	binding := wire.Binding{ID: "b1", Peer: "default/alice", Room: "r1", Alias: "main", SessionID: "s1", Mode: "attached", Created: created}
	msg := wire.InboxMessage{ID: "m1", Peer: "default/alice", Room: "r1", SenderID: "u1", Content: "hi", State: "queued", ReceivedAt: created}
	inbox := wire.Inbox{Messages: []wire.InboxMessage{msg}}

	cases := []struct {
		name    string
		backend backend
		call    func(ctx context.Context, c *apiclient.Client) (any, error)
		want    any
	}{
		{
			name:    "accounts",
			backend: backend{AccountsFunc: func(context.Context) ([]wire.Account, error) { return []wire.Account{acct}, nil }},
			call:    func(ctx context.Context, c *apiclient.Client) (any, error) { return c.Accounts(ctx) },
			want:    []wire.Account{acct},
		},
		{
			name:    "no accounts",
			backend: backend{AccountsFunc: func(context.Context) ([]wire.Account, error) { return nil, nil }},
			call:    func(ctx context.Context, c *apiclient.Client) (any, error) { return c.Accounts(ctx) },
			want:    []wire.Account{},
		},
		{
			name: "account add",
			backend: backend{AccountAddFunc: func(_ context.Context, r wire.AccountAddRequest) (wire.Account, error) {
				assert.Equal(t, wire.AccountAddRequest{Profile: "p", BandURL: "https://b", Key: "k"}, r)
				return acct, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.AccountAdd(ctx, wire.AccountAddRequest{Profile: "p", BandURL: "https://b", Key: "k"})
			},
			want: acct,
		},
		{
			name:    "agents",
			backend: backend{AgentsFunc: func(context.Context) ([]wire.Agent, error) { return []wire.Agent{agent}, nil }},
			call:    func(ctx context.Context, c *apiclient.Client) (any, error) { return c.Agents(ctx) },
			want:    []wire.Agent{agent},
		},
		{
			name: "agent add",
			backend: backend{AgentAddFunc: func(_ context.Context, r wire.AgentAddRequest) (wire.Agent, error) {
				assert.Equal(t, wire.AgentAddRequest{Name: "alice", Description: "d", Account: "default", Key: "band_a_k"}, r)
				return agent, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.AgentAdd(ctx, wire.AgentAddRequest{Name: "alice", Description: "d", Account: "default", Key: "band_a_k"})
			},
			want: agent,
		},
		{
			name: "rooms of an account",
			backend: backend{RoomsFunc: func(_ context.Context, account string) ([]wire.Room, error) {
				assert.Equal(t, "work & play", account)
				return []wire.Room{room}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) { return c.Rooms(ctx, "work & play") },
			want: []wire.Room{room},
		},
		{
			name: "rooms of every account",
			backend: backend{RoomsFunc: func(_ context.Context, account string) ([]wire.Room, error) {
				assert.Empty(t, account)
				return nil, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) { return c.Rooms(ctx, "") },
			want: []wire.Room{},
		},
		{
			name: "room create",
			backend: backend{RoomCreateFunc: func(_ context.Context, r wire.RoomCreateRequest) (wire.Room, error) {
				assert.Equal(t, wire.RoomCreateRequest{Title: "planning", Account: "default", Agents: []string{"alice"}}, r)
				return room, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.RoomCreate(ctx, wire.RoomCreateRequest{Title: "planning", Account: "default", Agents: []string{"alice"}})
			},
			want: room,
		},
		{
			name: "room add escapes the room",
			backend: backend{RoomAddFunc: func(_ context.Context, id string, r wire.RoomAddRequest) error {
				assert.Equal(t, "r/1 ?#", id)
				assert.Equal(t, "alice", r.Agent)
				return nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return nil, c.RoomAdd(ctx, "r/1 ?#", wire.RoomAddRequest{Agent: "alice"})
			},
		},
		{
			name: "bind",
			backend: backend{BindFunc: func(_ context.Context, r wire.BindRequest) (wire.Binding, error) {
				assert.Equal(t, wire.BindRequest{Agent: "alice", Room: "r1", Alias: "main"}, r)
				return binding, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.Bind(ctx, wire.BindRequest{Agent: "alice", Room: "r1", Alias: "main"})
			},
			want: binding,
		},
		{
			name: "unbind",
			backend: backend{UnbindFunc: func(_ context.Context, id string) error {
				assert.Equal(t, "b1", id)
				return nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) { return nil, c.Unbind(ctx, "b1") },
		},
		{
			name: "inbox with filters",
			backend: backend{InboxFunc: func(_ context.Context, q wire.InboxQuery) (wire.Inbox, error) {
				assert.Equal(t, wire.InboxQuery{Agent: "default/alice", Room: "r1", Unrouted: true, Limit: 5, After: "42"}, q)
				return inbox, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.Inbox(ctx, apiclient.InboxQuery{Agent: "default/alice", Room: "r1", Unrouted: true, Limit: 5, After: "42"})
			},
			want: inbox,
		},
		{
			name: "empty inbox",
			backend: backend{InboxFunc: func(_ context.Context, q wire.InboxQuery) (wire.Inbox, error) {
				assert.Equal(t, wire.InboxQuery{}, q)
				return wire.Inbox{}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.Inbox(ctx, apiclient.InboxQuery{})
			},
			want: wire.Inbox{Messages: []wire.InboxMessage{}},
		},
		{
			name: "wait inbox",
			backend: backend{WaitInboxFunc: func(_ context.Context, r wire.WaitRequest) (wire.Inbox, error) {
				assert.Equal(t, wire.WaitRequest{Agent: "alice", TimeoutMS: 2000}, r)
				return inbox, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.WaitInbox(ctx, wire.WaitRequest{Agent: "alice", TimeoutMS: 2000})
			},
			want: inbox,
		},
		{
			name: "reply",
			backend: backend{ReplyFunc: func(_ context.Context, id string, r wire.ReplyRequest) (wire.ReplyResult, error) {
				assert.Equal(t, "m1", id)
				assert.Equal(t, wire.ReplyRequest{Agent: "alice", Text: "done", Mentions: []string{"ann"}}, r)
				return wire.ReplyResult{Posted: []string{"m2"}, Mentions: []string{"ann"}, Resumed: true}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.Reply(ctx, "m1", wire.ReplyRequest{Agent: "alice", Text: "done", Mentions: []string{"ann"}})
			},
			want: wire.ReplyResult{Posted: []string{"m2"}, Mentions: []string{"ann"}, Resumed: true},
		},
		{
			name: "ack",
			backend: backend{AckFunc: func(_ context.Context, id string, r wire.AckRequest) error {
				assert.Equal(t, "m1", id)
				assert.Equal(t, "alice", r.Agent)
				return nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return nil, c.Ack(ctx, "m1", wire.AckRequest{Agent: "alice"})
			},
		},
		{
			name: "send",
			backend: backend{SendFunc: func(_ context.Context, r wire.SendRequest) (wire.SendResult, error) {
				assert.Equal(t, wire.SendRequest{Agent: "alice", Room: "r1", Text: "hello", Recipients: []string{"bob"}}, r)
				return wire.SendResult{ID: "m9", Body: "@bob hello", Mentions: []string{"bob"}, Warnings: []string{"w"}}, nil
			}},
			call: func(ctx context.Context, c *apiclient.Client) (any, error) {
				return c.Send(ctx, wire.SendRequest{Agent: "alice", Room: "r1", Text: "hello", Recipients: []string{"bob"}})
			},
			want: wire.SendResult{ID: "m9", Body: "@bob hello", Mentions: []string{"bob"}, Warnings: []string{"w"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, tc.backend)
			got, err := tc.call(t.Context(), c)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestClient_messagingErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		backend  backend
		call     func(ctx context.Context, c *apiclient.Client) error
		wantCode wire.Code
		wantMsg  string
	}{
		{
			name: "not found",
			backend: backend{UnbindFunc: func(context.Context, string) error {
				return fmt.Errorf("binding b9: %w", jam.ErrNotFound)
			}},
			call:     func(ctx context.Context, c *apiclient.Client) error { return c.Unbind(ctx, "b9") },
			wantCode: wire.CodeNotFound, wantMsg: "unbind b9: binding b9: not found",
		},
		{
			name: "refused at the edge",
			call: func(ctx context.Context, c *apiclient.Client) error {
				_, err := c.Send(ctx, wire.SendRequest{Room: "r1"})
				return err
			},
			wantCode: wire.CodeInvalidArgument, wantMsg: "text is required",
		},
		{
			name: "wait bound",
			call: func(ctx context.Context, c *apiclient.Client) error {
				_, err := c.WaitInbox(ctx, wire.WaitRequest{TimeoutMS: -5})
				return err
			},
			wantCode: wire.CodeInvalidArgument, wantMsg: "timeout_ms -5 is outside",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newClient(t, tc.backend)
			err := tc.call(t.Context(), c)
			var ae *apiclient.Error
			require.True(t, errors.As(err, &ae), "got %v", err)
			require.Equal(t, tc.wantCode, ae.Code)
			require.Contains(t, ae.Message, tc.wantMsg)
		})
	}
}

func TestClient_WaitInbox_timeoutIsEmpty(t *testing.T) {
	t.Parallel()
	c := newClient(t, backend{WaitInboxFunc: func(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
		<-ctx.Done()
		return wire.Inbox{}, ctx.Err()
	}})
	got, err := c.WaitInbox(t.Context(), wire.WaitRequest{TimeoutMS: 1})
	require.NoError(t, err)
	require.Empty(t, got.Messages)
	require.NotNil(t, got.Messages)
}

func TestClient_WaitInbox_callerCancels(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	returned := make(chan struct{})
	c := newClient(t, backend{WaitInboxFunc: func(ctx context.Context, _ wire.WaitRequest) (wire.Inbox, error) {
		close(started)
		<-ctx.Done()
		close(returned)
		return wire.Inbox{}, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var err error
	wg.Go(func() { _, err = c.WaitInbox(ctx, wire.WaitRequest{TimeoutMS: wire.MaxWait.Milliseconds()}) })
	<-started
	cancel()
	wg.Wait()
	require.ErrorIs(t, err, context.Canceled)
	// The daemon side of the abandoned wait ends too.
	<-returned
}
