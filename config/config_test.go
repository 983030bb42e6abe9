package config

import (
	"errors"
	"io/fs"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testHost = "testhost"

func testHostname() (string, error) { return testHost, nil }

// problems parses src as vipd.toml and returns its problems as strings.
func problems(t *testing.T, src string) []string {
	t.Helper()
	cfg, err := parse("vipd.toml", []byte(src), testHostname)
	if err == nil {
		t.Fatalf("parse succeeded with %+v, want problems", cfg)
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("parse error %v (%T) is not *Error", err, err)
	}
	if cfg != nil {
		t.Errorf("parse returned a config beside problems")
	}
	var got []string
	for _, p := range perr.Problems {
		got = append(got, p.String())
	}
	if joined := strings.Join(got, "\n"); err.Error() != joined {
		t.Errorf("Error() = %q, want the problems one per line: %q", err.Error(), joined)
	}
	return got
}

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := parse("vipd.toml", []byte(src), testHostname)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return cfg
}

// defaults is an instance with every optional key at its default.
func defaults(name, ifname string, vrid uint8, vips ...string) Instance {
	in := Instance{
		Name:           name,
		Interface:      ifname,
		VRID:           vrid,
		Priority:       100,
		AdvertInterval: time.Second,
		Preempt:        true,
		GARP:           GARP{Repeat: 5, Interval: time.Second},
	}
	for _, v := range vips {
		in.VIPs = append(in.VIPs, netip.MustParsePrefix(v))
	}
	return in
}

var cmpOpts = cmp.Options{cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want *Config
	}{
		{
			name: "minimal: defaults applied",
			src: `[[instance]]
name = "k8s-api"
interface = "eth0"
vrid = 51
vips = ["192.0.2.10"]
`,
			want: &Config{
				Path:      "vipd.toml",
				Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo},
				Instances: []Instance{defaults("k8s-api", "eth0", 51, "192.0.2.10/32")},
			},
		},
		{
			name: "every key set",
			src: `[global]
node_name = "cp-1"
socket = "/run/vipd/test.sock"
log_format = "json"
log_level = "debug"

[[instance]]
name = "k8s-api"
interface = "eth0"
vrid = 51
priority = 254
advert_interval = "40.95s"
vips = ["192.0.2.10/32", "192.0.2.11"]
preempt = false
preempt_delay = "1h"
unicast_peers = ["198.51.100.2", "198.51.100.3"]
unicast_source = "198.51.100.1"

[instance.garp]
repeat = 100
interval = "10ms"
refresh = "1s"
`,
			want: &Config{
				Path:   "vipd.toml",
				Global: Global{NodeName: "cp-1", Socket: "/run/vipd/test.sock", LogFormat: "json", LogLevel: slog.LevelDebug},
				Instances: []Instance{{
					Name:           "k8s-api",
					Interface:      "eth0",
					VRID:           51,
					Priority:       254,
					AdvertInterval: 40950 * time.Millisecond,
					VIPs:           []netip.Prefix{netip.MustParsePrefix("192.0.2.10/32"), netip.MustParsePrefix("192.0.2.11/32")},
					Preempt:        false,
					PreemptDelay:   time.Hour,
					UnicastPeers:   []netip.Addr{netip.MustParseAddr("198.51.100.2"), netip.MustParseAddr("198.51.100.3")},
					UnicastSource:  netip.MustParseAddr("198.51.100.1"),
					GARP:           GARP{Repeat: 100, Interval: 10 * time.Millisecond, Refresh: time.Second},
				}},
			},
		},
		{
			name: "several instances; one VRID on two interfaces; bare address is /32",
			src: `[global]
log_level = "warn"

[[instance]]
name = "a"
interface = "eth0"
vrid = 1
vips = ["192.0.2.1"]
priority = 1
advert_interval = "10ms"
[instance.garp]
repeat = 1

[[instance]]
name = "b.2_x-y"
interface = "eth1"
vrid = 1
vips = ["192.0.2.2/32"]
garp = { refresh = "0s", interval = "1m" }

[[instance]]
name = "c"
interface = "bond0.100"
vrid = 255
vips = [
  "192.0.2.3",
  "192.0.2.4", # trailing comma and comments are fine
]
`,
			want: &Config{
				Path:   "vipd.toml",
				Global: Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelWarn},
				Instances: []Instance{
					func() Instance {
						in := defaults("a", "eth0", 1, "192.0.2.1/32")
						in.Priority, in.AdvertInterval, in.GARP.Repeat = 1, 10*time.Millisecond, 1
						return in
					}(),
					func() Instance {
						in := defaults("b.2_x-y", "eth1", 1, "192.0.2.2/32")
						in.GARP.Interval = time.Minute
						return in
					}(),
					defaults("c", "bond0.100", 255, "192.0.2.3/32", "192.0.2.4/32"),
				},
			},
		},
		{
			name: "instances as an inline array; empty unicast settings",
			src: `instance = [
  {name = "a", interface = "eth0", vrid = 7, vips = ["192.0.2.7"], unicast_peers = [], unicast_source = ""},
]
`,
			want: &Config{
				Path:      "vipd.toml",
				Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo},
				Instances: []Instance{defaults("a", "eth0", 7, "192.0.2.7/32")},
			},
		},
		{
			name: "byte-order mark and CRLF line ends",
			src:  "\xef\xbb\xbf[[instance]]\r\nname = \"a\"\r\ninterface = \"eth0\"\r\nvrid = 9\r\nvips = [\"192.0.2.9\"]\r\n",
			want: &Config{
				Path:      "vipd.toml",
				Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo},
				Instances: []Instance{defaults("a", "eth0", 9, "192.0.2.9/32")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, tt.src)
			if diff := cmp.Diff(tt.want, got, cmpOpts); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// An instance that is valid, to which each refusal below adds one mistake.
const base = `[[instance]]
name = "k8s-api"
interface = "eth0"
vrid = 51
vips = ["192.0.2.10"]
`

func TestParseRefusals(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		// Syntax: a single problem, at the line it is on.
		{"syntax: unclosed header", "[[instance]\nname = \"a\"\n", []string{
			`vipd.toml:1: invalid TOML: expected end of table array name delimiter ']', but got '\n' instead`,
		}},
		{"syntax: unclosed string", base + "priority = \"a\n", []string{
			`vipd.toml:6: invalid TOML: strings cannot contain newlines`,
		}},
		{"syntax: key defined twice", base + "vrid = 52\n", []string{
			`vipd.toml:6: invalid TOML: Key 'instance.vrid' has already been defined.`,
		}},
		{"syntax: integer overflow", base + "priority = 99999999999999999999\n", []string{
			`vipd.toml:6: invalid TOML: 99999999999999999999 is out of range for int64`,
		}},

		// Unknown keys.
		{"unknown key in instance", base + "priorty = 5\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "priorty" (did you mean "priority"?)`,
		}},
		{"unknown key differing in case", base + "Priority = 5\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "Priority" (did you mean "priority"?)`,
		}},
		{"array of tables differing in case", "[[Instance]]\nname = \"a\"\n", []string{
			`vipd.toml:1: unknown key "Instance" (did you mean "instance"?)`,
			`vipd.toml:1: instance #1: missing required key "interface"`,
			`vipd.toml:1: instance #1: missing required key "vrid"`,
			`vipd.toml:1: instance #1: missing required key "vips"`,
		}},
		{"sub-table differing in case", base + "[instance.GARP]\nrepeat = 0\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "GARP" (did you mean "garp"?)`,
			`vipd.toml:7: instance "k8s-api": garp.repeat 0 out of range 1..100`,
		}},
		{"unknown key in garp", base + "[instance.garp]\nrepeat = 2\nrepat = 3\n", []string{
			`vipd.toml:8: instance "k8s-api": unknown key "garp.repat" (did you mean "garp.repeat"?)`,
		}},
		{"unknown key in global", "[global]\nsockt = \"/run/x.sock\"\n" + base, []string{
			`vipd.toml:2: global: unknown key "sockt" (did you mean "socket"?)`,
		}},
		{"unknown top-level table, reported once", "[globl]\nsocket = \"/run/x.sock\"\nlog_level = \"info\"\n" + base, []string{
			`vipd.toml:1: unknown key "globl" (did you mean "global"?)`,
		}},
		{"unknown sub-table, reported once", base + "[instance.track]\ntype = \"http\"\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "track"`,
		}},
		{"unknown dotted key", base + "grap.repeat = 3\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "grap.repeat" (did you mean "garp.repeat"?)`,
		}},
		{"unknown key, hint by prefix", base + "advert_int = \"1s\"\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "advert_int" (did you mean "advert_interval"?)`,
		}},
		{"unknown key, no obvious hint", base + "weight = 3\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "weight"`,
		}},
		{"unknown key in an inline table", base + "garp = {repeat = 2, intervl = \"1s\"}\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "garp.intervl" (did you mean "garp.interval"?)`,
		}},

		// Wrong types.
		{"vrid as a string", strings.Replace(base, "vrid = 51", `vrid = "51"`, 1), []string{
			`vipd.toml:4: instance "k8s-api": vrid must be an integer, not a string`,
		}},
		{"priority as a float", base + "priority = 100.0\n", []string{
			`vipd.toml:6: instance "k8s-api": priority must be an integer, not a float`,
		}},
		{"preempt as a string", base + "preempt = \"yes\"\n", []string{
			`vipd.toml:6: instance "k8s-api": preempt must be true or false, not a string`,
		}},
		{"vips as a string", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = "192.0.2.10"`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips must be an array of strings, not a string`,
		}},
		{"vips element not a string", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["192.0.2.10", 7]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: element 2 is an integer, not a string`,
		}},
		{"duration as an integer", base + "advert_interval = 1\n", []string{
			`vipd.toml:6: instance "k8s-api": advert_interval must be a duration string such as "1s" or "250ms", not an integer`,
		}},
		{"name as an integer", strings.Replace(base, `name = "k8s-api"`, `name = 5`, 1), []string{
			`vipd.toml:2: instance #1: name must be a string, not an integer`,
		}},
		{"vrid as a table", base + "[instance.priority]\nx = 1\n", []string{
			`vipd.toml:6: instance "k8s-api": priority must be an integer, not a table`,
		}},
		{"vrid as an array of inline tables", base + "priority = [{x = 1}]\n", []string{
			`vipd.toml:6: instance "k8s-api": priority must be an integer, not an array`,
		}},
		{"log_level as an integer", "[global]\nlog_level = 1\n" + base, []string{
			`vipd.toml:2: global: log_level must be a string, not an integer`,
		}},
		{"garp not a table", base + "garp = 5\n", []string{
			`vipd.toml:6: instance "k8s-api": garp must be a table, not an integer`,
		}},
		{"table key differing in case, with a wrong value", base + "GARP = 5\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "GARP" (did you mean "garp"?)`,
		}},
		{"instance as a table", "[instance]\nname = \"a\"\n", []string{
			`vipd.toml:1: instance must be an array of tables ([[instance]]), not a table`,
		}},
		{"instance array with a non-table", "instance = [5]\n", []string{
			`vipd.toml:1: instance must be an array of tables ([[instance]]), but element 1 is an integer`,
		}},
		{"global not a table", "global = \"x\"\n" + base, []string{
			`vipd.toml:1: global must be a table, not a string`,
		}},

		// Ranges.
		{"vrid 0", strings.Replace(base, "vrid = 51", "vrid = 0", 1), []string{
			`vipd.toml:4: instance "k8s-api": vrid 0 out of range 1..255`,
		}},
		{"vrid 300", strings.Replace(base, "vrid = 51", "vrid = 300", 1), []string{
			`vipd.toml:4: instance "k8s-api": vrid 300 out of range 1..255`,
		}},
		{"priority 0", base + "priority = 0\n", []string{
			`vipd.toml:6: instance "k8s-api": priority 0 out of range 1..254`,
		}},
		{"priority 255", base + "priority = 255\n", []string{
			`vipd.toml:6: instance "k8s-api": priority 255 is reserved for the address owner (RFC 5798 section 5.2.4), a router whose own interface address is the VIP; vipd adds VIPs and never owns them: use 1..254`,
		}},
		{"priority negative", base + "priority = -1\n", []string{
			`vipd.toml:6: instance "k8s-api": priority -1 out of range 1..254`,
		}},
		{"advert_interval too short", base + "advert_interval = \"5ms\"\n", []string{
			`vipd.toml:6: instance "k8s-api": advert_interval "5ms" out of range 10ms..40.95s`,
		}},
		{"advert_interval too long", base + "advert_interval = \"41s\"\n", []string{
			`vipd.toml:6: instance "k8s-api": advert_interval "41s" out of range 10ms..40.95s`,
		}},
		{"advert_interval not in centiseconds", base + "advert_interval = \"1.005s\"\n", []string{
			`vipd.toml:6: instance "k8s-api": advert_interval "1.005s" is not a multiple of 10ms (VRRPv3 carries it in centiseconds)`,
		}},
		{"bad duration", base + "advert_interval = \"1 sec\"\n", []string{
			`vipd.toml:6: instance "k8s-api": advert_interval "1 sec" is not a duration; write it like "1s" or "250ms"`,
		}},
		{"preempt_delay negative", base + "preempt_delay = \"-1s\"\n", []string{
			`vipd.toml:6: instance "k8s-api": preempt_delay "-1s" out of range 0s..1h`,
		}},
		{"preempt_delay too long", base + "preempt_delay = \"61m\"\n", []string{
			`vipd.toml:6: instance "k8s-api": preempt_delay "61m" out of range 0s..1h`,
		}},
		{"garp ranges", base + "[instance.garp]\nrepeat = 0\ninterval = \"2m\"\nrefresh = \"500ms\"\n", []string{
			`vipd.toml:7: instance "k8s-api": garp.repeat 0 out of range 1..100`,
			`vipd.toml:8: instance "k8s-api": garp.interval "2m" out of range 10ms..1m`,
			`vipd.toml:9: instance "k8s-api": garp.refresh "500ms" must be 0s (off) or at least 1s`,
		}},
		{"garp ranges, other ends", base + "[instance.garp]\nrepeat = 101\ninterval = \"9ms\"\nrefresh = \"-1s\"\n", []string{
			`vipd.toml:7: instance "k8s-api": garp.repeat 101 out of range 1..100`,
			`vipd.toml:8: instance "k8s-api": garp.interval "9ms" out of range 10ms..1m`,
			`vipd.toml:9: instance "k8s-api": garp.refresh "-1s" must be 0s (off) or at least 1s`,
		}},

		// Names.
		{"bad instance name", strings.Replace(base, `name = "k8s-api"`, `name = "k8s api"`, 1), []string{
			`vipd.toml:2: instance #1: name "k8s api" may only contain A-Z, a-z, 0-9, '_', '.' and '-'`,
		}},
		{"long instance name", strings.Replace(base, `name = "k8s-api"`, `name = "`+strings.Repeat("a", 33)+`"`, 1), []string{
			`vipd.toml:2: instance #1: name "` + strings.Repeat("a", 33) + `" is longer than 32 characters`,
		}},
		{"empty instance name", strings.Replace(base, `name = "k8s-api"`, `name = ""`, 1), []string{
			`vipd.toml:2: instance #1: name is empty`,
		}},
		{"long interface name", strings.Replace(base, `"eth0"`, `"enp0s31f6abcdefg"`, 1), []string{
			`vipd.toml:3: instance "k8s-api": interface "enp0s31f6abcdefg" is longer than 15 characters, the Linux limit`,
		}},
		{"interface name with a slash", strings.Replace(base, `"eth0"`, `"eth/0"`, 1), []string{
			`vipd.toml:3: instance "k8s-api": interface "eth/0" is not a valid interface name: Linux refuses '/', ':' and whitespace`,
		}},
		{"interface name with a space", strings.Replace(base, `"eth0"`, `"eth 0"`, 1), []string{
			`vipd.toml:3: instance "k8s-api": interface "eth 0" is not a valid interface name: Linux refuses '/', ':' and whitespace`,
		}},
		{"empty interface name", strings.Replace(base, `"eth0"`, `""`, 1), []string{
			`vipd.toml:3: instance "k8s-api": interface is empty`,
		}},

		// Addresses.
		{"bad VIPs", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["300.1.1.1", "192.0.2.0/24", "2001:db8::10", "2001:db8::11/128", "::ffff:192.0.2.1", "0.0.0.0", "224.0.0.18", "127.0.0.1", "255.255.255.255", "192.0.2.9/33"]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: "300.1.1.1" is not an IPv4 address`,
			`vipd.toml:5: instance "k8s-api": vips: "192.0.2.0/24": only /32 is accepted (each VIP is added as a host address)`,
			`vipd.toml:5: instance "k8s-api": vips: "2001:db8::10": IPv6 VIPs are not supported yet`,
			`vipd.toml:5: instance "k8s-api": vips: "2001:db8::11/128": IPv6 VIPs are not supported yet`,
			`vipd.toml:5: instance "k8s-api": vips: "::ffff:192.0.2.1" is an IPv4-mapped IPv6 address: write 192.0.2.1`,
			`vipd.toml:5: instance "k8s-api": vips: "0.0.0.0" is the unspecified address`,
			`vipd.toml:5: instance "k8s-api": vips: "224.0.0.18" is a multicast address`,
			`vipd.toml:5: instance "k8s-api": vips: "127.0.0.1" is a loopback address`,
			`vipd.toml:5: instance "k8s-api": vips: "255.255.255.255" is the broadcast address`,
			`vipd.toml:5: instance "k8s-api": vips: "192.0.2.9/33": /33 is not a prefix length`,
		}},
		{"VIP listed twice", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["192.0.2.10", "192.0.2.10/32"]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: 192.0.2.10 is listed twice`,
		}},
		{"no VIPs", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = []`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips is empty: list at least one address`,
		}},
		{"bad unicast settings", base + `unicast_source = "192.0.2.10"
unicast_peers = ["198.51.100.2", "198.51.100.2", "224.0.0.18", "0.0.0.0", "2001:db8::2", "peer-2", "192.0.2.10"]
`, []string{
			`vipd.toml:6: instance "k8s-api": unicast_source 192.0.2.10 is one of the VIPs; it must be this host's own address, which stays when the VIP moves`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: 198.51.100.2 is listed twice`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "224.0.0.18" is a multicast address`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "0.0.0.0" is the unspecified address`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "2001:db8::2": IPv6 unicast peers are not supported yet`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "peer-2" is not an IPv4 address`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: 192.0.2.10 is one of the VIPs; list the peers' own addresses`,
		}},
		{"unicast peer is the source", base + `unicast_source = "198.51.100.1"
unicast_peers = ["198.51.100.2", "198.51.100.1"]
`, []string{
			`vipd.toml:7: instance "k8s-api": unicast_peers: 198.51.100.1 is unicast_source, this host itself`,
		}},
		{"bad unicast source", base + `unicast_source = "0.0.0.0"` + "\n", []string{
			`vipd.toml:6: instance "k8s-api": unicast_source: "0.0.0.0" is the unspecified address`,
		}},

		// Missing keys: reported at the instance's header.
		{"missing required keys", "\n[[instance]]\npriority = 100\n", []string{
			`vipd.toml:2: instance #1: missing required key "name"`,
			`vipd.toml:2: instance #1: missing required key "interface"`,
			`vipd.toml:2: instance #1: missing required key "vrid"`,
			`vipd.toml:2: instance #1: missing required key "vips"`,
		}},
		{"no instances", "[global]\nlog_level = \"info\"\n", []string{
			`vipd.toml: no [[instance]] defined: vipd needs at least one`,
		}},
		{"empty file", "", []string{
			`vipd.toml: no [[instance]] defined: vipd needs at least one`,
		}},
		{"empty instance array", "instance = []\n", []string{
			`vipd.toml:1: no [[instance]] defined: vipd needs at least one`,
		}},

		// Across instances: at the later one, naming the earlier one's line.
		{"VRID twice on one interface", base + "\n[[instance]]\nname = \"other\"\ninterface = \"eth0\"\nvrid = 51\nvips = [\"192.0.2.11\"]\n", []string{
			`vipd.toml:10: instance "other": vrid 51 is already used on eth0 by instance "k8s-api" (line 4)`,
		}},
		{"VIP in two instances", base + "\n[[instance]]\nname = \"other\"\ninterface = \"eth1\"\nvrid = 52\nvips = [\"192.0.2.11\", \"192.0.2.10\"]\n", []string{
			`vipd.toml:11: instance "other": vips: 192.0.2.10 is already a VIP of instance "k8s-api" (line 5)`,
		}},
		{"name twice", base + "\n[[instance]]\nname = \"k8s-api\"\ninterface = \"eth1\"\nvrid = 52\nvips = [\"192.0.2.11\"]\n", []string{
			`vipd.toml:8: instance "k8s-api": name "k8s-api" is already used at line 2`,
		}},

		// Global settings.
		{"bad global settings", `[global]
node_name = ""
socket = "vipd.sock"
log_format = "yaml"
log_level = "verbose"
` + base, []string{
			`vipd.toml:2: global: node_name is empty: leave it out to use the host name`,
			`vipd.toml:3: global: socket "vipd.sock" must be an absolute path`,
			`vipd.toml:4: global: log_format "yaml" is not one of text, json`,
			`vipd.toml:5: global: log_level "verbose" is not one of debug, info, warn, error`,
		}},
		{"socket path too long", "[global]\nsocket = \"/" + strings.Repeat("s", 107) + "\"\n" + base, []string{
			`vipd.toml:2: global: socket "/` + strings.Repeat("s", 107) + `" is longer than 107 bytes, the limit for a unix socket path`,
		}},

		// Lines inside inline tables, multi-line arrays and later instances.
		{"key inside an inline table", base + "garp = {\n  repeat = 5,\n  interval = \"1h\",\n}\n", []string{
			`vipd.toml:8: instance "k8s-api": garp.interval "1h" out of range 10ms..1m`,
		}},
		{"multi-line array: the key's line", strings.Replace(base, `vips = ["192.0.2.10"]`, "vips = [\n  \"192.0.2.10\",\n  \"192.0.2.300\",\n]", 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: "192.0.2.300" is not an IPv4 address`,
		}},
		{"dotted key in an instance", base + "garp.repeat = 0\n", []string{
			`vipd.toml:6: instance "k8s-api": garp.repeat 0 out of range 1..100`,
		}},
		{"inline array of instances", `instance = [
  {name = "a", interface = "eth0", vrid = 1, vips = ["192.0.2.1"]},
  {name = "b", interface = "eth0", vrid = 1,
   vips = ["192.0.2.2"], garp = {repeat = 0}},
]
`, []string{
			`vipd.toml:3: instance "b": vrid 1 is already used on eth0 by instance "a" (line 2)`,
			`vipd.toml:4: instance "b": garp.repeat 0 out of range 1..100`,
		}},
		{"third instance, after sub-tables and look-alike strings", base + `[instance.garp]
repeat = 2

[[instance]]
name = "b"
interface = "eth1"
vrid = 2
vips = ["192.0.2.2"]
preempt_delay = """
[[instance]]
vrid = 300
"""
[instance.garp]
repeat = 3 # [[instance]]

[[instance]]
name = "c"
interface = "eth2"
vrid = 3
vips = ["192.0.2.3"]
[instance.garp]
interval = "1s"
refresh = "0.5s"
`, []string{
			`vipd.toml:14: instance "b": preempt_delay "[[instance]]\nvrid = 300\n" is not a duration; write it like "1s" or "250ms"`,
			`vipd.toml:28: instance "c": garp.refresh "0.5s" must be 0s (off) or at least 1s`,
		}},

		// Everything at once, sorted by line.
		{"several problems together", `[global]
log_level = "loud"

[[instance]]
name = "a"
interface = "eth0"
vrid = 300
vips = ["192.0.2.1/24"]

[[instance]]
name = "b"
interface = "eth0"
vrid = 1
priorty = 2
vips = ["192.0.2.2"]
[instance.garp]
repeat = 0
`, []string{
			`vipd.toml:2: global: log_level "loud" is not one of debug, info, warn, error`,
			`vipd.toml:7: instance "a": vrid 300 out of range 1..255`,
			`vipd.toml:8: instance "a": vips: "192.0.2.1/24": only /32 is accepted (each VIP is added as a host address)`,
			`vipd.toml:14: instance "b": unknown key "priorty" (did you mean "priority"?)`,
			`vipd.toml:17: instance "b": garp.repeat 0 out of range 1..100`,
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

func TestHostnameFailure(t *testing.T) {
	_, err := parse("vipd.toml", []byte(base), func() (string, error) { return "", errors.New("no name") })
	want := `vipd.toml: global: node_name is not set and the host name cannot be used (no name): set node_name`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestParseUsesHostname(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skipf("no host name here: %v", err)
	}
	cfg, err := Parse("vipd.toml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Global.NodeName != host {
		t.Errorf("NodeName = %q, want the host name %q", cfg.Global.NodeName, host)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "vipd.toml")
	if err := os.WriteFile(good, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != good {
		t.Errorf("Path = %q, want %q", cfg.Path, good)
	}
	if in, ok := cfg.Instance("k8s-api"); !ok || in.VRID != 51 {
		t.Errorf("Instance(k8s-api) = %+v, %v; want VRID 51", in, ok)
	}
	if _, ok := cfg.Instance("nope"); ok {
		t.Error("Instance(nope) found something")
	}

	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte(base+"vrid = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(bad)
	var perr *Error
	if !errors.As(err, &perr) || len(perr.Problems) != 1 || perr.Problems[0].File != bad || perr.Problems[0].Line != 6 {
		t.Errorf("Load(bad) = %v, want one problem at %s:6", err, bad)
	}

	if _, err := Load(filepath.Join(dir, "missing.toml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestProblemString(t *testing.T) {
	for _, tt := range []struct {
		p    Problem
		want string
	}{
		{Problem{File: "vipd.toml", Line: 14, Message: "m"}, "vipd.toml:14: m"},
		{Problem{File: "vipd.toml", Message: "m"}, "vipd.toml: m"},
	} {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.p, got, tt.want)
		}
	}
}
