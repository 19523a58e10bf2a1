// Package harness is the seam between jam's owned-agent runtime and the
// coding-agent CLIs it drives (ACP agents, and in time Codex app-server and
// Claude Code stream-json): a Harness launches a Process on an executor
// lease, a Process opens or resumes provider threads and runs turns on
// them, streaming neutral Updates and ending each with a typed Outcome.
// Adapters live below it (harness/acp, harness/claude, harness/codex),
// sharing Answer (the bounded answer) and harness/procio (start, watch and
// stop of the CLI process); the runtime sees only this package's types.
//
// Invariants every adapter keeps, and harnesstest.Exercise checks:
//   - a Process is started through LaunchSpec.Executor (the lease's
//     sandbox), in a process group of its own, with exactly LaunchSpec.Env;
//     Stop ends the whole group and is safe to call more than once;
//   - Prompt calls its update callback only from its own goroutines, in
//     order, and never after it returns: output a harness sends after a
//     turn ended (after a cancel, say) reaches nobody;
//   - when Prompt's context ends, the adapter asks the CLI to stop the
//     turn and Prompt returns an Outcome with StopCancelled (or an error if
//     the CLI does not stop in time);
//   - when the process dies, Exited is closed and a running Prompt returns
//     an error;
//   - every approval the CLI asks for is answered through one Approval
//     callback (LaunchSpec.Approve, else the permission Policy), never
//     by the adapter on its own;
//   - errors an adapter returns hide the values of LaunchSpec.Secrets
//     (RedactEnv): a CLI may echo its environment, and the error becomes a
//     turn's detail and goes to the log;
//   - the Manifest describes the process honestly: the runtime steers,
//     resumes and places sessions by it alone.
//
// Update's JSON form is the stored form of a turn's output
// (store.OutputUpdate is this type) and the wire's TurnUpdate mirrors it,
// pinned by a test; kinds and field names are therefore never renamed.
package harness
