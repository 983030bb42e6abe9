package control

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

var testNow = time.Date(2025, 11, 29, 15, 2, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return testNow.Add(-d) }

func addr(s string) netip.Addr     { return netip.MustParseAddr(s) }
func prefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// statusFixture covers each state and every kind of detail line.
func statusFixture() []InstanceStatus {
	return []InstanceStatus{
		{
			Name: "k8s-api", Interface: "eth0", VRID: 51, LocalAddress: addr("198.51.100.11"),
			State: StateMaster, Since: at(3*time.Hour + 2*time.Minute + 4*time.Second),
			Priority: Priority{Base: 100, Effective: 100, Parts: []PriorityPart{
				{Tracker: "apiserver", Healthy: true, Contribution: 0, Detail: "HTTP 200"},
			}},
			Master: Master{Address: addr("198.51.100.11"), Priority: 100,
				AdvertInterval: Duration(time.Second), LastSeen: at(300 * time.Millisecond)},
			VIPs: []netip.Prefix{prefix("192.0.2.10/32")}, VIPsHeld: true,
			Transitions: 3,
			LastTransition: &Transition{At: at(3*time.Hour + 2*time.Minute + 4*time.Second),
				From: StateBackup, To: StateMaster, Reason: "master_down",
				Cause: "no advert from 198.51.100.12 for 3.61s"},
			Trackers: []Tracker{{Name: "apiserver", Type: "http", Healthy: true, Detail: "HTTP 200",
				Since: at(3*time.Hour + 2*time.Minute + 30*time.Second), Weight: -20,
				LastCheck: at(2 * time.Second), LastDuration: Duration(12345 * time.Microsecond),
				Checks: 5460, Failures: 2}},
			Counters: Counters{AdvertsSent: 10921, AdvertsReceived: 40, GARPSent: 5, Drops: map[string]uint64{}},
			Warnings: []string{"a second host answers ARP for 192.0.2.10 from 52:54:00:aa:bb:cc"},
		},
		{
			Name: "ingress", Interface: "eth1", VRID: 52, LocalAddress: addr("198.51.100.11"),
			State: StateBackup, Since: at(2*time.Minute + 7*time.Second),
			Priority: Priority{Base: 110, Effective: 90, Parts: []PriorityPart{
				{Tracker: "nginx", Healthy: false, Contribution: -20, Detail: "connection refused"},
			}},
			Master: Master{Address: addr("198.51.100.12"), Priority: 100,
				AdvertInterval: Duration(time.Second), LastSeen: at(400 * time.Millisecond)},
			VIPs:        []netip.Prefix{prefix("192.0.2.20/32"), prefix("192.0.2.21/32")},
			Transitions: 2,
			LastTransition: &Transition{At: at(2*time.Minute + 7*time.Second), From: StateMaster, To: StateBackup,
				Reason: "higher_master", Cause: "198.51.100.12 advertises priority 100, higher than our 90"},
			Trackers: []Tracker{{Name: "nginx", Type: "http", Healthy: false, Detail: "connection refused",
				Since: at(2*time.Minute + 8*time.Second), Weight: -20,
				LastCheck: at(1500 * time.Millisecond), LastDuration: Duration(1003 * time.Microsecond)}},
			Counters: Counters{AdvertsSent: 200, AdvertsReceived: 9000, Drops: map[string]uint64{"ttl": 3, "address_list": 12}},
			Warnings: []string{"VRID collision: 198.51.100.50 advertises VRID 52 with 198.51.100.77"},
		},
		{
			Name: "db", Interface: "eth0", VRID: 53, LocalAddress: addr("198.51.100.11"),
			State: StateBackup, Since: at(29*time.Hour + 10*time.Minute),
			Priority: Priority{Base: 120, Effective: 120},
			Drained:  true, DrainNote: "by uid 1000 (alice) pid 4321: kernel upgrade",
			Master: Master{Address: addr("198.51.100.13"), Priority: 100,
				AdvertInterval: Duration(250 * time.Millisecond), LastSeen: at(100 * time.Millisecond)},
			VIPs:        []netip.Prefix{prefix("192.0.2.30/32")},
			Transitions: 5,
			LastTransition: &Transition{At: at(29*time.Hour + 10*time.Minute), From: StateMaster, To: StateBackup,
				Reason: "drain", Cause: "drained by uid 1000 (alice) pid 4321"},
		},
		{
			Name: "storage", Interface: "bond0", VRID: 54, State: StateFault, Since: at(15 * time.Second),
			Priority: Priority{Base: 100, Effective: 100}, VIPs: []netip.Prefix{prefix("192.0.2.40/32")},
			Trackers: []Tracker{{Name: "nfs", Type: "exec", Healthy: false, Detail: "exit status 1: stale file handle",
				Cause: "exit status 1: stale file handle", Since: at(20 * time.Second), Weight: 0,
				LastCheck: at(5 * time.Second), LastDuration: Duration(2 * time.Second), Checks: 100, Failures: 3}},
			Transitions: 1,
			LastTransition: &Transition{At: at(15 * time.Second), From: StateBackup, To: StateFault,
				Reason: "link_down", Cause: "interface bond0 down"},
		},
		{
			Name: "spare", Interface: "eth2", VRID: 55, State: StateInitialize,
			Priority: Priority{Base: 100, Effective: 100}, VIPs: []netip.Prefix{prefix("192.0.2.50/32")},
		},
	}
}

func TestRenderStatus(t *testing.T) {
	var b bytes.Buffer
	RenderStatus(&b, statusFixture(), testNow)
	golden(t, "status", b.Bytes())
}

func TestRenderStatusOlderThanAYear(t *testing.T) {
	sts := statusFixture()[3:4]
	sts[0].Since = time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	RenderStatus(&b, sts, testNow)
	golden(t, "status-old", b.Bytes())
}

func TestRenderStatusEmpty(t *testing.T) {
	var b bytes.Buffer
	RenderStatus(&b, nil, testNow)
	golden(t, "status-empty", b.Bytes())
}

func TestRenderHistory(t *testing.T) {
	ts := []Transition{
		{At: time.Date(2025, 11, 28, 9, 52, 5, 12_000_000, time.UTC), Instance: "k8s-api",
			From: StateInitialize, To: StateBackup, Reason: "startup", Cause: "started"},
		{At: time.Date(2025, 11, 28, 9, 52, 8, 623_400_000, time.UTC), Instance: "k8s-api",
			From: StateBackup, To: StateMaster, Reason: "master_down", Cause: "no advert from any master for 3.61s"},
		{At: time.Date(2025, 11, 29, 11, 59, 57, 500_000_000, time.UTC), Instance: "k8s-api",
			From: StateMaster, To: StateBackup, Reason: "higher_master",
			Cause: "198.51.100.12 advertises priority 120, higher than our 100"},
		{At: time.Date(2025, 11, 29, 12, 0, 1, 1_000_000, time.UTC), Instance: "k8s-api",
			From: StateBackup, To: StateMaster, Reason: "master_down", Cause: "no advert from 198.51.100.12 for 3.61s"},
		{At: time.Date(2025, 11, 29, 15, 0, 0, 0, time.UTC), Instance: "storage",
			From: StateBackup, To: StateFault, Reason: "link_down", Cause: "interface bond0 down"},
	}
	var b bytes.Buffer
	RenderHistory(&b, ts)
	golden(t, "history", b.Bytes())

	b.Reset()
	RenderHistory(&b, nil)
	golden(t, "history-empty", b.Bytes())
}

func TestRenderDrain(t *testing.T) {
	tests := []struct {
		name string
		res  DrainResult
	}{
		{"drain", DrainResult{Instances: []DrainedInstance{
			{Name: "k8s-api", State: StateBackup, TakenOverBy: addr("198.51.100.12"), Message: "198.51.100.12 took over after 1.02s"},
			{Name: "db", State: StateBackup, Message: "was already Backup"},
		}}},
		{"drain-warning", DrainResult{
			Instances: []DrainedInstance{{Name: "k8s-api", State: StateBackup, Message: "no other host took over"}},
			Warning:   "no other host took over k8s-api within 30s: 192.0.2.10 is unreachable; undrain to restore it",
		}},
		{"undrain", DrainResult{Instances: []DrainedInstance{
			{Name: "k8s-api", State: StateBackup, Message: "competing again with priority 100"},
			{Name: "storage", State: StateFault},
		}}},
		{"drain-none", DrainResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			RenderDrain(&b, tt.res)
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestRenderReload(t *testing.T) {
	tests := []struct {
		name string
		res  ReloadResult
	}{
		{"reload", ReloadResult{OK: true, Changes: []string{
			"k8s-api: priority 100 -> 120",
			"ingress: added (eth1 vrid 52, 192.0.2.20 192.0.2.21)",
		}}},
		{"reload-one", ReloadResult{OK: true, Changes: []string{"k8s-api: advert_interval 1s -> 500ms"}}},
		{"reload-unchanged", ReloadResult{OK: true}},
		{"reload-refused", ReloadResult{Problems: []string{
			`vipd.toml:12: instance "k8s-api": priority 300 is out of range 1..254`,
			`vipd.toml:20: instance "db": unknown key "vipz" (did you mean "vips"?)`,
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			RenderReload(&b, tt.res)
			golden(t, tt.name, b.Bytes())
		})
	}
}

func TestAgo(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                      "0.0s ago",
		400 * time.Millisecond:            "0.4s ago",
		3610 * time.Millisecond:           "3.6s ago",
		42 * time.Second:                  "42s ago",
		3*time.Minute + 5*time.Second:     "3m5s ago",
		3*time.Hour + 2*time.Minute:       "3h2m ago",
		50*time.Hour + 59*time.Minute:     "2d2h ago",
		3*time.Hour + 59*time.Minute + 59: "3h59m ago",
	} {
		if got := ago(testNow.Add(-d), testNow); got != want {
			t.Errorf("ago(%v) = %q, want %q", d, got, want)
		}
	}
}
