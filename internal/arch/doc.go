// Package arch holds the tests that keep jam's architecture honest: the
// layer import rules of the design and the rule that every package has
// exactly one package comment. It contains no production code.
//
// The layers, lowest first: vocabulary (jam), mechanisms, persistence
// (store), domain, adapters, edges (api, apiclient, cli, webui) and the
// composition root (daemon). A package imports only its own layer and the
// layers below it, with two sharpenings: edges never import adapters (only
// the root wires adapters in), and the CLI reaches the daemon only through
// the API client, so nothing it links depends on the store, the server side
// of the API, the domain or the daemon. Every package must be listed in the
// layer table in arch_test.go; a new package fails the test until it is
// placed. The seams whose adapters sit above them (internal/executor,
// internal/harness) are mechanisms, so that the domain can name their
// types; their conformance suites (executortest, harnesstest) are
// imported by tests only.
package arch
