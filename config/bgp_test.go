package config

import (
	"errors"
	"io/fs"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipd/vipd/bgp"
)

// bgpTable is a [bgp] table with one router, ending on line 6.
const bgpTable = `[bgp]
asn = 65001

[[bgp.peer]]
address = "198.51.100.1"
asn = 65000
`

// anycastInstance starts on line 7 (after bgpTable), its keys from line 10.
const anycastInstance = `[[instance]]
name = "api"
vips = ["192.0.2.30"]
`

func TestParseBGP(t *testing.T) {
	t.Run("election mode, defaults", func(t *testing.T) {
		cfg := mustParse(t, bgpTable+`[[instance]]
name = "k8s-api"
announce = "bgp"
interface = "eth0"
vrid = 51
vips = ["192.0.2.10"]
`)
		want := &BGP{ASN: 65001, Line: 1, Peers: []BGPPeer{{
			Address: netip.MustParseAddr("198.51.100.1"), ASN: 65000,
			HoldTime: bgp.DefaultHoldTime, KeepaliveInterval: bgp.DefaultKeepaliveInterval, MultihopTTL: 1, Line: 4,
		}}}
		if diff := cmp.Diff(want, cfg.BGP, cmpOpts); diff != "" {
			t.Errorf("BGP (-want +got):\n%s", diff)
		}
		in := defaults("k8s-api", "eth0", 51, "192.0.2.10/32")
		in.Announce = AnnounceBGP
		in.BGP = InstanceBGP{GracefulShutdownTime: 5 * time.Second}
		if diff := cmp.Diff([]Instance{in}, cfg.Instances, cmpOpts); diff != "" {
			t.Errorf("instances (-want +got):\n%s", diff)
		}
	})
	t.Run("anycast, every key", func(t *testing.T) {
		cfg := mustParse(t, `[bgp]
asn = 4200000001
router_id = "192.0.2.1"
listen_port = 179
graceful_restart_time = "120s"

[[bgp.peer]]
address = "198.51.100.1"
asn = 65000
password = "s3cret"
hold_time = "30s"
multihop_ttl = 3

[[bgp.peer]]
address = "2001:db8::1"
asn = 65000
password_file = "/etc/vipd/../vipd/pw"
hold_time = "3s"
keepalive_interval = "1s"
bfd = true

[[instance]]
name = "api"
announce = "bgp-anycast"
vips = ["192.0.2.30"]
priority = 100
communities = ["65001:100", "0:65535"]
med = 4294967295
graceful_shutdown_time = "0s"
anycast_min_priority = 60

[[instance]]
name = "api6"
announce = "bgp-anycast"
vips = ["2001:db8::30"]
`)
		b := cfg.BGP
		if b.ASN != 4200000001 || b.RouterID != netip.MustParseAddr("192.0.2.1") || b.ListenPort != 179 || b.GracefulRestartTime != 2*time.Minute {
			t.Errorf("bgp = %+v", b)
		}
		p1, p2 := b.Peers[0], b.Peers[1]
		if p1.Password != "s3cret" || p1.HoldTime != 30*time.Second || p1.KeepaliveInterval != 10*time.Second || p1.MultihopTTL != 3 || p1.BFD {
			t.Errorf("peer 1 = %+v (keepalive defaults to a third of hold_time)", p1)
		}
		if p2.PasswordFile != "/etc/vipd/pw" || p2.KeepaliveInterval != time.Second || !p2.BFD || p2.MultihopTTL != 1 {
			t.Errorf("peer 2 = %+v", p2)
		}
		in := cfg.Instances[0]
		if in.Announce != AnnounceBGPAnycast || in.Announce.String() != "bgp-anycast" || in.VRID != 0 || in.Interface != "" {
			t.Errorf("instance = %+v", in)
		}
		med := uint32(4294967295)
		want := InstanceBGP{Communities: []uint32{65001<<16 | 100, 65535}, MED: &med, AnycastMinPriority: 60}
		if diff := cmp.Diff(want, in.BGP); diff != "" {
			t.Errorf("instance BGP (-want +got):\n%s", diff)
		}
		if a := in.BGP.Attrs(); !slices.Equal(a.Communities, want.Communities) || *a.MED != med {
			t.Errorf("Attrs() = %+v", a)
		}
	})
	t.Run("a [bgp] table without BGP instances is kept", func(t *testing.T) {
		cfg := mustParse(t, bgpTable+"[[instance]]\nname = \"a\"\ninterface = \"eth0\"\nvrid = 1\nvips = [\"192.0.2.1\"]\n")
		if cfg.BGP == nil || cfg.Instances[0].Announce != AnnounceARP {
			t.Errorf("BGP = %+v, announce %v", cfg.BGP, cfg.Instances[0].Announce)
		}
	})
	t.Run("no [bgp] table: nil", func(t *testing.T) {
		if cfg := mustParse(t, base); cfg.BGP != nil {
			t.Errorf("BGP = %+v, want nil", cfg.BGP)
		}
	})
}

func TestParseBGPRefusals(t *testing.T) {
	anycast := func(keys string) string { return bgpTable + anycastInstance + "announce = \"bgp-anycast\"\n" + keys }
	election := func(keys string) string {
		return bgpTable + "[[instance]]\nname = \"k8s-api\"\nannounce = \"bgp\"\ninterface = \"eth0\"\nvrid = 51\nvips = [\"192.0.2.10\"]\n" + keys
	}
	peer := func(keys string) string {
		return "[bgp]\nasn = 65001\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 65000\n" + keys + anycastInstance + "announce = \"bgp-anycast\"\n"
	}
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"BGP keys on an arp instance", base + "communities = [\"65000:1\"]\nmed = 1\ngraceful_shutdown_time = \"1s\"\nanycast_min_priority = 1\n", []string{
			`vipd.toml:6: instance "k8s-api": communities applies to BGP announcements only: set announce = "bgp" or "bgp-anycast", or leave it out`,
			`vipd.toml:7: instance "k8s-api": med applies to BGP announcements only: set announce = "bgp" or "bgp-anycast", or leave it out`,
			`vipd.toml:8: instance "k8s-api": graceful_shutdown_time applies to BGP announcements only: set announce = "bgp" or "bgp-anycast", or leave it out`,
			`vipd.toml:9: instance "k8s-api": anycast_min_priority applies to BGP announcements only: set announce = "bgp" or "bgp-anycast", or leave it out`,
		}},
		{"unknown announce", base + "announce = \"ospf\"\n", []string{
			`vipd.toml:6: instance "k8s-api": announce "ospf" is not one of arp, bgp, bgp-anycast`,
		}},
		{"bgp without a [bgp] table", base + "announce = \"bgp\"\n", []string{
			`vipd.toml:6: instance "k8s-api": announce = "bgp" needs a [bgp] table with asn and at least one [[bgp.peer]]`,
		}},
		{"bgp-anycast without peers", "[bgp]\nasn = 65001\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:6: instance "api": announce = "bgp-anycast" needs at least one [[bgp.peer]] under [bgp] (line 1)`,
		}},
		{"IPv6 VIPs without an IPv6 peer", bgpTable + "[[instance]]\nname = \"api\"\nvips = [\"2001:db8::1\"]\nannounce = \"bgp-anycast\"\n", []string{
			`vipd.toml:10: instance "api": announce = "bgp-anycast": no [[bgp.peer]] has an IPv6 address, and IPv6 VIPs are announced on IPv6 sessions only`,
		}},
		{"a VIP that is not a host route", bgpTable + "[[instance]]\nname = \"api\"\nvips = [\"192.0.2.0/24\"]\nannounce = \"bgp-anycast\"\n", []string{
			`vipd.toml:9: instance "api": vips: "192.0.2.0/24": only /32 is accepted (each VIP is added as a host address)`,
		}},
		{"election keys in bgp-anycast", anycast("vrid = 5\ninterface = \"eth0\"\npreempt = false\n[instance.garp]\nrepeat = 2\n"), []string{
			`vipd.toml:11: instance "api": vrid is not used with announce = "bgp-anycast": nothing is elected, every healthy host announces the VIPs; leave it out`,
			`vipd.toml:12: instance "api": interface is not used with announce = "bgp-anycast": nothing is elected, every healthy host announces the VIPs; leave it out`,
			`vipd.toml:13: instance "api": preempt is not used with announce = "bgp-anycast": nothing is elected, every healthy host announces the VIPs; leave it out`,
			`vipd.toml:14: instance "api": [instance.garp] is not used with BGP announcements; leave it out`,
		}},
		{"bgp election still needs vrid and interface", bgpTable + "[[instance]]\nname = \"api\"\nvips = [\"192.0.2.1\"]\nannounce = \"bgp\"\n", []string{
			`vipd.toml:7: instance "api": missing required key "interface"`,
			`vipd.toml:7: instance "api": missing required key "vrid"`,
		}},
		{"anycast_min_priority in election mode", election("anycast_min_priority = 50\n"), []string{
			`vipd.toml:13: instance "k8s-api": anycast_min_priority applies to announce = "bgp-anycast" only: with "bgp" the election decides which host announces`,
		}},
		{"bad communities", anycast("communities = [\"65000\", \"65536:1\", \"1:2\", \"1:2\", \"65535:0\"]\nmed = -1\ngraceful_shutdown_time = \"11m\"\nanycast_min_priority = 255\n"), []string{
			`vipd.toml:11: instance "api": communities: "65000" is not a community: write ASN:VALUE, each 0..65535, such as "65000:100"`,
			`vipd.toml:11: instance "api": communities: "65536:1" is not a community: write ASN:VALUE, each 0..65535, such as "65000:100"`,
			`vipd.toml:11: instance "api": communities: 1:2 is listed twice`,
			`vipd.toml:11: instance "api": communities: 65535:0 is GRACEFUL_SHUTDOWN, which vipd adds itself during graceful_shutdown_time`,
			`vipd.toml:12: instance "api": med -1 out of range 0..4294967295`,
			`vipd.toml:13: instance "api": graceful_shutdown_time "11m" out of range 0s..10m`,
			`vipd.toml:14: instance "api": anycast_min_priority 255 out of range 0..254`,
		}},
		{"bad ASNs", "[bgp]\nasn = 0\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 23456\n[[bgp.peer]]\naddress = \"198.51.100.2\"\nasn = 4294967296\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:2: bgp: asn 0 is reserved (RFC 7607)`,
			`vipd.toml:5: bgp: peer 198.51.100.1: asn 23456 is AS_TRANS (RFC 6793), a placeholder, not an AS`,
			`vipd.toml:8: bgp: peer 198.51.100.2: asn 4294967296 out of range 1..4294967295`,
		}},
		{"graceful_restart_time", "[bgp]\nasn = 65001\ngraceful_restart_time = \"1.5s\"\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 65000\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:3: bgp: graceful_restart_time "1.5s" is not whole seconds (BGP carries it in seconds)`,
		}},
		{"missing asn and address", "[bgp]\n[[bgp.peer]]\npassword = \"x\"\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:1: bgp: missing required key "asn"`,
			`vipd.toml:2: bgp: peer #1: missing required key "address"`,
			`vipd.toml:2: bgp: peer #1: missing required key "asn"`,
		}},
		{"password and password_file", peer("password = \"a\"\npassword_file = \"/etc/pw\"\n"), []string{
			`vipd.toml:7: bgp: peer 198.51.100.1: password_file and password are both set: give the TCP-MD5 password one way`,
		}},
		{"bad peer values", peer("password_file = \"pw\"\nhold_time = \"2s\"\nkeepalive_interval = \"1500ms\"\nmultihop_ttl = 0\nbfd = 1\n"), []string{
			`vipd.toml:6: bgp: peer 198.51.100.1: password_file "pw" must be an absolute path`,
			`vipd.toml:7: bgp: peer 198.51.100.1: hold_time "2s" out of range 3s..18h12m15s`,
			`vipd.toml:8: bgp: peer 198.51.100.1: keepalive_interval "1500ms" is not whole seconds`,
			`vipd.toml:9: bgp: peer 198.51.100.1: multihop_ttl 0 out of range 1..255`,
			`vipd.toml:10: bgp: peer 198.51.100.1: bfd must be true or false, not an integer`,
		}},
		{"keepalive above a third of hold_time", peer("hold_time = \"9s\"\nkeepalive_interval = \"4s\"\n"), []string{
			`vipd.toml:7: bgp: peer 198.51.100.1: keepalive_interval "4s" is more than a third of hold_time 9s (RFC 4271 section 10): the session would expire between keepalives`,
		}},
		{"multihop on iBGP, BFD with multihop", "[bgp]\nasn = 65000\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 65000\nmultihop_ttl = 2\n[[bgp.peer]]\naddress = \"198.51.100.5\"\nasn = 65001\nmultihop_ttl = 2\nbfd = true\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:6: bgp: peer 198.51.100.1: multihop_ttl applies to eBGP peers only: this peer is in this host's AS 65000 (iBGP sessions are not limited to the link)`,
			`vipd.toml:11: bgp: peer 198.51.100.5: bfd is single-hop only (RFC 5881): it cannot run with multihop_ttl 2`,
		}},
		{"duplicate peer, bad addresses, router_id", "[bgp]\nasn = 65001\nrouter_id = \"2001:db8::1\"\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 65000\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 65000\n[[bgp.peer]]\naddress = \"fe80::1\"\nasn = 65000\n[[bgp.peer]]\naddress = \"224.0.0.1\"\nasn = 65000\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:3: bgp: router_id "2001:db8::1" is not an IPv4 address (a BGP identifier is 4 octets, RFC 4271 section 4.2, even on IPv6 sessions); leave it out to use the node's primary IPv4 address`,
			`vipd.toml:8: bgp: peer 198.51.100.1: address 198.51.100.1 is already a peer (line 4)`,
			`vipd.toml:11: bgp: peer fe80::1: address "fe80::1" is link-local: peer with a global or unique local address`,
			`vipd.toml:14: bgp: peer 224.0.0.1: address 224.0.0.1 is not a router's unicast address`,
		}},
		{"unknown keys", "[bgp]\nasn = 65001\nlisten = 1\n[[bgp.peer]]\naddress = \"198.51.100.1\"\nasn = 65000\npasword = \"x\"\n" + anycastInstance + "announce = \"bgp-anycast\"\n", []string{
			`vipd.toml:3: bgp: unknown key "listen" (did you mean "listen_port"?)`,
			`vipd.toml:7: bgp: peer 198.51.100.1: unknown key "pasword" (did you mean "password"?)`,
		}},
		{"a follower announcing otherwise than its leader", election("") + "[[instance]]\nname = \"k8s-api-v6\"\ninterface = \"eth0\"\nvrid = 51\nvips = [\"2001:db8::10\"]\nfollow = \"k8s-api\"\n", []string{
			`vipd.toml:18: instance "k8s-api-v6": follow: instance "k8s-api" has announce = "bgp", this instance "arp": a follower announces its VIPs the way its leader does`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, problems(t, tt.src)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnnounceString(t *testing.T) {
	for a, want := range map[Announce]string{AnnounceARP: "arp", AnnounceBGP: "bgp", AnnounceBGPAnycast: "bgp-anycast", 7: "Announce(7)"} {
		if a.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(a), a.String(), want)
		}
	}
	if AnnounceARP.BGPMode() || !AnnounceBGP.BGPMode() || !AnnounceBGPAnycast.BGPMode() {
		t.Error("BGPMode wrong")
	}
}

func TestSpeakerConfig(t *testing.T) {
	cfg := mustParse(t, `[bgp]
asn = 65001
[[bgp.peer]]
address = "198.51.100.1"
asn = 65000
password_file = "/etc/vipd/pw"
[[bgp.peer]]
address = "198.51.100.5"
asn = 65000
password = "inline"
`+anycastInstance+"announce = \"bgp-anycast\"\n")
	files := map[string]string{"/etc/vipd/pw": "from-file\n"}
	read := func(name string) ([]byte, error) {
		s, ok := files[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
	node := netip.MustParseAddr("192.0.2.7")
	sc, err := cfg.BGP.SpeakerConfig(node, read)
	if err != nil {
		t.Fatal(err)
	}
	if sc.RouterID != node || sc.ASN != 65001 || sc.Peers[0].Password != "from-file" || sc.Peers[1].Password != "inline" {
		t.Errorf("SpeakerConfig = %+v", sc)
	}
	files["/etc/vipd/pw"] = "two\nlines\n"
	if _, err := cfg.BGP.SpeakerConfig(node, read); err == nil || !strings.Contains(err.Error(), "one line") {
		t.Errorf("a two-line password file: err = %v", err)
	}
	delete(files, "/etc/vipd/pw")
	if _, err := cfg.BGP.SpeakerConfig(node, read); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing password file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := cfg.BGP.SpeakerConfig(netip.Addr{}, func(string) ([]byte, error) { return []byte("x"), nil }); err == nil {
		t.Error("no router ID anywhere: want an error")
	}
}
