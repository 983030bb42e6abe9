package arp

import (
	"bytes"
	"context"
	"github.com/vipd/vipd/internal/nstest"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// These tests put two hosts, A and B, in private network namespaces joined
// by a veth pair, and use only addresses from 198.51.100.0/24 (TEST-NET-2).
// A announces the VIP; B watches and keeps a neighbour entry for it.

var (
	addrA = netip.MustParsePrefix("198.51.100.1/24")
	addrB = netip.MustParsePrefix("198.51.100.2/24")
	// someMAC is where B's neighbour entry for the VIP points before the
	// takeover (a locally administered address nobody has).
	someMAC = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x99}
)

// patience bounds waits for the kernel; it is a deadline, not a measurement.
const patience = 10 * time.Second

type host struct {
	ns  netns.NsHandle
	h   *netlink.Handle
	ifi *net.Interface
}

// twoHosts creates A and B, joined by veth "vipa" (in A) and "vipb" (in B),
// both up and addressed, and removes them at the end of the test.
func twoHosts(t *testing.T) (a, b host) {
	t.Helper()
	a.ns, b.ns = nstest.New(t), nstest.New(t)
	for _, x := range []*host{&a, &b} {
		h, err := netlink.NewHandleAt(x.ns, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatalf("netlink handle: %v", err)
		}
		t.Cleanup(h.Close)
		x.h = h
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "vipa"}, PeerName: "vipb", PeerNamespace: netlink.NsFd(int(b.ns))}
	if err := a.h.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth: %v", err)
	}
	t.Cleanup(func() {
		if l, err := a.h.LinkByName("vipa"); err == nil {
			_ = a.h.LinkDel(l)
		}
	})
	for _, x := range []struct {
		host *host
		name string
		addr netip.Prefix
	}{{&a, "vipa", addrA}, {&b, "vipb", addrB}} {
		l, err := x.host.h.LinkByName(x.name)
		if err != nil {
			t.Fatalf("link %s: %v", x.name, err)
		}
		if err := x.host.h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(x.addr)}); err != nil {
			t.Fatalf("address on %s: %v", x.name, err)
		}
		if err := x.host.h.LinkSetUp(l); err != nil {
			t.Fatalf("%s up: %v", x.name, err)
		}
		if err := nstest.Do(x.host.ns, func() (err error) { x.host.ifi, err = net.InterfaceByName(x.name); return err }); err != nil {
			t.Fatalf("interface %s: %v", x.name, err)
		}
	}
	// Frames sent before the carrier is up are dropped (the link still has
	// the no-op qdisc), so wait for it.
	for _, x := range []struct {
		host *host
		name string
	}{{&a, "vipa"}, {&b, "vipb"}} {
		for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
			l, err := x.host.h.LinkByName(x.name)
			if err != nil {
				t.Fatalf("link %s: %v", x.name, err)
			}
			if l.Attrs().OperState == netlink.OperUp {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s has no carrier", x.name)
			}
		}
	}
	return a, b
}

func broadcastAddr() net.Addr { return &packet.Addr{HardwareAddr: ethernet.Broadcast} }

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func (x host) dial(t *testing.T) *Announcer {
	t.Helper()
	var a *Announcer
	if err := nstest.Do(x.ns, func() (err error) { a, err = Dial(x.ifi); return err }); err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// monitor runs a Monitor on the host until the end of the test and returns
// the claims it reports.
func (x host) monitor(t *testing.T) <-chan Claim {
	t.Helper()
	var m *Monitor
	if err := nstest.Do(x.ns, func() (err error) { m, err = ListenMonitor(x.ifi); return err }); err != nil {
		t.Fatalf("ListenMonitor: %v", err)
	}
	claims := make(chan Claim, 64)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- m.Run(ctx, func(c Claim) {
			select {
			case claims <- c:
			default:
				t.Errorf("claim %+v dropped: test not reading", c)
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
		m.Close()
	})
	return claims
}

// setNeighbour points B's entry for ip at mac, as if B had talked to the
// old owner: with arp_accept=0 a gratuitous ARP only updates an entry.
func (x host) setNeighbour(t *testing.T, ip netip.Addr, mac net.HardwareAddr) {
	t.Helper()
	n := &netlink.Neigh{LinkIndex: x.ifi.Index, Family: netlink.FAMILY_V4, State: netlink.NUD_STALE, IP: ip.AsSlice(), HardwareAddr: mac}
	if err := x.h.NeighSet(n); err != nil {
		t.Fatalf("neighbour %v: %v", ip, err)
	}
}

// waitNeighbour waits until the host's entry for ip points at mac.
func (x host) waitNeighbour(t *testing.T, ip netip.Addr, mac net.HardwareAddr) {
	t.Helper()
	var last net.HardwareAddr
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ns, err := x.h.NeighList(x.ifi.Index, netlink.FAMILY_V4)
		if err != nil {
			t.Fatalf("neighbours: %v", err)
		}
		for _, n := range ns {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a.Unmap() == ip {
				last = n.HardwareAddr
			}
		}
		if bytes.Equal(last, mac) {
			return
		}
	}
	t.Fatalf("neighbour entry for %v is at %v, want %v", ip, last, mac)
}

// waitClaim returns the next claim for ip.
func waitClaim(t *testing.T, claims <-chan Claim, ip netip.Addr) Claim {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case c := <-claims:
			if c.IP == ip {
				return c
			}
		case <-timeout:
			t.Fatalf("no claim for %v", ip)
		}
	}
}

func TestAnnounceOnTheWire(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, b := twoHosts(t)
	claims := b.monitor(t)
	b.setNeighbour(t, testVIP, someMAC)

	if err := a.dial(t).Announce(testVIP); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	for _, op := range []Operation{OperationRequest, OperationReply} {
		c := waitClaim(t, claims, testVIP)
		if c.Op != op || !bytes.Equal(c.MAC, a.ifi.HardwareAddr) {
			t.Errorf("B saw %v from %v, want %v from A (%v)", c.Op, c.MAC, op, a.ifi.HardwareAddr)
		}
	}
	b.waitNeighbour(t, testVIP, a.ifi.HardwareAddr)
}

// TestAnnounceReplyAlone shows why the reply carries our MAC as target: B
// takes it as gratuitous and overrides an entry changed moments ago, which
// an ordinary reply may not do within the locktime.
func TestAnnounceReplyAlone(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, b := twoHosts(t)
	// A long locktime makes an ordinary reply unable to override.
	err := nstest.Do(b.ns, func() error {
		return os.WriteFile("/proc/sys/net/ipv4/neigh/vipb/locktime", []byte("6000\n"), 0o644)
	})
	if err != nil {
		t.Fatalf("locktime: %v", err)
	}
	b.setNeighbour(t, testVIP, someMAC)

	ann := a.dial(t)
	frame, err := gratuitous(OperationReply, a.ifi.HardwareAddr, testVIP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ann.conn.WriteTo(frame, broadcastAddr()); err != nil {
		t.Fatalf("writing the reply: %v", err)
	}
	b.waitNeighbour(t, testVIP, a.ifi.HardwareAddr)
}

func TestMonitorIgnoresOwnFrames(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, b := twoHosts(t)
	claims := a.monitor(t)

	// A's own announcement goes out through the monitored link first...
	if err := a.dial(t).Announce(testVIP); err != nil {
		t.Fatalf("A Announce: %v", err)
	}
	// ...then B claims an address; the first claim A reports must be B's.
	if err := b.dial(t).Announce(addrB.Addr()); err != nil {
		t.Fatalf("B Announce: %v", err)
	}
	select {
	case c := <-claims:
		if c.IP != addrB.Addr() || !bytes.Equal(c.MAC, b.ifi.HardwareAddr) {
			t.Errorf("first claim %+v, want %v from B (%v)", c, addrB.Addr(), b.ifi.HardwareAddr)
		}
	case <-time.After(patience):
		t.Fatal("A's monitor reported nothing")
	}
}

// A Master probes for a second owner every second: a probe allocates
// nothing, or each would be garbage for the collector to wake for. Each
// leaves the interface, so the calls measured did send.
func TestProbeAllocatesNothing(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, _ := twoHosts(t)
	ann := a.dial(t)
	if err := ann.Probe(testVIP, addrA.Addr()); err != nil { // builds the frame once
		t.Fatalf("Probe: %v", err)
	}
	sent := func() uint64 {
		l, err := a.h.LinkByName("vipa")
		if err != nil {
			t.Fatal(err)
		}
		return l.Attrs().Statistics.TxPackets
	}
	before := sent()
	const runs = 50
	if n := testing.AllocsPerRun(runs, func() {
		if err := ann.Probe(testVIP, addrA.Addr()); err != nil {
			t.Fatalf("Probe: %v", err)
		}
	}); n != 0 {
		t.Errorf("Probe allocates %v times a probe, want none", n)
	}
	if got := sent() - before; got < runs {
		t.Errorf("%d frames left the interface for %d probes", got, runs)
	}
}

// A host holding the VIP answers a probe, from 0.0.0.0 (RFC 5227's ARP
// Probe, what a Master sends) as from an address of ours, and the answer
// reaches the prober's monitor as that host's claim.
func TestProbeFindsAHolder(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, b := twoHosts(t)
	l, err := b.h.LinkByName("vipb")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(testVIP, 32))}); err != nil {
		t.Fatalf("VIP on B: %v", err)
	}
	claims := a.monitor(t)
	ann := a.dial(t)
	for _, from := range []netip.Addr{netip.IPv4Unspecified(), addrA.Addr()} {
		if err := ann.Probe(testVIP, from); err != nil {
			t.Fatalf("Probe from %v: %v", from, err)
		}
		c := waitClaim(t, claims, testVIP)
		if !bytes.Equal(c.MAC, b.ifi.HardwareAddr) || c.Op != OperationReply || c.Gratuitous() {
			t.Errorf("probe from %v: claim %+v, want B's (%v) answer", from, c, b.ifi.HardwareAddr)
		}
	}
}
