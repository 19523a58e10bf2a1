package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jamhq/jam/bench/internal/pgdb"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/hub"
	"github.com/jamhq/jam/internal/jam"
	"github.com/jamhq/jam/internal/jamtest"
	"github.com/jamhq/jam/internal/mention"
	"github.com/jamhq/jam/internal/secret"
	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/postgres"
	"github.com/jamhq/jam/internal/store/sqlite"
)

// agentName is the attached agent of the scenario.
const agentName = "bench"

// Options shape a run.
type Options struct {
	// Messages queued, spread round-robin over Rooms rooms.
	Messages, Rooms int
	// HubSample is how many messages the hub-alone baseline takes before
	// extrapolating; 0 or at least Messages takes them all.
	HubSample int
	// JamSample is how many messages jam must have delivered before the
	// measurement stops and extrapolates; 0 or at least Messages waits
	// for them all.
	JamSample int
	// Parallel bounds the concurrent setup requests. Default 8.
	Parallel int
	// Timeout bounds the wait for jam's redelivery. Default 10 minutes.
	Timeout time.Duration
	// PostgresURL, when set, names a PostgreSQL server: jam's recovery is
	// then also measured over its PostgreSQL store, in a database created
	// on that server for the run and dropped after it (see the package
	// doc). It never appears in a result, a log line or an error.
	PostgresURL string
	// Dir holds the run's data; keep it short (unix socket paths).
	Dir string
	// Log receives progress lines. Nil discards them.
	Log io.Writer
}

func (o Options) withDefaults() Options {
	if o.Parallel == 0 {
		o.Parallel = 8
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.HubSample <= 0 || o.HubSample > o.Messages {
		o.HubSample = o.Messages
	}
	if o.JamSample <= 0 || o.JamSample > o.Messages {
		o.JamSample = o.Messages
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Times are one implementation's recovery, in seconds from its start.
type Times struct {
	First float64 `json:"first_seconds"`
	All   float64 `json:"all_seconds"`
}

// JamResult is jam's recovery.
type JamResult struct {
	Times
	// Ready is when the control API first answered.
	Ready float64 `json:"ready_seconds"`
	// FirstDeliveredEvent is the time of the first message.delivered
	// event (the daemon's clock), before any agent could see it when the
	// control API was not up yet.
	FirstDeliveredEvent float64 `json:"first_delivered_event_seconds"`
	// Taken is how many deliveries were waited for, SampleSeconds when
	// the last of them was delivered; All is extrapolated from them when
	// Taken < Messages.
	Taken         int     `json:"taken"`
	SampleSeconds float64 `json:"sample_seconds"`
	// Delivered counts distinct messages delivered (a full run only); Inbox the messages the
	// inbox lists at the end (each once).
	Delivered int `json:"delivered"`
	Inbox     int `json:"inbox"`
	// Claimed counts messages claimed on the hub, each exactly once.
	Claimed int `json:"claimed"`
	// PeakRSSKiB is the daemon's peak resident memory (VmHWM).
	PeakRSSKiB int64 `json:"peak_rss_kib"`
}

// HubResult is the hub-alone baseline.
type HubResult struct {
	Times
	// Taken is how many messages were taken; All is extrapolated from
	// them when Taken < Messages.
	Taken   int     `json:"taken"`
	Seconds float64 `json:"sample_seconds"`
}

// FileResult is the file-spool baseline.
type FileResult struct {
	Times
	Read int `json:"read"`
}

// PostgresResult is jam's recovery over its PostgreSQL store.
type PostgresResult struct {
	JamResult
	// Setup is the time its backlog took to set up (not timed in the
	// figures).
	Setup float64 `json:"setup_seconds"`
	// Database is the name of the database the run created and dropped.
	Database string `json:"database"`
}

// Result is one run of the scenario.
type Result struct {
	Messages int        `json:"messages"`
	Rooms    int        `json:"rooms"`
	Setup    float64    `json:"setup_seconds"`
	Jam      JamResult  `json:"jam"`
	Hub      HubResult  `json:"hub"`
	File     FileResult `json:"file_spool"`
	// Postgres is jam over PostgreSQL; nil without Options.PostgresURL.
	Postgres *PostgresResult `json:"jam_postgres,omitempty"`
}

// Run sets the backlog up and measures jam and both baselines.
func Run(ctx context.Context, o Options) (Result, error) {
	o = o.withDefaults()
	if o.Messages < 1 || o.Rooms < 1 {
		return Result{}, fmt.Errorf("%w: recovery needs messages and rooms", jam.ErrInvalid)
	}
	dir, err := os.MkdirTemp(o.Dir, "rc")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	begun := time.Now()
	s, err := seed(ctx, o, filepath.Join(dir, "jam"), config.DefaultStore)
	if err != nil {
		return Result{}, fmt.Errorf("seed: %w", err)
	}
	res := Result{Messages: o.Messages, Rooms: o.Rooms, Setup: time.Since(begun).Seconds()}
	fmt.Fprintf(o.Log, "recovery: %d messages across %d rooms set up in %.1f s\n", o.Messages, o.Rooms, res.Setup)

	if res.File, err = runFileSpool(s, filepath.Join(dir, "fs")); err != nil {
		return Result{}, fmt.Errorf("file spool: %w", err)
	}
	fmt.Fprintf(o.Log, "file spool: first %.3f s, all %d read in %.2f s\n", res.File.First, res.File.Read, res.File.All)
	if res.Hub, err = runHub(ctx, o, s); err != nil {
		return Result{}, fmt.Errorf("hub alone: %w", err)
	}
	fmt.Fprintf(o.Log, "hub alone: first %.3f s, %d taken in %.1f s, all (extrapolated when sampled) %.1f s\n", res.Hub.First, res.Hub.Taken, res.Hub.Seconds, res.Hub.All)
	if res.Jam, err = runJam(ctx, o, s); err != nil {
		return Result{}, fmt.Errorf("jam: %w", err)
	}
	logJam(o.Log, "jam", res.Jam)
	if o.PostgresURL != "" {
		pg, err := runPostgres(ctx, o, filepath.Join(dir, "pg"))
		if err != nil {
			return Result{}, fmt.Errorf("jam over postgres: %w", err)
		}
		res.Postgres = &pg
	}
	return res, nil
}

func logJam(w io.Writer, name string, r JamResult) {
	fmt.Fprintf(w, "%s: first delivered %.2f s, %d delivered at %.1f s; control api up %.2f s (0: not yet), first delivery %.2f s, all (extrapolated when sampled) %.1f s, peak RSS %d MiB\n",
		name, r.FirstDeliveredEvent, r.Taken, r.SampleSeconds, r.Ready, r.First, r.All, r.PeakRSSKiB/1024)
}

// runPostgres seeds the same backlog in dir over a fresh database on the
// server of o.PostgresURL, measures jam's recovery on it, and drops the
// database, whatever happened.
func runPostgres(ctx context.Context, o Options, dir string) (_ PostgresResult, err error) {
	begun := time.Now()
	dbURL, name, drop, err := pgdb.Create(ctx, o.PostgresURL, "jambench_recovery_")
	if err != nil {
		return PostgresResult{}, err
	}
	defer func() { err = errors.Join(err, drop()) }()
	s, err := seed(ctx, o, dir, dbURL)
	if err != nil {
		return PostgresResult{}, fmt.Errorf("seed: %w", err)
	}
	res := PostgresResult{Setup: time.Since(begun).Seconds(), Database: name}
	fmt.Fprintf(o.Log, "jam over postgres: %d messages across %d rooms set up in %.1f s (database %s)\n", o.Messages, o.Rooms, res.Setup, name)
	if res.JamResult, err = runJam(ctx, o, s); err != nil {
		return PostgresResult{}, err
	}
	logJam(o.Log, "jam over postgres", res.JamResult)
	return res, nil
}

// seeded is the backlog set up by seed.
type seeded struct {
	dir string // jam's data directory
	// store is the daemon's store: config.DefaultStore (the SQLite file
	// in dir) or a postgres:// URL, which may hold a password.
	store    string
	hubCopy  string // a copy of the seeded hub's directory, for the baseline; "" with postgres
	agentID  string
	agentKey string
	rooms    []string
	// msgs are the messages as the hub pushed them, in posting order.
	msgs []protocol.Message
	// parallel is the number of rooms redelivery works on at once.
	parallel int
}

// seed builds the backlog in the data directory dir, over the store
// storeValue (see seeded.store and the package doc). Only the SQLite
// backlog keeps a copy of the seeded hub, for the hub-alone baseline.
func seed(ctx context.Context, o Options, dir, storeValue string) (*seeded, error) {
	s := &seeded{dir: dir, store: storeValue, parallel: redeliverParallel}
	if !config.IsPostgresURL(storeValue) {
		s.hubCopy = filepath.Join(filepath.Dir(dir), "hubcopy")
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return nil, err
	}
	ws, peer, owner, err := seedDaemon(ctx, o, s)
	if err != nil {
		return nil, err
	}
	if err := seedHub(ctx, o, s, owner); err != nil {
		return nil, err
	}
	return s, seedStore(ctx, s, ws, peer)
}

// seedDaemon runs a daemon in-process to create the agent, the rooms and
// the bindings the way a user does.
func seedDaemon(ctx context.Context, o Options, s *seeded) (jam.WorkspaceID, jam.PeerKey, string, error) {
	d, err := jamtest.Start(ctx, jamtest.Options{DataDir: s.dir, LogLevel: "error", Store: s.store})
	if err != nil {
		return "", jam.PeerKey{}, "", err
	}
	defer d.Stop()
	owner, err := d.Owner()
	if err != nil {
		return "", jam.PeerKey{}, "", err
	}
	reg, err := owner.RegisterAgent(ctx, agentName, "recovery benchmark agent")
	if err != nil {
		return "", jam.PeerKey{}, "", fmt.Errorf("register agent: %w", err)
	}
	s.agentID, s.agentKey = reg.Agent.ID, reg.Credentials.APIKey
	agent, err := d.Client.AgentAdd(ctx, wire.AgentAddRequest{Name: agentName, Key: s.agentKey})
	if err != nil {
		return "", jam.PeerKey{}, "", fmt.Errorf("add agent: %w", err)
	}
	peer, err := jam.ParsePeerKey(agent.Peer)
	if err != nil {
		return "", jam.PeerKey{}, "", err
	}
	s.rooms = make([]string, o.Rooms)
	err = each(o.Rooms, o.Parallel, func(i int) error {
		room, err := owner.CreateChat(ctx, fmt.Sprintf("recovery %d", i))
		if err != nil {
			return fmt.Errorf("create room %d: %w", i, err)
		}
		if _, err := owner.AddChatParticipant(ctx, room.ID, s.agentID, protocol.RoleMember); err != nil {
			return fmt.Errorf("add agent to room %d: %w", i, err)
		}
		if _, err := d.Client.Bind(ctx, wire.BindRequest{Agent: agentName, Room: room.ID}); err != nil {
			return fmt.Errorf("bind room %d: %w", i, err)
		}
		s.rooms[i] = room.ID
		return nil
	})
	if err != nil {
		return "", jam.PeerKey{}, "", err
	}
	return d.Status.Workspace.ID, peer, d.Status.Band.UserID, d.Stop()
}

// seedHub opens the daemon's embedded hub alone and seeds the messages,
// then copies its directory for the hub-alone baseline.
func seedHub(ctx context.Context, o Options, s *seeded, owner string) error {
	hubDir := filepath.Join(s.dir, "hub")
	h, err := hub.New(hub.Config{DataDir: hubDir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	seeds := make([]hub.SeedMessage, o.Messages)
	for i := range seeds {
		seeds[i] = hub.SeedMessage{Room: s.rooms[i%len(s.rooms)], Sender: owner,
			Content: fmt.Sprintf("@%s recovery #%d", agentName, i), Mentions: []string{s.agentID}}
	}
	s.msgs, err = h.SeedMessages(ctx, seeds)
	if err = errors.Join(err, h.Stop(ctx)); err != nil {
		return err
	}
	if s.hubCopy == "" {
		return nil
	}
	// The hub's Stop checkpointed its WAL into hub.db.
	if err := os.Mkdir(s.hubCopy, 0o700); err != nil {
		return err
	}
	for _, name := range []string{"hub.db", "owner.key"} {
		if err := copyFile(filepath.Join(hubDir, name), filepath.Join(s.hubCopy, name)); err != nil {
			return err
		}
	}
	return nil
}

// seedStore spools and queues the messages in jam's store as the engine
// does: sealed as received, then moved to the queue rendered and resealed.
// Both dialects get the same rows through the same store methods.
func seedStore(ctx context.Context, s *seeded, ws jam.WorkspaceID, peer jam.PeerKey) error {
	box, err := secret.LoadOrCreate(filepath.Join(s.dir, "daemon.key"))
	if err != nil {
		return err
	}
	st, err := openStore(ctx, s, box)
	if err != nil {
		return err
	}
	lookup := func(id string) (string, bool) { return agentName, id == s.agentID }
	received := time.Now()
	for chunk := range slices.Chunk(s.msgs, 512) {
		entries := make([]store.SpoolEntry, len(chunk))
		rows := make([]store.QueueRow, len(chunk))
		for i, m := range chunk {
			id, room, sender := jam.PlatformMessageID(m.ID), jam.RoomID(m.ChatRoomID), jam.IdentityID(m.SenderID)
			raw, err := json.Marshal(m)
			if err != nil {
				return errors.Join(err, st.Close())
			}
			entries[i] = store.SpoolEntry{WorkspaceID: ws, Peer: peer, Room: room, MessageID: id, Sealed: box.Seal(raw, aad(ws, peer, id)), ReceivedAt: received}
			m.Content = mention.Render(m.Content, lookup)
			rendered, err := json.Marshal(m)
			if err != nil {
				return errors.Join(err, st.Close())
			}
			rows[i] = store.QueueRow{WorkspaceID: ws, Peer: peer, Room: room, MessageID: id, SenderID: sender,
				Sealed: box.Seal(rendered, aad(ws, peer, id)), State: store.QueueQueued, ReceivedAt: received}
		}
		res, err := st.SpoolAppend(ctx, entries)
		if err != nil {
			return errors.Join(fmt.Errorf("spool: %w", err), st.Close())
		}
		for i := range rows {
			if !res.Appended[i] {
				return errors.Join(fmt.Errorf("spool: message %s not appended", entries[i].MessageID), st.Close())
			}
			rows[i].Seq = res.Seqs[i]
		}
		moved, err := st.SpoolMoveBatch(ctx, rows)
		if err != nil {
			return errors.Join(fmt.Errorf("queue: %w", err), st.Close())
		}
		for i, m := range moved {
			if m.Outcome != store.MoveQueued || m.Row.Binding == "" {
				return errors.Join(fmt.Errorf("queue: message %s %s, binding %q", rows[i].MessageID, m.Outcome, m.Row.Binding), st.Close())
			}
		}
	}
	return st.Close()
}

// seedingStore is what seedStore needs of a store dialect.
type seedingStore interface {
	store.Spool
	Close() error
}

// openStore opens the store the daemon of s uses, sealing with the
// daemon's key as jamd does (a PostgreSQL store is opened with the same
// Sealer for its whole life).
func openStore(ctx context.Context, s *seeded, box *secret.Box) (seedingStore, error) {
	quiet := slog.New(slog.DiscardHandler)
	if config.IsPostgresURL(s.store) {
		st, err := postgres.Open(ctx, postgres.Config{URL: s.store, Logger: quiet, Sealer: box})
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(s.dir, datadir.StoreFile), Logger: quiet, Sealer: box})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// aad is the engine's additional data of a sealed body: it binds the body
// to its row (internal/engine seals and opens with the same).
func aad(ws jam.WorkspaceID, key jam.PeerKey, msg jam.PlatformMessageID) []byte {
	return []byte(string(ws) + "|" + key.String() + "|" + string(msg))
}

// each runs fn(0…n-1), at most parallel at once, and joins the errors.
func each(n, parallel int, fn func(i int) error) error {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
