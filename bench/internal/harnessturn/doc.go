// Package harnessturn measures jam's overhead per turn of an owned agent,
// per harness: the time from a person's post to the agent's reply in the
// room through jam, against the same CLI answering the same input driven
// by its harness adapter with no daemon around it.
//
// For each harness (Harnesses: the demo agent, which needs no model and
// no install, then Claude Code, Codex, the Copilot CLI and OpenCode, each
// skipped when its CLI is not installed) one fake model serves both ways,
// and each way keeps one long-lived CLI process with one thread:
//
//   - direct (baseline): harness.Harness Launch and Open, then one Prompt
//     per turn, timed from the call to its return with the answer.
//   - through jam: a jamd in process (internal/jamtest) on its embedded
//     hub, an owned agent of the harness in one room with the same command
//     and environment on the local executor; the post goes through the
//     hub's REST API, and the reply and the settlement are timed as they
//     reach the person's own socket on the hub (a push, no polling).
//
// Invariants of a run:
//
//   - Both ways give the CLI the same bytes: the direct way sends the text
//     jam's runtime makes of the post (the sender, then the message).
//   - Both ways run the same process: the same argv and environment, made
//     by internal/realagent, which isolates the CLI (its own home; as
//     root, a network namespace with only loopback, the fake model reached
//     through a bridge), so no traffic leaves loopback.
//   - The ways take turns, alternating which goes first, each turn after a
//     pause (Options.Gap), so that load hits both alike and a CLI's work
//     after one turn does not fall into the next.
//   - A turn counts only when it ended with the echo of its own prompt
//     (the fake model's, or the demo agent's restatement); anything else
//     fails the run.
//   - Warm-up turns are not measured; the first, which starts the process,
//     is reported on its own.
//
// Each turn through jam is also split by jamd's own event times
// (/v1/events): post, message.spooled, message.delivered, turn.running,
// reply seen, message.settled (Result.Phases).
//
// The package runs outside tests (jambench), so realagent's constructors,
// which take a testing.TB, get a fixture that turns Skip and Fatal into
// errors. The executable must call RunDemoIfAsked and
// realagent.RunBridgeIfAsked first thing: a run re-executes it as the
// demo agent and as the network bridge.
package harnessturn
