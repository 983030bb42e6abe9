package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipd/vipd/vrrp"
)

// dualStack is a valid dual-stack pair: the IPv6 instance follows the IPv4
// one. Refusals below change one line of it.
const dualStack = `[[instance]]
name = "api-v4"
interface = "eth0"
vrid = 51
priority = 150
advert_interval = "500ms"
preempt_delay = "5s"
vips = ["192.0.2.10"]

[[instance]]
name = "api-v6"
interface = "eth0"
vrid = 51
vips = ["2001:db8::10", "2001:db8::11/128"]
follow = "api-v4"
`

func TestParseIPv6(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []Instance
	}{
		{
			name: "dual-stack: the follower takes its leader's election settings; one VRID for both families",
			src:  dualStack,
			want: func() []Instance {
				v4 := defaults("api-v4", "eth0", 51, "192.0.2.10/32")
				v4.Priority, v4.AdvertInterval, v4.PreemptDelay = 150, 500*time.Millisecond, 5*time.Second
				v6 := defaults("api-v6", "eth0", 51, "2001:db8::10/128", "2001:db8::11/128")
				v6.Follow = "api-v4"
				v6.Priority, v6.AdvertInterval, v6.PreemptDelay = 150, 500*time.Millisecond, 5*time.Second
				return []Instance{v4, v6}
			}(),
		},
		{
			name: "a follower's own advert_interval",
			src:  strings.Replace(dualStack, `follow = "api-v4"`, "follow = \"api-v4\"\nadvert_interval = \"1s\"", 1),
			want: func() []Instance {
				v4 := defaults("api-v4", "eth0", 51, "192.0.2.10/32")
				v4.Priority, v4.AdvertInterval, v4.PreemptDelay = 150, 500*time.Millisecond, 5*time.Second
				v6 := defaults("api-v6", "eth0", 51, "2001:db8::10/128", "2001:db8::11/128")
				v6.Follow = "api-v4"
				v6.Priority, v6.PreemptDelay = 150, 5*time.Second
				return []Instance{v4, v6}
			}(),
		},
		{
			name: "IPv6 unicast: global and link-local peers, zone of the interface dropped, TTL range",
			src: `[[instance]]
name = "api-v6"
interface = "eth0"
vrid = 51
vips = ["2001:db8::10"]
unicast_source = "2001:db8::1"
unicast_peers = ["2001:db8:1::2", "fe80::2%eth0", "fe80::3"]
unicast_min_ttl = 250
unicast_max_ttl = 255
`,
			want: func() []Instance {
				in := defaults("api-v6", "eth0", 51, "2001:db8::10/128")
				in.UnicastSource = netip.MustParseAddr("2001:db8::1")
				in.UnicastPeers = []netip.Addr{netip.MustParseAddr("2001:db8:1::2"), netip.MustParseAddr("fe80::2"), netip.MustParseAddr("fe80::3")}
				in.UnicastMinTTL = 250
				return []Instance{in}
			}(),
		},
		{
			name: "IPv6 multicast with a link-local source",
			src: `[[instance]]
name = "api-v6"
interface = "eth0"
vrid = 51
vips = ["fd00::10"]
unicast_source = "fe80::1%eth0"
`,
			want: func() []Instance {
				in := defaults("api-v6", "eth0", 51, "fd00::10/128")
				in.UnicastSource = netip.MustParseAddr("fe80::1")
				return []Instance{in}
			}(),
		},
		{
			name: "IPv4 checksum forms",
			src: base + `checksum = "rfc5798"

[[instance]]
name = "cisco"
interface = "eth0"
vrid = 52
vips = ["192.0.2.20"]
checksum = "rfc9568"
`,
			want: func() []Instance {
				b := defaults("cisco", "eth0", 52, "192.0.2.20/32")
				b.Checksum = vrrp.ChecksumNoPseudoHeader
				return []Instance{defaults("k8s-api", "eth0", 51, "192.0.2.10/32"), b}
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.src)
			if diff := cmp.Diff(tt.want, got.Instances, cmpOpts); diff != "" {
				t.Errorf("instances mismatch (-want +got):\n%s", diff)
			}
			for _, in := range got.Instances {
				if want := in.VIPs[0].Addr().Is6(); in.IPv6() != want {
					t.Errorf("%s: IPv6() = %v, want %v", in.Name, in.IPv6(), want)
				}
			}
		})
	}
}

func TestParseRefusalsIPv6(t *testing.T) {
	v6 := strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["2001:db8::10"]`, 1)
	tests := []struct {
		name string
		src  string
		want []string
	}{
		// One family per instance, pointing at the dual-stack form.
		{"mixed families", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["192.0.2.10", "2001:db8::10", "192.0.2.11"]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: 2001:db8::10 is IPv6 but 192.0.2.10 is IPv4: an instance holds one address family (RFC 5798 section 5.2.9); for dual-stack put the IPv6 VIPs in an instance of their own with follow = "k8s-api", which keeps them on the same host as these`,
		}},
		{"mixed families, IPv6 first", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["2001:db8::10", "192.0.2.10"]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: 192.0.2.10 is IPv4 but 2001:db8::10 is IPv6: an instance holds one address family (RFC 5798 section 5.2.9); for dual-stack put the IPv4 VIPs in an instance of their own with follow = "k8s-api", which keeps them on the same host as these`,
		}},
		{"bad IPv6 VIPs", strings.Replace(v6, `vips = ["2001:db8::10"]`, `vips = ["2001:db8::10", "fe80::10", "fe80::11%eth0", "2001:db8::12%eth0", "2001:db8::13/64", "ff02::12", "::1", "::", "2001:db8::10/128", "2001:db8::14/129"]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: "fe80::10" is a link-local address: clients off the link cannot reach it, and the adverts' link-local source must not move; use a global or unique local address`,
			`vipd.toml:5: instance "k8s-api": vips: "fe80::11%eth0" has a zone: a VIP is not link-local, and its interface is the instance's`,
			`vipd.toml:5: instance "k8s-api": vips: "2001:db8::12%eth0" has a zone: a VIP is not link-local, and its interface is the instance's`,
			`vipd.toml:5: instance "k8s-api": vips: "2001:db8::13/64": only /128 is accepted (each VIP is added as a host address)`,
			`vipd.toml:5: instance "k8s-api": vips: "ff02::12" is a multicast address`,
			`vipd.toml:5: instance "k8s-api": vips: "::1" is a loopback address`,
			`vipd.toml:5: instance "k8s-api": vips: "::" is the unspecified address`,
			`vipd.toml:5: instance "k8s-api": vips: 2001:db8::10 is listed twice`,
			`vipd.toml:5: instance "k8s-api": vips: "2001:db8::14/129": /129 is not a prefix length`,
		}},
		{"a VIP of two instances, IPv6", v6 + strings.Replace(strings.Replace(v6, `"k8s-api"`, `"other"`, 1), "vrid = 51", "vrid = 52", 1), []string{
			`vipd.toml:10: instance "other": vips: 2001:db8::10 is already a VIP of instance "k8s-api" (line 5)`,
		}},
		{"VRID twice for IPv6 on one interface", v6 + strings.Replace(strings.Replace(v6, `"k8s-api"`, `"other"`, 1), "2001:db8::10", "2001:db8::20", 1), []string{
			`vipd.toml:9: instance "other": vrid 51 is already used for IPv6 on eth0 by instance "k8s-api" (line 4)`,
		}},

		// Peers and source of the instance's family, zones of its interface.
		{"bad IPv6 unicast settings", v6 + `unicast_source = "192.0.2.1"
unicast_peers = ["192.0.2.2", "fe80::2%eth1", "2001:db8::3%eth0", "ff02::12", "2001:db8::10", "fe80::4"]
`, []string{
			`vipd.toml:6: instance "k8s-api": unicast_source: 192.0.2.1 is IPv4, but the instance's VIPs are IPv6: adverts, peers and source are of the VIPs' family`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: 192.0.2.2 is IPv4, but the instance's VIPs are IPv6: adverts, peers and source are of the VIPs' family`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "fe80::2%eth1": zone "eth1" is not the instance's interface "eth0"; leave the zone out`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "2001:db8::3%eth0" has a zone, which only a link-local address takes`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "ff02::12" is a multicast address`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: 2001:db8::10 is one of the VIPs; list the peers' own addresses`,
		}},
		{"peer listed twice, with and without the zone", v6 + `unicast_peers = ["fe80::2", "fe80::2%eth0"]` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": unicast_peers: fe80::2 is listed twice`,
		}},
		{"global source on a multicast IPv6 instance", v6 + `unicast_source = "2001:db8::1"` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": unicast_source 2001:db8::1 is not link-local: IPv6 adverts to the multicast group are sent from the interface's link-local address (RFC 5798 section 5.1.2.1); leave unicast_source out, or list unicast_peers`,
		}},

		// Checksum forms: IPv4 only, and only the two.
		{"checksum on an IPv6 instance", v6 + `checksum = "rfc9568"` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": checksum applies to IPv4 instances only: IPv6 adverts always include the pseudo-header (RFC 9568 section 5.2.8); leave it out`,
		}},
		{"checksum rfc5798 on an IPv6 instance", v6 + `checksum = "rfc5798"` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": checksum applies to IPv4 instances only: IPv6 adverts always include the pseudo-header (RFC 9568 section 5.2.8); leave it out`,
		}},
		{"unknown checksum form", base + `checksum = "cisco"` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": checksum "cisco" is not one of rfc5798 (with the IPv4 pseudo-header, as stock keepalived and FRR), rfc9568 (without, as Cisco and Juniper)`,
		}},
		{"checksum not a string", base + `checksum = 9568` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": checksum must be a string, not an integer`,
		}},

		// TTL ranges: unicast only, 1..255, not empty.
		{"TTL range on a multicast instance", base + "unicast_min_ttl = 250\nunicast_max_ttl = 255\n", []string{
			`vipd.toml:6: instance "k8s-api": unicast_min_ttl applies to unicast peers only: adverts to the multicast group must arrive with TTL 255, proof that they come from the link (RFC 5798 section 7.1); list unicast_peers or leave it out`,
			`vipd.toml:7: instance "k8s-api": unicast_max_ttl applies to unicast peers only: adverts to the multicast group must arrive with TTL 255, proof that they come from the link (RFC 5798 section 7.1); list unicast_peers or leave it out`,
		}},
		{"TTL out of range", base + "unicast_peers = [\"198.51.100.2\"]\nunicast_min_ttl = 0\nunicast_max_ttl = 256\n", []string{
			`vipd.toml:7: instance "k8s-api": unicast_min_ttl 0 out of range 1..255`,
			`vipd.toml:8: instance "k8s-api": unicast_max_ttl 256 out of range 1..255`,
		}},
		{"empty TTL range", base + "unicast_peers = [\"198.51.100.2\"]\nunicast_min_ttl = 254\nunicast_max_ttl = 250\n", []string{
			`vipd.toml:8: instance "k8s-api": unicast_min_ttl 254 is above unicast_max_ttl 250: no TTL would be accepted`,
		}},
		{"max TTL below the default min", base + "unicast_peers = [\"198.51.100.2\"]\nunicast_max_ttl = 250\n", []string{
			`vipd.toml:7: instance "k8s-api": unicast_min_ttl 255 is above unicast_max_ttl 250: no TTL would be accepted`,
		}},
		{"TTL not an integer", base + "unicast_peers = [\"198.51.100.2\"]\nunicast_min_ttl = \"250\"\n", []string{
			`vipd.toml:7: instance "k8s-api": unicast_min_ttl must be an integer, not a string`,
		}},

		// follow: the leader exists and follows no one; the follower leaves
		// the election to it.
		{"follow: no such leader", strings.Replace(dualStack, `follow = "api-v4"`, `follow = "api"`, 1), []string{
			`vipd.toml:15: instance "api-v6": follow: no instance is named "api"`,
		}},
		{"follow: itself", strings.Replace(dualStack, `follow = "api-v4"`, `follow = "api-v6"`, 1), []string{
			`vipd.toml:15: instance "api-v6": follow: an instance cannot follow itself`,
		}},
		{"follow: a bad name", strings.Replace(dualStack, `follow = "api-v4"`, `follow = "api v4"`, 1), []string{
			`vipd.toml:15: instance "api-v6": follow: "api v4" may only contain A-Z, a-z, 0-9, '_', '.' and '-'`,
		}},
		{"follow: a cycle", `[[instance]]
name = "a"
interface = "eth0"
vrid = 51
vips = ["192.0.2.10"]
follow = "b"

[[instance]]
name = "b"
interface = "eth0"
vrid = 51
vips = ["2001:db8::10"]
follow = "a"
`, []string{
			`vipd.toml:6: instance "a": follow: instance "b" follows "a" itself (line 13): a leader cannot be a follower; the follows form a cycle: remove follow from the instance that should lead`,
			`vipd.toml:13: instance "b": follow: instance "a" follows "b" itself (line 6): a leader cannot be a follower; the follows form a cycle: remove follow from the instance that should lead`,
		}},
		{"follow: a chain", dualStack + `
[[instance]]
name = "api-v6b"
interface = "eth1"
vrid = 51
vips = ["2001:db8::20"]
follow = "api-v6"
`, []string{
			`vipd.toml:22: instance "api-v6b": follow: instance "api-v6" follows "api-v4" itself (line 15): a leader cannot be a follower; let both follow "api-v4"`,
		}},
		{"follow: election keys of its own", dualStack + `priority = 100
preempt = true
preempt_delay = "1s"
master_down_adverts = 3

[[instance.track]]
name = "api"
type = "http"
url = "https://127.0.0.1:6443/readyz"
`, []string{
			`vipd.toml:16: instance "api-v6": priority is not allowed with follow: a follower takes its leader's ("api-v4")`,
			`vipd.toml:17: instance "api-v6": preempt is not allowed with follow: a follower takes its leader's ("api-v4")`,
			`vipd.toml:18: instance "api-v6": preempt_delay is not allowed with follow: a follower takes its leader's ("api-v4")`,
			`vipd.toml:19: instance "api-v6": master_down_adverts is not allowed with follow: a follower takes its leader's ("api-v4")`,
			`vipd.toml:21: instance "api-v6": track "api": [[instance.track]] is not allowed with follow: the trackers of leader "api-v4" act for both instances; move them there`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, problems(t, tt.src)); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
