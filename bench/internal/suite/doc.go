// Package suite is the jambench command: it runs every benchmark scenario
// of jam on this machine, each beside its baseline in the same run (the
// machines are shared and absolute figures drift; ratios hold), prints a
// table (scenario, jam figure, baseline figure, ratio) and can write it
// with the details of every run as JSON.
//
// Scenarios: ingest (package ingest), end to end on the embedded hub
// (package endtoend), footprint (package footprint) and event fan-out
// (package fanout). BENCHMARKS.md at the repository root describes them,
// how to run them and one recorded run.
package suite
