package daemon

import (
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// Issue 16: one socket per interface, demultiplexed by VRID after one
// decode. An advert for VRID 7 reaches instance 7 only; one for a VRID no
// instance has is counted once, by the interface.
func TestSharedSocketDemultiplexesByVRID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		seven, eight := testInstance(100), testInstance(100)
		seven.Name, seven.VRID = "seven", 7
		eight.Name, eight.VRID = "eight", 8
		eight.VIPs = []netip.Prefix{netip.MustParsePrefix("198.51.100.20/32")}
		n := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, seven, eight)
		time.Sleep(time.Second)
		if got := len(n.host.sockets()); got != 1 {
			t.Fatalf("%d VRRP sockets opened for two instances on one interface, want 1", got)
		}
		peer := netip.MustParseAddr("198.51.100.12")
		adv7, _ := (&vrrp.Advertisement{VRID: 7, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, peer, vrrp.GroupIPv4)
		adv99, _ := (&vrrp.Advertisement{VRID: 99, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, peer, vrrp.GroupIPv4)
		for range 10 {
			lan.inject(adv7, peer, vrrp.GroupIPv4, 255)
			lan.inject(adv99, peer, vrrp.GroupIPv4, 255)
			time.Sleep(100 * time.Millisecond)
		}
		synctest.Wait()
		if st := n.status("seven"); st.Received != 10 || st.Master.Addr != peer {
			t.Errorf("seven: received %d, master %v; want 10 from %v", st.Received, st.Master.Addr, peer)
		}
		st8 := n.status("eight")
		if st8.Received != 0 || len(st8.Drops) != 0 {
			t.Errorf("eight: received %d, drops %v; want nothing", st8.Received, st8.Drops)
		}
		if got := n.d.InterfaceDrops()["eth0"]["vrid"]; got != 10 {
			t.Errorf("interface drops for an unknown VRID: %d, want 10 (%v)", got, n.d.InterfaceDrops())
		}
		if n.status("seven").Drops["vrid"] != 0 {
			t.Error("an instance counted the unknown VRID")
		}
		// A malformed packet whose VRID byte names an instance is that
		// instance's; one too short to name any is the interface's.
		bad := append([]byte(nil), adv7...)
		bad[7] ^= 0xff
		lan.inject(bad, peer, vrrp.GroupIPv4, 255)
		lan.inject(adv7[:1], peer, vrrp.GroupIPv4, 255)
		synctest.Wait()
		if got := n.status("seven").Drops["checksum"]; got != 1 {
			t.Errorf("seven's checksum drops %d, want 1", got)
		}
		if got := n.d.InterfaceDrops()["eth0"]["too_short"]; got != 1 {
			t.Errorf("interface too_short drops %d, want 1", got)
		}
	})
}

// benchConn returns the same advert on every read.
type benchConn struct {
	pkt  []byte
	info transport.PacketInfo
	stop chan struct{}
}

func (c *benchConn) ReadFrom(b []byte) (int, transport.PacketInfo, error) {
	select {
	case <-c.stop:
		return 0, transport.PacketInfo{}, os.ErrClosed
	default:
	}
	return copy(b, c.pkt), c.info, nil
}
func (c *benchConn) WriteTo([]byte, netip.Addr) error { return nil }
func (c *benchConn) SetReadDeadline(time.Time) error  { return nil }
func (c *benchConn) Close() error                     { return nil }

// BenchmarkSharedReceive is a Backup's receive path with the shared socket:
// read, decode once, demultiplex by VRID, hand over, and the election.
func BenchmarkSharedReceive(b *testing.B) {
	peer, self := netip.MustParseAddr("198.51.100.12"), netip.MustParseAddr("198.51.100.11")
	pkt, _ := (&vrrp.Advertisement{VRID: 51, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, peer, vrrp.GroupIPv4)
	conn := &benchConn{pkt: pkt, info: transport.PacketInfo{Src: peer, Dst: vrrp.GroupIPv4, TTL: 255, IfIndex: 2}, stop: make(chan struct{})}
	pool := newSocketPool(Env{Now: time.Now}, slog.New(slog.DiscardHandler))
	s := &vrrpSocket{pool: pool, conn: conn, closing: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{}),
		drops: newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)}
	host := newFakeHost(&fakeLAN{}, self.String())
	in := loneInstance(pool, host, slog.New(slog.DiscardHandler))
	s.subs[51].Store(in)
	cfg := vrrp.Config{Interface: "eth0", VRID: 51, Priority: 100, AdvertInterval: time.Second, Primary: self, Addresses: []netip.Addr{testVIP.Addr()}}
	m, err := vrrp.NewMachine(cfg, clock{time.Now})
	if err != nil {
		b.Fatal(err)
	}
	out := m.Start(true, make([]vrrp.Action, 0, 16))
	go func() {
		buf := make([]byte, 1500)
		for {
			n, info, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			s.deliver(buf[:n], info)
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		ev, signal := in.mb.nextOrWait(kindSet(evPacket))
		for ev.kind == evNone {
			<-signal
			ev, signal = in.mb.nextOrWait(kindSet(evPacket))
		}
		p := ev.packet
		if out, err = m.ReceiveAdvert(p.src, p.ttl, &p.adv, out[:0]); err != nil {
			b.Fatal(err)
		}
		pool.free(p)
	}
	close(conn.stop)
}

// Issue 13: adverts with the RFC 9568 checksum (no IPv4 pseudo-header) are
// accepted and shown per peer; the form sent is the instance's setting.
func TestRFC9568ChecksumBothWays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		ic := testInstance(150)
		ic.Checksum = vrrp.ChecksumNoPseudoHeader
		n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, ic)
		// A listener on the LAN decodes what n1 sends.
		probe := lan.listen(netip.MustParseAddr("198.51.100.99"), new(atomic.Bool), false)
		time.Sleep(10 * time.Second)
		peer := netip.MustParseAddr("198.51.100.12")
		adv, _ := (&vrrp.Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()},
			Checksum: vrrp.ChecksumNoPseudoHeader}).Append(nil, peer, vrrp.GroupIPv4)
		lan.inject(adv, peer, vrrp.GroupIPv4, 255)
		synctest.Wait()
		st := n1.status("k8s-api")
		if st.Received != 1 || st.PeerChecksums[peer] != "rfc9568" {
			t.Errorf("received %d, peer checksums %v; want the RFC 9568 advert accepted and shown", st.Received, st.PeerChecksums)
		}
		var got vrrp.Advertisement
		b := make([]byte, 1500)
		for {
			n, info, err := probe.ReadFrom(b)
			if err != nil {
				t.Fatal(err)
			}
			if info.Src != netip.MustParseAddr("198.51.100.11") {
				continue
			}
			if err := got.Decode(b[:n], info.Src, info.Dst); err != nil {
				t.Fatal(err)
			}
			break
		}
		if got.Checksum != vrrp.ChecksumNoPseudoHeader {
			t.Errorf("n1 sends the %v form, want rfc9568", got.Checksum)
		}
		probe.Close()
	})
}

// An advert read while the last instance leaves the socket (the successor's,
// at a graceful stop) is not reported as one no instance has; one read
// while the socket stays open is.
func TestSocketClosingDropsQuietly(t *testing.T) {
	peer := netip.MustParseAddr("198.51.100.12")
	pkt, _ := (&vrrp.Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, peer, vrrp.GroupIPv4)
	info := transport.PacketInfo{Src: peer, Dst: vrrp.GroupIPv4, TTL: 255, IfIndex: 2}
	for _, closing := range []bool{false, true} {
		pool := newSocketPool(Env{Now: time.Now}, slog.New(slog.DiscardHandler))
		s := &vrrpSocket{pool: pool, closing: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{}),
			drops: newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)}
		if closing {
			close(s.closing)
		}
		s.deliver(pkt, info)
		want := uint64(1)
		if closing {
			want = 0
		}
		if got := s.unknown[vrrp.DropVRID].Load(); got != want {
			t.Errorf("closing %v: %d unknown-VRID drops, want %d", closing, got, want)
		}
	}
}

// Each peer's checksum form is kept once, changed in place when the peer
// changes it, and at most maxChecksumPeers peers are kept (a new one past
// that starts the list again).
func TestPeerFormsKeptPerPeer(t *testing.T) {
	in := &instance{}
	a, b := netip.MustParseAddr("198.51.100.12"), netip.MustParseAddr("198.51.100.13")
	v3 := &vrrp.Advertisement{Version: vrrp.Version}
	v2 := &vrrp.Advertisement{Version: vrrp.Version2}
	in.notePeerForm(a, v3)
	in.notePeerForm(b, v3)
	in.notePeerForm(a, v3)
	in.notePeerForm(a, v2)
	want := []peerForm{{a, peerFormV2}, {b, v3.Checksum.String()}}
	if !slices.Equal(in.pub.checksums, want) {
		t.Fatalf("kept %v, want %v", in.pub.checksums, want)
	}
	for i := range maxChecksumPeers {
		in.notePeerForm(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), v3)
	}
	if n := len(in.pub.checksums); n > maxChecksumPeers || n == 0 {
		t.Errorf("%d peers kept, want 1..%d", n, maxChecksumPeers)
	}
	last := netip.AddrFrom4([4]byte{203, 0, 113, maxChecksumPeers - 1})
	if !slices.ContainsFunc(in.pub.checksums, func(pf peerForm) bool { return pf.addr == last }) {
		t.Errorf("the latest peer %v not kept: %v", last, in.pub.checksums)
	}
}

// A flood of adverts for a VRID no instance has is counted and, past the
// drop log's limits, costs no allocation: the interface's logger is made
// only for a line that is written.
func TestFloodOfBadAdvertsAllocatesNothing(t *testing.T) {
	peer := netip.MustParseAddr("198.51.100.12")
	pkt, _ := (&vrrp.Advertisement{VRID: 99, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, peer, vrrp.GroupIPv4)
	info := transport.PacketInfo{Src: peer, Dst: vrrp.GroupIPv4, TTL: 255, IfIndex: 2}
	pool := newSocketPool(Env{Now: time.Now}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s := &vrrpSocket{pool: pool, ifname: "eth0", closing: make(chan struct{}),
		drops: newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)}
	for range 3 {
		s.deliver(pkt, info) // the first is logged; a source once a while
	}
	if allocs := testing.AllocsPerRun(200, func() { s.deliver(pkt, info) }); allocs != 0 {
		t.Errorf("%.1f allocations an unknown VRID's advert, want 0", allocs)
	}
	if got := s.unknown[vrrp.DropVRID.Index()].Load(); got != 3+201 {
		t.Errorf("%d drops counted", got)
	}
	// A malformed advert that names an instance's VRID is that instance's
	// drop: as cheap.
	host := newFakeHost(&fakeLAN{}, "198.51.100.11")
	in := loneInstance(pool, host, slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.subs[51].Store(in)
	bad, _ := (&vrrp.Advertisement{VRID: 51, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, peer, vrrp.GroupIPv4)
	bad[7] ^= 0xff // the checksum
	for range 3 {
		s.deliver(bad, info)
	}
	if allocs := testing.AllocsPerRun(200, func() { s.deliver(bad, info) }); allocs != 0 {
		t.Errorf("%.1f allocations a malformed advert for an instance, want 0", allocs)
	}
	if got := in.status().Drops["checksum"]; got != 3+201 {
		t.Errorf("the instance counted %d malformed adverts (%v)", got, in.status().Drops)
	}
}

// Another group on our VRID sends the same advert again and again: the
// drop is counted and the collision's words are made once, not at each
// advert; another address list is put in words again.
func TestCollisionFloodAllocatesNothing(t *testing.T) {
	peer := netip.MustParseAddr("198.51.100.12")
	host := newFakeHost(&fakeLAN{}, "198.51.100.11")
	pool := newSocketPool(Env{Now: time.Now}, slog.New(slog.DiscardHandler))
	in := loneInstance(pool, host, slog.New(slog.DiscardHandler))
	theirs := &vrrp.Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{netip.MustParseAddr("203.0.113.99")}}
	for range 3 {
		in.drop(vrrp.DropAddressList, peer, theirs)
	}
	if allocs := testing.AllocsPerRun(200, func() { in.drop(vrrp.DropAddressList, peer, theirs) }); allocs != 0 {
		t.Errorf("%.1f allocations a colliding advert, want 0", allocs)
	}
	warned := func(addr string) bool {
		for _, w := range in.status().Warnings {
			if strings.Contains(w, "VRID collision") && strings.Contains(w, addr) {
				return true
			}
		}
		return false
	}
	if !warned("203.0.113.99") {
		t.Errorf("status warnings %q, want the collision with 203.0.113.99", in.status().Warnings)
	}
	theirs.Addresses = []netip.Addr{netip.MustParseAddr("203.0.113.98")}
	in.drop(vrrp.DropAddressList, peer, theirs)
	if !warned("203.0.113.98") {
		t.Errorf("status warnings %q, want the collision with 203.0.113.98 once its list changed", in.status().Warnings)
	}
}

// loneInstance is instance "b" (VRID 51, testVIP) as the daemon makes one,
// on pool and host, not started: for tests that drive its socket's paths.
func loneInstance(pool *socketPool, host *fakeHost, log *slog.Logger) *instance {
	ic := &config.Instance{Name: "b", Interface: "eth0", VRID: 51, Priority: 100, AdvertInterval: time.Second, VIPs: []netip.Prefix{testVIP}}
	return newInstance(new(instance), ic, pools{sockets: pool, announcers: newAnnouncerPool(Env{})}, "", log, &Env{Now: time.Now, Links: host}, &instanceHooks{})
}
