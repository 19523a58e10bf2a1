package bwrap_test

import (
	"os"
	"testing"

	"github.com/jamhq/jam/internal/executor/bwrap"
	"github.com/jamhq/jam/internal/executor/executortest"
)

// requireBwrap skips t where bubblewrap cannot run, unless
// JAM_REQUIRE_BWRAP=1 makes that a failure.
func requireBwrap(t *testing.T) *bwrap.Executor {
	t.Helper()
	if err := bwrap.Probe(); err != nil {
		if os.Getenv("JAM_REQUIRE_BWRAP") == "1" {
			t.Fatalf("JAM_REQUIRE_BWRAP=1: %v", err)
		}
		t.Skip(err)
	}
	e, err := bwrap.New()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestExercise(t *testing.T) { executortest.Exercise(t, requireBwrap(t)) }
