// Package metrics defines the daemon's Prometheus metrics: the inbound
// pipeline's counters, the spool's group-commit latency, the owned turns'
// outcomes and durations, the control API's request durations, and the
// gauges read at scrape time (queue and spool depth, Band connections).
//
// Invariants:
//   - One registry per daemon, owned by the composition root: nothing here
//     registers with Prometheus's global default registry, so two daemons in
//     one test process never share a metric.
//   - Every recording method is safe on a nil *Metrics and does nothing, so
//     a component built without metrics (most tests) passes nil.
//   - No label has unbounded cardinality: labels carry outcomes, pipeline
//     event kinds, turn states, route patterns (never raw paths), status
//     classes and connection states; never a message, room, session, peer
//     or account id. Values outside a known set are folded into "other".
//   - Scrape-time gauges call the functions the composition root installs;
//     they are bounded by a timeout and hold no lock of this package while
//     they run.
package metrics
