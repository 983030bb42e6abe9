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

	"github.com/vipd/vipd/vrrp"
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
		GARP:           GARP{Repeat: 5, Interval: time.Second, Probe: time.Second},
		Notify:         Notify{Timeout: 10 * time.Second},

		SplitBrainRecovery: true,
		MasterDownAdverts:  3,
		Version:            3,
		UnicastMinTTL:      255,
		UnicastMaxTTL:      255,
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
				Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: DefaultStateDir},
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
state_dir = "/var/lib/vipd-test"
socket_group = "vipd"
metrics_listen = "[::1]:9650"
realtime_priority = 10
realtime_policy = "fifo"
lock_memory = true

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
split_brain_recovery = false
master_down_adverts = 10
trust_unknown_masters = true
unicast_min_ttl = 1
unicast_max_ttl = 254
checksum = "rfc9568"

[instance.garp]
repeat = 100
interval = "10ms"
refresh = "1s"

[[instance.track]]
name = "apiserver"
type = "http"
weight = 254
fall = 100
rise = 1
interval = "1h"
timeout = "59m"
url = "https://kubernetes:6443/readyz?verbose"
ok_status = [200, 401, 599, 100]
ca_file = "/etc/kubernetes/pki/ca.crt"
cert_file = "/etc/vipd/client.crt"
key_file = "/etc/vipd/client.key"
insecure_skip_verify = false

[[instance.track]]
name = "etcd"
type = "exec"
weight = -254
fall = 1
rise = 100
interval = "100ms"
timeout = "99ms"
command = ["/usr/local/bin/check-etcd", "--quick", ""]

[[instance.track]]
name = "drain"
type = "file"
path = "/etc/vipd/drain"

[[instance.track]]
name = "uplink"
type = "interface"
interface = "eth1"
weight = 0

[instance.notify]
master = ["/usr/local/bin/on-master", "k8s-api"]
backup = ["/usr/local/bin/on-backup"]
fault = []
stop = ["/bin/true"]
timeout = "10m"
`,
			want: &Config{
				Path: "vipd.toml",
				Global: Global{
					NodeName: "cp-1", Socket: "/run/vipd/test.sock", LogFormat: "json", LogLevel: slog.LevelDebug,
					StateDir: "/var/lib/vipd-test", SocketGroup: "vipd", MetricsListen: "[::1]:9650",
					RealtimePriority: 10, RealtimePolicy: "fifo", LockMemory: true,
				},
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
					UnicastMinTTL:  1,
					UnicastMaxTTL:  254,
					Checksum:       vrrp.ChecksumNoPseudoHeader,
					GARP:           GARP{Repeat: 100, Interval: 10 * time.Millisecond, Refresh: time.Second, Probe: time.Second},
					Tracks: []Track{
						{
							Name: "apiserver", Type: "http", Weight: 254, Fall: 100, Rise: 1, Interval: time.Hour, Timeout: 59 * time.Minute,
							URL: "https://kubernetes:6443/readyz?verbose", OKStatus: []int{200, 401, 599, 100},
							CAFile: "/etc/kubernetes/pki/ca.crt", CertFile: "/etc/vipd/client.crt", KeyFile: "/etc/vipd/client.key",
							Line: 36,
						},
						{
							Name: "etcd", Type: "exec", Weight: -254, Fall: 1, Rise: 100, Interval: 100 * time.Millisecond, Timeout: 99 * time.Millisecond,
							Command: []string{"/usr/local/bin/check-etcd", "--quick", ""},
							Line:    51,
						},
						{Name: "drain", Type: "file", Weight: 0, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, Path: "/etc/vipd/drain", Line: 61},
						{Name: "uplink", Type: "interface", Weight: 0, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, Interface: "eth1", Line: 66},
					},
					Notify: Notify{
						Master:  []string{"/usr/local/bin/on-master", "k8s-api"},
						Backup:  []string{"/usr/local/bin/on-backup"},
						Stop:    []string{"/bin/true"},
						Timeout: 10 * time.Minute,
					},
					SplitBrainRecovery:  false,
					MasterDownAdverts:   10,
					TrustUnknownMasters: true,
					Version:             3,
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
garp = { refresh = "0s", interval = "1m", probe = "0s" }

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
				Global: Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelWarn, StateDir: DefaultStateDir},
				Instances: []Instance{
					func() Instance {
						in := defaults("a", "eth0", 1, "192.0.2.1/32")
						in.Priority, in.AdvertInterval, in.GARP.Repeat = 1, 10*time.Millisecond, 1
						return in
					}(),
					func() Instance {
						in := defaults("b.2_x-y", "eth1", 1, "192.0.2.2/32")
						in.GARP.Interval, in.GARP.Probe = time.Minute, 0
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
				Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: DefaultStateDir},
				Instances: []Instance{defaults("a", "eth0", 7, "192.0.2.7/32")},
			},
		},
		{
			name: "byte-order mark and CRLF line ends",
			src:  "\xef\xbb\xbf[[instance]]\r\nname = \"a\"\r\ninterface = \"eth0\"\r\nvrid = 9\r\nvips = [\"192.0.2.9\"]\r\n",
			want: &Config{
				Path:      "vipd.toml",
				Global:    Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: DefaultStateDir},
				Instances: []Instance{defaults("a", "eth0", 9, "192.0.2.9/32")},
			},
		},
		{
			name: "trackers: defaults by type; timeout follows a short interval; inline tables",
			src: `[global]
state_dir = "/srv/vipd/"
socket_group = "998"
metrics_listen = ":9650"

[[instance]]
name = "a"
interface = "eth0"
vrid = 1
vips = ["192.0.2.1"]

[[instance.track]]
name = "api"
type = "http"
url = "HTTP://127.0.0.1:8080/healthz"

[[instance.track]]
name = "check"
type = "exec"
command = ["/usr/local/bin/check"]
interval = "500ms"

[[instance.track]]
name = "drain"
type = "file"
path = "/etc/vipd/drain"

[[instance.track]]
name = "uplink"
type = "interface"
interface = "eth1"

[[instance]]
name = "b"
interface = "eth0"
vrid = 2
vips = ["192.0.2.2"]
track = [
  {name = "drain", type = "file", path = "/run/drain-b", weight = -10},
  {name = "api", type = "http", url = "https://[::1]:6443/readyz", insecure_skip_verify = true, ok_status = [204]},
]
notify = {fault = ["/usr/bin/logger", "vipd: fault"], timeout = "1ms"}
`,
			want: &Config{
				Path:   "vipd.toml",
				Global: Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: "/srv/vipd", SocketGroup: "998", MetricsListen: ":9650"},
				Instances: []Instance{
					func() Instance {
						in := defaults("a", "eth0", 1, "192.0.2.1/32")
						in.Tracks = []Track{
							{Name: "api", Type: "http", Weight: -50, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, URL: "HTTP://127.0.0.1:8080/healthz", OKStatus: []int{200}, Line: 12},
							{Name: "check", Type: "exec", Weight: -50, Fall: 3, Rise: 2, Interval: 500 * time.Millisecond, Timeout: 250 * time.Millisecond, Command: []string{"/usr/local/bin/check"}, Line: 17},
							{Name: "drain", Type: "file", Weight: 0, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, Path: "/etc/vipd/drain", Line: 23},
							{Name: "uplink", Type: "interface", Weight: -50, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, Interface: "eth1", Line: 28},
						}
						return in
					}(),
					func() Instance {
						in := defaults("b", "eth0", 2, "192.0.2.2/32")
						in.Tracks = []Track{
							{Name: "drain", Type: "file", Weight: -10, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, Path: "/run/drain-b", Line: 39},
							{Name: "api", Type: "http", Weight: -50, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, URL: "https://[::1]:6443/readyz", OKStatus: []int{204}, InsecureSkipVerify: true, Line: 40},
						}
						in.Notify = Notify{Fault: []string{"/usr/bin/logger", "vipd: fault"}, Timeout: time.Millisecond}
						return in
					}(),
				},
			},
		},
		{
			name: "empty optional values: socket_group, metrics_listen, notify lists, TLS files",
			src: `[global]
socket_group = ""
metrics_listen = ""

[[instance]]
name = "a"
interface = "eth0"
vrid = 1
vips = ["192.0.2.1"]
split_brain_recovery = true

[[instance.track]]
name = "api"
type = "http"
url = "https://127.0.0.1:6443/readyz"
ca_file = ""
cert_file = ""
key_file = ""
insecure_skip_verify = false

[instance.notify]
master = []
backup = []
fault = []
stop = []
`,
			want: &Config{
				Path:   "vipd.toml",
				Global: Global{NodeName: testHost, Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: DefaultStateDir},
				Instances: []Instance{func() Instance {
					in := defaults("a", "eth0", 1, "192.0.2.1/32")
					in.Tracks = []Track{{Name: "api", Type: "http", Weight: -50, Fall: 3, Rise: 2, Interval: 2 * time.Second, Timeout: time.Second, URL: "https://127.0.0.1:6443/readyz", OKStatus: []int{200}, Line: 12}}
					return in
				}()},
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

// secondInstance follows base: a second instance whose first tracker is
// valid. secondTrack appends the second tracker of the second instance, its
// [[instance.track]] header on line 18 and keys from line 19 on.
const secondInstance = base + `
[[instance]]
name = "ingress"
interface = "eth1"
vrid = 52
vips = ["192.0.2.20"]

[[instance.track]]
name = "apiserver"
type = "http"
url = "https://127.0.0.1:6443/readyz"

`

func secondTrack(keys string) string {
	return secondInstance + "[[instance.track]]\n" + keys
}

// drain is a valid file tracker for secondTrack, ending on line 21.
const drain = "name = \"drain\"\ntype = \"file\"\npath = \"/etc/vipd/drain\"\n"

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
		{"unknown sub-table, reported once", base + "[instance.healthchecks]\ntype = \"http\"\nurl = \"x\"\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "healthchecks"`,
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
		{"garp ranges", base + "[instance.garp]\nrepeat = 0\ninterval = \"2m\"\nrefresh = \"500ms\"\nprobe = \"999ms\"\n", []string{
			`vipd.toml:7: instance "k8s-api": garp.repeat 0 out of range 1..100`,
			`vipd.toml:8: instance "k8s-api": garp.interval "2m" out of range 10ms..1m`,
			`vipd.toml:9: instance "k8s-api": garp.refresh "500ms" must be 0s (off) or at least 1s`,
			`vipd.toml:10: instance "k8s-api": garp.probe "999ms" must be 0s (no routine probes) or at least 1s`,
		}},
		{"garp ranges, other ends", base + "[instance.garp]\nrepeat = 101\ninterval = \"9ms\"\nrefresh = \"-1s\"\nprobe = \"-1s\"\n", []string{
			`vipd.toml:7: instance "k8s-api": garp.repeat 101 out of range 1..100`,
			`vipd.toml:8: instance "k8s-api": garp.interval "9ms" out of range 10ms..1m`,
			`vipd.toml:9: instance "k8s-api": garp.refresh "-1s" must be 0s (off) or at least 1s`,
			`vipd.toml:10: instance "k8s-api": garp.probe "-1s" must be 0s (no routine probes) or at least 1s`,
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
		{"bad VIPs", strings.Replace(base, `vips = ["192.0.2.10"]`, `vips = ["300.1.1.1", "192.0.2.0/24", "::ffff:192.0.2.1", "0.0.0.0", "224.0.0.18", "127.0.0.1", "255.255.255.255", "192.0.2.9/33"]`, 1), []string{
			`vipd.toml:5: instance "k8s-api": vips: "300.1.1.1" is not an IPv4 or IPv6 address`,
			`vipd.toml:5: instance "k8s-api": vips: "192.0.2.0/24": only /32 is accepted (each VIP is added as a host address)`,
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
			`vipd.toml:7: instance "k8s-api": unicast_peers: 2001:db8::2 is IPv6, but the instance's VIPs are IPv4: adverts, peers and source are of the VIPs' family`,
			`vipd.toml:7: instance "k8s-api": unicast_peers: "peer-2" is not an IPv4 or IPv6 address`,
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
			`vipd.toml:10: instance "other": vrid 51 is already used for IPv4 on eth0 by instance "k8s-api" (line 4)`,
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
			`vipd.toml:5: instance "k8s-api": vips: "192.0.2.300" is not an IPv4 or IPv6 address`,
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
			`vipd.toml:3: instance "b": vrid 1 is already used for IPv4 on eth0 by instance "a" (line 2)`,
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

		// New globals.
		{"bad state_dir, socket_group and metrics_listen", "[global]\nstate_dir = \"var/lib/vipd\"\nsocket_group = \"vipd admins\"\nmetrics_listen = \"127.0.0.1\"\n" + base, []string{
			`vipd.toml:2: global: state_dir "var/lib/vipd" must be an absolute path`,
			`vipd.toml:3: global: socket_group "vipd admins" is neither a group name (A-Z, a-z, 0-9, '_', '.', '-', not first) nor a numeric gid`,
			`vipd.toml:4: global: metrics_listen "127.0.0.1" is not host:port, such as "127.0.0.1:9650" or ":9650" (every address)`,
		}},
		{"empty state_dir; wrong types", "[global]\nstate_dir = \"\"\nsocket_group = 998\nmetrics_listen = 9650\n" + base, []string{
			`vipd.toml:2: global: state_dir is empty: leave it out to use /var/lib/vipd`,
			`vipd.toml:3: global: socket_group must be a string, not an integer`,
			`vipd.toml:4: global: metrics_listen must be a string, not an integer`,
		}},
		{"socket_group: gid out of range", "[global]\nsocket_group = \"4294967295\"\n" + base, []string{
			`vipd.toml:2: global: socket_group "4294967295" is not a valid gid (0..4294967294)`,
		}},
		{"socket_group with a leading dash", "[global]\nsocket_group = \"-vipd\"\n" + base, []string{
			`vipd.toml:2: global: socket_group "-vipd" is neither a group name (A-Z, a-z, 0-9, '_', '.', '-', not first) nor a numeric gid`,
		}},
		{"socket_group too long", "[global]\nsocket_group = \"" + strings.Repeat("g", 33) + "\"\n" + base, []string{
			`vipd.toml:2: global: socket_group "` + strings.Repeat("g", 33) + `" is longer than 32 characters`,
		}},
		{"realtime scheduling out of range, unknown policy, policy alone", "[global]\nrealtime_priority = 100\nrealtime_policy = \"idle\"\nlock_memory = \"yes\"\n" + base, []string{
			`vipd.toml:2: global: realtime_priority 100 out of range 0..99`,
			`vipd.toml:3: global: realtime_policy "idle" is not one of rr, fifo`,
			`vipd.toml:4: global: lock_memory must be true or false, not a string`,
		}},
		{"realtime_policy without a priority", "[global]\nrealtime_policy = \"fifo\"\n" + base, []string{
			`vipd.toml:2: global: realtime_policy without realtime_priority (1..99) does nothing: set both or neither`,
		}},
		{"metrics_listen: IPv6 without brackets", "[global]\nmetrics_listen = \"::1:9650\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen "::1:9650" is not host:port: put an IPv6 address in brackets, as in "[::1]:9650"`,
		}},
		{"metrics_listen: a host name", "[global]\nmetrics_listen = \"localhost:9650\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen "localhost:9650": the host "localhost" is not an IP address; give one of this host's addresses, or none (":9650") for every address`,
		}},
		{"metrics_listen: port 0", "[global]\nmetrics_listen = \"127.0.0.1:0\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen "127.0.0.1:0": port "0" is not a port number 1..65535`,
		}},
		{"metrics_listen: port too big", "[global]\nmetrics_listen = \"[::1]:65536\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen "[::1]:65536": port "65536" is not a port number 1..65535`,
		}},
		{"metrics_listen: port by name", "[global]\nmetrics_listen = \":http\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen ":http": port "http" is not a port number 1..65535`,
		}},
		{"metrics_listen: no port", "[global]\nmetrics_listen = \"127.0.0.1:\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen "127.0.0.1:": port "" is not a port number 1..65535`,
		}},
		{"metrics_listen: multicast", "[global]\nmetrics_listen = \"224.0.0.18:9650\"\n" + base, []string{
			`vipd.toml:2: global: metrics_listen "224.0.0.18:9650": 224.0.0.18 is a multicast address`,
		}},

		// master_down_adverts and trust_unknown_masters.
		{"master_down_adverts below the RFC's 3", base + "master_down_adverts = 2\n", []string{
			`vipd.toml:6: instance "k8s-api": master_down_adverts 2 out of range 3..10`,
		}},
		{"master_down_adverts too high", base + "master_down_adverts = 11\n", []string{
			`vipd.toml:6: instance "k8s-api": master_down_adverts 11 out of range 3..10`,
		}},
		{"master_down_adverts as a duration", base + "master_down_adverts = \"3s\"\n", []string{
			`vipd.toml:6: instance "k8s-api": master_down_adverts must be an integer, not a string`,
		}},
		{"trust_unknown_masters as a string", base + "trust_unknown_masters = \"yes\"\n", []string{
			`vipd.toml:6: instance "k8s-api": trust_unknown_masters must be true or false, not a string`,
		}},

		// split_brain_recovery.
		{"split_brain_recovery as a string", base + "split_brain_recovery = \"yes\"\n", []string{
			`vipd.toml:6: instance "k8s-api": split_brain_recovery must be true or false, not a string`,
		}},
		{"split_brain_recovery misspelt", base + "split_brain_recovry = false\n", []string{
			`vipd.toml:6: instance "k8s-api": unknown key "split_brain_recovry" (did you mean "split_brain_recovery"?)`,
		}},

		// Trackers: the second tracker of the second instance unless noted.
		{"track: unknown key", secondTrack(drain + "commnd = [\"/bin/true\"]\n"), []string{
			`vipd.toml:22: instance "ingress": track "drain": unknown key "commnd" (did you mean "command"?)`,
		}},
		{"track: key differing in case", secondTrack(drain + "Weight = 0\n"), []string{
			`vipd.toml:22: instance "ingress": track "drain": unknown key "Weight" (did you mean "weight"?)`,
		}},
		{"track: unknown key, no hint", secondTrack(drain + "retries = 3\n"), []string{
			`vipd.toml:22: instance "ingress": track "drain": unknown key "retries"`,
		}},
		{"track: unknown key in the first instance's tracker", base + "[[instance.track]]\nname = \"d\"\ntype = \"file\"\npath = \"/d\"\nexpect = 200\n", []string{
			`vipd.toml:10: instance "k8s-api": track "d": unknown key "expect"`,
		}},
		{"track: keys of other types", secondTrack(drain + `timeout = "1s"
url = "https://127.0.0.1/"
ok_status = [200]
ca_file = "/ca.pem"
cert_file = "/c.pem"
key_file = "/k.pem"
insecure_skip_verify = false
command = ["/bin/true"]
interface = "eth1"
`), []string{
			`vipd.toml:22: instance "ingress": track "drain": key "timeout" is for types "http" and "exec", not "file"`,
			`vipd.toml:23: instance "ingress": track "drain": key "url" is for type "http", not "file"`,
			`vipd.toml:24: instance "ingress": track "drain": key "ok_status" is for type "http", not "file"`,
			`vipd.toml:25: instance "ingress": track "drain": key "ca_file" is for type "http", not "file"`,
			`vipd.toml:26: instance "ingress": track "drain": key "cert_file" is for type "http", not "file"`,
			`vipd.toml:27: instance "ingress": track "drain": key "key_file" is for type "http", not "file"`,
			`vipd.toml:28: instance "ingress": track "drain": key "insecure_skip_verify" is for type "http", not "file"`,
			`vipd.toml:29: instance "ingress": track "drain": key "command" is for type "exec", not "file"`,
			`vipd.toml:30: instance "ingress": track "drain": key "interface" is for type "interface", not "file"`,
		}},
		{"track: command on an http tracker", base + "[[instance.track]]\nname = \"apiserver\"\ntype = \"http\"\nurl = \"https://127.0.0.1:6443/readyz\"\ncommand = [\"/bin/true\"]\npath = \"/etc/vipd/drain\"\n", []string{
			`vipd.toml:10: instance "k8s-api": track "apiserver": key "command" is for type "exec", not "http"`,
			`vipd.toml:11: instance "k8s-api": track "apiserver": key "path" is for type "file", not "http"`,
		}},
		{"track: ranges", secondTrack(drain + "weight = 255\nfall = 0\nrise = 101\ninterval = \"99ms\"\n"), []string{
			`vipd.toml:22: instance "ingress": track "drain": weight 255 out of range -254..254`,
			`vipd.toml:23: instance "ingress": track "drain": fall 0 out of range 1..100`,
			`vipd.toml:24: instance "ingress": track "drain": rise 101 out of range 1..100`,
			`vipd.toml:25: instance "ingress": track "drain": interval "99ms" out of range 100ms..1h`,
		}},
		{"track: ranges, other ends", secondTrack(drain + "weight = -255\nfall = 101\nrise = 0\ninterval = \"61m\"\n"), []string{
			`vipd.toml:22: instance "ingress": track "drain": weight -255 out of range -254..254`,
			`vipd.toml:23: instance "ingress": track "drain": fall 101 out of range 1..100`,
			`vipd.toml:24: instance "ingress": track "drain": rise 0 out of range 1..100`,
			`vipd.toml:25: instance "ingress": track "drain": interval "61m" out of range 100ms..1h`,
		}},
		{"track: wrong types", secondTrack(drain + "weight = \"-50\"\nfall = 3.0\ninterval = 2\n"), []string{
			`vipd.toml:22: instance "ingress": track "drain": weight must be an integer, not a string`,
			`vipd.toml:23: instance "ingress": track "drain": fall must be an integer, not a float`,
			`vipd.toml:24: instance "ingress": track "drain": interval must be a duration string such as "1s" or "250ms", not an integer`,
		}},
		{"track: timeout not shorter than the interval", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"http://127.0.0.1/\"\ntimeout = \"2s\"\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": timeout "2s" must be shorter than the interval (2s), so that one check ends before the next starts`,
		}},
		{"track: timeout not shorter than a set interval", secondTrack("name = \"api\"\ntype = \"exec\"\ncommand = [\"/bin/true\"]\ninterval = \"1m\"\ntimeout = \"1m30s\"\n"), []string{
			`vipd.toml:23: instance "ingress": track "api": timeout "1m30s" must be shorter than the interval (1m), so that one check ends before the next starts`,
		}},
		{"track: timeout zero; interval invalid", secondTrack("name = \"api\"\ntype = \"exec\"\ncommand = [\"/bin/true\"]\ninterval = \"2\"\ntimeout = \"0s\"\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": interval "2" is not a duration; write it like "1s" or "250ms"`,
			`vipd.toml:23: instance "ingress": track "api": timeout "0s" must be more than 0s`,
		}},
		{"track: name used twice in an instance", secondTrack("name = \"apiserver\"\ntype = \"file\"\npath = \"/etc/vipd/drain\"\n"), []string{
			`vipd.toml:19: instance "ingress": track "apiserver": name "apiserver" is already used at line 14`,
		}},
		{"track: one name in two instances is fine, bad names are not", base + "[[instance.track]]\nname = \"apiserver\"\ntype = \"file\"\npath = \"/d\"\n" + strings.TrimPrefix(secondTrack("name = \"a b\"\ntype = \"file\"\npath = \"/d\"\n"), base), []string{
			`vipd.toml:23: instance "ingress": track #2: name "a b" may only contain A-Z, a-z, 0-9, '_', '.' and '-'`,
		}},
		{"track: missing name and type", secondTrack("weight = 0\n"), []string{
			`vipd.toml:18: instance "ingress": track #2: missing required key "name"`,
			`vipd.toml:18: instance "ingress": track #2: missing required key "type"`,
		}},
		{"track: unknown type; its keys are still checked", secondTrack("name = \"x\"\ntype = \"tcp\"\npath = \"drain\"\n"), []string{
			`vipd.toml:20: instance "ingress": track "x": type "tcp" is not one of http, exec, file, interface`,
			`vipd.toml:21: instance "ingress": track "x": path "drain" must be an absolute path`,
		}},
		{"track: type in capitals", secondTrack("name = \"x\"\ntype = \"HTTP\"\nurl = \"http://127.0.0.1/\"\n"), []string{
			`vipd.toml:20: instance "ingress": track "x": type "HTTP" is not one of http, exec, file, interface`,
		}},
		{"track: name and type of the wrong type", secondTrack("name = 1\ntype = [\"file\"]\n"), []string{
			`vipd.toml:19: instance "ingress": track #2: name must be a string, not an integer`,
			`vipd.toml:20: instance "ingress": track #2: type must be a string, not an array`,
		}},
		{"track: required keys by type", secondTrack("name = \"h\"\ntype = \"http\"\n") + "[[instance.track]]\nname = \"e\"\ntype = \"exec\"\n[[instance.track]]\nname = \"f\"\ntype = \"file\"\n[[instance.track]]\nname = \"i\"\ntype = \"interface\"\n", []string{
			`vipd.toml:18: instance "ingress": track "h": missing required key "url" for type "http"`,
			`vipd.toml:21: instance "ingress": track "e": missing required key "command" for type "exec"`,
			`vipd.toml:24: instance "ingress": track "f": missing required key "path" for type "file"`,
			`vipd.toml:27: instance "ingress": track "i": missing required key "interface" for type "interface"`,
		}},
		{"track: not an array of tables", base + "[instance.track]\nname = \"x\"\n", []string{
			`vipd.toml:6: instance "k8s-api": track must be an array of tables ([[instance.track]]), not a table`,
		}},
		{"track: an element that is not a table", base + "track = [{name = \"x\", type = \"file\", path = \"/x\"}, \"y\"]\n", []string{
			`vipd.toml:6: instance "k8s-api": track must be an array of tables ([[instance.track]]), but element 2 is a string`,
		}},
		{"track: inline tables, problems at their lines", base + "track = [\n  {name = \"a\", type = \"file\", path = \"/a\"},\n  {name = \"b\", type = \"file\",\n   path = \"b\", fal = 2},\n]\n", []string{
			`vipd.toml:9: instance "k8s-api": track "b": unknown key "fal" (did you mean "fall"?)`,
			`vipd.toml:9: instance "k8s-api": track "b": path "b" must be an absolute path`,
		}},

		// http trackers.
		{"http: bad URLs", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"ftp://127.0.0.1/\"\n") +
			"[[instance.track]]\nname = \"b\"\ntype = \"http\"\nurl = \"https:///readyz\"\n" +
			"[[instance.track]]\nname = \"c\"\ntype = \"http\"\nurl = \"https://admin:secret@127.0.0.1:6443/\"\n" +
			"[[instance.track]]\nname = \"d\"\ntype = \"http\"\nurl = \"https://127.0.0.1:0/\"\n" +
			"[[instance.track]]\nname = \"e\"\ntype = \"http\"\nurl = \"https://[::1/\"\n" +
			"[[instance.track]]\nname = \"f\"\ntype = \"http\"\nurl = \"127.0.0.1:6443/readyz\"\n", []string{
			`vipd.toml:21: instance "ingress": track "api": url "ftp://127.0.0.1/": the scheme must be http or https`,
			`vipd.toml:25: instance "ingress": track "b": url "https:///readyz" has no host`,
			`vipd.toml:29: instance "ingress": track "c": url "https://admin:xxxxx@127.0.0.1:6443/" must not carry credentials: they would be logged`,
			`vipd.toml:33: instance "ingress": track "d": url "https://127.0.0.1:0/": port 0 out of range 1..65535`,
			`vipd.toml:37: instance "ingress": track "e": url "https://[::1/" is not a valid URL: missing ']' in host`,
			`vipd.toml:41: instance "ingress": track "f": url "127.0.0.1:6443/readyz" is not a valid URL: first path segment in URL cannot contain colon`,
		}},
		{"http: bad ok_status", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\nok_status = [99, 600, 200, 200, \"204\"]\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": ok_status: element 5 is a string, not an integer`,
			`vipd.toml:22: instance "ingress": track "api": ok_status: 99 is not an HTTP status code (100..599)`,
			`vipd.toml:22: instance "ingress": track "api": ok_status: 600 is not an HTTP status code (100..599)`,
			`vipd.toml:22: instance "ingress": track "api": ok_status: 200 is listed twice`,
		}},
		{"http: empty ok_status", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\nok_status = []\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": ok_status is empty: list at least one status code, or leave it out for [200]`,
		}},
		{"http: ok_status not an array", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\nok_status = 200\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": ok_status must be an array of integers, not an integer`,
		}},
		{"http: TLS files", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\nca_file = \"ca.pem\"\ncert_file = \"/etc/vipd/client.crt\"\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": ca_file "ca.pem" must be an absolute path`,
			`vipd.toml:23: instance "ingress": track "api": cert_file is set without key_file: set both or neither`,
		}},
		{"http: key_file without cert_file", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\ncert_file = \"\"\nkey_file = \"/etc/vipd/client.key\"\n"), []string{
			`vipd.toml:23: instance "ingress": track "api": key_file is set without cert_file: set both or neither`,
		}},
		{"http: insecure_skip_verify with ca_file", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\nca_file = \"/etc/kubernetes/pki/ca.crt\"\ninsecure_skip_verify = true\n"), []string{
			`vipd.toml:23: instance "ingress": track "api": insecure_skip_verify = true contradicts ca_file: the CA matters only when the certificate is verified`,
		}},
		{"http: TLS keys with an http URL", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"http://127.0.0.1/\"\nca_file = \"/ca.pem\"\ncert_file = \"/c.pem\"\ninsecure_skip_verify = true\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": key "ca_file" is for https URLs, and url is http`,
			`vipd.toml:23: instance "ingress": track "api": key "cert_file" is for https URLs, and url is http`,
			`vipd.toml:24: instance "ingress": track "api": key "insecure_skip_verify" is for https URLs, and url is http`,
		}},
		{"http: insecure_skip_verify as a string", secondTrack("name = \"api\"\ntype = \"http\"\nurl = \"https://127.0.0.1/\"\ninsecure_skip_verify = \"true\"\n"), []string{
			`vipd.toml:22: instance "ingress": track "api": insecure_skip_verify must be true or false, not a string`,
		}},

		// exec trackers.
		{"exec: command as a string", secondTrack("name = \"etcd\"\ntype = \"exec\"\ncommand = \"/usr/local/bin/check-etcd --quick\"\n"), []string{
			`vipd.toml:21: instance "ingress": track "etcd": command must be an array of strings, the program and its arguments (it runs without a shell), such as ["/usr/local/bin/check-etcd", "--quick"]`,
		}},
		{"exec: empty command", secondTrack("name = \"etcd\"\ntype = \"exec\"\ncommand = []\n"), []string{
			`vipd.toml:21: instance "ingress": track "etcd": command is empty: give the program and its arguments, such as ["/usr/local/bin/check", "--quick"]`,
		}},
		{"exec: relative program", secondTrack("name = \"etcd\"\ntype = \"exec\"\ncommand = [\"check-etcd\", \"--quick\"]\n"), []string{
			`vipd.toml:21: instance "ingress": track "etcd": command: the program "check-etcd" must be an absolute path (there is no shell and no PATH search)`,
		}},
		{"exec: an argument that is not a string", secondTrack("name = \"etcd\"\ntype = \"exec\"\ncommand = [\"/usr/local/bin/check-etcd\", 3]\n"), []string{
			`vipd.toml:21: instance "ingress": track "etcd": command: element 2 is an integer, not a string`,
		}},

		// file and interface trackers.
		{"file: relative path", secondTrack("name = \"drain\"\ntype = \"file\"\npath = \"drain\"\n"), []string{
			`vipd.toml:21: instance "ingress": track "drain": path "drain" must be an absolute path`,
		}},
		{"interface: bad name", secondTrack("name = \"uplink\"\ntype = \"interface\"\ninterface = \"eth/1\"\n"), []string{
			`vipd.toml:21: instance "ingress": track "uplink": interface "eth/1" is not a valid interface name: Linux refuses '/', ':' and whitespace`,
		}},

		// Notify hooks.
		{"notify: bad commands and timeout", base + "[instance.notify]\nmaster = \"/usr/local/bin/on-master\"\nbackup = [\"on-backup\"]\nfault = [\"\"]\nstop = [1]\ntimeout = \"0s\"\n", []string{
			`vipd.toml:7: instance "k8s-api": notify.master must be an array of strings, the program and its arguments (it runs without a shell), such as ["/usr/local/bin/on-master"]`,
			`vipd.toml:8: instance "k8s-api": notify.backup: the program "on-backup" must be an absolute path (there is no shell and no PATH search)`,
			`vipd.toml:9: instance "k8s-api": notify.fault: the program "" must be an absolute path (there is no shell and no PATH search)`,
			`vipd.toml:10: instance "k8s-api": notify.stop: element 1 is an integer, not a string`,
			`vipd.toml:11: instance "k8s-api": notify.timeout "0s" must be more than 0s and at most 10m`,
		}},
		{"notify: timeout too long; unknown key", base + "[instance.notify]\ntimeout = \"10m1s\"\nmastr = [\"/x\"]\n", []string{
			`vipd.toml:7: instance "k8s-api": notify.timeout "10m1s" must be more than 0s and at most 10m`,
			`vipd.toml:8: instance "k8s-api": unknown key "notify.mastr" (did you mean "notify.master"?)`,
		}},
		{"notify: not a table", base + "notify = [\"/x\"]\n", []string{
			`vipd.toml:6: instance "k8s-api": notify must be a table, not an array`,
		}},
		{"notify after the trackers of the second instance", secondTrack(drain + "[instance.notify]\nstop = [\"stop.sh\"]\n"), []string{
			`vipd.toml:23: instance "ingress": notify.stop: the program "stop.sh" must be an absolute path (there is no shell and no PATH search)`,
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
