package lab

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/config"
)

func TestParseProcStat(t *testing.T) {
	// A command name with spaces and parentheses, as prctl allows.
	line := "4242 (vipd (lab) x) S 4240 4242 4240 0 -1 4194560 1100 0 0 0 37 12 0 0 20 0 9 0 123456 1300000000 3300 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if want := (procStat{PPID: 4240, UTime: 37, STime: 12, Threads: 9}); st != want {
		t.Errorf("parseProcStat = %+v, want %+v", st, want)
	}
	for name, bad := range map[string]string{
		"no command":  "4242 vipd S 1 2 3",
		"truncated":   "4242 (vipd) S 4240 4242 4240 0 -1 4194560 1100 0 0 0 37",
		"bad utime":   strings.Replace(line, " 37 12 ", " x 12 ", 1),
		"bad threads": strings.Replace(line, " 20 0 9 0 ", " 20 0 nine 0 ", 1),
	} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%s: parseProcStat(%q) accepted it", name, bad)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	st, err := parseSchedstat([]byte("8123456 20987 311\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (schedStat{RunNS: 8123456, WaitNS: 20987, Runs: 311}); st != want {
		t.Errorf("parseSchedstat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "1 2", "1 2 3 4", "1 x 3", "1 -2 3"} {
		if _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q) accepted it", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	status := `Name:	keepalived
State:	S (sleeping)
VmPeak:	   10604 kB
VmHWM:	    6612 kB
VmRSS:	    6560 kB
RssAnon:	     988 kB
RssFile:	    5572 kB
Threads:	1
voluntary_ctxt_switches:	1207
nonvoluntary_ctxt_switches:	31
`
	st, err := parseStatus([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	want := procStatus{RSSBytes: 6560 * 1024, PeakRSSBytes: 6612 * 1024, AnonBytes: 988 * 1024, Voluntary: 1207, Involuntary: 31}
	if st != want {
		t.Errorf("parseStatus = %+v, want %+v", st, want)
	}
	// A thread's status has no memory lines; the counts are enough.
	task := "Name:\tvipd\nvoluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t2\n"
	if st, err := parseStatus([]byte(task)); err != nil || st != (procStatus{Voluntary: 5, Involuntary: 2}) {
		t.Errorf("parseStatus(task) = %+v, %v", st, err)
	}
	for _, bad := range []string{"Name:\tvipd\n", "voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\tx\n", "VmRSS:\n"} {
		if _, err := parseStatus([]byte(bad)); err == nil {
			t.Errorf("parseStatus(%q) accepted it", bad)
		}
	}
}

func TestParsePerfCSV(t *testing.T) {
	out := "# started on Tue Dec  1 22:00:00 2026\n\n" +
		"120,,context-switches,60012345678,100.00,,\n" +
		"3.93,msec,cpu-clock:u,60012345678,100.00,0.000,CPUs utilized\n" +
		"<not counted>,,cpu-migrations,0,100.00,,\n" +
		"garbage\n"
	got := parsePerfCSV([]byte(out))
	want := perfCounts{"context-switches": 120, "cpu-clock": 3.93}
	if len(got) != len(want) {
		t.Fatalf("parsePerfCSV = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parsePerfCSV[%s] = %v, want %v", k, got[k], v)
		}
	}
	if got := parsePerfCSV([]byte("<not counted>,,context-switches,0,100.00,,\n")); len(got) != 0 {
		t.Errorf("nothing counted: parsePerfCSV = %v, want empty", got)
	}
}

func TestTakeoverExcess(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	bound := MasterDownInterval(100, time.Second)
	gs := []groupTakeover{
		{VRID: 1, LastAdvert: t0, TakenAt: t0.Add(bound + 2*time.Millisecond), Bound: bound},
		{VRID: 2, LastAdvert: t0.Add(300 * time.Millisecond), TakenAt: t0.Add(300*time.Millisecond + bound + 500*time.Microsecond), Bound: bound},
		{VRID: 3, LastAdvert: t0},                       // never taken over
		{VRID: 4, TakenAt: t0.Add(bound), Bound: bound}, // taken, but its last advert was not seen
	}
	ex, taken := takeoverExcess(gs)
	if taken != 3 {
		t.Errorf("taken = %d, want 3", taken)
	}
	want := []float64{2, 0.5}
	if len(ex) != len(want) {
		t.Fatalf("excess = %v, want %v", ex, want)
	}
	for i := range want {
		if math.Abs(ex[i]-want[i]) > 1e-9 {
			t.Errorf("excess[%d] = %v ms, want %v", i, ex[i], want[i])
		}
	}
	s := summarize(ex)
	if s.Min != 0.5 || s.Max != 2 || s.Median != 1.25 {
		t.Errorf("spread = %+v, want min 0.5, median 1.25, max 2", s)
	}
}

func TestSpreadOf(t *testing.T) {
	if s := spreadOf(nil); s.N != 0 {
		t.Errorf("spreadOf(nil) = %+v", s)
	}
	s := spreadOf([]float64{3, 1, 8})
	if s.N != 3 || s.Mean != 4 || s.Min != 1 || s.Max != 8 {
		t.Errorf("spreadOf = %+v, want mean 4 [1..8]", s)
	}
}

func TestScaleGroups(t *testing.T) {
	base := DefaultGroupConfig(3, time.Second)
	gs, err := ScaleGroups(base, MaxGroups)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != MaxGroups {
		t.Fatalf("%d groups, want %d", len(gs), MaxGroups)
	}
	if gs[0].VRID != base.VRID || gs[0].VIP != base.VIP {
		t.Errorf("first group %d %v, want the lab's own %d %v", gs[0].VRID, gs[0].VIP, base.VRID, base.VIP)
	}
	vrids, vips := map[int]bool{}, map[netip.Prefix]bool{}
	for k, g := range gs {
		if err := g.Validate(); err != nil {
			t.Errorf("group %d: %v", k+1, err)
		}
		if vrids[g.VRID] || vips[g.VIP] {
			t.Errorf("group %d repeats VRID %d or VIP %v", k+1, g.VRID, g.VIP)
		}
		vrids[g.VRID], vips[g.VIP] = true, true
		if k > 0 && !netip.MustParsePrefix("203.0.113.0/24").Contains(g.VIP.Addr()) {
			t.Errorf("group %d VIP %v outside 203.0.113.0/24", k+1, g.VIP)
		}
	}
	// The groups share priorities but not the slice.
	gs[1].Priorities[0] = 7
	if base.Priorities[0] == 7 || gs[2].Priorities[0] == 7 {
		t.Error("groups share a priorities slice")
	}
	for _, n := range []int{0, -1, MaxGroups + 1} {
		if _, err := ScaleGroups(base, n); err == nil {
			t.Errorf("ScaleGroups(%d) accepted it", n)
		}
	}
}

// TestExtraInstancesVipd parses the N-groups vipd config with vipd's own
// parser: every group becomes an instance with its VRID and VIP.
func TestExtraInstancesVipd(t *testing.T) {
	for _, n := range []int{1, 16, MaxGroups} {
		base := DefaultGroupConfig(3, time.Second)
		probe := time.Second
		if n == 16 {
			base.GARPProbe, probe = "0s", 0 // scale --vipd-garp-probe 0s
		}
		gs, err := ScaleGroups(base, n)
		if err != nil {
			t.Fatal(err)
		}
		extra, err := extraInstances(Vipd, 2, gs)
		if err != nil {
			t.Fatal(err)
		}
		cfgText := append(vipdConfig(2, gs[0], "/run/vipd-lab/n2.sock", ""), extra...)
		c, err := config.Parse("vipd.toml", cfgText)
		if err != nil {
			t.Fatalf("%d groups: %v\n%s", n, err, cfgText)
		}
		if len(c.Instances) != n {
			t.Fatalf("%d groups: %d instances", n, len(c.Instances))
		}
		for k, in := range c.Instances {
			g := gs[k]
			if int(in.VRID) != g.VRID || len(in.VIPs) != 1 || in.VIPs[0] != g.VIP || int(in.Priority) != g.Priority(2) || in.AdvertInterval != g.Interval {
				t.Errorf("%d groups: instance %d = vrid %d vips %v priority %d interval %v, want %d %v %d %v",
					n, k+1, in.VRID, in.VIPs, in.Priority, in.AdvertInterval, g.VRID, g.VIP, g.Priority(2), g.Interval)
			}
			if in.GARP.Probe != probe {
				t.Errorf("%d groups: instance %d probes every %v, want %v", n, k+1, in.GARP.Probe, probe)
			}
		}
	}
}

func TestExtraInstancesKeepalived(t *testing.T) {
	gs, err := ScaleGroups(DefaultGroupConfig(3, 100*time.Millisecond), 16)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := extraInstances(Keepalived, 3, gs)
	if err != nil {
		t.Fatal(err)
	}
	text := string(append(keepalivedConfig(3, gs[0]), extra...))
	if n := strings.Count(text, "global_defs"); n != 1 {
		t.Errorf("%d global_defs blocks, want 1", n)
	}
	if n := strings.Count(text, "vrrp_instance "); n != 16 {
		t.Errorf("%d vrrp_instance blocks, want 16", n)
	}
	if strings.Count(text, "{") != strings.Count(text, "}") {
		t.Error("unbalanced braces")
	}
	for k, g := range gs {
		name := "lab"
		if k > 0 {
			name = fmt.Sprintf("g%d", k+1)
		}
		block := "vrrp_instance " + name + " {"
		i := strings.Index(text, block)
		if i < 0 {
			t.Errorf("no %q", block)
			continue
		}
		rest := text[i+len(block):]
		if j := strings.Index(rest, "vrrp_instance "); j >= 0 {
			rest = rest[:j]
		}
		for _, want := range []string{fmt.Sprintf("virtual_router_id %d\n", g.VRID), fmt.Sprintf("priority %d\n", g.Priority(3)),
			"advert_int 0.1\n", g.VIP.String() + " dev eth0"} {
			if !strings.Contains(rest, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
}

func TestScaleTable(t *testing.T) {
	node := func(i int, cpuMS, rss float64, runs int64) ScaleNode {
		return ScaleNode{Node: i, Role: "backup", Procs: 1, CPUMS: cpuMS, RSSMiB: rss, Runs: runs, Voluntary: runs}
	}
	win := func(d string, ivMS float64, groups, arp int, cpu ...float64) ScaleWindow {
		w := ScaleWindow{Daemon: d, IntervalMS: ivMS, Groups: groups, ARPRate: arp, WindowS: 30, Stable: true}
		for i, c := range cpu {
			w.Nodes = append(w.Nodes, node(i+1, c, 10+float64(i), int64(c*10)))
		}
		return w
	}
	r := &ScaleResult{
		Config: ScaleSettings{Daemons: []string{"vipd", "keepalived"}, IntervalsMS: []float64{1000}, Groups: []int{1, 16},
			GroupsIntervalMS: 1000, ARPRate: 2000},
		Windows: []ScaleWindow{
			// Over 30 s: 10 ms is 20 ms/min.
			win("vipd", 1000, 1, 0, 10, 10, 10),
			win("keepalived", 1000, 1, 0, 4, 5, 6),
			win("vipd", 1000, 1, 2000, 11, 11, 11),
			win("keepalived", 1000, 1, 2000, 5, 5, 5),
			win("vipd", 1000, 16, 0, 30, 60, 90),
			{Daemon: "keepalived", IntervalMS: 1000, Groups: 16, Error: "lab: no keepalived"},
		},
		Failovers: []FailoverResult{
			{Daemon: "vipd", IntervalMS: 1000, Groups: 16, TakenOver: 16, ExcessMS: []float64{3, 1, 2}, LastMS: 2900, AdvertExcessMS: []float64{0.25, 0.5, 4}},
			{Daemon: "keepalived", IntervalMS: 1000, Groups: 16, TakenOver: 15, ExcessMS: []float64{0.5}, LastMS: 2800, Error: "1 of 16 groups not taken over"},
		},
		Trials: []TrialResult{
			{Daemon: "vipd", Mode: "cut", IntervalMS: 1000, TakeoverExcessMS: 3},
			{Daemon: "vipd", Mode: "cut", IntervalMS: 1000, TakeoverExcessMS: 5},
			{Daemon: "vipd", Mode: "kill", IntervalMS: 1000, TakeoverExcessMS: 99},
			{Daemon: "keepalived", Mode: "cut", IntervalMS: 1000, TakeoverExcessMS: 0.5},
		},
		Notes: []string{"perf not installed"},
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("table:\n%s", out)
	line := func(prefix string) []string {
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, prefix) {
				return strings.Fields(strings.TrimPrefix(l, prefix))
			}
		}
		t.Errorf("no row %q in\n%s", prefix, out)
		return nil
	}
	// cpu: vipd 20 ms/min, keepalived 10 ms/min (8..12): ratio 2.
	if f := line("cpu per node, 1 group @1s  "); len(f) > 0 {
		want := []string{"ms/min", "20.00", "[20.00..20.00]", "10.00", "[8.000..12.00]", "2.00"}
		if strings.Join(f, " ") != strings.Join(want, " ") {
			t.Errorf("cpu row = %q, want %q", f, want)
		}
	}
	if f := line("cpu per node, 16 groups @1s"); len(f) > 0 && (f[1] != "120.0" || f[3] != "failed" || f[4] != "-") {
		t.Errorf("16-group cpu row = %q: want vipd 120.0, keepalived failed, no ratio", f)
	}
	// ARP: vipd 22/20, keepalived 10/10.
	if f := line("  ARP load / quiet"); len(f) > 0 && (f[1] != "1.10" || f[2] != "1.00") {
		t.Errorf("ARP row = %q, want 1.10 and 1.00", f)
	}
	if f := line("failover of 16 groups @1s (cut)"); len(f) > 0 {
		got := strings.Join(f, " ")
		if !strings.Contains(got, "1.000 / 2.000 / 3.000 (16 of 16)") || !strings.Contains(got, "0.500 / 0.500 / 0.500 (15 of 16) FAILED") {
			t.Errorf("failover row = %q", got)
		}
	}
	if f := line("  new master's first advert - MDI"); len(f) > 0 && strings.Join(f, " ") != "min/median/max ms 0.250 / 0.500 / 4.000 (3) - -" {
		t.Errorf("advert row = %q", f)
	}
	// Only cut trials count: vipd median 4 of 3 and 5.
	if f := line("takeover - bound (cut), 1 group @1s"); len(f) > 0 && (f[1] != "4.000" || f[len(f)-1] != "8.00") {
		t.Errorf("takeover row = %q, want vipd median 4.000 and ratio 8.00", f)
	}
	if f := line("wake-ups per node (schedstat runs), 1 group @1s"); len(f) > 0 && f[1] != "200.0" {
		t.Errorf("wake-ups row = %q, want vipd 200.0 a minute", f)
	}
	if strings.Contains(out, "(perf stat)") {
		t.Errorf("a perf row without perf counts:\n%s", out)
	}
	for _, want := range []string{"note: keepalived, 16 groups @1s: lab: no keepalived", "note: perf not installed"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// A one-group configuration measured in several rounds: the cpu row pools
// them (the ratio of the means), the round row lists each pair's ratio,
// and the ARP load is against the quiet window of its own (first) lab.
func TestScaleTableRounds(t *testing.T) {
	win := func(d string, round, arp int, cpu ...float64) ScaleWindow {
		w := ScaleWindow{Daemon: d, IntervalMS: 100, Groups: 1, Round: round, ARPRate: arp, WindowS: 60, Stable: true}
		for i, c := range cpu {
			w.Nodes = append(w.Nodes, ScaleNode{Node: i + 1, Role: "backup", Procs: 1, CPUMS: c, RSSMiB: 8})
		}
		return w
	}
	r := &ScaleResult{
		Config: ScaleSettings{Daemons: []string{"vipd", "keepalived"}, IntervalsMS: []float64{100}, Groups: []int{1},
			GroupsIntervalMS: 100, ARPRate: 2000, Rounds: 3},
		Windows: []ScaleWindow{
			win("vipd", 1, 0, 60, 60, 60),
			win("keepalived", 1, 0, 100, 100, 100),
			win("vipd", 1, 2000, 90, 90, 90),
			win("keepalived", 1, 2000, 100, 100, 100),
			// Round 2: vipd over keepalived, as one lab pair can be.
			win("vipd", 2, 0, 80, 80, 80),
			win("keepalived", 2, 0, 40, 40, 40),
			{Daemon: "vipd", IntervalMS: 100, Groups: 1, Round: 3, Error: "lab: did not settle"},
			win("keepalived", 3, 0, 70, 70, 70),
		},
	}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("table:\n%s", out)
	row := func(prefix string) string {
		for l := range strings.Lines(out) {
			if strings.HasPrefix(l, prefix) {
				return strings.Join(strings.Fields(strings.TrimPrefix(l, prefix)), " ")
			}
		}
		t.Errorf("no row %q in\n%s", prefix, out)
		return ""
	}
	// vipd (60+80)/2 = 70, keepalived (100+40+70)/3 = 70.
	if got, want := row("cpu per node, 1 group @100ms "), "ms/min 70.00 [60.00..80.00] 70.00 [40.00..100.0] 1.00"; got != want {
		t.Errorf("pooled cpu row = %q, want %q", got, want)
	}
	if got, want := row("  by round (labs built anew) "), "ms/min 60.00 / 80.00 / failed 100.0 / 40.00 / 70.00 0.60 / 2.00 / -"; got != want {
		t.Errorf("round row = %q, want %q", got, want)
	}
	// 90/60 against round 1's quiet window, not the pooled 70.
	if got := row("  ARP load / quiet "); !strings.HasPrefix(got, "x 1.50 1.00") {
		t.Errorf("ARP row = %q, want vipd 1.50 and keepalived 1.00", got)
	}
	if !strings.Contains(out, "note: vipd, 1 group @100ms: lab: did not settle") {
		t.Errorf("the failed round has no note:\n%s", out)
	}
	r.Windows = r.Windows[:4]
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "by round") {
		t.Errorf("a round row with one round:\n%s", b.String())
	}
}

// The scale run keeps each daemon's log under a name that says which lab
// it came from; a second lab of the same configuration adds to it.
func TestKeepLog(t *testing.T) {
	if got, want := scaleLogName(Vipd, 255, time.Second, 2), "vipd-255groups-1s-n2.log"; got != want {
		t.Errorf("scaleLogName = %q, want %q", got, want)
	}
	if got, want := scaleLogName(Keepalived, 1, 100*time.Millisecond, 1), "keepalived-1group-100ms-n1.log"; got != want {
		t.Errorf("scaleLogName = %q, want %q", got, want)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "kept.log")
	for _, text := range []string{"first lab\n", "second lab\n"} {
		src := filepath.Join(dir, "daemon.log")
		if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := keepLog(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "first lab\nsecond lab\n" {
		t.Errorf("kept %q, %v; want both labs' logs in order", b, err)
	}
	if err := keepLog(filepath.Join(dir, "missing.log"), dst); err == nil {
		t.Error("keepLog of a missing log did not fail")
	}
}
