package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/vrrp"
)

// states lists the states vipd_instance_state has a series for.
func states() []control.State {
	return []control.State{control.StateInitialize, control.StateBackup, control.StateMaster, control.StateFault}
}

// snapshotCollector reads the daemon's status on every scrape and exports it
// as const metrics. It also collects the event-fed vectors keyed by
// instance alone, after creating their zero series for every instance in
// the same snapshot, so one scrape always shows them together.
type snapshotCollector struct {
	status      func() []control.InstanceStatus
	transitions *prometheus.CounterVec
	conflicts   *prometheus.CounterVec

	info              *prometheus.Desc
	state             *prometheus.Desc
	priorityBase      *prometheus.Desc
	priorityEffective *prometheus.Desc
	masterPriority    *prometheus.Desc
	advertsSent       *prometheus.Desc
	advertsReceived   *prometheus.Desc
	advertsDropped    *prometheus.Desc
	garpSent          *prometheus.Desc
	trackerHealthy    *prometheus.Desc
	drained           *prometheus.Desc
	vipsHeld          *prometheus.Desc
}

var _ prometheus.Collector = (*snapshotCollector)(nil)

func newSnapshotCollector(status func() []control.InstanceStatus, transitions, conflicts *prometheus.CounterVec) *snapshotCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help,
			append([]string{labelInstance}, labels...), nil)
	}
	return &snapshotCollector{
		status:      status,
		transitions: transitions,
		conflicts:   conflicts,

		info: desc("instance_info",
			"Always 1: the interface and VRID of each configured instance.", labelInterface, labelVRID),
		state: desc("instance_state",
			"1 for the instance's current VRRP state, 0 for the others.", labelState),
		priorityBase: desc("priority_base",
			"Priority from the configuration."),
		priorityEffective: desc("priority_effective",
			"Priority advertised now, after the trackers' contributions."),
		masterPriority: desc("master_priority_seen",
			"Priority in the Master's adverts as last seen on the wire (this host's own while it is Master); absent until a Master is heard."),
		advertsSent: desc("adverts_sent_total",
			"VRRP advertisements sent."),
		advertsReceived: desc("adverts_received_total",
			"VRRP advertisements received."),
		advertsDropped: desc("adverts_dropped_total",
			"Received VRRP advertisements discarded, by reason.", labelReason),
		garpSent: desc("garp_sent_total",
			"Gratuitous ARP announcements sent, one per virtual address announced."),
		trackerHealthy: desc("tracker_healthy",
			"1 while the health tracker is healthy, 0 while it is failing.", labelTracker),
		drained: desc("drained",
			"1 while an operator has drained the instance."),
		vipsHeld: desc("vips_held",
			"1 while the virtual addresses are configured on the interface."),
	}
}

// Describe implements prometheus.Collector.
func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.info, c.state, c.priorityBase, c.priorityEffective, c.masterPriority,
		c.advertsSent, c.advertsReceived, c.advertsDropped, c.garpSent,
		c.trackerHealthy, c.drained, c.vipsHeld,
	} {
		ch <- d
	}
	c.transitions.Describe(ch)
	c.conflicts.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.status() {
		c.collectInstance(ch, st)
		c.precreate(st.Name)
	}
	c.transitions.Collect(ch)
	c.conflicts.Collect(ch)
}

func (c *snapshotCollector) collectInstance(ch chan<- prometheus.Metric, st control.InstanceStatus) {
	name := st.Name
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		send(ch, d, prometheus.GaugeValue, v, append([]string{name}, labels...)...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		send(ch, d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
	}

	gauge(c.info, 1, st.Interface, strconv.Itoa(int(st.VRID)))

	known := false
	for _, s := range states() {
		known = known || st.State == s
		gauge(c.state, boolValue(st.State == s), string(s))
	}
	if !known && st.State != "" {
		// A state added after this code was written is shown, not hidden.
		gauge(c.state, 1, string(st.State))
	}

	gauge(c.priorityBase, float64(st.Priority.Base))
	gauge(c.priorityEffective, float64(st.Priority.Effective))
	if st.Master.Address.IsValid() {
		gauge(c.masterPriority, float64(st.Master.Priority))
	}

	counter(c.advertsSent, st.Counters.AdvertsSent)
	counter(c.advertsReceived, st.Counters.AdvertsReceived)
	counter(c.garpSent, st.Counters.GARPSent)
	// The status lists only the reasons that happened; every reason vrrp
	// knows is exported, at 0 if need be (see the package documentation).
	for _, r := range vrrp.DropReasons() {
		counter(c.advertsDropped, st.Counters.Drops[r.String()], r.String())
	}
	for reason, n := range st.Counters.Drops {
		if !knownDropReason(reason) {
			counter(c.advertsDropped, n, reason)
		}
	}

	for _, t := range st.Trackers {
		gauge(c.trackerHealthy, boolValue(t.Healthy), t.Name)
	}
	gauge(c.drained, boolValue(st.Drained))
	gauge(c.vipsHeld, boolValue(st.VIPsHeld))
}

// precreate makes the zero series of the event-fed counters that alerts
// watch, so that their first increase shows (see the package
// documentation).
func (c *snapshotCollector) precreate(instance string) {
	if _, err := c.conflicts.GetMetricWithLabelValues(instance); err != nil {
		return // not UTF-8: the const metrics report the error
	}
	for _, from := range states() {
		for _, to := range states() {
			if from != to {
				_, _ = c.transitions.GetMetricWithLabelValues(instance, string(from), string(to))
			}
		}
	}
}

func knownDropReason(reason string) bool {
	for _, r := range vrrp.DropReasons() {
		if r.String() == reason {
			return true
		}
	}
	return false
}

// send sends a const metric, or the error that makes it invalid, which the
// registry reports without failing the rest of the scrape.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, err)
	}
	ch <- m
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
