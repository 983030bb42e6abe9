package metrics

import (
	"net/netip"
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
// as const metrics. It also collects the event-fed vectors, after creating
// their zero series for every instance and tracker in the same snapshot and
// deleting those of instances and trackers no longer in it, so one scrape
// always shows them together.
type snapshotCollector struct {
	status func() []control.InstanceStatus
	series *tracked
	events eventVecs

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
	vipHeld           *prometheus.Desc
	lastTransition    *prometheus.Desc
}

var _ prometheus.Collector = (*snapshotCollector)(nil)

func newSnapshotCollector(status func() []control.InstanceStatus, series *tracked, events eventVecs) *snapshotCollector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help,
			append([]string{labelInstance}, labels...), nil)
	}
	return &snapshotCollector{
		status: status,
		series: series,
		events: events,

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
		vipHeld: desc("vip_held",
			"Per virtual address of the instance: 1 while it is configured on the interface, 0 while not.", labelVIP),
		lastTransition: desc("last_transition_timestamp_seconds",
			"When the instance entered its current state, in seconds since the Unix epoch."),
	}
}

// Describe implements prometheus.Collector.
func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.info, c.state, c.priorityBase, c.priorityEffective, c.masterPriority,
		c.advertsSent, c.advertsReceived, c.advertsDropped, c.garpSent,
		c.trackerHealthy, c.drained, c.vipHeld, c.lastTransition,
	} {
		ch <- d
	}
	c.events.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	current := map[seriesKey]bool{}
	for _, st := range c.status() {
		c.collectInstance(ch, st)
		if c.precreate(st) {
			current[seriesKey{instance: st.Name}] = true
			for _, t := range st.Trackers {
				current[seriesKey{instance: st.Name, tracker: t.Name}] = true
			}
		}
	}
	for _, key := range c.series.prune(current) {
		c.events.delete(key)
	}
	c.events.collect(ch)
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
	// The daemon adds and removes an instance's addresses together; a
	// series per address lets a query find the holders of one address
	// across instances and hosts.
	for _, vip := range st.VIPs {
		gauge(c.vipHeld, boolValue(st.VIPsHeld), vipLabel(vip))
	}
	if !st.Since.IsZero() {
		gauge(c.lastTransition, float64(st.Since.UnixNano())/1e9)
	}
}

// vipLabel is a virtual address as the vip label shows it: the bare
// address for the usual /32.
func vipLabel(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// precreate makes the zero series of the event-fed counters that alerts
// watch, so that their first increase shows (see the package
// documentation). It reports false for an instance name that cannot be a
// label value (not UTF-8), which has no event-fed series.
func (c *snapshotCollector) precreate(st control.InstanceStatus) bool {
	instance := st.Name
	if _, err := c.events.conflicts.GetMetricWithLabelValues(instance); err != nil {
		return false // the const metrics report the error
	}
	for _, from := range states() {
		for _, to := range states() {
			if from != to {
				_, _ = c.events.transitions.GetMetricWithLabelValues(instance, string(from), string(to))
			}
		}
	}
	for _, t := range st.Trackers {
		_, _ = c.events.checkFailures.GetMetricWithLabelValues(instance, t.Name)
	}
	return true
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
