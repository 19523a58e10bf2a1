package recovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jamhq/jam/internal/band"
	"github.com/jamhq/jam/internal/band/protocol"
	"github.com/jamhq/jam/internal/hub"
)

// runHub is the hub-alone baseline on the copy of the seeded hub: the
// agent lists each room's pending messages and claims them one by one
// (GET …/messages?status=pending, POST …/processing), redeliverParallel
// rooms at a time, until o.HubSample messages are claimed. GET
// …/messages/next would return a claimed message again until it is
// settled, so an agent taking a backlog without settling it lists it.
func runHub(ctx context.Context, o Options, s *seeded) (HubResult, error) {
	h, err := hub.New(hub.Config{DataDir: s.hubCopy, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return HubResult{}, err
	}
	if err := h.Start(ctx); err != nil {
		return HubResult{}, err
	}
	hc := band.NewHTTP(band.HTTPConfig{MaxInFlight: 2 * s.parallel, MaxIdlePerHost: 2 * s.parallel})
	stop := func() error {
		hc.CloseIdle()
		return h.Stop(context.Background())
	}
	agent, err := band.NewClient(hc, h.URL(), band.APIKey(s.agentKey))
	if err != nil {
		return HubResult{}, errors.Join(err, stop())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var taken atomic.Int64
	var firstOnce sync.Once
	var first time.Time
	start := time.Now()
	rooms := make(chan string)
	var wg sync.WaitGroup
	errs := make([]error, s.parallel)
	for w := range s.parallel {
		wg.Go(func() {
			for room := range rooms {
				if err := takeRoom(ctx, agent, room, o.HubSample, &taken, func() { firstOnce.Do(func() { first = time.Now() }) }); err != nil {
					if ctx.Err() == nil {
						errs[w] = err
					}
					cancel()
					return
				}
			}
		})
	}
feed:
	for _, r := range s.rooms {
		if taken.Load() >= int64(o.HubSample) {
			break
		}
		select {
		case rooms <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(rooms)
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(append(errs, stop())...); err != nil {
		return HubResult{}, err
	}
	n := int(min(taken.Load(), int64(o.Messages)))
	if n == 0 {
		return HubResult{}, errors.New("no message taken")
	}
	res := HubResult{Taken: n, Seconds: elapsed.Seconds()}
	res.First = first.Sub(start).Seconds()
	res.All = elapsed.Seconds() * float64(o.Messages) / float64(n)
	return res, nil
}

// takeRoom claims a room's pending messages, oldest first, until limit
// messages are taken over all rooms.
func takeRoom(ctx context.Context, agent *band.Client, room string, limit int, taken *atomic.Int64, claimed func()) error {
	cursor := ""
	for {
		page, err := agent.AgentMessages(ctx, room, protocol.FilterPending, cursor, protocol.MaxPageLimit)
		if err != nil {
			return fmt.Errorf("list room %s: %w", room, err)
		}
		for _, m := range page.Messages {
			// Reserve the claim first: rooms run side by side, and
			// exactly limit messages are taken.
			if taken.Add(1) > int64(limit) {
				taken.Add(-1)
				return nil
			}
			if _, err := agent.AgentProcessing(ctx, room, m.ID); err != nil {
				return fmt.Errorf("claim %s: %w", m.ID, err)
			}
			claimed()
		}
		if !page.HasMore || page.NextCursor == "" || page.NextCursor == cursor {
			return nil
		}
		cursor = page.NextCursor
	}
}

// runFileSpool is the seed design's recovery: its spool holds one file per
// message in one directory per (peer, room) under the agent's root (the
// layout of package ingest's file spool: directories named by SHA-256,
// files by a 20-digit sequence). The files are written first, untimed;
// then the agent's root is listed, each room directory listed and sorted,
// and every file read, in order.
func runFileSpool(s *seeded, dir string) (FileResult, error) {
	root := filepath.Join(dir, hashOf("agent"))
	if err := os.MkdirAll(root, 0o700); err != nil {
		return FileResult{}, err
	}
	made := map[string]bool{}
	for i, m := range s.msgs {
		raw, err := json.Marshal(m)
		if err != nil {
			return FileResult{}, err
		}
		d := filepath.Join(root, hashOf("local/"+agentName, m.ChatRoomID))
		if !made[d] {
			if err := os.Mkdir(d, 0o700); err != nil {
				return FileResult{}, err
			}
			made[d] = true
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("%020d", i+1)), raw, 0o600); err != nil {
			return FileResult{}, err
		}
	}
	var res FileResult
	start := time.Now()
	rooms, err := os.ReadDir(root)
	if err != nil {
		return FileResult{}, err
	}
	for _, r := range rooms {
		files, err := os.ReadDir(filepath.Join(root, r.Name()))
		if err != nil {
			return FileResult{}, err
		}
		// ReadDir sorts by name: the 20-digit sequence is arrival order.
		for _, f := range files {
			if strings.HasSuffix(f.Name(), ".tmp") {
				continue // an unfinished write
			}
			if _, err := os.ReadFile(filepath.Join(root, r.Name(), f.Name())); err != nil {
				return FileResult{}, err
			}
			if res.Read++; res.Read == 1 {
				res.First = time.Since(start).Seconds()
			}
		}
	}
	res.All = time.Since(start).Seconds()
	if res.Read != len(s.msgs) {
		return FileResult{}, fmt.Errorf("read %d files of %d", res.Read, len(s.msgs))
	}
	return res, os.RemoveAll(dir)
}

func hashOf(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}
