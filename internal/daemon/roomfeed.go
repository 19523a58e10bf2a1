package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/events"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
	"github.com/jamhq/jam/internal/roomfeed"
	"github.com/jamhq/jam/internal/store"
)

// The human room feed: per account, the person's socket (band.HumanFeed)
// feeds a roomfeed.Feed, which projects, publishes and caches the rooms.

// pinTimeout bounds joining a room the person just opened or posted in.
const pinTimeout = 5 * time.Second

// roomFeeds owns one human socket and one room feed per account.
type roomFeeds struct {
	d   *daemon
	log *slog.Logger
	// publish receives every accepted room mutation; it must not block.
	// It publishes to the daemon's event broker (brokerPublisher), or
	// only logs at debug when there is none.
	publish func(roomfeed.Mutation)
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // every account's socket goroutine

	mu    sync.Mutex
	feeds map[jam.AccountID]*accountFeed // guarded by mu
}

// accountFeed is one account's socket and feed.
type accountFeed struct {
	acct   store.Account
	feed   *roomfeed.Feed
	human  *band.HumanFeed
	cancel context.CancelFunc // ends the socket goroutine
	done   chan struct{}      // closed when it has ended
}

// startRoomFeeds starts a room feed and a human socket per account.
func (d *daemon) startRoomFeeds(ctx context.Context, stack *stopStack) error {
	rf := &roomFeeds{d: d, log: d.log.With("component", "roomfeeds"), feeds: map[jam.AccountID]*accountFeed{}}
	rf.publish = func(m roomfeed.Mutation) {
		rf.log.Debug("room mutation", "account", m.Profile, "room", m.Room, "seq", m.Seq, "kind", m.Kind, "message", m.MessageID)
	}
	if d.events != nil {
		rf.publish = brokerPublisher(rf.log, d.events.Publish)
	}
	rf.ctx, rf.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.rooms = rf
	stack.push("room feeds", rf.stop)
	accts, err := d.store.AccountList(ctx, d.workspace.ID)
	if err != nil {
		return fmt.Errorf("load accounts: %w", err)
	}
	for _, a := range accts {
		if err := rf.start(ctx, a); err != nil {
			rf.log.Warn("room feed cannot start", "account", a.Profile, "err", err)
		}
	}
	return nil
}

// start runs an account's feed: it seeds the feed from the store, then, in
// a goroutine it owns, lists the person's rooms (retiring the cache of
// rooms left while jam was down) and runs the person's socket until stop.
// A running feed of the account is stopped and replaced.
func (rf *roomFeeds) start(ctx context.Context, acct store.Account) error {
	// An account signed in again: its old socket and feed go first, so
	// one feed at a time writes the account's cache.
	rf.mu.Lock()
	old := rf.feeds[acct.ID]
	delete(rf.feeds, acct.ID)
	rf.mu.Unlock()
	if old != nil {
		old.cancel()
		<-old.done
		if err := old.feed.Stop(ctx); err != nil {
			return err
		}
	}
	client, err := rf.d.msg.accountClient(ctx, acct)
	if err != nil {
		return err
	}
	feed, err := roomfeed.New(roomfeed.Config{
		WorkspaceID: acct.WorkspaceID, AccountID: acct.ID, Profile: acct.Profile, UserID: acct.UserID,
		Store: rf.d.store, Sealer: rf.d.msg.box, Human: humanAPI{client}, Logger: rf.d.log,
		Publish: func(m roomfeed.Mutation) { rf.publish(m) },
	})
	if err != nil {
		return err
	}
	if err := feed.Start(ctx); err != nil {
		return err
	}
	// Every (re)connect wakes a catch-up of the watched rooms: the human
	// socket replays nothing, and a message posted before a room's channel
	// was joined would otherwise wait for someone to read the room.
	catchup := make(chan struct{}, 1)
	human, err := band.NewHumanFeed(band.HumanFeedConfig{Client: client, Logger: rf.d.log}, string(acct.UserID), rf.onEvent(acct.Profile, feed, catchup))
	if err != nil {
		return errors.Join(err, feed.Stop(ctx))
	}
	actx, cancel := context.WithCancel(rf.ctx)
	af := &accountFeed{acct: acct, feed: feed, human: human, cancel: cancel, done: make(chan struct{})}
	rf.mu.Lock()
	rf.feeds[acct.ID] = af
	rf.mu.Unlock()
	rf.wg.Go(func() {
		defer close(af.done)
		defer cancel()
		rf.listRooms(actx, client, feed)
		if err := human.Run(actx); err != nil && actx.Err() == nil {
			rf.log.Warn("human socket ended", "account", acct.Profile, "err", err)
		}
	})
	rf.wg.Go(func() {
		for {
			select {
			case <-actx.Done():
				return
			case <-catchup:
			}
			for _, room := range human.Watched() {
				if err := feed.Refresh(actx, jam.RoomID(room)); err != nil && actx.Err() == nil {
					rf.log.Warn("room catch-up after connect", "account", acct.Profile, "room", room, "err", err)
				}
			}
		}
	})
	return nil
}

// listRooms reads the person's whole room list and retires the cache of
// every other room. A failed or cut listing retires nothing.
func (rf *roomFeeds) listRooms(ctx context.Context, c *band.Client, feed *roomfeed.Feed) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var rooms []jam.RoomID
	cursor := ""
	for range 50 {
		page, next, err := c.MyChats(ctx, cursor, protocol.MaxPageLimit)
		if err != nil {
			rf.log.Warn("list rooms", "err", err)
			return
		}
		for _, r := range page {
			rooms = append(rooms, jam.RoomID(r.ID))
		}
		if next == "" || next == cursor {
			feed.Retain(rooms)
			return
		}
		cursor = next
	}
}

// onEvent hands one socket event to the feed.
func (rf *roomFeeds) onEvent(profile string, feed *roomfeed.Feed, catchup chan<- struct{}) func(band.HumanEvent) {
	return func(e band.HumanEvent) {
		room := jam.RoomID(e.Room)
		switch e.Kind {
		case band.HumanUpsert:
			feed.Upsert(room, *e.Message)
		case band.HumanDelete:
			feed.Delete(room, jam.PlatformMessageID(e.MessageID))
		case band.HumanRoomAdded:
			feed.MarkCold(room)
		case band.HumanRoomRemoved:
			feed.RoomRemoved(room)
		case band.HumanParticipants:
			var p protocol.Participant
			if e.Event == protocol.EventParticipantAdded && json.Unmarshal(e.Payload, &p) == nil {
				feed.ParticipantAdded(room, p)
			}
		case band.HumanActivity:
			rf.d.activity.report(room, e.Activity)
		case band.HumanState:
			if e.Err != nil {
				rf.log.Info("human socket", "account", profile, "state", e.State, "err", e.Err)
			} else {
				rf.log.Info("human socket", "account", profile, "state", e.State)
			}
			if e.State == band.StateUp {
				feed.Reconnected()
				select {
				case catchup <- struct{}{}:
				default: // one is pending already
				}
			}
		}
	}
}

// stop ends every socket, then stops every feed, which writes what it
// has queued.
func (rf *roomFeeds) stop(ctx context.Context) error {
	rf.cancel()
	rf.wg.Wait()
	rf.mu.Lock()
	feeds := rf.feeds
	rf.feeds = map[jam.AccountID]*accountFeed{}
	rf.mu.Unlock()
	var errs []error
	for _, af := range feeds {
		errs = append(errs, af.feed.Stop(ctx))
	}
	return errors.Join(errs...)
}

// get returns the running feed of an account.
func (rf *roomFeeds) get(acct store.Account) (*accountFeed, error) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	af, ok := rf.feeds[acct.ID]
	if !ok {
		return nil, fmt.Errorf("%w: the room feed of account %s is not running", jam.ErrUnavailable, acct.Profile)
	}
	return af, nil
}

// watched reports whether the person's socket watches room now.
func (af *accountFeed) watched(room jam.RoomID) bool {
	return slices.Contains(af.human.Watched(), string(room))
}

// pin keeps a room the person opened or posted in among the watched rooms.
// Only a room the person is known to be in is pinned (a pinned room that
// cannot be joined would hold a watch slot). The room missed live
// messages until the join, so its next read refreshes it.
func (af *accountFeed) pin(ctx context.Context, room jam.RoomID) {
	ctx, cancel := context.WithTimeout(ctx, pinTimeout)
	defer cancel()
	_ = af.human.Pin(ctx, string(room)) // best effort: the socket may be down
	af.feed.MarkCold(room)
}

// brokerPublisher adapts an event broker's Publish to the feed's publish
// function, kind "room.message". The feed calls it under its lock, so it
// never waits: when the broker's buffer is full the event is dropped and
// logged; a client sees the gap in the room sequence and re-reads the
// room (GET /v1/rooms/{room}/messages).
func brokerPublisher(log *slog.Logger, publish func(context.Context, events.Event) error) func(roomfeed.Mutation) {
	done, cancel := context.WithCancel(context.Background())
	cancel() // a done context makes Publish give up instead of waiting
	return func(m roomfeed.Mutation) {
		data := roomMutationData{Account: m.Profile, Seq: m.Seq, Kind: string(m.Kind)}
		if m.Message != nil {
			rm := wireRoomMessage(roomfeed.Row{Message: m.Message, Seq: m.Seq, Local: m.Kind == roomfeed.MutationSystem}, "", "")
			data.Message = &rm
		}
		raw, err := json.Marshal(data)
		if err == nil {
			err = publish(done, events.Event{Kind: "room.message", Room: m.Room, MessageID: m.MessageID, Data: raw})
		}
		if err != nil {
			log.Warn("room mutation not published", "room", m.Room, "seq", m.Seq, "err", err)
		}
	}
}

// roomMutationData is the Data of a "room.message" event.
type roomMutationData struct {
	Account string            `json:"account"`
	Seq     int64             `json:"seq"`
	Kind    string            `json:"kind"`
	Message *wire.RoomMessage `json:"message,omitempty"`
}

// humanAPI adapts the person's band client to roomfeed.HumanAPI.
type humanAPI struct{ c *band.Client }

func (h humanAPI) History(ctx context.Context, room string, limit int) ([]protocol.Message, error) {
	page, err := h.c.ChatMessages(ctx, room, "", limit)
	return page.Messages, err
}

func (h humanAPI) Participants(ctx context.Context, room string) ([]protocol.Participant, error) {
	return h.c.ChatParticipants(ctx, room)
}

func (h humanAPI) Post(ctx context.Context, room, content string, mentions []protocol.Mention) (protocol.MessageSent, error) {
	return h.c.SendChatMessage(ctx, room, content, mentions)
}

// The room routes of api.Messaging.

func (d *daemon) RoomMessages(ctx context.Context, room, account string, limit int) (wire.RoomMessages, error) {
	acct, af, id, err := d.roomFeed(ctx, room, account)
	if err != nil {
		return wire.RoomMessages{}, err
	}
	// A room the socket does not watch may have missed live messages:
	// read it fresh from Band, then watch it.
	watched := af.watched(id)
	if !watched {
		af.feed.MarkCold(id)
	}
	v, err := af.feed.Messages(ctx, id, limit)
	if err != nil {
		return wire.RoomMessages{}, err
	}
	if !watched {
		af.pin(ctx, id)
	}
	out := wire.RoomMessages{Room: string(id), Account: acct.Profile, Seq: v.Seq, Messages: make([]wire.RoomMessage, 0, len(v.Rows))}
	ids := make([]jam.PlatformMessageID, 0, len(v.Rows))
	for _, r := range v.Rows {
		out.Messages = append(out.Messages, wireRoomMessage(r, string(acct.UserID), acct.Handle))
		if !r.Local {
			ids = append(ids, jam.PlatformMessageID(r.Message.ID))
		}
	}
	links, err := d.store.ReplyLinks(ctx, d.workspace.ID, ids)
	if err != nil {
		return wire.RoomMessages{}, err
	}
	byID := make(map[string]store.ReplyLink, len(links))
	for _, l := range links {
		byID[strings.ToLower(string(l.MessageID))] = l
	}
	for i := range out.Messages {
		if l, ok := byID[strings.ToLower(out.Messages[i].ID)]; ok {
			out.Messages[i].ReplyTo, out.Messages[i].Turn = string(l.ReplyTo), string(l.Turn)
		}
	}
	return out, nil
}

func (d *daemon) RoomPost(ctx context.Context, room string, r wire.RoomPostRequest) (wire.RoomPostResult, error) {
	_, af, id, err := d.roomFeed(ctx, room, r.Account)
	if err != nil {
		return wire.RoomPostResult{}, err
	}
	res, err := af.feed.Send(ctx, roomfeed.SendParams{Room: id, Text: r.Text, Mentions: r.Mentions})
	out := wire.RoomPostResult{ID: string(res.ID), Body: res.Body, Mentions: []string{}, Warnings: res.Warnings}
	for _, m := range res.Mentions {
		out.Mentions = append(out.Mentions, m.ID)
	}
	if err != nil {
		return out, err
	}
	if !af.watched(id) {
		af.pin(ctx, id)
	}
	return out, nil
}

func (d *daemon) RoomParticipants(ctx context.Context, room, account string) ([]wire.Participant, error) {
	acct, _, id, err := d.roomFeed(ctx, room, account)
	if err != nil {
		return nil, err
	}
	c, err := d.msg.accountClient(ctx, acct)
	if err != nil {
		return nil, err
	}
	ps, err := c.ChatParticipants(ctx, string(id))
	if err != nil {
		return nil, err
	}
	out := make([]wire.Participant, 0, len(ps))
	for _, p := range ps {
		w := wire.Participant{ID: p.ID, Type: p.Type, Role: p.Role, Name: p.Name}
		if p.Handle != nil {
			w.Handle = *p.Handle
		}
		out = append(out, w)
	}
	return out, nil
}

// roomFeed resolves the account and the room of a room route.
func (d *daemon) roomFeed(ctx context.Context, room, account string) (store.Account, *accountFeed, jam.RoomID, error) {
	id, err := d.roomRef(ctx, account, room)
	if err != nil {
		return store.Account{}, nil, "", err
	}
	acct, err := d.account(ctx, account)
	if err != nil {
		return store.Account{}, nil, "", err
	}
	af, err := d.rooms.get(acct)
	return acct, af, id, err
}

// wireRoomMessage renders a projected row for the control API. Tokens
// become @handle from the message's own mentions (and the person's
// handle); delivery states come from metadata.delivery_status, Band's
// "delivered" shown as queued.
func wireRoomMessage(r roomfeed.Row, userID, userHandle string) wire.RoomMessage {
	m := r.Message
	handles := map[string]string{}
	if userHandle != "" {
		handles[strings.ToLower(userID)] = userHandle
	}
	var mentions []string
	for _, mm := range m.Metadata.Mentions {
		if mm.ID == "" {
			continue
		}
		mentions = append(mentions, mm.ID)
		if mm.Handle != "" {
			handles[strings.ToLower(mm.ID)] = mm.Handle
		}
	}
	out := wire.RoomMessage{
		ID: m.ID, Seq: r.Seq, MessageType: m.MessageType, Content: m.Content, SenderID: m.SenderID, SenderType: m.SenderType,
		SenderName: m.SenderName, Mentions: mentions, InsertedAt: m.InsertedAt, UpdatedAt: m.UpdatedAt, Local: r.Local,
		Text: mention.Render(m.Content, func(id string) (string, bool) { h, ok := handles[id]; return h, ok }),
	}
	agents := make([]string, 0, len(m.Metadata.DeliveryStatus))
	for id := range m.Metadata.DeliveryStatus {
		agents = append(agents, id)
	}
	slices.Sort(agents)
	for _, id := range agents {
		rec := m.Metadata.DeliveryStatus[id]
		d := wire.AgentDelivery{AgentID: id, Handle: handles[strings.ToLower(id)], Status: rec.Status, Attempt: deliveryTries(rec)}
		if rec.Status == protocol.DeliveryDelivered || rec.Status == "" {
			d.Status = wire.DeliveryQueued
		}
		if rec.Status == protocol.DeliveryFailed && len(rec.Attempts) > 0 {
			if e := rec.Attempts[len(rec.Attempts)-1].Error; e != nil {
				d.Error = *e
			}
		}
		out.Delivery = append(out.Delivery, d)
	}
	return out
}

// deliveryTries counts the times a message was really tried for an agent,
// from its delivery record's attempts: every attempt but those a newer one
// superseded while open (the platform closes an open attempt when jam
// claims the message again, as it does to settle, so one delivery that
// was answered is two attempts on the platform, and one try). 0 when the
// platform lists no attempts.
func deliveryTries(rec protocol.DeliveryRecord) int {
	n := 0
	for _, a := range rec.Attempts {
		if a.Status == protocol.AttemptFailed && a.Error != nil && strings.HasPrefix(*a.Error, protocol.AttemptSuperseded) {
			continue
		}
		n++
	}
	return n
}
