// Package delegation runs delegations: a parent session's assignment of
// work to a child session of a named agent, in a role, with pinned inputs
// (a change set, a commit) and a result contract, a JSON Schema 2020-12
// document the child's result must satisfy. Only a validated result,
// stored immutably, counts as a verdict: [Service.Verdict] is what a
// delivery's merge gate asks.
//
// The life of a delegation (store.Delegations keeps it):
//
//   - [Service.Create] checks the request (role, agent, instructions,
//     inputs, contract), stores the delegation pending, asks the runtime
//     ([Children.Start]) for the child session, records the child
//     (running), and only then has the child's first turn queued with the
//     instructions ([Children.Begin]), so the child's submit always finds
//     itself recorded. A child that cannot start fails the delegation
//     (start_failed).
//   - The child answers with [Service.Submit]. Only the delegation's own
//     child may: for any other session the delegation does not exist
//     (jam.ErrNotFound, as for another workspace's). The result is checked
//     against the contract the delegation was created with (its stored
//     document, so a later change to a built-in contract does not move the
//     goalposts of a running delegation). An invalid result counts an
//     attempt and comes back as an [InvalidResultError] that lists the
//     problems where they are (`/findings/0/line: must be >= 1, got 0`)
//     and says how many attempts remain; the last one fails the
//     delegation and tells the parent. A valid result is stored with its
//     digest in the same transaction that marks the delegation submitted,
//     so of two submits at once exactly one counts, and the parent is
//     told in a short notice ([Children.Notify]) naming the delegation,
//     the verdict line and how to read the result.
//   - [Service.Cancel] ends a delegation that has not ended.
//
// Contracts are compiled with santhosh-tekuri/jsonschema. A contract is
// one self-contained document: its compiler has a loader that refuses
// every URL, so a $ref to an http(s) URL or a file is a refused contract,
// never a fetch. The built-in contracts are embedded: review ({verdict:
// approve | request_changes, summary?, findings: [{path, line, severity,
// message}]}) and test ({passed, commands, failures: [{name,
// message}]}); both refuse properties they do not name, so a model's
// typo is a problem it is told about rather than a field nobody reads.
// Contracts, results and problems are bounded (64 KiB, 256 KiB, 20
// problems of 200 bytes), so what a model reads back stays short.
//
// Unlike the system the seeds describe, a verdict is not a message in
// the parent's transcript that a reader has to interpret: it is a stored
// record with one writer (the child), one state machine fenced in SQL,
// and a schema checked before it is accepted.
package delegation
