// Package storetest is the conformance suite of the [store.Store] seam.
//
// Every dialect runs [Exercise] from its own tests, so behaviour the rest of
// jam relies on (error classes, ordering, tenancy isolation, time precision)
// is pinned down once and checked against each backend. A behaviour that
// only one dialect can show (pragmas, file modes, pool wiring) belongs in
// that dialect's own tests instead.
package storetest
