package lab

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipd/vipd/vrrp"
)

func TestHolderStats(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(msec int) time.Time { return t0.Add(time.Duration(msec) * time.Millisecond) }
	add := func(msec, node int) Event { return Event{At: at(msec), Kind: VIPAdded, Node: node} }
	del := func(msec, node int) Event { return Event{At: at(msec), Kind: VIPRemoved, Node: node} }
	tests := []struct {
		name     string
		events   []Event
		from, to int
		want     HolderStats
	}{
		{"held throughout", []Event{add(0, 1)}, 100, 1100, HolderStats{}},
		{"a flap: gone 300 ms, back", []Event{add(0, 1), del(200, 1), add(500, 1)}, 100, 1100,
			HolderStats{Acquisitions: 1, NoHolder: 300 * time.Millisecond, LongestNoHolder: 300 * time.Millisecond}},
		{"two gaps, the longest kept", []Event{add(0, 1), del(200, 1), add(300, 2), del(400, 2), add(900, 1)}, 100, 1100,
			HolderStats{Acquisitions: 2, NoHolder: 600 * time.Millisecond, LongestNoHolder: 500 * time.Millisecond}},
		{"a partition: two holders until the heal", []Event{add(0, 1), add(400, 2), del(900, 2)}, 100, 1100,
			HolderStats{Acquisitions: 1, TwoHolders: 500 * time.Millisecond}},
		{"none at from, none until to", []Event{add(0, 1), del(50, 1)}, 100, 1100,
			HolderStats{NoHolder: time.Second, LongestNoHolder: time.Second}},
		{"none at from, taken later", []Event{add(0, 1), del(50, 1), add(350, 2)}, 100, 1100,
			HolderStats{Acquisitions: 1, NoHolder: 250 * time.Millisecond, LongestNoHolder: 250 * time.Millisecond}},
		{"repeated kernel events count once", []Event{add(0, 1), del(200, 1), del(210, 1), add(300, 1), add(310, 1)}, 100, 1100,
			HolderStats{Acquisitions: 1, NoHolder: 100 * time.Millisecond, LongestNoHolder: 100 * time.Millisecond}},
		{"events after to are ignored", []Event{add(0, 1), del(1200, 1)}, 100, 1100, HolderStats{}},
		{"other kinds and unknown nodes are ignored", []Event{add(0, 1), {At: at(200), Kind: NeighChanged}, del(300, 7)}, 100, 1100, HolderStats{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := holderStats(tt.events, 3, at(tt.from), at(tt.to))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("holderStats (-want +got):\n%s", d)
			}
		})
	}
}

func TestNeighMoves(t *testing.T) {
	t0 := time.Unix(1000, 0)
	n := func(msec int, mac byte) Event {
		e := Event{At: t0.Add(time.Duration(msec) * time.Millisecond), Kind: NeighChanged}
		if mac != 0 {
			e.MAC = labMAC(mac)
		}
		return e
	}
	events := []Event{
		n(0, 1),   // baseline before the window
		n(200, 0), // entry failed
		n(250, 1), // back on the same MAC: not a move
		n(300, 2), // move 1
		n(400, 1), // move 2
		n(450, 1), // repeat
		n(600, 3), // move 3
		n(1500, 1),
	}
	if got := neighMoves(events, t0.Add(100*time.Millisecond), t0.Add(time.Second)); got != 3 {
		t.Errorf("neighMoves = %d, want 3", got)
	}
	// The first entry ever is not a move.
	if got := neighMoves(events[:2], t0.Add(-time.Second), t0.Add(time.Second)); got != 0 {
		t.Errorf("first entry counted as a move: %d", got)
	}
}

func TestFloodFramesEachHaveTheirDefect(t *testing.T) {
	src, vip := StrangerAddr(), DefaultVIP().Addr()
	mac := labMAC(StrangerHost)
	frames := FloodFrames(src, mac, vip, VRID)
	// The project's own decoder (checked against scapy elsewhere) as the
	// independent codec; what Decode cannot see is checked by field.
	tests := map[string]struct {
		decode error
		check  func(ip []byte, a vrrp.Advertisement) bool
	}{
		"ttl-1":          {nil, func(ip []byte, _ vrrp.Advertisement) bool { return ip[8] == 1 && vrrp.CheckTTL(1) != nil }},
		"ttl-254":        {nil, func(ip []byte, _ vrrp.Advertisement) bool { return ip[8] == 254 && vrrp.CheckTTL(254) != nil }},
		"bad-checksum":   {vrrp.DropChecksum, nil},
		"version-2":      {nil, func(_ []byte, a vrrp.Advertisement) bool { return a.Version == vrrp.Version2 }},
		"version-15":     {vrrp.DropVersion, nil},
		"type-2":         {vrrp.DropType, nil},
		"count-too-high": {vrrp.DropLength, nil},
		// RFC 5798 §5.2.5 makes 1 the minimum count: a length error.
		"count-zero":         {vrrp.DropLength, nil},
		"interval-0":         {vrrp.DropInterval, nil},
		"truncated":          {vrrp.DropTooShort, nil},
		"other-addresses":    {nil, func(_ []byte, a vrrp.Advertisement) bool { return !slices.Contains(a.Addresses, vip) }},
		"foreign-vrid":       {nil, func(_ []byte, a vrrp.Advertisement) bool { return int(a.VRID) != VRID }},
		"ip-length-too-long": {nil, func(ip []byte, _ vrrp.Advertisement) bool { return int(binary.BigEndian.Uint16(ip[2:])) > len(ip) }},
	}
	seen := map[string]bool{}
	for _, f := range frames {
		seen[f.Name] = true
		tt, ok := tests[f.Name]
		if !ok {
			t.Errorf("frame %q has no test", f.Name)
			continue
		}
		if got := net.HardwareAddr(f.Frame[0:6]).String(); got != "01:00:5e:00:00:12" || binary.BigEndian.Uint16(f.Frame[12:]) != etherTypeIPv4 {
			t.Errorf("%s: Ethernet header %x", f.Name, f.Frame[:14])
		}
		ip := f.Frame[14:]
		if inetChecksum(ip[:ipv4HeaderLen]) != 0 || ip[9] != vrrpProto || netip.AddrFrom4([4]byte(ip[12:16])) != src {
			t.Errorf("%s: IPv4 header %x", f.Name, ip[:ipv4HeaderLen])
		}
		var a vrrp.Advertisement
		err := a.Decode(ip[ipv4HeaderLen:], src, vrrp.GroupIPv4)
		if !errors.Is(err, tt.decode) || (err == nil) != (tt.decode == nil) {
			t.Errorf("%s: Decode = %v, want %v", f.Name, err, tt.decode)
			continue
		}
		if tt.check != nil && !tt.check(ip, a) {
			t.Errorf("%s: the defect is not there (advert %+v, ttl %d)", f.Name, a, ip[8])
		}
		// Everything that claims our VRID claims a priority above the lab's.
		if err == nil && int(a.VRID) == VRID && a.Priority != floodPriority {
			t.Errorf("%s: priority %d", f.Name, a.Priority)
		}
	}
	for name := range tests {
		if !seen[name] {
			t.Errorf("no frame %q", name)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		f := RandomFloodFrame(src, mac, r)
		if n := len(f.Frame) - 14 - ipv4HeaderLen; n < 1 || n > 64 || inetChecksum(f.Frame[14:14+ipv4HeaderLen]) != 0 {
			t.Fatalf("random frame: %d payload bytes, header %x", n, f.Frame[14:34])
		}
	}
}

// A correct frame built the same way decodes: the defects above are the
// only thing wrong with them.
func TestVRRPFrameValidBase(t *testing.T) {
	src, vip := StrangerAddr(), DefaultVIP().Addr()
	f := vrrpFrame(src, labMAC(9), advertSpec{verType: 0x31, vrid: VRID, prio: 100, count: 1, intervalCS: 100, addrs: []netip.Addr{vip}, ttl: 255})
	var a vrrp.Advertisement
	if err := a.Decode(f[14+ipv4HeaderLen:], src, vrrp.GroupIPv4); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if a.VRID != VRID || a.Priority != 100 || !slices.Equal(a.Addresses, []netip.Addr{vip}) {
		t.Errorf("decoded %+v", a)
	}
}

func TestGratuitousARP(t *testing.T) {
	mac, ip := labMAC(StrangerHost), DefaultVIP().Addr()
	for k, f := range GratuitousARP(mac, ip) {
		a := f[14:]
		op := binary.BigEndian.Uint16(a[6:])
		if net.HardwareAddr(f[0:6]).String() != "ff:ff:ff:ff:ff:ff" || binary.BigEndian.Uint16(f[12:]) != etherTypeARP ||
			op != uint16(k+1) || net.HardwareAddr(a[8:14]).String() != mac.String() ||
			netip.AddrFrom4([4]byte(a[14:18])) != ip || netip.AddrFrom4([4]byte(a[24:28])) != ip {
			t.Errorf("frame %d: %x", k, f)
		}
	}
}

func TestSelectScenarios(t *testing.T) {
	all := Scenarios(1.0 / 6)
	got, err := SelectScenarios(all, []string{"partition", "loss*", "partition"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	want := []string{"partition", "loss10-100ms", "loss20-100ms", "loss10-10ms", "loss20-10ms"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	if _, err := SelectScenarios(all, []string{"partition", "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown name: %v", err)
	}
	if got, _ := SelectScenarios(all, nil); len(got) != len(all) {
		t.Errorf("no names: %d scenarios, want all %d", len(got), len(all))
	}
	unique := map[string]bool{}
	for _, s := range all {
		if unique[s.Name] || s.inject == nil || s.Summary == "" {
			t.Errorf("scenario %q: duplicate, without a fault or a summary", s.Name)
		}
		unique[s.Name] = true
		if err := DefaultGroupConfig(3, s.Interval).Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
}

func TestScenariosScale(t *testing.T) {
	summary := func(scale float64, name string) string {
		s, err := SelectScenarios(Scenarios(scale), []string{name})
		if err != nil {
			t.Fatal(err)
		}
		return s[0].Summary
	}
	if got := summary(1, "loss10-100ms"); !strings.HasSuffix(got, "for 1m0s") {
		t.Errorf("full loss scenario: %q", got)
	}
	if got := summary(1.0/6, "loss10-100ms"); !strings.HasSuffix(got, "for 10s") {
		t.Errorf("quick loss scenario: %q", got)
	}
	if got := summary(0.001, "flood"); !strings.Contains(got, "for 5s") {
		t.Errorf("floor of the flood: %q", got)
	}
}

func TestSumCounters(t *testing.T) {
	listing := `table bridge vipdlab_1_ab {
	chain vrrp_faults {
		type filter hook forward priority filter; policy accept;
		oifname "n1" ip protocol 112 numgen random mod 100 < 10 counter packets 12 bytes 480 drop
		oifname "n2" ip protocol 112 numgen random mod 100 < 10 counter packets 30 bytes 1200 drop
	}
}`
	if got := sumCounters(listing); got != 42 {
		t.Errorf("sumCounters = %d, want 42", got)
	}
}

func TestChaosTable(t *testing.T) {
	rep := &ChaosReport{
		Scenarios: []ScenarioInfo{{Name: "partition", IntervalMS: 1000}},
		Results: []ChaosResult{
			{Scenario: "partition", Daemon: "vipd", IntervalMS: 1000, Daemons: 3, DaemonsAlive: 3, OneOwner: true,
				Total: ChaosWindow{AddressMoves: 1, NeighMoves: 62, TwoHoldersMS: 2723}},
			{Scenario: "partition", Daemon: "keepalived", IntervalMS: 1000, Error: "lab: build: boom"},
		},
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"partition  1s        vipd        1          62", "2723.0", "yes        NO", "3/3", "keepalived  error: lab: build: boom"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
