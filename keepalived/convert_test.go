package keepalived

import (
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vipd/vipd/config"
)

// convertString converts a keepalived.conf given as text.
func convertString(t *testing.T, src string, opts Options) (*Result, string) {
	t.Helper()
	cfg, path, err := parseString(t, src, ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return Convert(cfg, opts), path
}

// instanceWith wraps body in a vrrp_instance with what vipd needs.
func instanceWith(body string) string {
	return "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n virtual_ipaddress {\n  192.0.2.10\n }\n" + body + "}\n"
}

// check asserts that the output has every line of want (TOML lines, or
// "KIND: text" items, a substring of one item at that line as "N: ").
type expect struct {
	toml    []string // lines (trimmed) the output must have
	notToml []string
	items   []string // "unconverted|note|warning LINE: substring"
	parse   bool     // the output must pass config.Parse
}

func (e expect) check(t *testing.T, res *Result) {
	t.Helper()
	lines := map[string]bool{}
	for _, l := range strings.Split(string(res.TOML), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, w := range e.toml {
		if !lines[w] {
			t.Errorf("output lacks the line %q:\n%s", w, res.TOML)
		}
	}
	for _, w := range e.notToml {
		if strings.Contains(string(res.TOML), w) {
			t.Errorf("output has %q:\n%s", w, res.TOML)
		}
	}
	for _, w := range e.items {
		kind, rest, _ := strings.Cut(w, " ")
		line, text, _ := strings.Cut(rest, ": ")
		found := false
		for _, it := range res.Items {
			if it.Kind.String() == strings.ReplaceAll(kind, "_", " ") && strconv.Itoa(it.Pos.Line) == line && strings.Contains(it.Message, text) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s item at line %s with %q; items:\n%s", kind, line, text, itemList(res))
		}
	}
	if e.parse {
		if _, err := config.Parse(filepath.Join(t.TempDir(), "vipd.toml"), res.TOML); err != nil {
			t.Errorf("vipd refuses the output:\n%v\n%s", err, res.TOML)
		}
	}
}

func itemList(res *Result) string {
	var b strings.Builder
	for _, it := range res.Items {
		b.WriteString(it.String() + "\n")
	}
	return b.String()
}

func TestConvertInstance(t *testing.T) {
	tests := []struct {
		name string
		src  string
		opts Options
		want expect
	}{
		{
			name: "defaults: VRRPv2, priority 100, 1s",
			src:  instanceWith(""),
			want: expect{parse: true, toml: []string{`name = "VI_1"`, `interface = "eth0"`, `vrid = 51`, `priority = 100`, `version = 2`, `accept_versions = [2, 3]`, `advert_interval = "1s"`, `vips = ["192.0.2.10"]`, `# address_owner = "192.0.2.1"`}},
		},
		{
			name: "priority, advert_int, nopreempt",
			src:  instanceWith(" priority 150\n advert_int 3\n nopreempt\n preempt_delay 10\n"),
			want: expect{parse: true, toml: []string{`priority = 150`, `advert_interval = "3s"`, `preempt = false`}, notToml: []string{"preempt_delay ="}, items: []string{"note 10: meaningless with nopreempt"}},
		},
		{
			name: "preempt_delay in seconds",
			src:  instanceWith(" preempt_delay 2.5\n"),
			want: expect{parse: true, toml: []string{`preempt = true`, `preempt_delay = "2.5s"`}},
		},
		{
			name: "fractional advert_int rounded in VRRPv2",
			src:  instanceWith(" advert_int 1.6\n"),
			want: expect{parse: true, toml: []string{`advert_interval = "2s"`}, items: []string{"warning 7: keepalived uses 2s"}},
		},
		{
			name: "VRRPv3 keeps centiseconds",
			src:  "global_defs {\n vrrp_version 3\n}\n" + instanceWith(" advert_int 0.255\n"),
			want: expect{parse: true, toml: []string{`version = 3`, `advert_interval = "260ms"`}, notToml: []string{"accept_versions ="}, items: []string{"warning 10: centiseconds"}},
		},
		{
			name: "instance version over global_defs",
			src:  "global_defs {\n vrrp_version 2\n}\n" + instanceWith(" version 3\n"),
			want: expect{parse: true, toml: []string{`version = 3`}},
		},
		{
			name: "state MASTER without priority: the address owner",
			src:  instanceWith(" state MASTER\n"),
			want: expect{parse: true, toml: []string{`priority = 254`}, items: []string{"note 7: state MASTER without a priority"}},
		},
		{
			name: "priority 255",
			src:  instanceWith(" priority 255\n"),
			want: expect{parse: true, toml: []string{`priority = 254`}, items: []string{"note 7: priority 255: converted to priority 254"}},
		},
		{
			name: "state BACKUP is a start hint",
			src:  instanceWith(" state BACKUP\n"),
			want: expect{parse: true, toml: []string{`priority = 100`}},
		},
		{
			name: "authentication PASS truncated to 8",
			src:  instanceWith(" authentication {\n  auth_type PASS\n  auth_pass 123456789\n }\n"),
			want: expect{parse: true, toml: []string{`auth_pass = "12345678"`}, items: []string{"note 9: first 8"}},
		},
		{
			name: "authentication AH",
			src:  instanceWith(" authentication {\n  auth_type AH\n  auth_pass x\n }\n"),
			want: expect{parse: true, notToml: []string{"auth_pass ="}, items: []string{"not_converted 7: IPsec AH"}},
		},
		{
			name: "authentication ignored in VRRPv3",
			src:  instanceWith(" version 3\n authentication {\n  auth_type PASS\n  auth_pass x\n }\n"),
			want: expect{parse: true, notToml: []string{"auth_pass ="}, items: []string{"note 8: keepalived ignores it"}},
		},
		{
			name: "address owner given",
			src:  instanceWith(""),
			opts: Options{AddressOwners: []netip.Addr{netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("198.51.100.11")}},
			want: expect{parse: true, toml: []string{`address_owner = "198.51.100.11"`}, notToml: []string{"# address_owner"}},
		},
		{
			name: "address owner is this node",
			src:  instanceWith(" unicast_src_ip 198.51.100.11\n unicast_peer {\n  198.51.100.12\n }\n"),
			opts: Options{AddressOwners: []netip.Addr{netip.MustParseAddr("198.51.100.11")}},
			want: expect{parse: true, notToml: []string{"address_owner ="}, items: []string{"note 1: is this node itself"}},
		},
		{
			name: "auth_pass cut inside a character",
			src:  instanceWith(" authentication {\n  auth_type PASS\n  auth_pass 1234567é\n }\n"),
			want: expect{parse: true, notToml: []string{"auth_pass ="}, items: []string{"not_converted 9: end inside a character"}},
		},
		{
			name: "unicast",
			src:  instanceWith(" unicast_src_ip 198.51.100.1\n unicast_peer {\n  198.51.100.2\n  198.51.100.3 min_ttl 250\n  198.51.100.1\n }\n"),
			want: expect{parse: true, toml: []string{`unicast_source = "198.51.100.1"`, `unicast_peers = ["198.51.100.2", "198.51.100.3"]`, `unicast_min_ttl = 250`, `unicast_max_ttl = 255`}, notToml: []string{"address_owner"}, items: []string{"note 11: this host itself"}},
		},
		{
			name: "unicast peer of the other family",
			src:  instanceWith(" unicast_peer {\n  2001:db8::2\n }\n"),
			want: expect{parse: true, notToml: []string{"unicast_peers"}, items: []string{"not_converted 8: is IPv6", "not_converted 7: no usable peer"}},
		},
		{
			name: "name sanitized",
			src:  strings.Replace(instanceWith(""), "VI_1", `"api vip/1"`, 1),
			want: expect{parse: true, toml: []string{`name = "api_vip_1"`}, items: []string{`note 1: named "api_vip_1"`}},
		},
		{
			name: "down_timer_adverts and v3_checksum_as_v2",
			src:  instanceWith(" version 3\n down_timer_adverts 5\n v3_checksum_as_v2\n"),
			want: expect{parse: true, toml: []string{`master_down_adverts = 5`, `checksum = "rfc9568"`}},
		},
		{
			name: "unconverted instance keywords",
			src:  instanceWith(" virtual_ipaddress_excluded {\n  192.0.2.99\n }\n virtual_routes {\n  0.0.0.0/0 via 192.0.2.1\n }\n virtual_rules {\n  from 192.0.2.0/24 table 1\n }\n mcast_dst_ip 224.0.0.99\n track_process {\n  haproxy\n }\n frobnicate 1\n"),
			want: expect{parse: true, items: []string{"not_converted 7: virtual_ipaddress_excluded", "not_converted 10: virtual_routes", "not_converted 13: virtual_rules", "not_converted 16: mcast_dst_ip", "not_converted 17: track_process", "not_converted 20: frobnicate 1: not a vrrp_instance keyword"}},
		},
		{
			name: "harmless keywords are notes and warnings",
			src:  instanceWith(" native_ipv6\n use_vmac\n dont_track_primary\n smtp_alert\n"),
			want: expect{parse: true, items: []string{"note 7: native_ipv6", "warning 8: use_vmac", "warning 9: dont_track_primary", "note 10: smtp_alert"}},
		},
		{
			name: "no interface",
			src:  "vrrp_instance VI_1 {\n virtual_router_id 51\n virtual_ipaddress {\n  192.0.2.10\n }\n}\n",
			want: expect{notToml: []string{"[[instance]]"}, items: []string{"not_converted 1: no interface"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := convertString(t, tt.src, tt.opts)
			tt.want.check(t, res)
		})
	}
}

func TestConvertVIPs(t *testing.T) {
	src := "vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n virtual_ipaddress {\n" +
		"  192.0.2.10/24 dev eth0 label eth0:1\n" + // 5
		"  192.0.2.11/32 brd 192.0.2.255 scope link\n" + // 6
		"  192.0.2.12 dev eth1\n" + // 7
		"  2001:db8::1\n" + // 8
		"  224.0.0.5\n" + // 9
		"  192.0.2.10\n" + // 10
		"  192.0.2.13 peer 192.0.2.14\n" + // 11
		"  192.0.2.15 192.0.2.16\n" + // 12
		" }\n}\n"
	res, _ := convertString(t, src, Options{})
	expect{
		parse: true,
		toml:  []string{`vips = ["192.0.2.10", "192.0.2.11", "192.0.2.15", "192.0.2.16"]`},
		items: []string{
			"note 5: converted to the host address 192.0.2.10", "note 5: label eth0:1: dropped",
			"warning 6: scope link", "note 6: brd 192.0.2.255",
			"not_converted 7: dev eth1", "not_converted 8: one address family",
			"not_converted 9: multicast", "note 10: listed twice", "not_converted 11: peer",
		},
	}.check(t, res)
}

func TestConvertTrackers(t *testing.T) {
	src := `vrrp_script chk_api {
  script "/etc/keepalived/check_apiserver.sh --port 6443"
  interval 3
  timeout 1
  weight -2
  fall 10
  rise 2
}
vrrp_script chk_bare {
  script "pidof haproxy"
}
vrrp_script chk_rev {
  script "/bin/true"
  weight 10 reverse
}
vrrp_script unused {
  script "/bin/true"
}
` + instanceWith(` track_script {
  chk_api
  chk_bare
  chk_rev
  chk_none
 }
 track_script { chk_api weight 5 }
 track_interface {
  eth1
  eth2 weight -30
 }
 track_file {
  maint
 }
`) + `track_file maint {
  file /etc/keepalived/maint
  weight 0
}
`
	res, _ := convertString(t, src, Options{})
	expect{
		parse: true,
		toml: []string{
			`command = ["/etc/keepalived/check_apiserver.sh", "--port", "6443"]`, `weight = -2`, `interval = "3s"`, `timeout = "1s"`, `fall = 10`, `rise = 2`,
			`name = "chk_api-2"`, `weight = 5`,
			`type = "interface"`, `interface = "eth1"`, `weight = 0`, `interface = "eth2"`, `weight = -30`,
		},
		items: []string{
			"not_converted 27: bare name", "not_converted 28: reverse", "not_converted 29: no vrrp_script",
			"not_converted 37: keepalived reads a number", "note 16: tracked by no vrrp_instance",
		},
	}.check(t, res)
}

func TestConvertNotify(t *testing.T) {
	src := instanceWith(` priority 120
 notify_master "/usr/local/bin/up.sh 192.0.2.10" root
 notify_stop /usr/local/bin/stop.sh
 notify /usr/local/bin/state.sh
 notify_backup "relative.sh"
`)
	res, _ := convertString(t, src, Options{})
	expect{
		parse: true,
		toml: []string{
			`master = ["/bin/sh", "-c", "'/usr/local/bin/up.sh' '192.0.2.10'; '/usr/local/bin/state.sh' 'INSTANCE' 'VI_1' 'MASTER' '120'"]`,
			`backup = ["/usr/local/bin/state.sh", "INSTANCE", "VI_1", "BACKUP", "120"]`,
			`fault = ["/usr/local/bin/state.sh", "INSTANCE", "VI_1", "FAULT", "120"]`,
			`stop = ["/bin/sh", "-c", "'/usr/local/bin/stop.sh'; '/usr/local/bin/state.sh' 'INSTANCE' 'VI_1' 'STOP' '120'"]`,
		},
		items: []string{"note 8: user root", "not_converted 11: bare name"},
	}.check(t, res)
}

func TestConvertGARP(t *testing.T) {
	res, _ := convertString(t, "global_defs {\n vrrp_garp_master_refresh 30\n}\n"+instanceWith(" garp_master_delay 0\n garp_master_repeat 3\n"), Options{})
	expect{parse: true, toml: []string{`repeat = 3`, `interval = "10ms"`, `refresh = "30s"`}}.check(t, res)
	res, _ = convertString(t, instanceWith(" garp_master_delay 10\n garp_master_repeat 1\n"), Options{})
	expect{parse: true, toml: []string{`repeat = 2`, `interval = "10s"`}}.check(t, res)
	res, _ = convertString(t, instanceWith(""), Options{})
	expect{parse: true, notToml: []string{"[instance.garp]"}}.check(t, res)
}

func TestConvertSyncGroup(t *testing.T) {
	src := `vrrp_script chk {
  script "/bin/true"
}
vrrp_sync_group G {
  group { A B missing }
  track_interface { eth9 }
  notify_fault /usr/local/bin/group-fault.sh
}
vrrp_instance A {
  interface eth0
  virtual_router_id 1
  priority 150
  virtual_ipaddress { 192.0.2.1 }
}
vrrp_instance B {
  interface eth1
  virtual_router_id 2
  priority 150
  nopreempt
  virtual_ipaddress { 2001:db8::1 }
  track_script { chk }
}
`
	res, _ := convertString(t, src, Options{})
	expect{
		parse:   true,
		toml:    []string{`follow = "A"`, `name = "chk"`, `interface = "eth9"`, `fault = ["/usr/local/bin/group-fault.sh"]`},
		notToml: []string{"preempt = false"},
		items:   []string{"not_converted 5: no vrrp_instance missing", "note 21: its trackers move to A"},
	}.check(t, res)
	// B follows A: its priority and nopreempt are gone, and A has the tracker.
	out := string(res.TOML)
	b := out[strings.Index(out, `name = "B"`):]
	if strings.Contains(b, "priority =") || strings.Contains(b, "[[instance.track]]") {
		t.Errorf("the follower keeps priority or trackers:\n%s", b)
	}
}

func TestConvertAcrossInstances(t *testing.T) {
	src := "vrrp_instance A {\n interface eth0\n virtual_router_id 7\n virtual_ipaddress { 192.0.2.1 192.0.2.2 }\n}\n" +
		"vrrp_instance B {\n interface eth0\n virtual_router_id 7\n virtual_ipaddress { 192.0.2.3 }\n}\n" +
		"vrrp_instance C {\n interface eth0\n virtual_router_id 8\n virtual_ipaddress { 192.0.2.2 192.0.2.4 }\n}\n"
	res, _ := convertString(t, src, Options{})
	expect{
		parse:   true,
		toml:    []string{`vips = ["192.0.2.4"]`},
		notToml: []string{`name = "B"`},
		items:   []string{"not_converted 6: already A's", "not_converted 14: VIP 192.0.2.2 is already A's"},
	}.check(t, res)
}

func TestConvertTopLevel(t *testing.T) {
	src := instanceWith("") + `global_defs {
  router_id lb-1
  notification_email { ops@example.com }
  vrrp_rt_priority 50
  vrrp_no_swap
  vrrp_mcast_group4 224.0.0.19
  something_new 1
}
virtual_server 192.0.2.10 80 {
  real_server 198.51.100.2 80 {
  }
}
virtual_server_group VSG {
}
static_routes {
}
mystery {
}
`
	res, _ := convertString(t, src, Options{})
	expect{
		parse: true,
		toml:  []string{`node_name = "lb-1"`, `realtime_priority = 50`, `lock_memory = true`},
		items: []string{
			"note 10: vipd sends no mail", "not_converted 13: vrrp_mcast_group4", "warning 14: something_new",
			"not_converted 16: belongs to LVS", "not_converted 20: belongs to LVS", "not_converted 22: static_routes",
			"not_converted 24: mystery",
		},
	}.check(t, res)
	if !res.Unconverted() {
		t.Error("Unconverted() is false")
	}
	res, _ = convertString(t, instanceWith(" smtp_alert\n"), Options{})
	if res.Unconverted() {
		t.Errorf("a note made the conversion fail:\n%s", itemList(res))
	}
}

func TestVipdName(t *testing.T) {
	taken := map[string]bool{}
	for _, tt := range []struct{ in, want string }{
		{"VI_1", "VI_1"}, {"VI_1", "VI_1-2"}, {"a b", "a_b"}, {"", "unnamed"},
		{strings.Repeat("x", 40), strings.Repeat("x", 32)}, {strings.Repeat("x", 40), strings.Repeat("x", 30) + "-2"},
	} {
		if got := vipdName(tt.in, taken); got != tt.want {
			t.Errorf("vipdName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
