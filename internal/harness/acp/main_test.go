package acp_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/jamhq/jam/internal/realagent"
)

func TestMain(m *testing.M) {
	// The test binary, started again, plays a scripted agent.
	runScriptedAgentIfAsked()
	// Agents confined to a network namespace reach the fake model through
	// this test binary, started as a bridge.
	realagent.RunBridgeIfAsked()
	goleak.VerifyTestMain(m)
}
