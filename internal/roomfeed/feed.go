package roomfeed

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/mention"
	"github.com/jamhq/jam/internal/store"
)

// Store is what the feed needs of the store.
type Store interface {
	RoomCacheApply(ctx context.Context, p store.RoomCacheApplyParams) error
	RoomCacheStates(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID) ([]store.RoomCacheState, error)
	RoomCacheItems(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID, limit int) ([]store.RoomCacheItem, error)
	RoomCacheRetire(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID) error
	RoomSystemAppend(ctx context.Context, m store.RoomSystemMessage) error
	RoomSystemList(ctx context.Context, ws jam.WorkspaceID, acct jam.AccountID, room jam.RoomID, limit int) ([]store.RoomSystemMessage, error)
}

// Sealer encrypts message bodies at rest.
type Sealer interface {
	Seal(plaintext, aad []byte) []byte
	Open(sealed, aad []byte) ([]byte, error)
}

// HumanAPI is the part of Band's Human API the feed calls as the
// account's person.
type HumanAPI interface {
	// History returns the newest messages of a room, newest first, at most
	// limit, every message type.
	History(ctx context.Context, room string, limit int) ([]protocol.Message, error)
	// Participants lists a room's participants.
	Participants(ctx context.Context, room string) ([]protocol.Participant, error)
	// Post sends a text message as the person.
	Post(ctx context.Context, room, content string, mentions []protocol.Mention) (protocol.MessageSent, error)
}

// Config configures a Feed: one account's rooms.
type Config struct {
	WorkspaceID jam.WorkspaceID
	AccountID   jam.AccountID
	Profile     string
	// UserID is the account's person: a text message that mentions it
	// stages an attention item.
	UserID jam.IdentityID
	Store  Store
	Sealer Sealer
	Human  HumanAPI
	Logger *slog.Logger
	// Publish receives every accepted mutation before its persistence
	// starts, in each room's sequence order. It is called with the feed's
	// lock held: it must not block and must not call back into the feed.
	// Optional.
	Publish func(Mutation)
	// Clock drives the flush and membership timers. Default SystemClock.
	Clock Clock
	// Window is how many newest messages a room retains; default and
	// maximum store.RoomCacheWindow.
	Window int
	// QueueSize bounds the persistence channel. Default 256.
	QueueSize int
	// FlushInterval is how soon a dirty checkpoint is written. Default
	// 100ms.
	FlushInterval time.Duration
	// JournalSize is how many mutations of the account the journal keeps
	// for snapshot merges. Default 512.
	JournalSize int
	// RefreshAttempts bounds the fetches of one refresh whose capture
	// predates the journal floor. Default 3.
	RefreshAttempts int
	// MembershipGrace is how long after participant_added the feed waits
	// before synthesizing a join row. Default 2s.
	MembershipGrace time.Duration
	// MembershipWindow is how close in time a platform membership row
	// must be to the event to count as its row. Default 15s.
	MembershipWindow time.Duration
	// MaxDirtyAttention bounds the attention items a room's dirty
	// checkpoint holds. Default 100.
	MaxDirtyAttention int
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
	if c.Window == 0 {
		c.Window = store.RoomCacheWindow
	}
	if c.QueueSize == 0 {
		c.QueueSize = 256
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = 100 * time.Millisecond
	}
	if c.JournalSize == 0 {
		c.JournalSize = 512
	}
	if c.RefreshAttempts == 0 {
		c.RefreshAttempts = 3
	}
	if c.MembershipGrace == 0 {
		c.MembershipGrace = 2 * time.Second
	}
	if c.MembershipWindow == 0 {
		c.MembershipWindow = 15 * time.Second
	}
	if c.MaxDirtyAttention == 0 {
		c.MaxDirtyAttention = 100
	}
	if c.Publish == nil {
		c.Publish = func(Mutation) {}
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil || c.Sealer == nil || c.Human == nil || c.Logger == nil:
		return fmt.Errorf("%w: roomfeed: store, sealer, human api and logger are required", jam.ErrInvalid)
	case c.WorkspaceID == "" || c.AccountID == "" || c.UserID == "":
		return fmt.Errorf("%w: roomfeed: workspace, account and user ids are required", jam.ErrInvalid)
	case c.Window < 1 || c.Window > store.RoomCacheWindow:
		return fmt.Errorf("%w: roomfeed: window %d is outside 1..%d", jam.ErrInvalid, c.Window, store.RoomCacheWindow)
	case c.QueueSize < 1 || c.JournalSize < 1 || c.RefreshAttempts < 1 || c.MaxDirtyAttention < 1:
		return fmt.Errorf("%w: roomfeed: queue, journal, refresh and attention bounds must be positive", jam.ErrInvalid)
	case c.FlushInterval < 0 || c.MembershipGrace < 0 || c.MembershipWindow < 0:
		return fmt.Errorf("%w: roomfeed: durations must not be negative", jam.ErrInvalid)
	}
	return nil
}

// Feed projects one account's rooms from the person's socket and Band
// history, publishes every accepted mutation and persists it off the live
// path. See the package doc. All methods are safe for concurrent use.
type Feed struct {
	cfg Config
	log *slog.Logger

	ops      chan persistOp
	flushC   chan struct{} // a due flush; capacity 1
	stopping chan struct{} // closed by Stop
	stopOnce sync.Once
	wg       sync.WaitGroup // the persistence worker and every timer callback

	// flightHook runs when a refresh joins another's flight. Test hook,
	// nil in production; set before Start.
	flightHook func()

	flightMu sync.Mutex
	flights  map[jam.RoomID]*flight // guarded by flightMu

	mu           sync.Mutex
	ctx          context.Context           // guarded by mu: the worker's, set in Start
	cancel       context.CancelCauseFunc   // guarded by mu
	started      bool                      // guarded by mu
	stopped      bool                      // guarded by mu
	rooms        map[jam.RoomID]*roomState // guarded by mu
	journal      *journal                  // guarded by mu
	dirty        map[jam.RoomID]*dirtyRoom // guarded by mu
	flushPending bool                      // guarded by mu
	timers       map[*timerRef]struct{}    // guarded by mu
	joins        map[joinKey]time.Time     // guarded by mu: local join rows emitted
	dropped      int                       // guarded by mu: attention items dropped from full checkpoints
}

type flight struct {
	done chan struct{}
	err  error
}

type timerRef struct{ t Timer }

type joinKey struct {
	room        jam.RoomID
	participant string
}

// New builds a feed; nothing runs until Start.
func New(cfg Config) (*Feed, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Feed{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "roomfeed", "account", cfg.Profile),
		ops:      make(chan persistOp, cfg.QueueSize),
		flushC:   make(chan struct{}, 1),
		stopping: make(chan struct{}),
		flights:  map[jam.RoomID]*flight{},
		rooms:    map[jam.RoomID]*roomState{},
		journal:  newJournal(cfg.JournalSize),
		dirty:    map[jam.RoomID]*dirtyRoom{},
		timers:   map[*timerRef]struct{}{},
		joins:    map[joinKey]time.Time{},
	}, nil
}

// Start seeds the projections from the store (cached messages and stored
// sequences, so sequences stay monotonic across restarts) and starts the
// persistence worker. Every seeded room is cold: its first read refreshes
// it from Band.
func (f *Feed) Start(ctx context.Context) error {
	f.mu.Lock()
	if f.started || f.stopped {
		f.mu.Unlock()
		return errors.New("roomfeed: started twice or after stop")
	}
	f.mu.Unlock()
	rooms, err := f.seed(ctx)
	if err != nil {
		return fmt.Errorf("seed room feed %s: %w", f.cfg.Profile, err)
	}
	wctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		cancel(jam.ErrStopping)
		return fmt.Errorf("start room feed %s: %w", f.cfg.Profile, jam.ErrStopping)
	}
	f.rooms, f.ctx, f.cancel, f.started = rooms, wctx, cancel, true
	f.wg.Go(func() { f.run(wctx) })
	return nil
}

func (f *Feed) seed(ctx context.Context) (map[jam.RoomID]*roomState, error) {
	states, err := f.cfg.Store.RoomCacheStates(ctx, f.cfg.WorkspaceID, f.cfg.AccountID)
	if err != nil {
		return nil, err
	}
	rooms := make(map[jam.RoomID]*roomState, len(states))
	for _, st := range states {
		items, err := f.cfg.Store.RoomCacheItems(ctx, f.cfg.WorkspaceID, f.cfg.AccountID, st.Room, f.cfg.Window)
		if err != nil {
			return nil, err
		}
		r := newRoomState()
		r.seq, r.floor = st.Seq, st.Seq
		for _, it := range items {
			m, err := f.openItem(st.Room, it)
			if err != nil {
				f.log.Warn("cached message unreadable; dropped", "room", st.Room, "message", it.MessageID, "err", err)
				continue
			}
			r.rows[it.MessageID] = Row{Message: m, Seq: it.Seq, At: it.InsertedAt}
		}
		rooms[st.Room] = r
	}
	return rooms, nil
}

// Stop stops accepting input, cancels the membership timers, writes what
// is queued or dirty, and waits for every goroutine the feed started. When
// ctx ends first, the writes in flight are abandoned. Safe twice and
// before Start.
func (f *Feed) Stop(ctx context.Context) error {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.stopped = true
		timers := f.timers
		f.timers = nil
		cancel := f.cancel
		f.mu.Unlock()
		for ref := range timers {
			if ref.t.Stop() {
				f.wg.Done() // its callback will never run
			}
		}
		close(f.stopping)
		if cancel != nil {
			stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
			defer stop()
		}
		f.wg.Wait()
		if cancel != nil {
			cancel(jam.ErrStopping)
		}
	})
	f.wg.Wait()
	return nil
}

// afterLocked runs fn after d on the feed's clock, as a goroutine the feed
// owns: Stop cancels it or waits for it. f.mu must be held.
func (f *Feed) afterLocked(d time.Duration, fn func()) {
	if f.stopped || f.timers == nil {
		return
	}
	ref := &timerRef{}
	f.wg.Add(1)
	f.timers[ref] = struct{}{}
	ref.t = f.cfg.Clock.AfterFunc(d, func() {
		defer f.wg.Done()
		f.mu.Lock()
		_, live := f.timers[ref]
		delete(f.timers, ref)
		f.mu.Unlock()
		if live {
			fn()
		}
	})
}

// canonical checks a room id and returns its canonical form.
func canonical(room jam.RoomID) (jam.RoomID, error) {
	return jam.ParseUUID[jam.RoomID](string(room))
}

// roomLocked returns a room's projection, creating it. f.mu must be held.
func (f *Feed) roomLocked(room jam.RoomID) *roomState {
	r, ok := f.rooms[room]
	if !ok {
		r = newRoomState()
		f.rooms[room] = r
	}
	return r
}

// liveLocked reports whether the feed accepts input. f.mu must be held.
func (f *Feed) liveLocked() bool { return f.started && !f.stopped }

// normalize gives m its canonical id and room; ok is false for a message
// without a valid id.
func normalize(room jam.RoomID, m protocol.Message) (protocol.Message, bool) {
	id, err := jam.ParseUUID[jam.PlatformMessageID](m.ID)
	if err != nil {
		return m, false
	}
	m.ID, m.ChatRoomID = string(id), string(room)
	return m, true
}

// Upsert accepts a message created or changed in room (message_created,
// message_updated, event_created).
func (f *Feed) Upsert(room jam.RoomID, m protocol.Message) {
	room, err := canonical(room)
	if err != nil {
		f.log.Warn("upsert in a room without a valid id", "room", room, "err", err)
		return
	}
	m, ok := normalize(room, m)
	if !ok {
		f.log.Warn("upsert of a message without a valid id", "room", room, "message", m.ID)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.liveLocked() {
		return
	}
	f.upsertLocked(room, f.roomLocked(room), m)
}

// Delete accepts a message deletion.
func (f *Feed) Delete(room jam.RoomID, msg jam.PlatformMessageID) {
	room, err := canonical(room)
	if err != nil {
		return
	}
	id, err := jam.ParseUUID[jam.PlatformMessageID](string(msg))
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.liveLocked() {
		return
	}
	f.deleteLocked(room, f.roomLocked(room), id)
}

// RoomRemoved forgets a room the person left (or that was deleted): its
// window and local system rows are retired, its sequence is kept so a
// room that comes back never reuses one.
func (f *Feed) RoomRemoved(room jam.RoomID) {
	room, err := canonical(room)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.liveLocked() {
		return
	}
	if r, ok := f.rooms[room]; ok {
		r.rows = map[jam.PlatformMessageID]Row{}
		r.cold = true
	}
	f.enqueueLocked(persistOp{room: room, retire: true})
}

// Retain retires every cached room not in rooms: the account's full room
// list, read before the socket starts, so rooms left while jam was down
// lose their cache.
func (f *Feed) Retain(rooms []jam.RoomID) {
	keep := make(map[jam.RoomID]bool, len(rooms))
	for _, r := range rooms {
		if c, err := canonical(r); err == nil {
			keep[c] = true
		}
	}
	f.mu.Lock()
	var gone []jam.RoomID
	for id, r := range f.rooms {
		if !keep[id] && len(r.rows) > 0 {
			gone = append(gone, id)
		}
	}
	f.mu.Unlock()
	for _, id := range gone {
		f.RoomRemoved(id)
	}
}

// MarkCold makes the next read of room refresh it from Band (a room the
// socket just started watching may have missed messages).
func (f *Feed) MarkCold(room jam.RoomID) {
	room, err := canonical(room)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.rooms[room]; ok {
		r.cold = true
	}
}

// Reconnected marks every room cold: the human socket has no catch-up, so
// each room's next read reconciles it with Band.
func (f *Feed) Reconnected() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rooms {
		r.cold = true
	}
}

// upsertLocked applies, publishes and queues an upsert. f.mu must be held.
func (f *Feed) upsertLocked(room jam.RoomID, r *roomState, m protocol.Message) {
	at := parseTime(m.InsertedAt, f.cfg.Clock.Now())
	row, isNew, _, ok := r.applyUpsert(&m, at, f.cfg.Window)
	if !ok {
		return
	}
	f.acceptLocked(room, Mutation{Seq: row.Seq, Kind: MutationUpsert, MessageID: jam.PlatformMessageID(m.ID), Message: row.Message})
	op := persistOp{room: room, seq: row.Seq, upsert: &row}
	if isNew && f.mentionsPerson(m) {
		sender, _ := jam.ParseUUID[jam.IdentityID](m.SenderID)
		op.attention = &store.AttentionItem{Room: room, MessageID: jam.PlatformMessageID(m.ID), SenderID: sender,
			Kind: store.AttentionMention, MessageAt: at, StagedAt: f.cfg.Clock.Now()}
	}
	f.enqueueLocked(op)
}

// deleteLocked applies, publishes and queues a delete. f.mu must be held.
func (f *Feed) deleteLocked(room jam.RoomID, r *roomState, id jam.PlatformMessageID) {
	seq := r.applyDelete(id)
	f.acceptLocked(room, Mutation{Seq: seq, Kind: MutationDelete, MessageID: id})
	f.enqueueLocked(persistOp{room: room, seq: seq, del: id})
}

// acceptLocked journals and publishes an accepted mutation. f.mu must be
// held, so publications follow each room's sequence order.
func (f *Feed) acceptLocked(room jam.RoomID, mut Mutation) {
	mut.WorkspaceID, mut.AccountID, mut.Profile, mut.Room = f.cfg.WorkspaceID, f.cfg.AccountID, f.cfg.Profile, room
	if old, evicted := f.journal.add(journalEntry{room: room, mut: mut}); evicted {
		if r, ok := f.rooms[old.room]; ok {
			r.floor = max(r.floor, old.mut.Seq)
		}
	}
	f.cfg.Publish(mut)
}

// mentionsPerson reports whether m is a text message from someone else
// that mentions the account's person with a token.
func (f *Feed) mentionsPerson(m protocol.Message) bool {
	if m.MessageType != protocol.MessageText || strings.EqualFold(m.SenderID, string(f.cfg.UserID)) {
		return false
	}
	return slices.Contains(mention.Tokens(m.Content), strings.ToLower(string(f.cfg.UserID)))
}

// View is a room's recent history.
type View struct {
	Room jam.RoomID
	// Seq is the room's sequence when it was read.
	Seq int64
	// Rows are the newest messages, local system rows merged in, oldest
	// first.
	Rows []Row
}

// Messages returns the newest limit messages of a room (at most the
// window), merged with the local system rows that no platform row
// supersedes. A cold room is refreshed from Band first; if that fails and
// the cache holds the room, the cache is served.
func (f *Feed) Messages(ctx context.Context, room jam.RoomID, limit int) (View, error) {
	room, err := canonical(room)
	if err != nil {
		return View{}, err
	}
	if limit <= 0 || limit > f.cfg.Window {
		limit = f.cfg.Window
	}
	f.mu.Lock()
	r, known := f.rooms[room]
	cold, cached := !known || r.cold, known && len(r.rows) > 0
	f.mu.Unlock()
	if cold {
		if err := f.Refresh(ctx, room); err != nil {
			if !cached || ctx.Err() != nil {
				return View{}, err
			}
			f.log.Warn("room refresh failed; serving the cache", "room", room, "err", err)
		}
	}
	system, err := f.systemRows(ctx, room)
	if err != nil {
		return View{}, err
	}
	v := View{Room: room}
	f.mu.Lock()
	if r, ok := f.rooms[room]; ok {
		v.Seq, v.Rows = r.seq, r.sorted()
	}
	f.mu.Unlock()
	for _, s := range system {
		if !f.superseded(v.Rows, s) {
			v.Rows = append(v.Rows, s)
		}
	}
	sortRows(v.Rows)
	if len(v.Rows) > limit {
		v.Rows = v.Rows[len(v.Rows)-limit:]
	}
	return v, nil
}

// systemRows reads and opens a room's local system rows.
func (f *Feed) systemRows(ctx context.Context, room jam.RoomID) ([]Row, error) {
	stored, err := f.cfg.Store.RoomSystemList(ctx, f.cfg.WorkspaceID, f.cfg.AccountID, room, 0)
	if err != nil {
		return nil, fmt.Errorf("room %s system rows: %w", room, err)
	}
	out := make([]Row, 0, len(stored))
	for _, s := range stored {
		raw, err := f.cfg.Sealer.Open(s.Sealed, f.systemAAD(room, s.MessageID))
		var m protocol.Message
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		if err != nil {
			f.log.Warn("system row unreadable; skipped", "room", room, "message", s.MessageID, "err", err)
			continue
		}
		out = append(out, Row{Message: &m, Local: true, At: s.InsertedAt})
	}
	return out, nil
}

// superseded reports whether a platform row about the local row's
// participant lies within the membership window of it.
func (f *Feed) superseded(rows []Row, local Row) bool {
	for _, r := range rows {
		if !r.Local && isMembershipRow(r.Message, local.Message.SenderID) && absDur(r.At.Sub(local.At)) <= f.cfg.MembershipWindow {
			return true
		}
	}
	return false
}

// Refresh reconciles a room with Band: it captures the projection's
// sequence, fetches the newest page of history, and merges it with the
// live mutations that arrived after the capture (from the journal). A
// capture older than the journal floor cannot be merged, so it fetches
// again, at most Config.RefreshAttempts times. Concurrent refreshes of one
// room share one flight.
func (f *Feed) Refresh(ctx context.Context, room jam.RoomID) error {
	room, err := canonical(room)
	if err != nil {
		return err
	}
	for {
		f.flightMu.Lock()
		if fl, ok := f.flights[room]; ok {
			f.flightMu.Unlock()
			if f.flightHook != nil {
				f.flightHook()
			}
			select {
			case <-fl.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if fl.err != nil && ctx.Err() == nil && (errors.Is(fl.err, context.Canceled) || errors.Is(fl.err, context.DeadlineExceeded)) {
				continue // the leader's caller gave up; lead a new flight
			}
			return fl.err
		}
		fl := &flight{done: make(chan struct{})}
		f.flights[room] = fl
		f.flightMu.Unlock()
		fl.err = f.refresh(ctx, room)
		f.flightMu.Lock()
		delete(f.flights, room)
		f.flightMu.Unlock()
		close(fl.done)
		return fl.err
	}
}

func (f *Feed) refresh(ctx context.Context, room jam.RoomID) error {
	for range f.cfg.RefreshAttempts {
		f.mu.Lock()
		if !f.liveLocked() {
			f.mu.Unlock()
			return fmt.Errorf("refresh room %s: %w", room, jam.ErrStopping)
		}
		// A room is created only once Band answered, so a read of a room
		// the person is not in leaves nothing behind.
		var captured int64
		if r, ok := f.rooms[room]; ok {
			captured = r.seq
		}
		f.mu.Unlock()

		page, err := f.cfg.Human.History(ctx, string(room), f.cfg.Window)
		if err != nil {
			return fmt.Errorf("refresh room %s: %w", room, err)
		}
		snapshot := make([]protocol.Message, 0, len(page))
		for _, m := range page {
			if m, ok := normalize(room, m); ok {
				snapshot = append(snapshot, m)
			}
		}

		f.mu.Lock()
		if !f.liveLocked() {
			f.mu.Unlock()
			return fmt.Errorf("refresh room %s: %w", room, jam.ErrStopping)
		}
		r := f.roomLocked(room)
		if captured < r.floor {
			f.mu.Unlock()
			continue // mutations after the capture left the journal
		}
		merged := merge(snapshot, f.journal.since(room, captured))
		f.reconcileLocked(room, r, merged, len(page) < f.cfg.Window)
		r.cold = false
		f.mu.Unlock()
		return nil
	}
	return fmt.Errorf("refresh room %s: %w: it changed faster than the journal keeps", room, jam.ErrUnavailable)
}

// reconcileLocked brings a room's projection to merged (newest first):
// rows that Band no longer has are deleted, and every merged message is
// upserted (identical ones are ignored). When the page was not complete,
// only rows at or after its oldest message are known to be gone. f.mu
// must be held.
func (f *Feed) reconcileLocked(room jam.RoomID, r *roomState, merged []protocol.Message, complete bool) {
	keep := make(map[jam.PlatformMessageID]bool, len(merged))
	for _, m := range merged {
		keep[jam.PlatformMessageID(m.ID)] = true
	}
	var floor Row
	if len(merged) > 0 {
		last := merged[len(merged)-1]
		floor = Row{Message: &last, At: parseTime(last.InsertedAt, time.Time{})}
	}
	var gone []Row
	for id, row := range r.rows {
		if !keep[id] && (complete || len(merged) == 0 || !row.before(floor)) {
			gone = append(gone, row)
		}
	}
	sortRows(gone)
	for _, row := range gone {
		f.deleteLocked(room, r, jam.PlatformMessageID(row.Message.ID))
	}
	for _, m := range merged {
		f.upsertLocked(room, r, m)
	}
}

// ParticipantAdded schedules the join row fallback: after the grace
// period, unless a platform membership row about the participant lies
// within the membership window of the event, a local system row is
// published and stored.
func (f *Feed) ParticipantAdded(room jam.RoomID, p protocol.Participant) {
	room, err := canonical(room)
	if err != nil {
		return
	}
	pid, err := jam.ParseUUID[jam.IdentityID](p.ID)
	if err != nil {
		return
	}
	p.ID = string(pid)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.liveLocked() {
		return
	}
	at := f.cfg.Clock.Now()
	f.afterLocked(f.cfg.MembershipGrace, func() { f.joinFallback(room, p, at) })
}

// joinFallback runs when a join's grace period ends.
func (f *Feed) joinFallback(room jam.RoomID, p protocol.Participant, at time.Time) {
	key := joinKey{room: room, participant: p.ID}
	f.mu.Lock()
	if !f.liveLocked() {
		f.mu.Unlock()
		return
	}
	if r, ok := f.rooms[room]; ok {
		for _, row := range r.rows {
			if isMembershipRow(row.Message, p.ID) && absDur(row.At.Sub(at)) <= f.cfg.MembershipWindow {
				f.mu.Unlock()
				return // the platform wrote its own row
			}
		}
	}
	if last, ok := f.joins[key]; ok && absDur(at.Sub(last)) <= f.cfg.MembershipWindow {
		f.mu.Unlock()
		return // one join announced twice
	}
	for k, t := range f.joins {
		if absDur(at.Sub(t)) > f.cfg.MembershipWindow {
			delete(f.joins, k)
		}
	}
	f.joins[key] = at
	ctx := f.ctx
	m := joinRow(room, p, at)
	f.cfg.Publish(Mutation{WorkspaceID: f.cfg.WorkspaceID, AccountID: f.cfg.AccountID, Profile: f.cfg.Profile, Room: room,
		Kind: MutationSystem, MessageID: jam.PlatformMessageID(m.ID), Message: m})
	f.mu.Unlock()

	raw, err := json.Marshal(m)
	if err == nil {
		err = f.cfg.Store.RoomSystemAppend(ctx, store.RoomSystemMessage{
			WorkspaceID: f.cfg.WorkspaceID, AccountID: f.cfg.AccountID, Room: room, MessageID: jam.PlatformMessageID(m.ID),
			ParticipantID: jam.IdentityID(p.ID), InsertedAt: at, Sealed: f.cfg.Sealer.Seal(raw, f.systemAAD(room, jam.PlatformMessageID(m.ID))),
			CreatedAt: f.cfg.Clock.Now(),
		})
	}
	if err != nil && ctx.Err() == nil {
		f.log.Warn("store join row", "room", room, "participant", p.ID, "err", err)
	}
}

// joinRow builds the local row of a join in Band's message shape: type
// "system", sent by the participant, with metadata naming the event. Its
// id is derived from (room, participant, time), so the same join always
// yields the same row.
func joinRow(room jam.RoomID, p protocol.Participant, at time.Time) *protocol.Message {
	sum := sha256.Sum256(fmt.Appendf(nil, "jam-join|%s|%s|%d", room, p.ID, at.UnixMicro()))
	sum[6] = sum[6]&0x0f | 0x80 // version 8: custom
	sum[8] = sum[8]&0x3f | 0x80 // RFC 9562 variant
	id := fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
	name := p.Name
	if name == "" && p.Handle != nil {
		name = *p.Handle
	}
	if name == "" {
		name = p.ID
	}
	participant := map[string]any{"id": p.ID, "type": p.Type, "name": p.Name}
	if p.Handle != nil {
		participant["handle"] = *p.Handle
	}
	extra, _ := json.Marshal(map[string]any{"event": protocol.EventParticipantAdded, "participant": participant, "origin": "jam"})
	ts := protocol.FormatTime(at)
	return &protocol.Message{ID: id, Content: name + " joined", MessageType: protocol.MessageSystem, SenderID: p.ID, SenderType: p.Type,
		SenderName: p.Name, ChatRoomID: string(room), Metadata: protocol.MessageMetadata{Extra: extra}, InsertedAt: ts, UpdatedAt: ts}
}

// isMembershipRow reports whether m is a platform system row about the
// participant: an internal (system or action) message whose content or
// metadata names the participant's id. Band does not document the shape
// of its membership rows, so any mention of the id counts.
func isMembershipRow(m *protocol.Message, participant string) bool {
	if m.MessageType != protocol.MessageSystem && m.MessageType != protocol.MessageAction {
		return false
	}
	if strings.Contains(string(m.Metadata.Extra), `"origin":"jam"`) {
		return false
	}
	id := strings.ToLower(participant)
	return strings.Contains(strings.ToLower(m.Content), id) || strings.Contains(strings.ToLower(string(m.Metadata.Extra)), id)
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func (f *Feed) itemAAD(room jam.RoomID, msg jam.PlatformMessageID) []byte {
	return []byte("roomcache|" + string(f.cfg.WorkspaceID) + "|" + string(f.cfg.AccountID) + "|" + string(room) + "|" + string(msg))
}

func (f *Feed) systemAAD(room jam.RoomID, msg jam.PlatformMessageID) []byte {
	return []byte("roomsystem|" + string(f.cfg.WorkspaceID) + "|" + string(f.cfg.AccountID) + "|" + string(room) + "|" + string(msg))
}

func (f *Feed) openItem(room jam.RoomID, it store.RoomCacheItem) (*protocol.Message, error) {
	raw, err := f.cfg.Sealer.Open(it.Sealed, f.itemAAD(room, it.MessageID))
	if err != nil {
		return nil, err
	}
	var m protocol.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
