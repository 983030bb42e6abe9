package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipd/vipd/control"
)

// WithBGPPeers serves vipd_bgp_peer_up from the BGP speaker's peers, read
// on every scrape.
func WithBGPPeers(peers func() []control.BGPPeer) Option {
	return func(o *options) { o.bgpPeers = peers }
}

// bgpCollector reports the BGP sessions and the routes announced.
type bgpCollector struct {
	status    func() []control.InstanceStatus
	peers     func() []control.BGPPeer
	peerUp    *prometheus.Desc
	announced *prometheus.Desc
}

func newBGPCollector(status func() []control.InstanceStatus, peers func() []control.BGPPeer) *bgpCollector {
	return &bgpCollector{
		status: status, peers: peers,
		peerUp: prometheus.NewDesc(prometheus.BuildFQName(namespace, "bgp", "peer_up"),
			"1 while the BGP session with the peer is established, else 0.", []string{"peer"}, nil),
		announced: prometheus.NewDesc(prometheus.BuildFQName(namespace, "bgp", "announced"),
			"Per virtual address of an instance in a BGP mode: 1 while its host route is announced, else 0.", []string{labelInstance, labelVIP}, nil),
	}
}

var _ prometheus.Collector = (*bgpCollector)(nil)

func (c *bgpCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.peerUp; ch <- c.announced }

func (c *bgpCollector) Collect(ch chan<- prometheus.Metric) {
	if c.peers != nil {
		for _, p := range c.peers() {
			send(ch, c.peerUp, prometheus.GaugeValue, boolValue(p.Up), p.Address.String())
		}
	}
	for _, st := range c.status() {
		if st.Announce != "bgp" && st.Announce != "bgp-anycast" {
			continue
		}
		for _, v := range st.VIPs {
			on := false
			for _, r := range st.Routes {
				on = on || r.Addr() == v.Addr()
			}
			send(ch, c.announced, prometheus.GaugeValue, boolValue(on), st.Name, v.Addr().String())
		}
	}
}
