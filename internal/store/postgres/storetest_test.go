package postgres

import (
	"regexp"
	"testing"

	"github.com/jamhq/jam/internal/store"
	"github.com/jamhq/jam/internal/store/storetest"
)

// partial presents the aggregates this dialect implements so far as a
// store.Store to the conformance suite: its own methods are promoted at
// depth 1 and shadow the nil interface's at depth 2. Only the subtests of
// implemented aggregates open a store (implemented); the others skip.
type partial struct {
	*Store
	rest
}

type rest struct{ store.Store }

// implemented matches the conformance subtests whose aggregates this
// dialect implements.
var implemented = regexp.MustCompile(`^TestStoretest/(Info|Check|Workspace.*|InvalidParams|SizeLimits|Setting_.*|DaemonRun.*|Times_utcMicroseconds|Account_.*|Peer_.*|Binding_putGetForRoomList|Binding_workspaceIsolation)$`)

func TestStoretest(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T) store.Store {
		if !implemented.MatchString(t.Name()) {
			t.Skip("aggregate not implemented by this dialect yet")
		}
		s, _ := openTest(t)
		return partial{Store: s}
	})
}
