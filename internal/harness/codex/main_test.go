package codex_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/realagent"
)

func TestMain(m *testing.M) {
	// The test binary, started again, plays a scripted app-server.
	if os.Getenv(scriptedEnv) != "" {
		scriptedAppServer()
	}
	// A Codex confined to a network namespace reaches the fake model
	// through this test binary, started as a bridge.
	realagent.RunBridgeIfAsked()
	goleak.VerifyTestMain(m)
}
