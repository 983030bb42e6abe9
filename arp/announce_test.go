package arp

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
)

func TestProbeFrame(t *testing.T) {
	conn := newFakeConn()
	a := New(ourIfi, conn)
	from := netip.MustParseAddr("198.51.100.1")
	if err := a.Probe(testVIP, from); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	// Asked from a new address, the probe says so.
	if err := a.Probe(testVIP, netip.MustParseAddr("198.51.100.3")); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	const pad = "000000000000000000000000000000000000"
	want := []fakeWrite{
		{
			b: mustHex(t, `ffffffffffff 02005e100001 0806
				0001 0800 06 04 0001
				02005e100001 c6336401
				000000000000 c633640a`+pad),
			addr: &packet.Addr{HardwareAddr: ethernet.Broadcast},
		},
		{
			b: mustHex(t, `ffffffffffff 02005e100001 0806
				0001 0800 06 04 0001
				02005e100001 c6336403
				000000000000 c633640a`+pad),
			addr: &packet.Addr{HardwareAddr: ethernet.Broadcast},
		},
	}
	if diff := cmp.Diff(want, conn.writes, cmp.AllowUnexported(fakeWrite{})); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}

	for _, bad := range [][2]netip.Addr{{{}, from}, {testVIP, {}}, {netip.IPv4Unspecified(), from}, {netip.MustParseAddr("2001:db8::10"), from}} {
		if err := a.Probe(bad[0], bad[1]); !errors.Is(err, ErrNotIPv4) {
			t.Errorf("Probe(%v, %v) = %v, want ErrNotIPv4", bad[0], bad[1], err)
		}
	}
	if err := New(&net.Interface{Name: "tun0"}, conn).Probe(testVIP, from); !errors.Is(err, ErrNotEthernet) {
		t.Errorf("Probe without a MAC = %v, want ErrNotEthernet", err)
	}
}

func TestAnnouncerPrepare(t *testing.T) {
	vip2, vip3 := netip.MustParseAddr("198.51.100.11"), netip.MustParseAddr("198.51.100.12")
	conn := newFakeConn()
	a := New(ourIfi, conn)
	if err := a.Prepare([]netip.Addr{testVIP, vip2, netip.MustParseAddr("::ffff:198.51.100.11")}); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if got := cachedVIPs(a); !equalSets(got, testVIP, vip2) {
		t.Errorf("prepared %v, want %v and %v", got, testVIP, vip2)
	}
	// Prepared frames are the frames Announce builds.
	if err := a.Announce(testVIP); err != nil {
		t.Fatal(err)
	}
	fresh := newFakeConn()
	if err := New(ourIfi, fresh).Announce(testVIP); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fresh.writes, conn.writes, cmp.AllowUnexported(fakeWrite{})); diff != "" {
		t.Errorf("prepared frames (-built now +prepared):\n%s", diff)
	}

	// A new set replaces the old; bad input changes nothing.
	if err := a.Prepare([]netip.Addr{vip3}); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if err := a.Prepare([]netip.Addr{testVIP, netip.MustParseAddr("2001:db8::10")}); !errors.Is(err, ErrNotIPv4) {
		t.Errorf("Prepare with IPv6 = %v, want ErrNotIPv4", err)
	}
	if got := cachedVIPs(a); !equalSets(got, vip3) {
		t.Errorf("prepared %v, want %v", got, vip3)
	}
	if err := New(&net.Interface{Name: "tun0"}, conn).Prepare([]netip.Addr{testVIP}); !errors.Is(err, ErrNotEthernet) {
		t.Errorf("Prepare without a MAC = %v, want ErrNotEthernet", err)
	}
}

// Announce keeps the frames of VIPs it was not prepared for, up to a bound,
// and still announces the ones beyond it.
func TestAnnouncerCacheBound(t *testing.T) {
	conn := newFakeConn()
	a := New(ourIfi, conn)
	vips := addrs(netip.MustParseAddr("198.18.0.1"), maxCachedVIPs+3)
	for _, v := range vips {
		if err := a.Announce(v); err != nil {
			t.Fatalf("Announce(%v): %v", v, err)
		}
	}
	if n := len(cachedVIPs(a)); n != maxCachedVIPs {
		t.Errorf("%d VIPs kept, want %d", n, maxCachedVIPs)
	}
	last := vips[len(vips)-1].As4()
	if w := conn.writes[len(conn.writes)-1].b; !bytes.Equal(w[28:32], last[:]) || !bytes.Equal(w[38:42], last[:]) {
		t.Errorf("last frame % x does not announce %v", w, vips[len(vips)-1])
	}
}

// One Announcer serves many instances at once (run with -race).
func TestAnnouncerConcurrent(t *testing.T) {
	conn := newFakeConn()
	a := New(ourIfi, conn)
	vips := addrs(netip.MustParseAddr("198.51.100.10"), 8)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				v := vips[(i+j)%len(vips)]
				if err := a.Announce(v); err != nil {
					t.Errorf("Announce: %v", err)
				}
				if err := a.Probe(v, netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + j%2)})); err != nil {
					t.Errorf("Probe: %v", err)
				}
			}
		})
	}
	wg.Go(func() {
		for j := range 50 {
			if err := a.Prepare(vips[j%4 : j%4+4]); err != nil {
				t.Errorf("Prepare: %v", err)
			}
		}
	})
	wg.Wait()
	if n := len(conn.writes); n != 4*50*3 {
		t.Errorf("%d frames written, want %d", n, 4*50*3)
	}
}

func cachedVIPs(a *Announcer) []netip.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []netip.Addr
	for v := range a.frames {
		out = append(out, v)
	}
	return out
}

func equalSets(got []netip.Addr, want ...netip.Addr) bool {
	if len(got) != len(want) {
		return false
	}
	seen := make(map[netip.Addr]bool)
	for _, v := range got {
		seen[v] = true
	}
	for _, v := range want {
		if !seen[v] {
			return false
		}
	}
	return true
}

// discardConn takes writes and keeps nothing.
type discardConn struct{ net.PacketConn }

func (discardConn) WriteTo(b []byte, _ net.Addr) (int, error) { return len(b), nil }

func BenchmarkAnnounce(b *testing.B) {
	a := New(ourIfi, discardConn{})
	if err := a.Prepare([]netip.Addr{testVIP}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Announce(testVIP); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProbe(b *testing.B) {
	a := New(ourIfi, discardConn{})
	from := netip.MustParseAddr("198.51.100.1")
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Probe(testVIP, from); err != nil {
			b.Fatal(err)
		}
	}
}
