package lab

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// FRR 8.4's `show bgp ipv4 unicast 192.0.2.10/32 json`, two paths, one
// draining (abridged: fields the lab does not read are left out).
const frrRouteSample = `{
 "prefix":"192.0.2.10/32",
 "paths":[
  {"aspath":{"string":"65001"},"origin":"IGP","metric":10,"valid":true,"multipath":true,
   "community":{"string":"65001:100","list":["65001:100"]},
   "bestpath":{"overall":true,"selectionReason":"Router ID"},
   "nexthops":[{"ip":"198.51.100.6","hostname":"vm","afi":"ipv4","used":true}],
   "peer":{"peerId":"198.51.100.6","routerId":"198.51.100.6","type":"external"}},
  {"aspath":{"string":"65001"},"origin":"IGP","locPrf":0,"valid":true,
   "community":{"string":"65001:100 graceful-shutdown","list":["65001:100","gracefulShutdown"]},
   "nexthops":[{"ip":"198.51.100.2","hostname":"vm","afi":"ipv4","used":true}],
   "peer":{"peerId":"198.51.100.2","routerId":"198.51.100.2","type":"external"}}
 ]
}`

func TestParseFRRRoute(t *testing.T) {
	p := netip.MustParsePrefix("192.0.2.10/32")
	r, ok, err := parseFRRRoute([]byte(frrRouteSample), p)
	if err != nil || !ok {
		t.Fatalf("parse: ok %v, %v", ok, err)
	}
	if got, want := r.NextHops(), []netip.Addr{netip.MustParseAddr("198.51.100.2"), netip.MustParseAddr("198.51.100.6")}; !slices.Equal(got, want) {
		t.Errorf("NextHops() = %v, want %v", got, want)
	}
	a, b := r.Paths[0], r.Paths[1]
	if !a.Best || !a.Multipath || a.MED == nil || *a.MED != 10 || b.Best || b.Multipath || b.MED != nil {
		t.Errorf("paths %+v", r.Paths)
	}
	if !slices.Equal(b.Communities, []string{"65001:100", "graceful-shutdown"}) || b.Peer != netip.MustParseAddr("198.51.100.2") {
		t.Errorf("draining path %+v", b)
	}
	// A prefix FRR does not have: an empty object.
	if _, ok, err := parseFRRRoute([]byte("{}\n"), p); ok || err != nil {
		t.Errorf("empty answer: ok %v, err %v", ok, err)
	}
	if _, _, err := parseFRRRoute([]byte("% Unknown command"), p); err == nil {
		t.Error("a non-JSON answer parsed")
	}
}

func TestBGPDConf(t *testing.T) {
	c := RouterConfig{Neighbors: append(HostNeighbors(1, 65001), RouterNeighbor{Address: RoutedHostAddr6(2), ASN: 65002, Password: "pw", BFD: true})}
	conf := c.bgpdConf()
	for _, want := range []string{
		"router bgp 65000\n", "no bgp ebgp-requires-policy", "neighbor 198.51.100.2 remote-as 65001",
		"neighbor 2001:db8:0:2::2 password pw", "neighbor 2001:db8:0:2::2 bfd",
		" address-family ipv4 unicast\n  maximum-paths 8\n  no neighbor 2001:db8:0:2::2 activate\n",
		" address-family ipv6 unicast\n  maximum-paths 8\n  neighbor 2001:db8:0:2::2 activate\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("bgpd.conf lacks %q:\n%s", want, conf)
		}
	}
	if RoutedHostAddr(3) != netip.MustParseAddr("198.51.100.10") || RoutedRouterAddr(3) != netip.MustParseAddr("198.51.100.9") {
		t.Errorf("host 3's link: %v, %v", RoutedHostAddr(3), RoutedRouterAddr(3))
	}
	if !netip.MustParsePrefix("198.51.100.0/24").Contains(RoutedHostAddr(maxRoutedHosts)) {
		t.Errorf("host %d's address %v leaves 198.51.100.0/24", maxRoutedHosts, RoutedHostAddr(maxRoutedHosts))
	}
}
