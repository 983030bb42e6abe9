package transport

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/nstest"
	"github.com/vipd/vipd/vrrp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// These tests join two private namespaces, A and B, with a veth pair and
// speak over the link-local addresses the kernel gives it; the VIP is from
// 2001:db8::/32.

var testVIP6 = netip.MustParseAddr("2001:db8::10")

// patience bounds waits for the kernel; it is a deadline, not a measurement.
const patience = 10 * time.Second

type host6 struct {
	ns  netns.NsHandle
	h   *netlink.Handle
	ifi *net.Interface
	ll  netip.Addr // link-local, without zone
}

// twoHosts6 makes A ("vrrpa") and B ("vrrpb"). With dad false the
// link-local addresses are usable at once; otherwise they are returned
// while still tentative.
func twoHosts6(t *testing.T, dad bool) (a, b *host6) {
	t.Helper()
	nstest.RequireRoot(t, "sudo go test ./transport")
	a, b = &host6{ns: nstest.New(t)}, &host6{ns: nstest.New(t)}
	for _, x := range []*host6{a, b} {
		h, err := netlink.NewHandleAt(x.ns, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatalf("netlink handle: %v", err)
		}
		t.Cleanup(h.Close)
		x.h = h
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vrrpa"}, PeerName: "vrrpb", PeerNamespace: netlink.NsFd(int(b.ns))}
	if err := a.h.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth: %v", err)
	}
	for _, x := range []struct {
		host *host6
		name string
	}{{a, "vrrpa"}, {b, "vrrpb"}} {
		err := nstest.Do(x.host.ns, func() error {
			if !dad {
				if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+x.name+"/accept_dad", []byte("0\n"), 0o644); err != nil {
					return err
				}
			}
			l, err := x.host.h.LinkByName(x.name)
			if err != nil {
				return err
			}
			if err := x.host.h.LinkSetUp(l); err != nil {
				return err
			}
			x.host.ifi, err = net.InterfaceByName(x.name)
			return err
		})
		if err != nil {
			t.Fatalf("setting up %s: %v", x.name, err)
		}
	}
	for _, x := range []*host6{a, b} {
		x.ll = x.waitLinkLocal(t, !dad)
	}
	return a, b
}

// waitLinkLocal waits for the link-local address to appear and, when ready
// is set, to leave the tentative state.
func (x *host6) waitLinkLocal(t *testing.T, ready bool) netip.Addr {
	t.Helper()
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		l, err := x.h.LinkByIndex(x.ifi.Index)
		if err != nil {
			t.Fatal(err)
		}
		addrs, err := x.h.AddrList(l, netlink.FAMILY_V6)
		if err != nil {
			t.Fatal(err)
		}
		for _, ad := range addrs {
			ip, _ := netip.AddrFromSlice(ad.IP)
			if !ip.IsLinkLocalUnicast() {
				continue
			}
			if !ready || ad.Flags&unix.IFA_F_TENTATIVE == 0 && l.Attrs().OperState == netlink.OperUp {
				return ip
			}
		}
	}
	t.Fatalf("%s: no usable link-local address", x.ifi.Name)
	return netip.Addr{}
}

func (x *host6) listen(t *testing.T, unicast bool) Conn {
	t.Helper()
	var c Conn
	err := nstest.Do(x.ns, func() (err error) {
		c, err = Listen(x.ifi, Options{Source: x.ll, Unicast: unicast})
		return err
	})
	if err != nil {
		t.Fatalf("Listen on %s: %v", x.ifi.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// plain opens a raw protocol-112 socket without the Conn's settings: no
// kernel checksum, the given hop limit, joined to the group.
func (x *host6) plain(t *testing.T, hopLimit int) *ipv6.PacketConn {
	t.Helper()
	var pc *ipv6.PacketConn
	err := nstest.Do(x.ns, func() error {
		c, err := net.ListenPacket("ip6:112", "::")
		if err != nil {
			return err
		}
		pc = ipv6.NewPacketConn(c)
		for _, err := range []error{
			pc.SetMulticastHopLimit(hopLimit),
			pc.SetHopLimit(hopLimit),
			pc.SetMulticastInterface(x.ifi),
			pc.SetMulticastLoopback(false),
			pc.JoinGroup(x.ifi, &net.IPAddr{IP: groupIPv6}),
			pc.SetControlMessage(ipv6.FlagTrafficClass|ipv6.FlagHopLimit, true),
		} {
			if err != nil {
				c.Close()
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("plain socket: %v", err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc
}

func encode6(t *testing.T, src, dst netip.Addr) []byte {
	t.Helper()
	adv := vrrp.Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{testVIP6}}
	b, err := adv.Append(nil, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIPv6Multicast(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)
	observer := b.plain(t, 255)
	pkt := encode6(t, a.ll, vrrp.GroupIPv6)
	if err := ca.WriteTo(pkt, vrrp.GroupIPv6); err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	got, info, err := readOne(t, cb)
	if err != nil {
		t.Fatalf("B read: %v", err)
	}
	if string(got) != string(pkt) {
		t.Errorf("payload %x, want %x", got, pkt)
	}
	want := PacketInfo{Src: a.ll, Dst: vrrp.GroupIPv6, TTL: 255, IfIndex: b.ifi.Index}
	if info != want {
		t.Errorf("info %+v, want %+v", info, want)
	}
	if !info.Src.IsLinkLocalUnicast() {
		t.Errorf("source %v is not link-local", info.Src)
	}
	var adv vrrp.Advertisement
	if err := adv.Decode(got, info.Src, info.Dst); err != nil {
		t.Errorf("received advert does not decode: %v", err)
	}
	// The traffic class is the IPv4 TOS of control traffic.
	observer.SetReadDeadline(time.Now().Add(patience))
	buf := make([]byte, 1500)
	_, cm, _, err := observer.ReadFrom(buf)
	if err != nil || cm == nil {
		t.Fatalf("observer read: %v (control message %v)", err, cm)
	}
	if cm.TrafficClass != tosInternetControl || cm.HopLimit != 255 {
		t.Errorf("traffic class %#x, hop limit %d; want %#x, 255", cm.TrafficClass, cm.HopLimit, tosInternetControl)
	}
	// No loopback of our own packets.
	if _, _, err := readOne(t, ca); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("sender read its own advert back: %v", err)
	}
}

// As for IPv4: an IPv6 Master's advert allocates nothing.
func TestIPv6WriteToAllocatesNothing(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca := a.listen(t, false)
	for _, dst := range []netip.Addr{vrrp.GroupIPv6, b.ll} {
		pkt := encode6(t, a.ll, dst)
		if n := testing.AllocsPerRun(100, func() {
			if err := ca.WriteTo(pkt, dst); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("to %v: WriteTo allocates %v times an advert, want none", dst, n)
		}
	}
}

func TestIPv6Unicast(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, true), b.listen(t, true)
	// A multicast advert does not reach a unicast socket...
	if err := ca.WriteTo(encode6(t, a.ll, vrrp.GroupIPv6), vrrp.GroupIPv6); err != nil {
		t.Fatalf("WriteTo group: %v", err)
	}
	// ...a unicast one does, to a link-local peer with or without zone.
	for _, dst := range []netip.Addr{b.ll, b.ll.WithZone("vrrpa")} {
		pkt := encode6(t, a.ll, b.ll)
		if err := ca.WriteTo(pkt, dst); err != nil {
			t.Fatalf("WriteTo %v: %v", dst, err)
		}
		got, info, err := readOne(t, cb)
		if err != nil {
			t.Fatalf("B read: %v", err)
		}
		want := PacketInfo{Src: a.ll, Dst: b.ll, TTL: 255, IfIndex: b.ifi.Index}
		if info != want {
			t.Errorf("info %+v, want %+v", info, want)
		}
		var adv vrrp.Advertisement
		if err := adv.Decode(got, info.Src, info.Dst); err != nil {
			t.Errorf("unicast advert does not decode: %v", err)
		}
	}
}

// A packet that crossed a router arrives with a lower hop limit, and the
// receiver must see it to drop it.
func TestIPv6HopLimitReported(t *testing.T) {
	a, b := twoHosts6(t, false)
	cb := b.listen(t, false)
	pc := a.plain(t, 64)
	pkt := encode6(t, a.ll, vrrp.GroupIPv6)
	cm := &ipv6.ControlMessage{Src: a.ll.AsSlice(), IfIndex: a.ifi.Index}
	if _, err := pc.WriteTo(pkt, cm, &net.IPAddr{IP: groupIPv6}); err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	_, info, err := readOne(t, cb)
	if err != nil {
		t.Fatalf("B read: %v", err)
	}
	if info.TTL != 64 || info.Src != a.ll {
		t.Errorf("info %+v, want hop limit 64 from %v", info, a.ll)
	}
}

// The kernel computes the checksum over whatever the field holds, and
// drops received packets whose checksum is wrong without ending ReadFrom.
func TestIPv6KernelChecksum(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)

	for _, field := range []uint16{0, 0xbeef} {
		pkt := encode6(t, a.ll, vrrp.GroupIPv6)
		pkt[6], pkt[7] = byte(field>>8), byte(field)
		if err := ca.WriteTo(pkt, vrrp.GroupIPv6); err != nil {
			t.Fatalf("WriteTo: %v", err)
		}
		got, info, err := readOne(t, cb)
		if err != nil {
			t.Fatalf("B read (field %#x): %v", field, err)
		}
		var adv vrrp.Advertisement
		if err := adv.Decode(got, info.Src, info.Dst); err != nil {
			t.Errorf("sent with checksum field %#x: received %x does not decode: %v", field, got, err)
		}
	}

	// A sender that leaves the checksum wrong.
	pc := a.plain(t, 255)
	cm := &ipv6.ControlMessage{Src: a.ll.AsSlice(), IfIndex: a.ifi.Index}
	bad := encode6(t, a.ll, vrrp.GroupIPv6)
	bad[7] ^= 0xff
	if _, err := pc.WriteTo(bad, cm, &net.IPAddr{IP: groupIPv6}); err != nil {
		t.Fatalf("WriteTo bad: %v", err)
	}
	good := encode6(t, a.ll, vrrp.GroupIPv6)
	if _, err := pc.WriteTo(good, cm, &net.IPAddr{IP: groupIPv6}); err != nil {
		t.Fatalf("WriteTo good: %v", err)
	}
	got, _, err := readOne(t, cb)
	if err != nil {
		t.Fatalf("B read after a bad checksum: %v", err)
	}
	if string(got) != string(good) {
		t.Errorf("read %x, want the good packet %x", got, good)
	}
	if n, err := cb.(DropCounter).KernelDrops(); err != nil || n != 1 {
		t.Errorf("KernelDrops = %d, %v; want 1", n, err)
	}
}

// While DAD runs the link-local address cannot be a source: WriteTo fails
// rather than send from an address that may be another host's.
func TestIPv6TentativeSource(t *testing.T) {
	a, _ := twoHosts6(t, true)
	ca := a.listen(t, false)
	pkt := encode6(t, a.ll, vrrp.GroupIPv6)
	err := ca.WriteTo(pkt, vrrp.GroupIPv6)
	if err == nil {
		t.Fatal("WriteTo from a tentative address succeeded")
	}
	t.Logf("WriteTo from a tentative source: %v", err)
	a.waitLinkLocal(t, true)
	if err := ca.WriteTo(pkt, vrrp.GroupIPv6); err != nil {
		t.Errorf("WriteTo once the address is ready: %v", err)
	}
}

func TestListenRejectsBadSource(t *testing.T) {
	ifi := &net.Interface{Index: 1, Name: "lo"}
	for _, src := range []netip.Addr{{}, netip.IPv6Unspecified(), vrrp.GroupIPv6, netip.MustParseAddr("::ffff:198.51.100.1")} {
		if c, err := Listen(ifi, Options{Source: src}); err == nil {
			c.Close()
			t.Errorf("Listen with source %v succeeded", src)
		}
	}
}

// The IPv6 Conn receives as the IPv4 one does: in batches inside one wait
// of the poller, with the hop limit, the addresses and the interface of
// each datagram; a hop limit below 255 is reported, not hidden.
func TestIPv6ReceiveBatchesAndReports(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)
	r, ok := cb.(Receiver)
	if !ok {
		t.Fatalf("the IPv6 Conn %T is not a Receiver", cb)
	}
	type got struct {
		prio int
		info PacketInfo
	}
	arrived := make(chan got, 64)
	done := make(chan error, 1)
	send := func(prio int) {
		adv := vrrp.Advertisement{VRID: 51, Priority: uint8(prio), Interval: time.Second, Addresses: []netip.Addr{testVIP6}}
		pkt, err := adv.Append(nil, a.ll, vrrp.GroupIPv6)
		if err != nil {
			t.Fatal(err)
		}
		if err := ca.WriteTo(pkt, vrrp.GroupIPv6); err != nil {
			t.Fatal(err)
		}
	}
	const burst = 3*receiveBatch + 1
	for i := 1; i <= burst; i++ {
		send(i)
	}
	time.Sleep(20 * time.Millisecond)
	go func() {
		for {
			err := r.Receive(func(p []byte, info PacketInfo) {
				var adv vrrp.Advertisement
				if err := adv.Decode(p, info.Src, info.Dst); err != nil {
					t.Errorf("datagram %x does not decode: %v", p, err)
					return
				}
				arrived <- got{int(adv.Priority), info}
			})
			if err != nil {
				done <- err
				return
			}
		}
	}()
	want := PacketInfo{Src: a.ll, Dst: vrrp.GroupIPv6, TTL: 255, IfIndex: b.ifi.Index}
	expect := func(prio int, info PacketInfo) {
		t.Helper()
		select {
		case g := <-arrived:
			if g.prio != prio || g.info != info {
				t.Fatalf("received priority %d with %+v, want %d with %+v (in order)", g.prio, g.info, prio, info)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("priority %d never received", prio)
		}
	}
	for i := 1; i <= burst; i++ {
		expect(i, want)
	}
	time.Sleep(50 * time.Millisecond)
	send(200)
	expect(200, want)

	// From a router's distance: hop limit 64.
	pc := a.plain(t, 64)
	cm := &ipv6.ControlMessage{Src: a.ll.AsSlice(), IfIndex: a.ifi.Index}
	if _, err := pc.WriteTo(encode6(t, a.ll, vrrp.GroupIPv6), cm, &net.IPAddr{IP: groupIPv6}); err != nil {
		t.Fatalf("WriteTo: %v", err)
	}
	far := want
	far.TTL = 64
	expect(100, far)

	cb.SetReadDeadline(time.Unix(1, 0))
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Receive ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a past deadline did not end Receive")
	}
}

// A Backup's read of an IPv6 advert allocates nothing, as an IPv4 one.
func TestIPv6ReceiveAllocatesNothing(t *testing.T) {
	a, b := twoHosts6(t, false)
	ca, cb := a.listen(t, false), b.listen(t, false)
	receiveAllocs(t, ca, cb, encode6(t, a.ll, vrrp.GroupIPv6), vrrp.GroupIPv6)
}

// A datagram the kernel refuses for its checksum ends a batch with good
// ones still queued behind it (on kernels that check it at the read;
// others drop it before it is queued, and this passes either way);
// Receive must not wait for another arrival to hand them over, and the
// refused one is counted.
func TestIPv6ReceiveGoodAfterBadChecksum(t *testing.T) {
	a, b := twoHosts6(t, false)
	cb := b.listen(t, false)
	r := cb.(Receiver)
	pc := a.plain(t, 255)
	cm := &ipv6.ControlMessage{Src: a.ll.AsSlice(), IfIndex: a.ifi.Index}
	drops := 0
	for _, lead := range []int{0, 2} { // the bad one first, then after two good
		var want []byte
		for i := range lead + 2 {
			pkt := encode6(t, a.ll, vrrp.GroupIPv6)
			if i == lead {
				pkt[7] ^= 0xff
			} else {
				want = pkt
			}
			if _, err := pc.WriteTo(pkt, cm, &net.IPAddr{IP: groupIPv6}); err != nil {
				t.Fatalf("WriteTo: %v", err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		got := 0
		cb.SetReadDeadline(time.Now().Add(time.Second))
		err := r.Receive(func(p []byte, _ PacketInfo) {
			if string(p) != string(want) {
				t.Errorf("received %x, want %x", p, want)
			}
			got++
		})
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Receive: %v", err)
		}
		if got != lead+1 {
			t.Errorf("bad checksum after %d good: received %d good of %d, the rest waited for another datagram", lead, got, lead+1)
		}
		if n, err := cb.(DropCounter).KernelDrops(); err != nil || n != uint64(drops+1) {
			t.Errorf("bad checksum after %d good: KernelDrops = %d, %v; want %d", lead, n, err, drops+1)
		}
		drops++
	}
}
