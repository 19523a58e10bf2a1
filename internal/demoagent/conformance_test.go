package demoagent_test

import (
	"os"
	"testing"

	"github.com/jamhq/jam/internal/executor/local"
	"github.com/jamhq/jam/internal/harness"
	"github.com/jamhq/jam/internal/harness/acp"
	"github.com/jamhq/jam/internal/harness/harnesstest"
)

// TestDemoAgent_conformance runs the harness seam's suite against the demo
// agent through the ACP harness; each case keeps its sessions in a state
// directory of its own, which both processes of the resume case share.
func TestDemoAgent_conformance(t *testing.T) {
	t.Parallel()
	harnesstest.Exercise(t, func(t *testing.T) harnesstest.Subject {
		return harnesstest.Subject{
			Harness: acp.Harness{},
			Spec: harness.LaunchSpec{Argv: []string{os.Args[0], "-test.run=^$"}, Executor: local.New(), Dir: t.TempDir(),
				Env: append(os.Environ(), "JAM_DEMO_AGENT_CHILD=1", "JAM_DEMO_STATE="+t.TempDir())},
			Dir:  func(t *testing.T) string { return t.TempDir() },
			Echo: "say hello", Want: "You said: say hello", Slow: "[slow] think it over", Approval: "note this",
		}
	})
}
