package transport

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vipd/vipd/vrrp"
	"golang.org/x/net/ipv6"
)

// advert6 is an IPv6 advert of VRID 51 at prio for vips, from src to dst.
func advert6(t *testing.T, src, dst netip.Addr, prio uint8, vips ...netip.Addr) []byte {
	t.Helper()
	adv := vrrp.Advertisement{VRID: 51, Priority: prio, Interval: time.Second, Addresses: vips}
	b, err := adv.Append(nil, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitForArrivalStamps returns once the kernel stamps datagrams as they
// arrive. It turns that on for the whole host when the first socket asks
// for stamps, and the last one's close turns it off, but it does so from a
// work queue: until it has, a datagram is stamped when it is read, which
// the daemon takes for "just arrived" (at worst noticing a dead Master a
// little later once, at its start). Tests open and close sockets all the
// time; a daemon keeps its quiet sockets open.
func waitForArrivalStamps(t *testing.T, c Conn, q Quieter, advert []byte, dst netip.Addr) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		if err := c.WriteTo(advert, dst); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		stamped := false
		if err := q.ReadQuiet(func(_ []byte, _ PacketInfo, at time.Time) { stamped = time.Since(at) > 4*time.Millisecond }); err != nil {
			t.Fatal(err)
		}
		if stamped {
			return
		}
	}
	t.Fatal("the kernel never stamped a datagram as it arrived")
}

// As over IPv4 (TestQuietAdvertsWaitAside): an IPv6 advert that matches a
// pattern waits aside with its arrival time, its source, destination and
// hop limit, and decodes; any other advert comes at once; what the
// pattern's bytes cannot vouch for (another hop limit, another
// destination, so a checksum that no longer holds) never waits aside as
// one of its adverts; clearing the patterns sends them all to ReadFrom.
func TestIPv6QuietAdvertsWaitAside(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)
	q, ok := cb.(Quieter)
	if !ok {
		t.Fatalf("the IPv6 Conn %T is not a Quieter", cb)
	}
	quiet, loud := advert6(t, a.ll, vrrp.GroupIPv6, 100, testVIP6), advert6(t, a.ll, vrrp.GroupIPv6, 120, testVIP6)
	if n, err := q.SetQuiet([]QuietPattern{{Src: a.ll, Payload: quiet}}); err != nil || n != 1 {
		t.Fatalf("SetQuiet: %d, %v", n, err)
	}
	waitForArrivalStamps(t, ca, q, quiet, vrrp.GroupIPv6)
	sentAt := time.Now()
	for range 3 {
		if err := ca.WriteTo(quiet, vrrp.GroupIPv6); err != nil {
			t.Fatal(err)
		}
	}
	if err := ca.WriteTo(loud, vrrp.GroupIPv6); err != nil {
		t.Fatal(err)
	}
	got, info, err := readOne(t, cb)
	if err != nil {
		t.Fatalf("the other advert never came: %v", err)
	}
	if string(got) != string(loud) {
		t.Fatalf("ReadFrom returned %x first, want the advert that matches no pattern %x", got, loud)
	}
	want := PacketInfo{Src: a.ll, Dst: vrrp.GroupIPv6, TTL: 255, IfIndex: b.ifi.Index}
	if info != want {
		t.Errorf("info %+v, want %+v", info, want)
	}
	time.Sleep(20 * time.Millisecond)
	var waited []time.Time
	if err := q.ReadQuiet(func(p []byte, info PacketInfo, at time.Time) {
		var adv vrrp.Advertisement
		if string(p) != string(quiet) || info != want {
			t.Errorf("quiet queue had %x, %+v", p, info)
		} else if err := adv.Decode(p, info.Src, info.Dst); err != nil {
			t.Errorf("an advert set aside does not decode: %v", err)
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

	// The pattern's bytes with hop limit 64: the filter checks it, so
	// ReadFrom has it (and the daemon drops it). To B's own address: the
	// checksum was the group's, and the kernel checks it before either
	// socket's filter, so it is dropped, and counted once.
	pc := a.plain(t, 64)
	cm := &ipv6.ControlMessage{Src: a.ll.AsSlice(), IfIndex: a.ifi.Index}
	if _, err := pc.WriteTo(quiet, cm, &net.IPAddr{IP: groupIPv6}); err != nil {
		t.Fatal(err)
	}
	if got, info, err := readOne(t, cb); err != nil || string(got) != string(quiet) || info.TTL != 64 {
		t.Errorf("hop limit 64: ReadFrom %x, %+v, %v; want the advert with hop limit 64", got, info, err)
	}
	drops, err := cb.(DropCounter).KernelDrops()
	if err != nil {
		t.Fatal(err)
	}
	pc255 := a.plain(t, 255)
	if _, err := pc255.WriteTo(quiet, cm, &net.IPAddr{IP: b.ll.AsSlice(), Zone: a.ifi.Name}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := q.ReadQuiet(func(p []byte, info PacketInfo, _ time.Time) {
		t.Errorf("set aside and handed over with a checksum that does not hold: %x, %+v", p, info)
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := cb.(DropCounter).KernelDrops(); err != nil || n != drops+1 {
		t.Errorf("KernelDrops = %d, %v; want %d: the bad checksum counted once", n, err, drops+1)
	}

	// Cleared: the pattern's adverts come to ReadFrom again.
	checkCleared(t, ca, cb, q, quiet, vrrp.GroupIPv6)
}

// The filter holds an IPv6 advert of up to two addresses; an IPv4 source,
// or a longer advert, is refused and changes nothing.
func TestIPv6QuietRefusesWhatItCannotHold(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)
	q := cb.(Quieter)
	two := advert6(t, a.ll, vrrp.GroupIPv6, 100, testVIP6, netip.MustParseAddr("2001:db8::11"))
	if n, err := q.SetQuiet([]QuietPattern{{Src: a.ll, Payload: two}}); err != nil || n != 1 {
		t.Fatalf("two addresses: SetQuiet %d, %v", n, err)
	}
	three := advert6(t, a.ll, vrrp.GroupIPv6, 100, testVIP6, netip.MustParseAddr("2001:db8::11"), netip.MustParseAddr("2001:db8::12"))
	for _, p := range []QuietPattern{
		{Src: a.ll, Payload: three},
		{Src: netip.MustParseAddr("192.0.2.1"), Payload: two},
	} {
		if _, err := q.SetQuiet([]QuietPattern{p}); err == nil {
			t.Errorf("SetQuiet took %v with %d bytes", p.Src, len(p.Payload))
		}
	}
	// The refusals changed nothing: the two-address advert waits aside.
	if err := ca.WriteTo(two, vrrp.GroupIPv6); err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteTo(three, vrrp.GroupIPv6); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readOne(t, cb); err != nil || string(got) != string(three) {
		t.Fatalf("ReadFrom %x, %v; want the three-address advert only", got, err)
	}
	time.Sleep(20 * time.Millisecond)
	n := 0
	if err := q.ReadQuiet(func(p []byte, _ PacketInfo, _ time.Time) {
		if string(p) != string(two) {
			t.Errorf("set aside %x", p)
		}
		n++
	}); err != nil || n != 1 {
		t.Errorf("ReadQuiet: %d adverts, %v; want the two-address one", n, err)
	}
}

// Many IPv6 groups on one interface: each pattern is longer than over
// IPv4 (four words of source), so not all 255 fit one program; SetQuiet
// sets the first ones, says how many, and each of those groups' adverts
// is set aside.
func TestIPv6QuietTakesWhatFits(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)
	q := cb.(Quieter)
	var ps []QuietPattern
	for vrid := 1; vrid <= 255; vrid++ {
		adv := vrrp.Advertisement{VRID: uint8(vrid), Priority: 100, Interval: time.Second, Addresses: []netip.Addr{testVIP6}}
		p, err := adv.Append(nil, a.ll, vrrp.GroupIPv6)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, QuietPattern{Src: a.ll, Payload: p})
	}
	n, err := q.SetQuiet(ps)
	if err != nil || n < 16 || n > len(ps) {
		t.Fatalf("SetQuiet of %d patterns: %d, %v; want at least 16", len(ps), n, err)
	}
	t.Logf("%d of %d IPv6 patterns set", n, len(ps))
	for _, p := range ps {
		if err := ca.WriteTo(p.Payload, vrrp.GroupIPv6); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	aside := map[string]bool{}
	if err := q.ReadQuiet(func(p []byte, _ PacketInfo, _ time.Time) { aside[string(p)] = true }); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if aside[string(p.Payload)] != (i < n) {
			t.Errorf("VRID %d: set aside %v, want %v", i+1, aside[string(p.Payload)], i < n)
		}
	}
	read := 0
	for read < len(ps)-n {
		if _, _, err := readOne(t, cb); err != nil {
			t.Fatalf("%d of the %d adverts without a pattern read at once: %v", read, len(ps)-n, err)
		}
		read++
	}
}
