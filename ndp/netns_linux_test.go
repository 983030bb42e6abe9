package ndp

import (
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	mdndp "github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/internal/nstest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// These tests put two hosts, A and B, in private network namespaces joined
// by a veth pair, with link-local addresses and 2001:db8::/32 only. A
// announces the VIP; B watches and keeps a neighbour entry for it.

var (
	addrB = netip.MustParsePrefix("2001:db8::2/64")
	// someMAC and otherMAC are link-layer addresses nobody on the link has:
	// where B's entry points before a takeover, and a second announcer.
	someMAC  = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x99}
	otherMAC = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x98}
)

// patience bounds waits for the kernel; it is a deadline, not a measurement.
const patience = 10 * time.Second

type host struct {
	ns  netns.NsHandle
	h   *netlink.Handle
	ifi *net.Interface
}

// twoHosts creates A and B, joined by veth "ndpa" (in A) and "ndpb" (in B),
// up, without duplicate address detection so their link-local addresses
// are usable at once, and B with addrB.
func twoHosts(t *testing.T) (a, b host) {
	t.Helper()
	nstest.RequireRoot(t, "sudo go test ./ndp")
	a.ns, b.ns = nstest.New(t), nstest.New(t)
	for _, x := range []*host{&a, &b} {
		h, err := netlink.NewHandleAt(x.ns, unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatalf("netlink handle: %v", err)
		}
		t.Cleanup(h.Close)
		x.h = h
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "ndpa"}, PeerName: "ndpb", PeerNamespace: netlink.NsFd(int(b.ns))}
	if err := a.h.LinkAdd(veth); err != nil {
		t.Fatalf("adding veth: %v", err)
	}
	for _, x := range []struct {
		host *host
		name string
	}{{&a, "ndpa"}, {&b, "ndpb"}} {
		err := nstest.Do(x.host.ns, func() error {
			if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+x.name+"/accept_dad", []byte("0\n"), 0o644); err != nil {
				return err
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
	b.addAddr(t, addrB)
	// Frames sent before the carrier is up are dropped, and Dial needs the
	// link-local address: wait for both.
	for _, x := range []*host{&a, &b} {
		for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
			l, err := x.h.LinkByIndex(x.ifi.Index)
			if err != nil {
				t.Fatal(err)
			}
			if l.Attrs().OperState == netlink.OperUp && x.linkLocal(t).IsValid() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no carrier or no link-local address", x.ifi.Name)
			}
		}
	}
	return a, b
}

func (x host) addAddr(t *testing.T, p netip.Prefix) {
	t.Helper()
	l, err := x.h.LinkByIndex(x.ifi.Index)
	if err != nil {
		t.Fatal(err)
	}
	n := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 128)}, Flags: unix.IFA_F_NODAD}
	if err := x.h.AddrAdd(l, n); err != nil {
		t.Fatalf("adding %v: %v", p, err)
	}
}

func (x host) linkLocal(t *testing.T) netip.Addr {
	t.Helper()
	var ll netip.Addr
	if err := nstest.Do(x.ns, func() (err error) { ll, err = linkLocal(x.ifi); return err }); err != nil && ll.IsValid() {
		t.Fatal(err)
	}
	return ll
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

// impostor is an Announcer on x's link that sends as otherMAC, a second
// host taking the VIP over.
func (x host) impostor(t *testing.T) *Announcer {
	t.Helper()
	var c *packet.Conn
	if err := nstest.Do(x.ns, func() (err error) { c, err = packet.Listen(x.ifi, packet.Raw, 0, nil); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ifi := *x.ifi
	ifi.HardwareAddr = otherMAC
	return New(&ifi, c, netip.MustParseAddr("fe80::98"), false)
}

// monitor runs a Monitor on the host until the end of the test and returns
// the claims it reports.
func (x host) monitor(t *testing.T, vips ...netip.Addr) <-chan arp.Claim {
	t.Helper()
	var m *Monitor
	if err := nstest.Do(x.ns, func() (err error) { m, err = ListenMonitor(x.ifi); return err }); err != nil {
		t.Fatalf("ListenMonitor: %v", err)
	}
	if len(vips) > 0 {
		if err := m.SetAddresses(vips); err != nil {
			t.Fatalf("SetAddresses: %v", err)
		}
	}
	claims := make(chan arp.Claim, 64)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- m.Run(ctx, func(c arp.Claim) {
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
		if n := m.Malformed(); n != 0 {
			t.Errorf("monitor saw %d malformed frames", n)
		}
		m.Close()
	})
	return claims
}

// setNeighbour points the host's entry for ip at mac, as if it had talked
// to the old owner: an unsolicited advertisement only updates an entry.
func (x host) setNeighbour(t *testing.T, ip netip.Addr, mac net.HardwareAddr) {
	t.Helper()
	n := &netlink.Neigh{LinkIndex: x.ifi.Index, Family: netlink.FAMILY_V6, State: netlink.NUD_REACHABLE, IP: ip.AsSlice(), HardwareAddr: mac}
	if err := x.h.NeighSet(n); err != nil {
		t.Fatalf("neighbour %v: %v", ip, err)
	}
}

// waitNeighbour waits until the host's entry for ip points at mac, and
// returns it.
func (x host) waitNeighbour(t *testing.T, ip netip.Addr, mac net.HardwareAddr) netlink.Neigh {
	t.Helper()
	var last netlink.Neigh
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ns, err := x.h.NeighList(x.ifi.Index, netlink.FAMILY_V6)
		if err != nil {
			t.Fatalf("neighbours: %v", err)
		}
		for _, n := range ns {
			if a, ok := netip.AddrFromSlice(n.IP); ok && a == ip {
				last = n
			}
		}
		if bytes.Equal(last.HardwareAddr, mac) {
			return last
		}
	}
	t.Fatalf("neighbour entry for %v is at %v, want %v", ip, last.HardwareAddr, mac)
	return last
}

// waitGroup waits until the host has joined the solicited-node group of
// ip, which the kernel does a moment after the address was added, from a
// work queue: until then it does not see solicitations for ip.
func (x host) waitGroup(t *testing.T, ip netip.Addr) {
	t.Helper()
	group, err := mdndp.SolicitedNodeMulticast(ip)
	if err != nil {
		t.Fatal(err)
	}
	g := group.As16()
	want := hex.EncodeToString(g[:])
	for deadline := time.Now().Add(patience); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var joined bool
		err := nstest.Do(x.ns, func() error {
			b, err := os.ReadFile("/proc/net/igmp6")
			joined = strings.Contains(string(b), want) // the namespace's only link with it
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if joined {
			return
		}
	}
	t.Fatalf("%s did not join %v", x.ifi.Name, group)
}

// waitClaim returns the next claim for ip.
func waitClaim(t *testing.T, claims <-chan arp.Claim, ip netip.Addr) arp.Claim {
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

// B's neighbour entry for the VIP follows whoever sent the last
// unsolicited advertisement: Linux overrides an existing entry when the
// Override flag is set.
func TestAnnounceMovesTheNeighbourEntry(t *testing.T) {
	a, b := twoHosts(t)
	claims := b.monitor(t)
	b.setNeighbour(t, testVIP, someMAC)

	ann := a.dial(t)
	if err := ann.Announce(testVIP); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	n := b.waitNeighbour(t, testVIP, a.ifi.HardwareAddr)
	if n.Flags&netlink.NTF_ROUTER != 0 {
		t.Errorf("entry marked as a router, but A does not forward: %+v", n)
	}
	c := waitClaim(t, claims, testVIP)
	if !bytes.Equal(c.MAC, a.ifi.HardwareAddr) || !c.Gratuitous() || c.Op != arp.OperationReply {
		t.Errorf("B saw %+v, want a gratuitous claim from A (%v)", c, a.ifi.HardwareAddr)
	}

	if err := a.impostor(t).Announce(testVIP); err != nil {
		t.Fatalf("second announcer: %v", err)
	}
	b.waitNeighbour(t, testVIP, otherMAC)
	if c := waitClaim(t, claims, testVIP); !bytes.Equal(c.MAC, otherMAC) || !c.Gratuitous() {
		t.Errorf("B saw %+v, want a gratuitous claim from %v", c, otherMAC)
	}

	if err := ann.Announce(testVIP); err != nil {
		t.Fatalf("Announce again: %v", err)
	}
	b.waitNeighbour(t, testVIP, a.ifi.HardwareAddr)
}

// A host that forwards IPv6 says so, and its neighbours mark it a router.
func TestAnnounceRouterFlag(t *testing.T) {
	a, b := twoHosts(t)
	err := nstest.Do(a.ns, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/ndpa/forwarding", []byte("1\n"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	b.setNeighbour(t, testVIP, someMAC)
	if err := a.dial(t).Announce(testVIP); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	if n := b.waitNeighbour(t, testVIP, a.ifi.HardwareAddr); n.Flags&netlink.NTF_ROUTER == 0 {
		t.Errorf("entry %+v not marked as a router", n)
	}
}

// A probe for an address B holds is answered by B's kernel, and A's
// monitor reports the answer as a claim that is not gratuitous.
func TestProbeFindsSecondOwner(t *testing.T) {
	a, b := twoHosts(t)
	b.addAddr(t, netip.PrefixFrom(testVIP, 128))
	b.waitGroup(t, testVIP)
	claims := a.monitor(t)
	ll := a.linkLocal(t)
	ann := a.dial(t)
	// A's own probe and announcement go out through the monitored link
	// and must not be reported.
	if err := ann.Announce(testVIP); err != nil {
		t.Fatal(err)
	}
	if err := ann.Probe(testVIP, ll); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	c := waitClaim(t, claims, testVIP)
	want := arp.Claim{IP: testVIP, MAC: b.ifi.HardwareAddr, Op: arp.OperationReply, Target: ll}
	if c.IP != want.IP || !bytes.Equal(c.MAC, want.MAC) || c.Op != want.Op || c.Target != want.Target || c.Gratuitous() {
		t.Errorf("A saw %+v, want the answer %+v", c, want)
	}
}

// With the kernel filter of the VIP in place (the daemon's), the second
// owner's answer to our probe still comes through; NDP about another
// address does not reach user space at all.
func TestFilteredMonitorFindsSecondOwner(t *testing.T) {
	a, b := twoHosts(t)
	b.addAddr(t, netip.PrefixFrom(testVIP, 128))
	b.waitGroup(t, testVIP)
	claims := a.monitor(t, testVIP)
	other := netip.MustParseAddr("2001:db8::77")
	if err := b.dial(t).Announce(other); err != nil {
		t.Fatal(err)
	}
	ll := a.linkLocal(t)
	if err := a.dial(t).Probe(testVIP, ll); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	// The first claim is the answer: B's announcement of the other
	// address, sent before it, never came up.
	select {
	case c := <-claims:
		if c.IP != testVIP || !bytes.Equal(c.MAC, b.ifi.HardwareAddr) || c.Op != arp.OperationReply || c.Target != ll {
			t.Errorf("A saw %+v first, want B's answer to its probe", c)
		}
	case <-time.After(patience):
		t.Fatal("no answer to the probe")
	}
	select {
	case c := <-claims:
		t.Errorf("the filter of %v passed %+v", testVIP, c)
	case <-time.After(200 * time.Millisecond):
	}
}
