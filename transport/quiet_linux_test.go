package transport

import (
	"errors"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// An advert that matches a pattern waits in the quiet queue with its
// arrival time and never reaches ReadFrom; any other advert does, at
// once; clearing the patterns sends them all to ReadFrom again.
func TestQuietAdvertsWaitAside(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	q, ok := b.(Quieter)
	if !ok {
		t.Fatalf("the IPv4 Conn %T is not a Quieter", b)
	}
	quiet, loud := encodeAdvert(t, l.NodeAddr(1), vrrp.GroupIPv4, 51, 100), encodeAdvert(t, l.NodeAddr(1), vrrp.GroupIPv4, 51, 120)
	if n, err := q.SetQuiet([]QuietPattern{{Src: l.NodeAddr(1), Payload: quiet}}); err != nil || n != 1 {
		t.Fatalf("SetQuiet: %d, %v", n, err)
	}
	waitForArrivalStamps(t, a, q, quiet, vrrp.GroupIPv4)
	sentAt := time.Now()
	for range 3 {
		if err := a.WriteTo(quiet, vrrp.GroupIPv4); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.WriteTo(loud, vrrp.GroupIPv4); err != nil {
		t.Fatal(err)
	}
	got, info, err := readOne(t, b)
	if err != nil {
		t.Fatalf("the other advert never came: %v", err)
	}
	if string(got) != string(loud) {
		t.Fatalf("ReadFrom returned %x first, want the advert that matches no pattern %x", got, loud)
	}
	if info.Src != l.NodeAddr(1) || info.TTL != 255 {
		t.Errorf("info %+v", info)
	}
	time.Sleep(20 * time.Millisecond)
	var waited []time.Time
	if err := q.ReadQuiet(func(p []byte, info PacketInfo, at time.Time) {
		if string(p) != string(quiet) || info.Src != l.NodeAddr(1) {
			t.Errorf("quiet queue had %x from %v", p, info.Src)
		}
		waited = append(waited, at)
	}); err != nil {
		t.Fatal(err)
	}
	if len(waited) != 3 {
		t.Fatalf("%d adverts in the quiet queue, want 3", len(waited))
	}
	for _, at := range waited {
		if at.Before(sentAt.Add(-time.Millisecond)) || time.Since(at) < 15*time.Millisecond {
			t.Errorf("arrival %v after the send, read %v after it: not the kernel's arrival time", at.Sub(sentAt), time.Since(at))
		}
	}
	if err := q.ReadQuiet(func([]byte, PacketInfo, time.Time) { t.Error("the quiet queue was read empty, yet gave an advert") }); err != nil {
		t.Fatal(err)
	}
	// Cleared: the pattern's adverts come to ReadFrom again.
	checkCleared(t, a, b, q, quiet, vrrp.GroupIPv4)
}

// checkCleared clears q's patterns (q is receiver's) and checks that the
// pattern's advert, sent again, comes to ReadFrom at once and nowhere else.
func checkCleared(t *testing.T, sender, receiver Conn, q Quieter, advert []byte, dst netip.Addr) {
	t.Helper()
	if _, err := q.SetQuiet(nil); err != nil {
		t.Fatal(err)
	}
	if err := sender.WriteTo(advert, dst); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readOne(t, receiver); err != nil || string(got) != string(advert) {
		t.Fatalf("after clearing: %x, %v", got, err)
	}
	n := 0
	q.ReadQuiet(func([]byte, PacketInfo, time.Time) { n++ })
	if n != 0 {
		t.Errorf("%d adverts still set aside after clearing", n)
	}
	receiver.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, _, err := receiver.ReadFrom(make([]byte, 1500)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an extra datagram: %v", err)
	}
}

// An interface's every VRID, one VIP each (the N-groups case): the kernel
// takes all 255 patterns, and each group's advert is set aside.
func TestQuietTakesEveryGroup(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	q := b.(Quieter)
	var ps []QuietPattern
	for vrid := 1; vrid <= 255; vrid++ {
		ps = append(ps, QuietPattern{Src: l.NodeAddr(1), Payload: encodeAdvert(t, l.NodeAddr(1), vrrp.GroupIPv4, uint8(vrid), 100)})
	}
	n, err := q.SetQuiet(ps)
	if err != nil || n < 1 {
		t.Fatalf("SetQuiet of %d patterns: %d, %v", len(ps), n, err)
	}
	// The filter of 255 groups takes about 30 KB of the socket's option
	// memory: kernels before 6.9 allowed 20480 bytes by default.
	if n != len(ps) {
		b, _ := os.ReadFile("/proc/sys/net/core/optmem_max")
		optmem, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if optmem >= 64<<10 {
			t.Fatalf("SetQuiet of %d patterns: %d with net.core.optmem_max %d; want all", len(ps), n, optmem)
		}
		t.Logf("%d of %d patterns set under net.core.optmem_max %d", n, len(ps), optmem)
		ps = ps[:n]
	}
	for _, p := range ps {
		if err := a.WriteTo(p.Payload, vrrp.GroupIPv4); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	aside := map[string]bool{}
	q.ReadQuiet(func(p []byte, _ PacketInfo, _ time.Time) { aside[string(p)] = true })
	if len(aside) != len(ps) {
		t.Errorf("%d of %d groups' adverts set aside", len(aside), len(ps))
	}
}

// More patterns than the kernel takes (a program's instructions, its
// option memory for filters, the buffer it granted): SetQuiet sets the
// first ones, says how many, and the rest are read at once.
func TestQuietTakesWhatFits(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	q := b.(Quieter)
	var vips []netip.Addr
	for i := range 12 {
		vips = append(vips, netip.AddrFrom4([4]byte{192, 0, 2, byte(10 + i)}))
	}
	var ps []QuietPattern
	for vrid := 1; vrid <= 255; vrid++ {
		adv := vrrp.Advertisement{VRID: uint8(vrid), Priority: 100, Interval: time.Second, Addresses: vips}
		p, err := adv.Append(nil, l.NodeAddr(1), vrrp.GroupIPv4)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, QuietPattern{Src: l.NodeAddr(1), Payload: p})
	}
	n, err := q.SetQuiet(ps)
	if err != nil || n < 1 || n >= len(ps) {
		t.Fatalf("SetQuiet of %d patterns: %d, %v; want some, not all", len(ps), n, err)
	}
	t.Logf("%d of %d patterns set", n, len(ps))
	if err := a.WriteTo(ps[0].Payload, vrrp.GroupIPv4); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteTo(ps[n].Payload, vrrp.GroupIPv4); err != nil {
		t.Fatal(err)
	}
	got, _, err := readOne(t, b)
	if err != nil || string(got) != string(ps[n].Payload) {
		t.Fatalf("the advert of a pattern not set: %x, %v", got, err)
	}
	time.Sleep(20 * time.Millisecond)
	aside := 0
	q.ReadQuiet(func(p []byte, _ PacketInfo, _ time.Time) {
		if string(p) != string(ps[0].Payload) {
			t.Errorf("set aside: %x", p)
		}
		aside++
	})
	if aside != 1 {
		t.Errorf("%d adverts set aside, want the first pattern's", aside)
	}
}

func TestArrivalNeverAgesPastTheLastRead(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name                string
		age, span, wallSpan time.Duration
		want                time.Duration
	}{
		{"arrived 300ms ago", 300 * ms, time.Second, time.Second, 300 * ms},
		{"first read", 300 * ms, 0, 0, 300 * ms},
		{"before the last read", 5 * time.Second, time.Second, time.Second, time.Second},
		{"in the future", -time.Second, time.Second, time.Second, 0},
		{"wall clock stepped forward", 300 * ms, time.Second, 11 * time.Second, 0},
		{"wall clock stepped back", 300 * ms, time.Second, -9 * time.Second, 0},
	} {
		if got := arrivalAge(c.age, c.span, c.wallSpan); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// A change that only removes patterns, one that only adds, and one that
// does both each leave aside exactly the adverts of the patterns asked for
// (a change of one kind skips attaching the quiet program it already has).
func TestQuietChangesOfEachKind(t *testing.T) {
	l := newLab(t, 2)
	a, b := listenOn(t, l, 1, false), listenOn(t, l, 2, false)
	q := b.(Quieter)
	src := l.NodeAddr(1)
	adverts := map[uint8][]byte{}
	pattern := func(vrid uint8) QuietPattern {
		if adverts[vrid] == nil {
			adverts[vrid] = encodeAdvert(t, src, vrrp.GroupIPv4, vrid, 100)
		}
		return QuietPattern{Src: src, Payload: adverts[vrid]}
	}
	for _, step := range []struct {
		name  string
		aside []uint8
		twice bool // the first pattern given again at the end
	}{
		{"first set", []uint8{1, 2, 3}, false},
		{"one removed", []uint8{1, 3}, false},
		{"one added", []uint8{1, 3, 4}, false},
		{"one removed, one added", []uint8{3, 4, 5}, false},
		{"the same again", []uint8{3, 4, 5}, false},
		{"one removed, one given twice", []uint8{3, 4}, true},
		{"all removed", nil, false},
	} {
		var ps []QuietPattern
		for _, v := range step.aside {
			ps = append(ps, pattern(v))
		}
		if step.twice {
			ps = append(ps, ps[0])
		}
		if n, err := q.SetQuiet(ps); err != nil || n != len(ps) {
			t.Fatalf("%s: SetQuiet: %d, %v", step.name, n, err)
		}
		for vrid := uint8(1); vrid <= 5; vrid++ {
			if err := a.WriteTo(pattern(vrid).Payload, vrrp.GroupIPv4); err != nil {
				t.Fatal(err)
			}
		}
		// What is not set aside comes to ReadFrom, once each.
		loud := map[uint8]int{}
		for range 5 - len(step.aside) {
			got, _, err := readOne(t, b)
			if err != nil {
				t.Fatalf("%s: %v (read at once so far: %v)", step.name, err, loud)
			}
			loud[got[1]]++
		}
		b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if got, _, err := b.ReadFrom(make([]byte, 1500)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: an advert more read at once: VRID %d, %v", step.name, got, err)
		}
		aside := map[uint8]int{}
		if err := q.ReadQuiet(func(p []byte, _ PacketInfo, _ time.Time) { aside[p[1]]++ }); err != nil {
			t.Fatal(err)
		}
		for vrid := uint8(1); vrid <= 5; vrid++ {
			want := slices.Contains(step.aside, vrid)
			if (aside[vrid] == 1) != want || (loud[vrid] == 1) == want || aside[vrid]+loud[vrid] != 1 {
				t.Errorf("%s: VRID %d set aside %d times and read at once %d times; want it aside: %v", step.name, vrid, aside[vrid], loud[vrid], want)
			}
		}
	}
}
