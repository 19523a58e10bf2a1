package ingest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStreamTarget is NATS JetStream embedded in-process with file storage
// and every write synced (sync_interval: always). Each producer has its
// own in-process connection, as independent clients would.
type jetStreamTarget struct {
	ns *server.Server

	mu    sync.Mutex
	conns map[int]*jsConn // guarded by mu
}

type jsConn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// streamName and the subjects it stores: one subject per room, as jam's
// spool keeps one lane per room.
const (
	streamName = "INGEST"
	subjects   = "ingest.>"
)

func openJetStream(ctx context.Context, dir string) (*jetStreamTarget, error) {
	ns, err := server.NewServer(&server.Options{
		ServerName: "jambench",
		JetStream:  true,
		StoreDir:   dir,
		// `sync_interval: always` in a configuration file sets exactly
		// this: fsync after every write.
		SyncAlways: true,
		DontListen: true,
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, errors.New("nats server did not start")
	}
	t := &jetStreamTarget{ns: ns, conns: map[int]*jsConn{}}
	c, err := t.conn(-1)
	if err == nil {
		_, err = c.js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{subjects},
			Storage: jetstream.FileStorage, Replicas: 1})
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("jetstream stream: %w", err), t.Close())
	}
	return t, nil
}

// conn returns producer's connection, connecting on first use.
func (t *jetStreamTarget) conn(producer int) (*jsConn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.conns[producer]; ok {
		return c, nil
	}
	nc, err := nats.Connect("", nats.InProcessServer(t.ns))
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c := &jsConn{nc: nc, js: js}
	t.conns[producer] = c
	return c, nil
}

func (t *jetStreamTarget) Push(ctx context.Context, producer int, payload []byte) (time.Duration, error) {
	c, err := t.conn(producer)
	if err != nil {
		return 0, err
	}
	id := uuidString()
	subject := fmt.Sprintf("ingest.room%d", producer%8)
	t0 := time.Now()
	ack, err := c.js.Publish(ctx, subject, payload, jetstream.WithMsgID(id))
	d := time.Since(t0)
	if err != nil {
		return d, err
	}
	if ack.Duplicate {
		return d, fmt.Errorf("message %s reported as a duplicate", id)
	}
	return d, nil
}

func (t *jetStreamTarget) Extra() map[string]float64 { return nil }

func (t *jetStreamTarget) Close() error {
	t.mu.Lock()
	for p, c := range t.conns {
		c.nc.Close()
		delete(t.conns, p)
	}
	t.mu.Unlock()
	t.ns.Shutdown()
	t.ns.WaitForShutdown()
	return nil
}
