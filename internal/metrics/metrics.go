package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric name.
const Namespace = "jam"

// Metrics is the daemon's metric set and the registry that holds it.
type Metrics struct {
	reg *prometheus.Registry

	spooled    prometheus.Counter
	duplicates prometheus.Counter
	routed     *prometheus.CounterVec
	delivered  *prometheus.CounterVec
	settled    *prometheus.CounterVec
	commit     *prometheus.HistogramVec
	commitRows prometheus.Histogram
	turns      *prometheus.CounterVec
	turnTime   *prometheus.HistogramVec
	requests   *prometheus.HistogramVec
	bandState  *prometheus.CounterVec

	mu     sync.Mutex
	depths Depths // guarded by mu
}

// Depths are the functions read at scrape time. Each may be nil (its
// gauge is then absent); each must honour ctx.
type Depths struct {
	// Queue returns the queued messages: routed to a binding, and in the
	// unrouted bucket.
	Queue func(ctx context.Context) (routed, unrouted int, err error)
	// Spool returns the entries held in the spool (committed and in
	// flight).
	Spool func() int
	// Band returns the number of Band agent sockets in each connection
	// state.
	Band func() map[string]int
}

// scrapeTimeout bounds a scrape-time read of the store.
const scrapeTimeout = 5 * time.Second

// New returns a metric set registered with a registry of its own, with the
// Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.spooled = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "messages_spooled_total",
		Help: "Inbound messages made durable in the spool (duplicates excluded)."})
	m.duplicates = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "messages_duplicates_total",
		Help: "Inbound messages skipped as duplicates of one already spooled, queued or settled."})
	m.routed = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "messages_routed_total",
		Help: "Spooled messages that left the spool, by outcome: routed (queued for a binding), unrouted (queued with no binding), system_marker (consumed), dropped_retired (its room was retired)."}, []string{"outcome"})
	m.delivered = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "messages_delivered_total",
		Help: "Queued messages handed to their session, by outcome (delivered, failed)."}, []string{"outcome"})
	m.settled = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "messages_settled_total",
		Help: "Messages closed on Band, by outcome: settled (processed after a reply or ack; the row is removed), failed (marked failed; the row stays queued)."}, []string{"outcome"})
	m.commit = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "spool_commit_duration_seconds",
		Help:    "Duration of one spool group commit (one store transaction), by outcome (ok, error).",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12)}, []string{"outcome"})
	m.commitRows = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "spool_commit_entries",
		Help:    "Entries carried by one spool group commit.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9)})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "turns_total",
		Help: "Owned turns that ended, by outcome (succeeded, failed, cancelled, interrupted)."}, []string{"outcome"})
	m.turnTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "turn_duration_seconds",
		Help:    "Duration of an owned turn from its creation to its end, by outcome.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 12)}, []string{"outcome"})
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "api_request_duration_seconds",
		Help:    "Control API request durations, by route pattern (\"unmatched\" for none) and status code class.",
		Buckets: prometheus.DefBuckets}, []string{"route", "code"})
	m.bandState = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "band_connection_changes_total",
		Help: "Band agent socket state changes, by the state entered."}, []string{"state"})
	for _, c := range []prometheus.Collector{m.spooled, m.duplicates, m.routed, m.delivered, m.settled, m.commit, m.commitRows,
		m.turns, m.turnTime, m.requests, m.bandState, depthCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	// Known label values exist from the start, so a rate over a fresh
	// daemon is 0, not absent.
	for _, o := range []string{"routed", "unrouted", "system_marker", "dropped_retired"} {
		m.routed.WithLabelValues(o)
	}
	for _, o := range []string{"delivered", "failed"} {
		m.delivered.WithLabelValues(o)
	}
	for _, o := range []string{"settled", "failed"} {
		m.settled.WithLabelValues(o)
	}
	for _, o := range turnOutcomes {
		m.turns.WithLabelValues(o)
	}
	return m
}

// Registry returns the registry holding the daemon's metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format (or another
// format the scraper negotiates). A nil *Metrics serves 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// SetDepths installs the scrape-time gauges' functions.
func (m *Metrics) SetDepths(d Depths) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.depths = d
	m.mu.Unlock()
}

// The pipeline event kinds the engine reports (engine.EventKind values).
// Kinds not listed here are not counted.
const (
	evSpooled        = "spooled"
	evDuplicate      = "duplicate"
	evSystemMarker   = "system_marker"
	evQueued         = "queued"
	evQueuedUnrouted = "queued_unrouted"
	evDelivered      = "delivered"
	evDeliveryFailed = "delivery_failed"
	evSettled        = "settled"
	evFailed         = "failed"
	evDroppedRetired = "dropped_retired"
)

// PipelineEvent counts one inbound pipeline event by its kind (the
// engine's event kinds: spooled, duplicate, queued, queued_unrouted,
// system_marker, dropped_retired, delivered, delivery_failed, settled,
// failed). Other kinds are ignored.
func (m *Metrics) PipelineEvent(kind string) {
	if m == nil {
		return
	}
	switch kind {
	case evSpooled:
		m.spooled.Inc()
	case evDuplicate:
		m.duplicates.Inc()
	case evQueued:
		m.routed.WithLabelValues("routed").Inc()
	case evQueuedUnrouted:
		m.routed.WithLabelValues("unrouted").Inc()
	case evSystemMarker:
		m.routed.WithLabelValues("system_marker").Inc()
	case evDroppedRetired:
		m.routed.WithLabelValues("dropped_retired").Inc()
	case evDelivered:
		m.delivered.WithLabelValues("delivered").Inc()
	case evDeliveryFailed:
		m.delivered.WithLabelValues("failed").Inc()
	case evSettled:
		m.settled.WithLabelValues("settled").Inc()
	case evFailed:
		m.settled.WithLabelValues("failed").Inc()
	}
}

// SpoolCommit records one spool group commit of entries entries that took
// d; err is the commit's error, if any.
func (m *Metrics) SpoolCommit(d time.Duration, entries int, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.commit.WithLabelValues(outcome).Observe(d.Seconds())
	m.commitRows.Observe(float64(entries))
}

var turnOutcomes = []string{"succeeded", "failed", "cancelled", "interrupted"}

// TurnEnded records a turn that reached the terminal state outcome after
// d. An outcome outside the terminal states counts as "other".
func (m *Metrics) TurnEnded(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	outcome = fold(outcome, turnOutcomes)
	m.turns.WithLabelValues(outcome).Inc()
	m.turnTime.WithLabelValues(outcome).Observe(max(d, 0).Seconds())
}

// APIRequest records one control API request served by the route
// pattern (as http.ServeMux names it, "GET /v1/turns/{turn}"; "" for a
// request no route matched) with status after d.
func (m *Metrics) APIRequest(pattern string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if pattern == "" {
		pattern = "unmatched"
	}
	m.requests.WithLabelValues(pattern, statusClass(status)).Observe(d.Seconds())
}

var bandStates = []string{"connecting", "up", "reconnecting", "superseded", "stopped"}

// BandState records a Band agent socket entering state.
func (m *Metrics) BandState(state string) {
	if m == nil {
		return
	}
	m.bandState.WithLabelValues(fold(state, bandStates)).Inc()
}

func fold(v string, known []string) string {
	for _, k := range known {
		if v == k {
			return v
		}
	}
	return "other"
}

func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

// depthCollector reads the scrape-time gauges.
type depthCollector struct{ m *Metrics }

var (
	queueDesc = prometheus.NewDesc(Namespace+"_queue_depth", "Messages queued (routed to a binding, or unrouted) and not yet settled.", []string{"bucket"}, nil)
	spoolDesc = prometheus.NewDesc(Namespace+"_spool_depth", "Entries held in the spool: committed and not yet moved to the queue, plus pushes in flight.", nil, nil)
	bandDesc  = prometheus.NewDesc(Namespace+"_band_connections", "Band agent sockets, by connection state.", []string{"state"}, nil)
)

func (c depthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDesc
	ch <- spoolDesc
	ch <- bandDesc
}

func (c depthCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	d := c.m.depths
	c.m.mu.Unlock()
	if d.Queue != nil {
		ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
		routed, unrouted, err := d.Queue(ctx)
		cancel()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(queueDesc, err)
		} else {
			ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(routed), "routed")
			ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(unrouted), "unrouted")
		}
	}
	if d.Spool != nil {
		ch <- prometheus.MustNewConstMetric(spoolDesc, prometheus.GaugeValue, float64(d.Spool()))
	}
	if d.Band != nil {
		counts := map[string]int{}
		for st, n := range d.Band() {
			counts[fold(st, bandStates)] += n
		}
		for _, st := range bandStates {
			ch <- prometheus.MustNewConstMetric(bandDesc, prometheus.GaugeValue, float64(counts[st]), st)
		}
		if n := counts["other"]; n > 0 {
			ch <- prometheus.MustNewConstMetric(bandDesc, prometheus.GaugeValue, float64(n), "other")
		}
	}
}
