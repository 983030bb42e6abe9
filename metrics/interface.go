package metrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// WithInterfaceDrops serves vipd_interface_adverts_dropped_total from the
// adverts no instance claimed, per interface and reason, read on every
// scrape.
func WithInterfaceDrops(drops func() map[string]map[string]uint64) Option {
	return func(o *options) { o.ifaceDrops = drops }
}

// ifaceCollector reports the adverts the shared sockets dropped before any
// instance saw them (an unknown VRID, a packet too short to name one).
type ifaceCollector struct {
	drops   func() map[string]map[string]uint64
	dropped *prometheus.Desc
}

func newIfaceCollector(drops func() map[string]map[string]uint64) *ifaceCollector {
	return &ifaceCollector{drops: drops,
		dropped: prometheus.NewDesc(prometheus.BuildFQName(namespace, "interface", "adverts_dropped_total"),
			"Adverts no instance of this host claimed, per interface and reason (a VRID not configured there, a packet too short to name one).",
			[]string{"interface", "reason"}, nil)}
}

var _ prometheus.Collector = (*ifaceCollector)(nil)

func (c *ifaceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.dropped }

func (c *ifaceCollector) Collect(ch chan<- prometheus.Metric) {
	if c.drops == nil {
		return
	}
	drops := c.drops()
	for _, ifname := range slices.Sorted(maps.Keys(drops)) {
		for _, r := range slices.Sorted(maps.Keys(drops[ifname])) {
			send(ch, c.dropped, prometheus.CounterValue, float64(drops[ifname][r]), ifname, r)
		}
	}
}
