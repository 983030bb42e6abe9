package lab

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipd/vipd/config"
)

func TestBounds(t *testing.T) {
	tests := []struct {
		mode        Mode
		prio        int
		interval    time.Duration
		sinceAdvert time.Duration
		want        time.Duration
	}{
		// 3 s + 156/256 s for priority 100 at 1 s.
		{Cut, 100, time.Second, 0, 3609375 * time.Microsecond},
		{Kill, 100, time.Second, 400 * time.Millisecond, 3209375 * time.Microsecond},
		{Cut, 100, 10 * time.Millisecond, 0, 36093750 * time.Nanosecond},
		{Cut, 100, 10 * time.Millisecond, time.Second, 0}, // never negative
		{Graceful, 100, time.Second, 0, 609375 * time.Microsecond},
		{Graceful, 50, 100 * time.Millisecond, 0, 80468750 * time.Nanosecond},
	}
	for _, tt := range tests {
		if got := TheoreticalBound(tt.mode, tt.prio, tt.interval, tt.sinceAdvert); got != tt.want {
			t.Errorf("TheoreticalBound(%v, %d, %v, %v) = %v, want %v", tt.mode, tt.prio, tt.interval, tt.sinceAdvert, got, tt.want)
		}
	}
}

func TestDuplicateTime(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := []Event{
		{At: at(0), Kind: VIPAdded, Node: 1},
		{At: at(100), Kind: VIPAdded, Node: 2},     // two owners from 100
		{At: at(100), Kind: VIPAdded, Node: 2},     // a repeat changes nothing
		{At: at(150), Kind: NeighChanged, Node: 2}, // ignored
		{At: at(300), Kind: VIPRemoved, Node: 1},   // until 300
		{At: at(400), Kind: VIPAdded, Node: 3},     // again from 400
	}
	tests := []struct {
		from, to int
		want     time.Duration
	}{
		{0, 1000, 200*time.Millisecond + 600*time.Millisecond},
		{200, 350, 100 * time.Millisecond},
		{0, 100, 0},
		{500, 600, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := duplicateTime(ev, 3, at(tt.from), at(tt.to)); got != tt.want {
			t.Errorf("duplicateTime(%d..%d) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestLongestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var as []Answer
	for _, ms := range []int{0, 1, 2, 3, 250, 251, 252, 400} {
		as = append(as, Answer{Recv: t0.Add(time.Duration(ms) * time.Millisecond)})
	}
	g := longestGap(as, t0, t0.Add(time.Second))
	if g.Len != 247*time.Millisecond || !g.After.Recv.Equal(t0.Add(3*time.Millisecond)) {
		t.Errorf("longestGap = %v after %v, want 247ms after 3ms", g.Len, g.After.Recv.Sub(t0))
	}
	if g := longestGap(as, t0, t0.Add(100*time.Millisecond)); g.Len != time.Millisecond {
		t.Errorf("longestGap in first 100ms = %v, want 1ms", g.Len)
	}
}

func TestParseAdvert(t *testing.T) {
	// VRRPv3 advert: version 3, type 1, VRID 51, priority 150, 1 address,
	// max adver int 100 cs.
	b := []byte{0x31, 51, 150, 1, 0x00, 100, 0, 0, 198, 51, 100, 10}
	got, ok := parseAdvert(b)
	if !ok || got != (advert{vrid: 51, prio: 150, interval: time.Second}) {
		t.Errorf("parseAdvert = %+v, %v", got, ok)
	}
	// VRRPv2 (RFC 3768): auth type 1, 3 s in byte 5.
	if got, ok := parseAdvert([]byte{0x21, 51, 150, 1, 1, 3, 0, 0}); !ok || got != (advert{vrid: 51, prio: 150, interval: 3 * time.Second}) {
		t.Errorf("parseAdvert of VRRPv2 = %+v, %v", got, ok)
	}
	for _, b := range [][]byte{{0x11, 51, 150, 1, 0, 1, 0, 0}, {0x32, 51, 150, 1, 0, 100, 0, 0}, {0x31, 51}} {
		if _, ok := parseAdvert(b); ok {
			t.Errorf("parseAdvert accepted %x", b)
		}
	}
}

func TestInetChecksum(t *testing.T) {
	// An echo request whose checksum field holds the right sum checks to 0.
	pkt := []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8}
	c := inetChecksum(pkt)
	pkt[2], pkt[3] = byte(c>>8), byte(c)
	if got := inetChecksum(pkt); got != 0 {
		t.Errorf("checksum over a summed packet = %#x, want 0", got)
	}
}

func TestKeepalivedConfig(t *testing.T) {
	got := string(keepalivedConfig(2, DefaultGroupConfig(3, 10*time.Millisecond)))
	for _, want := range []string{"vrrp_version 3", "virtual_router_id 51", "priority 100", "advert_int 0.01",
		"198.51.100.10/32 dev eth0", "state BACKUP", "interface eth0"} {
		if !strings.Contains(got, want) {
			t.Errorf("keepalived config lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "nopreempt") {
		t.Errorf("preempting group says nopreempt:\n%s", got)
	}
}

// The generated vipd config must stay one the project's config package
// accepts, with the values the lab means.
func TestVipdConfigParses(t *testing.T) {
	for _, iv := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		g := DefaultGroupConfig(3, iv)
		b := vipdConfig(3, g, filepath.Join(t.TempDir(), "vipd.sock"), "debug")
		c, err := config.Parse("lab.toml", b)
		if err != nil {
			t.Fatalf("interval %v: %v\n%s", iv, err, b)
		}
		if len(c.Instances) != 1 {
			t.Fatalf("got %d instances", len(c.Instances))
		}
		in := c.Instances[0]
		if in.VRID != 51 || in.Priority != 50 || in.AdvertInterval != iv || !in.Preempt {
			t.Errorf("interval %v: parsed %+v", iv, in)
		}
	}
}

func TestParse(t *testing.T) {
	for _, m := range Modes() {
		if got, err := ParseMode(strings.ToUpper(m.String())); err != nil || got != m {
			t.Errorf("ParseMode(%v) = %v, %v", m, got, err)
		}
	}
	for _, k := range []DaemonKind{Keepalived, Vipd} {
		if got, err := ParseDaemonKind(k.String()); err != nil || got != k {
			t.Errorf("ParseDaemonKind(%v) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseMode("reboot"); err == nil {
		t.Error("ParseMode accepted reboot")
	}
	if pid, ok := ownerPID("vipdlab-1234-abcd0123-n1"); !ok || pid != 1234 {
		t.Errorf("ownerPID = %d, %v", pid, ok)
	}
	if _, ok := ownerPID("vgb-b8093f"); ok {
		t.Error("ownerPID claimed a foreign namespace")
	}
}

func TestGroupValidate(t *testing.T) {
	g := DefaultGroupConfig(3, time.Second)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{150, 100, 50}, g.Priorities); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
	for _, iv := range []time.Duration{5 * time.Millisecond, 15 * time.Millisecond, 41 * time.Second} {
		if err := DefaultGroupConfig(3, iv).Validate(); err == nil {
			t.Errorf("interval %v accepted", iv)
		}
	}
}

func sampleResult() *BenchResult {
	r := &BenchResult{Config: BenchSettings{Daemons: []string{"vipd", "keepalived"}, IntervalsMS: []float64{100},
		Modes: []string{"cut", "kill"}, Trials: 2}}
	yes := true
	for i, out := range []float64{280, 290} {
		r.Trials = append(r.Trials,
			TrialResult{Daemon: "vipd", Mode: "cut", IntervalMS: 100, Trial: i + 1, OutageMS: out, BoundMS: 275},
			TrialResult{Daemon: "keepalived", Mode: "cut", IntervalMS: 100, Trial: i + 1, OutageMS: 2 * out, BoundMS: 275},
			TrialResult{Daemon: "vipd", Mode: "kill", IntervalMS: 100, Trial: i + 1, NeighMS: 270, SecondOwnerReported: &yes},
		)
	}
	r.Groups = []GroupStatus{{Daemon: "vipd", IntervalMS: 100, Stable: true}, {Daemon: "keepalived", IntervalMS: 100, Stable: true}}
	r.Steady = []SteadyResult{{Daemon: "vipd", IntervalMS: 100, Nodes: []NodeUsage{{Node: 1, CPUSeconds: 0.2, PeakRSSMiB: 9}}}}
	return r
}

func TestRows(t *testing.T) {
	r := sampleResult()
	var outage *Row
	rows := r.Rows()
	for i := range rows {
		if rows[i].Mode == "cut" && rows[i].Metric == "outage" {
			outage = &rows[i]
		}
	}
	if outage == nil {
		t.Fatal("no cut outage row")
	}
	if s := outage.ByDaemon["vipd"]; s != (Stat{N: 2, Median: 285, Min: 280, Max: 290}) {
		t.Errorf("vipd outage stat = %+v", s)
	}
	if q := outage.Ratio(); math.Abs(q-0.5) > 1e-9 {
		t.Errorf("ratio = %v, want 0.5", q)
	}
	var buf bytes.Buffer
	if err := r.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"285.0 [280.0..290.0] (2)", "0.50", "2 of 2", "steady"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestSVGWellFormed(t *testing.T) {
	var buf bytes.Buffer
	if err := sampleResult().WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	checkXML(t, buf.Bytes())
	if !strings.Contains(buf.String(), "<rect") {
		t.Error("no bars drawn")
	}
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	for _, v := range []float64{0, 0.3, 7, 61.9, 291, 3613} {
		ticks := niceTicks(v)
		if ticks[0] != 0 || ticks[len(ticks)-1] < v || len(ticks) > 12 {
			t.Errorf("niceTicks(%v) = %v", v, ticks)
		}
	}
	var r BenchResult
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
}
