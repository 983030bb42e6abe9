package metrics

import (
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vipd/vipd/control"
)

const namespace = "vipd"

// Label names.
const (
	labelInstance  = "vrrp_instance" // not "instance": Prometheus puts the scrape target there
	labelInterface = "interface"
	labelVRID      = "vrid"
	labelState     = "state"
	labelFrom      = "from"
	labelTo        = "to"
	labelReason    = "reason"
	labelTracker   = "tracker"
	labelVIP       = "vip"
	labelVersion   = "version"
	labelCommit    = "commit"
	labelGoVersion = "goversion"
)

// unknownBuild is the version and commit of a binary built without them.
const unknownBuild = "unknown"

// maxScrapesInFlight bounds concurrent scrapes; more are answered 503.
const maxScrapesInFlight = 8

// checkBuckets suit health checks from about 1ms (a file or interface
// check) to 10s (a slow HTTP probe or script at its timeout), in seconds.
func checkBuckets() []float64 {
	return []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// Metrics is vipd's Prometheus registry and the event-fed metrics in it.
// Its methods are safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	series        *tracked
	transitions   *prometheus.CounterVec
	conflicts     *prometheus.CounterVec
	checks        *prometheus.HistogramVec
	checkFailures *prometheus.CounterVec
}

// Option configures New.
type Option func(*options)

type options struct {
	version, commit string
	bgpPeers        func() []control.BGPPeer
	ifaceDrops      func() map[string]map[string]uint64
}

// WithBuildInfo sets the version and commit that vipd_build_info reports,
// as `vipd version` prints them; without it they are "unknown".
func WithBuildInfo(version, commit string) Option {
	return func(o *options) {
		if version != "" {
			o.version = version
		}
		if commit != "" {
			o.commit = commit
		}
	}
}

// New builds a registry of its own with the Go and process collectors and
// vipd's collectors. status is called on every scrape, possibly from
// several goroutines at once, for the values that live in the daemon's
// snapshot; a nil status means no instances.
func New(status func() []control.InstanceStatus, opts ...Option) *Metrics {
	if status == nil {
		status = func() []control.InstanceStatus { return nil }
	}
	o := options{version: unknownBuild, commit: unknownBuild}
	for _, opt := range opts {
		opt(&o)
	}
	m := &Metrics{
		series: newTracked(),
		reg:    prometheus.NewRegistry(),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "transitions_total",
			Help:      "VRRP state changes since the daemon started, by old and new state.",
		}, []string{labelInstance, labelFrom, labelTo}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "address_conflicts_total",
			Help:      "ARP claims of a virtual address by another MAC address while this host held it.",
		}, []string{labelInstance}),
		checks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "tracker_check_duration_seconds",
			Help:      "Duration of health tracker checks, failed or not.",
			Buckets:   checkBuckets(),
		}, []string{labelInstance, labelTracker}),
		checkFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "tracker_check_failures_total",
			Help:      "Failed health tracker checks (each failed check, not changes of state).",
		}, []string{labelInstance, labelTracker}),
	}
	buildInfo := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "build_info",
		Help:      "Always 1: the version and commit of the running vipd and the Go that built it.",
		ConstLabels: prometheus.Labels{
			labelVersion:   o.version,
			labelCommit:    o.commit,
			labelGoVersion: runtime.Version(),
		},
	})
	buildInfo.Set(1)
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo,
		newSnapshotCollector(status, m.series, eventVecs{
			transitions:   m.transitions,
			conflicts:     m.conflicts,
			checks:        m.checks,
			checkFailures: m.checkFailures,
		}),
		newBGPCollector(status, o.bgpPeers),
		newIfaceCollector(o.ifaceDrops),
	)
	m.handler = promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A series that cannot be collected (say, two instances of one
		// name) is left out and counted in
		// promhttp_metric_handler_errors_total; the rest is served.
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: maxScrapesInFlight,
	}))
	return m
}

// Transition counts a change of instance's state, e.g. from "BACKUP" to
// "MASTER" (the control.State spellings).
func (m *Metrics) Transition(instance, from, to string) {
	// GetMetricWithLabelValues rather than WithLabelValues: a label value
	// that is not UTF-8 loses one count instead of panicking the daemon.
	if c, err := m.transitions.GetMetricWithLabelValues(instance, from, to); err == nil {
		m.series.add(seriesKey{instance: instance})
		c.Inc()
	}
}

// TrackerCheck records one completed check of instance's tracker: how long
// it took and whether it passed. It fits health.WithCheckObserver.
func (m *Metrics) TrackerCheck(instance, tracker string, d time.Duration, ok bool) {
	h, err := m.checks.GetMetricWithLabelValues(instance, tracker)
	if err != nil {
		return
	}
	m.series.add(seriesKey{instance: instance})
	m.series.add(seriesKey{instance: instance, tracker: tracker})
	h.Observe(d.Seconds())
	// Looked up on success too, so the series exists at 0 before the
	// first failure.
	f, err := m.checkFailures.GetMetricWithLabelValues(instance, tracker)
	if err == nil && !ok {
		f.Inc()
	}
}

// Conflict counts an ARP claim of one of instance's virtual addresses by
// another MAC address.
func (m *Metrics) Conflict(instance string) {
	if c, err := m.conflicts.GetMetricWithLabelValues(instance); err == nil {
		m.series.add(seriesKey{instance: instance})
		c.Inc()
	}
}

// Handler serves this registry, and only it, in the Prometheus exposition
// formats.
func (m *Metrics) Handler() http.Handler { return m.handler }
