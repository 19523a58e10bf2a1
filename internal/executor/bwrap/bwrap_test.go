package bwrap_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/jamhq/jam/internal/executor"
	"github.com/jamhq/jam/internal/executor/bwrap"
	"github.com/jamhq/jam/internal/executor/executortest"
	"github.com/jamhq/jam/internal/fakemodel"
	"github.com/jamhq/jam/internal/realagent"
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

// init, not TestMain: the bridge must take over before anything else.
func init() { realagent.RunBridgeIfAsked() }

// TestBridgeInsideANetworkCut: what the real-agent tests do under jam's
// sandbox with network=off: the sandbox makes the network namespace, and
// realagent's bridge, inside it, forwards the fake model's loopback
// address to its unix socket; the agent (curl here) reaches the model, and
// nothing else.
func TestBridgeInsideANetworkCut(t *testing.T) {
	e := requireBwrap(t)
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("needs curl")
	}
	model := fakemodel.New(fakemodel.Config{})
	require.NoError(t, model.Start())
	t.Cleanup(model.Stop)
	sock := filepath.Join(t.TempDir(), "m.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	model.Serve(ln)

	dir := t.TempDir()
	argv := realagent.BridgeCommand(sock, model.Addr(), curl, "-sS", "--max-time", "20", model.URL()+"/models")
	cmd, err := e.Command(executor.Spec{Argv: argv, Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir},
		Writable: []string{dir}, ReadOnly: []string{argv[0], sock}, NoNetwork: true})
	require.NoError(t, err)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), `"id":"fake-model"`, "the model is reached through the bridge")

	// Without the bridge, the model's address is not there.
	cmd, err = e.Command(executor.Spec{Argv: []string{curl, "-sS", "--max-time", "5", model.URL() + "/models"}, Dir: dir,
		Env: []string{"PATH=/usr/bin:/bin"}, Writable: []string{dir}, NoNetwork: true})
	require.NoError(t, err)
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
}
