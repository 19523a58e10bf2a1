package recovery

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/jamhq/jam/internal/api/apiclient"
	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/config"
	"github.com/jamhq/jam/internal/datadir"
	"github.com/jamhq/jam/internal/jamtest"
	_ "github.com/jamhq/jam/internal/store/sqlite" // registers the "sqlite" driver
)

// ChildEnv, set to a data directory, makes the program run as the daemon
// of a recovery measurement: see Child.
const ChildEnv = "JAMBENCH_RECOVERY_DAEMON"

// StoreEnv holds the store of the child's daemon (config's Store: unset
// for the SQLite file of the data directory, or a postgres:// URL). It
// goes through the environment, not the command line, because the URL
// may hold a password.
const StoreEnv = "JAMBENCH_RECOVERY_STORE"

// redeliverParallel is the number of rooms jam's redelivery works on at
// once (internal/engine Redeliver: as many as lanes may be active); the
// hub-alone baseline does the same.
const redeliverParallel = 8

// Child runs the daemon of a measurement on dir, over storeValue (the
// value of StoreEnv; "" is the SQLite file of dir), until in ends.
func Child(ctx context.Context, dir, storeValue string, in io.Reader) error {
	d, err := jamtest.Start(ctx, jamtest.Options{DataDir: dir, Store: storeValue, LogLevel: "error", ReadyTimeout: time.Hour})
	if err != nil {
		return err
	}
	defer d.Stop()
	_, err = io.Copy(io.Discard, in)
	return errors.Join(err, d.Stop())
}

// peakRSS reads a process's VmHWM from /proc, in KiB (-1 if unavailable).
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// runJam starts the daemon on the seeded directory in a child process and
// measures its recovery (see the package doc). With o.JamSample below the
// backlog, it stops (kills) the daemon once that many messages are
// delivered and extrapolates.
func runJam(ctx context.Context, o Options, s *seeded) (_ JamResult, err error) {
	exe, err := os.Executable()
	if err != nil {
		return JamResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), ChildEnv+"="+s.dir, StoreEnv+"="+s.store)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return JamResult{}, err
	}
	c := apiclient.New(filepath.Join(s.dir, datadir.SocketFile))
	defer c.Close()
	progress, err := openProgress(s)
	if err != nil {
		return JamResult{}, err
	}
	defer progress.Close()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return JamResult{}, err
	}
	killed := false
	defer func() {
		stdin.Close()
		if werr := cmd.Wait(); werr != nil && !killed {
			err = errors.Join(err, fmt.Errorf("recovery child: %w", werr))
		}
	}()
	since := func(t time.Time) float64 { return t.Sub(start).Seconds() }
	var res JamResult

	// The agent's view, from the start: when the control API first
	// answers, and when the agent can first take a message through it.
	var ready, taken atomic.Int64 // nanoseconds since start; 0 = not yet
	actx, acancel := context.WithCancel(ctx)
	var agent sync.WaitGroup
	defer func() {
		acancel()
		agent.Wait()
	}()
	agent.Go(func() {
		if _, err := c.WaitReady(actx, 5*time.Millisecond); err != nil {
			return
		}
		ready.Store(int64(time.Since(start)))
		for actx.Err() == nil {
			inbox, err := c.WaitInbox(actx, wire.WaitRequest{Agent: agentName, TimeoutMS: 1000})
			if err == nil && len(inbox.Messages) > 0 {
				taken.Store(int64(time.Since(start)))
				return
			}
		}
	})
	seconds := func(v *atomic.Int64) float64 { return time.Duration(v.Load()).Seconds() }

	// Follow the redelivery in the store (the daemon's own delivery times)
	// until the sample is delivered.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		first, nth, err := progress.delivered(ctx, o.JamSample)
		switch {
		case err == nil && nth.Valid:
			res.FirstDeliveredEvent = since(time.UnixMicro(first.Int64))
			res.SampleSeconds = since(time.UnixMicro(nth.Int64))
		case err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "no such table"):
			return JamResult{}, fmt.Errorf("follow redelivery: %w", err)
		}
		if res.SampleSeconds > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return JamResult{}, fmt.Errorf("%d messages not delivered within %s: %w", o.JamSample, o.Timeout, ctx.Err())
		case <-tick.C:
		}
	}
	res.Taken = o.JamSample
	if o.JamSample < o.Messages {
		res.PeakRSSKiB = peakRSS(cmd.Process.Pid)
		res.All = res.FirstDeliveredEvent + (res.SampleSeconds-res.FirstDeliveredEvent)*float64(o.Messages)/float64(o.JamSample)
		res.Ready, res.First = seconds(&ready), seconds(&taken)
		if res.First == 0 {
			// The agent could not take a message yet: no earlier than
			// all are redelivered.
			res.First = max(res.All, res.SampleSeconds)
		}
		killed = true
		return res, cmd.Process.Kill()
	}

	agent.Wait() // the agent has taken its first message by now
	if taken.Load() == 0 {
		return JamResult{}, fmt.Errorf("the agent could not take a message: %w", ctx.Err())
	}
	res.Ready, res.First = seconds(&ready), seconds(&taken)
	first, last, n, err := delivered(ctx, c, s)
	if err != nil {
		return JamResult{}, err
	}
	res.FirstDeliveredEvent, res.All, res.Delivered = since(first), since(last), n
	seen := map[string]bool{}
	for after := ""; ; {
		inbox, err := c.Inbox(ctx, apiclient.InboxQuery{Agent: agentName, Limit: wire.MaxInboxLimit, After: after})
		if err != nil {
			return JamResult{}, fmt.Errorf("inbox: %w", err)
		}
		for _, m := range inbox.Messages {
			if seen[m.ID] {
				return JamResult{}, fmt.Errorf("message %s listed twice", m.ID)
			}
			seen[m.ID] = true
		}
		if !inbox.More {
			break
		}
		after = inbox.NextCursor
	}
	res.Inbox = len(seen)
	if res.Claimed, err = claimedOnHub(ctx, c, s); err != nil {
		return JamResult{}, err
	}
	res.PeakRSSKiB = peakRSS(cmd.Process.Pid)
	return res, nil
}

// progress reads the daemon's own delivery times from its store while it
// runs, read-only.
type progress struct {
	db *sql.DB
	// nthQuery selects the delivery time of the row at an offset, with
	// the dialect's placeholder.
	nthQuery string
}

// openProgress opens the store of s for reading: the SQLite file
// read-only, or a connection to the PostgreSQL database.
func openProgress(s *seeded) (*progress, error) {
	const nth = `SELECT delivered_at FROM queue WHERE state = 'delivered' ORDER BY delivered_at LIMIT 1 OFFSET `
	if config.IsPostgresURL(s.store) {
		cfg, err := pgx.ParseConfig(s.store)
		if err != nil {
			return nil, errors.New("progress: the postgres URL does not parse") // pgx's error may quote it
		}
		return &progress{db: stdlib.OpenDB(*cfg), nthQuery: nth + "$1"}, nil
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.dir, datadir.StoreFile)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, err
	}
	return &progress{db: db, nthQuery: nth + "?"}, nil
}

// delivered returns the earliest delivery time, and that of the n-th
// delivered message (NULL while fewer are delivered), in microseconds.
func (p *progress) delivered(ctx context.Context, n int) (first, nth sql.NullInt64, err error) {
	err = p.db.QueryRowContext(ctx, `SELECT MIN(delivered_at) FROM queue WHERE state = 'delivered'`).Scan(&first)
	if err == nil && first.Valid {
		err = p.db.QueryRowContext(ctx, p.nthQuery, n-1).Scan(&nth)
	}
	return first, nth, err
}

func (p *progress) Close() error { return p.db.Close() }

// claimedOnHub counts the seeded messages the agent holds claimed on the
// daemon's hub with exactly one processing attempt; it fails if one is
// still pending or was claimed more than once.
func claimedOnHub(ctx context.Context, c *apiclient.Client, s *seeded) (int, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return 0, err
	}
	hc := band.NewHTTP(band.HTTPConfig{})
	defer hc.CloseIdle()
	agent, err := band.NewClient(hc, st.Band.URL, band.APIKey(s.agentKey))
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	err = each(len(s.rooms), 4, func(i int) error {
		room := s.rooms[i]
		if p, err := agent.AgentMessages(ctx, room, protocol.FilterPending, "", 1); err != nil {
			return err
		} else if len(p.Messages) > 0 {
			return fmt.Errorf("room %s: message %s still pending on the hub", room, p.Messages[0].ID)
		}
		cursor := ""
		for {
			p, err := agent.AgentMessages(ctx, room, protocol.FilterProcessing, cursor, protocol.MaxPageLimit)
			if err != nil {
				return err
			}
			for _, m := range p.Messages {
				if a := m.Metadata.DeliveryStatus[s.agentID].CurrentAttempt; a != 1 {
					return fmt.Errorf("message %s claimed %d times on the hub", m.ID, a)
				}
				n.Add(1)
			}
			if !p.HasMore || p.NextCursor == "" || p.NextCursor == cursor {
				return nil
			}
			cursor = p.NextCursor
		}
	})
	return int(n.Load()), err
}

// delivered reads the daemon's event stream from the start until every
// seeded message has a message.delivered event, and returns the times of
// the first and the last, and the count.
func delivered(ctx context.Context, c *apiclient.Client, s *seeded) (first, last time.Time, n int, err error) {
	want := make(map[string]bool, len(s.msgs))
	for _, m := range s.msgs {
		want[m.ID] = true
	}
	st, err := c.Events(ctx, wire.EventsRequest{After: 0})
	if err != nil {
		return first, last, 0, fmt.Errorf("events: %w", err)
	}
	var once sync.Once
	stop := context.AfterFunc(ctx, func() { once.Do(func() { st.Close() }) })
	defer func() {
		stop()
		once.Do(func() { st.Close() })
	}()
	total := len(want)
	for n < total {
		ev, err := st.Next()
		if err != nil {
			return first, last, n, fmt.Errorf("events after %d of %d delivered: %w", n, total, errors.Join(err, ctx.Err()))
		}
		if ev.Kind == wire.EventKindStreamResync {
			return first, last, n, fmt.Errorf("events: resync after %d of %d delivered", n, total)
		}
		if ev.Kind != "message.delivered" || !want[ev.MessageID] {
			continue
		}
		delete(want, ev.MessageID)
		n++
		if first.IsZero() || ev.At.Before(first) {
			first = ev.At
		}
		if ev.At.After(last) {
			last = ev.At
		}
	}
	return first, last, n, nil
}
