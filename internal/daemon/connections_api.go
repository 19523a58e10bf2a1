package daemon

import (
	"context"
	"fmt"
	"strings"

	"github.com/jamhq/jam/internal/api/wire"
	"github.com/jamhq/jam/internal/connection"
	"github.com/jamhq/jam/internal/store"
)

// connections is the service over the store's connections of the
// daemon's workspace. It holds no state of its own, so one per call is
// as good as one per daemon.
func (d *daemon) connections() *connection.Service {
	return connection.New(connection.Config{Minter: d.minter, Logger: d.log}, d.store)
}

func wireConnection(c store.Connection) wire.Connection {
	return wire.Connection{ID: string(c.ID), Provider: string(c.Provider), Name: c.Name, BaseURL: c.BaseURL, Version: c.CurrentVersion,
		Removed: c.Removed, Created: c.CreatedAt, Updated: c.UpdatedAt}
}

// Connections implements api.Connections.
func (d *daemon) Connections(ctx context.Context) ([]wire.Connection, error) {
	list, err := d.connections().List(ctx, d.workspace.ID)
	if err != nil {
		return nil, err
	}
	out := make([]wire.Connection, 0, len(list))
	for _, c := range list {
		out = append(out, wireConnection(c))
	}
	return out, nil
}

// ConnectionAdd implements api.Connections.
func (d *daemon) ConnectionAdd(ctx context.Context, r wire.ConnectionAddRequest) (wire.Connection, error) {
	c, err := d.connections().Add(ctx, d.workspace.ID, store.ConnectionProvider(r.Provider), r.Name, r.BaseURL, []byte(r.Secret))
	if err != nil {
		return wire.Connection{}, err
	}
	return wireConnection(c), nil
}

// Connection implements api.Connections.
func (d *daemon) Connection(ctx context.Context, ref string) (wire.Connection, error) {
	c, err := d.connections().Get(ctx, d.workspace.ID, ref)
	if err != nil {
		return wire.Connection{}, err
	}
	return wireConnection(c), nil
}

// ConnectionRotate implements api.Connections.
func (d *daemon) ConnectionRotate(ctx context.Context, ref string, r wire.ConnectionRotateRequest) (wire.Connection, error) {
	c, err := d.connections().Rotate(ctx, d.workspace.ID, ref, []byte(r.Secret))
	if err != nil {
		return wire.Connection{}, err
	}
	return wireConnection(c), nil
}

// ConnectionRemove implements api.Connections.
func (d *daemon) ConnectionRemove(ctx context.Context, ref string) (wire.Connection, error) {
	c, err := d.connections().Remove(ctx, d.workspace.ID, ref)
	if err != nil {
		return wire.Connection{}, err
	}
	return wireConnection(c), nil
}

// resolveConnections replaces, in place, each NAME=connection:PROVIDER/NAME
// entry of env (a template's variables, opened) by NAME=SECRET, the
// connection's current credential, as an agent process starts: a rotated
// key reaches the next process without touching the template. An unknown
// or removed connection fails the start, naming the variable and the
// reference, never a value.
func (d *daemon) resolveConnections(ctx context.Context, env []string) error {
	for i, kv := range env {
		name, v, _ := strings.Cut(kv, "=")
		if !connection.IsRef(v) {
			continue
		}
		secret, _, err := d.connections().Resolve(ctx, d.workspace.ID, v)
		if err != nil {
			return fmt.Errorf("environment variable %s: %w", name, err)
		}
		env[i] = name + "=" + string(secret)
	}
	return nil
}
