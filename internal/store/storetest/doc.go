// Package storetest is the conformance suite of the [store.Store] seam.
//
// Every dialect runs it from its own tests, so behaviour the rest of jam
// relies on (error classes, ordering, tenancy isolation, time precision)
// is pinned down once and checked against each backend. A behaviour that
// only one dialect can show (pragmas, file modes, pool wiring) belongs in
// that dialect's own tests instead.
//
// A dialect hands the suite an [Opener]: one fresh database per call, and
// any number of handles on it. [Exercise] runs everything against a full
// [store.Store]; each aggregate also has an entry point of its own
// ([Settings], [Spool], [Turns], ...) whose type constraint names only the
// aggregates it exercises and those its fixtures need, so a dialect that
// implements some aggregates can already run their cases. The cases see a
// store with only those aggregates filled in: a case that calls outside
// its constraint panics on every dialect, not only on a partial one.
package storetest
