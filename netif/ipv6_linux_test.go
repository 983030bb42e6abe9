package netif

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vipd/vipd/internal/nstest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// IPv6 tests use addresses from 2001:db8::/32 and the link-local addresses
// the kernel makes.

var (
	hostAddr6 = netip.MustParsePrefix("2001:db8::1/64")
	testVIP6  = netip.MustParsePrefix("2001:db8::10/128")
)

// setSysctl writes an IPv6 setting of ifname inside ns.
func setSysctl(t *testing.T, ns netns.NsHandle, ifname, key, value string) {
	t.Helper()
	err := nstest.Do(ns, func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/"+ifname+"/"+key, []byte(value+"\n"), 0o644)
	})
	if err != nil {
		t.Fatalf("setting %s %s: %v", ifname, key, err)
	}
}

// addVethDown is addVeth with both ends left down, for settings that must
// come before the link-local address is made.
func addVethDown(t *testing.T, h *netlink.Handle, name, peer string, peerMAC net.HardwareAddr) (netlink.Link, netlink.Link) {
	t.Helper()
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer, PeerHardwareAddr: peerMAC}
	if err := h.LinkAdd(v); err != nil {
		t.Fatalf("adding veth %s/%s: %v", name, peer, err)
	}
	t.Cleanup(func() {
		if l, err := h.LinkByName(name); err == nil {
			_ = h.LinkDel(l)
		}
	})
	a, err := h.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.LinkByName(peer)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func setUp(t *testing.T, h *netlink.Handle, links ...netlink.Link) {
	t.Helper()
	for _, l := range links {
		if err := h.LinkSetUp(l); err != nil {
			t.Fatalf("setting %s up: %v", l.Attrs().Name, err)
		}
	}
}

// addr6 adds p to l with flags, ready at once when flags has NODAD.
func addr6(t *testing.T, h *netlink.Handle, l netlink.Link, p netip.Prefix, flags int) {
	t.Helper()
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(p), Flags: flags}); err != nil {
		t.Fatalf("adding %v: %v", p, err)
	}
}

func addrs6Of(t *testing.T, h *netlink.Handle, l netlink.Link, p netip.Prefix) []netlink.Addr {
	t.Helper()
	all, err := h.AddrList(l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatalf("listing addresses: %v", err)
	}
	var out []netlink.Addr
	for _, a := range all {
		if q, ok := prefixFromIPNet(a.IPNet); ok && q == p {
			out = append(out, a)
		}
	}
	return out
}

// startWatch runs m.Watch until the end of the test.
func startWatch(t *testing.T, m *Manager) *watchRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &watchRecorder{t: t, events: make(chan Event, 64), claimed: make(map[int]bool)}
	errc := make(chan error, 1)
	go func() { errc <- m.Watch(ctx, r.events) }()
	t.Cleanup(func() {
		cancel()
		// Drain so Watch is never stuck sending while it stops.
		for {
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Watch = %v", err)
				}
				return
			case <-r.events:
			}
		}
	})
	return r
}

func isAddr(kind EventKind, link string, match func(netip.Prefix) bool, state AddrState) func(Event) bool {
	return func(ev Event) bool {
		return ev.Kind == kind && ev.Link == link && match(ev.Prefix) && ev.State == state
	}
}

func linkLocalPrefix(p netip.Prefix) bool { return p.Addr().IsLinkLocalUnicast() }

func TestLinkLocalWaitsForDAD(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	ll0, peer := addVethDown(t, h, "ll0", "llp0", nil)
	m := newTestManager(t, ns)
	if _, _, err := m.LinkLocal("ll0"); !errors.Is(err, ErrNoAddress) {
		t.Errorf("LinkLocal of a link that is down = %v, want ErrNoAddress", err)
	}
	if _, _, err := m.LinkLocal("nope0"); !errors.Is(err, ErrNoLink) {
		t.Errorf("LinkLocal of a missing link = %v, want ErrNoLink", err)
	}
	r := startWatch(t, m)
	r.waitFor("ll0 listed", is(LinkDown, "ll0"))
	setUp(t, h, ll0, peer)

	// Duplicate address detection takes about a second: the address is
	// seen tentative first, then ready.
	var first netip.Addr
	eventually(t, "a tentative link-local address", func() bool {
		a, tentative, err := m.LinkLocal("ll0")
		first = a
		return err == nil && tentative
	})
	if !first.IsLinkLocalUnicast() || first.Zone() != "" {
		t.Errorf("LinkLocal = %v, want a link-local address without zone", first)
	}
	eventually(t, "the link-local address ready", func() bool {
		a, tentative, err := m.LinkLocal("ll0")
		return err == nil && !tentative && a == first
	})
	// The kernel announces an automatic link-local address only once
	// detection has ended (an address added by hand comes tentative
	// first, then changed: see TestDADFailedVIP).
	ready := r.waitFor("link-local ready", func(ev Event) bool {
		return (ev.Kind == AddrAdded || ev.Kind == AddrChanged) && ev.Link == "ll0" && linkLocalPrefix(ev.Prefix) && ev.State == AddrReady
	})
	if ready.Prefix.Addr() != first {
		t.Errorf("event for %v, want %v", ready.Prefix, first)
	}
}

func TestLinkLocalWithoutDAD(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	ll0, peer := addVethDown(t, h, "ll0", "llp0", nil)
	setSysctl(t, ns, "ll0", "accept_dad", "0")
	m := newTestManager(t, ns)
	r := startWatch(t, m)
	r.waitFor("ll0 listed", is(LinkDown, "ll0"))
	setUp(t, h, ll0, peer)

	// The kernel still sets the address up tentative and clears the flag
	// from a work queue a moment later, without sending anything.
	eventually(t, "a ready link-local address", func() bool {
		_, tentative, err := m.LinkLocal("ll0")
		return err == nil && !tentative
	})
	ev := r.waitFor("link-local", func(ev Event) bool { return ev.Link == "ll0" && linkLocalPrefix(ev.Prefix) })
	if ev.Kind != AddrAdded || ev.State != AddrReady {
		t.Errorf("first link-local event %+v, want AddrAdded in state ready", ev)
	}
}

// Two ends with one MAC make one link-local address twice: detection fails
// on one end at least (on both when their probes cross).
func TestLinkLocalDADFailed(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	mac := net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x42}
	ll0, peer := addVethDown(t, h, "ll0", "llp0", mac)
	if err := h.LinkSetHardwareAddr(ll0, mac); err != nil {
		t.Fatal(err)
	}
	m := newTestManager(t, ns)
	setUp(t, h, ll0, peer)
	var err error
	var name string
	eventually(t, "duplicate address detection to fail", func() bool {
		for _, name = range []string{"ll0", "llp0"} {
			if _, _, err = m.LinkLocal(name); errors.Is(err, ErrDADFailed) {
				return true
			}
		}
		return false
	})
	if !strings.Contains(err.Error(), name) {
		t.Errorf("error %q does not name the link %s", err, name)
	}
}

func TestIPv6VIP(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	addr6(t, h, vip0, hostAddr6, unix.IFA_F_NODAD)
	m := newTestManager(t, ns)
	eventually(t, "vip0 up", func() bool { info, err := m.Link("vip0"); return err == nil && info.Up })

	for i := range 2 {
		if err := m.AddVIP("vip0", testVIP6, "ignored"); err != nil {
			t.Fatalf("AddVIP #%d: %v", i+1, err)
		}
	}
	got := addrs6Of(t, h, vip0, testVIP6)
	if len(got) != 1 {
		t.Fatalf("after adding twice: %v, want one address", got)
	}
	a := got[0]
	if a.Flags&unix.IFA_F_NODAD == 0 || a.Flags&unix.IFA_F_DEPRECATED == 0 || a.PreferedLft != 0 || uint32(a.ValidLft) != lifetimeInfinite {
		t.Errorf("VIP flags %#x, preferred %d, valid %d; want nodad, deprecated, preferred 0, valid forever", a.Flags, a.PreferedLft, a.ValidLft)
	}
	if st, err := m.VIPState("vip0", testVIP6); err != nil || st != AddrReady {
		t.Errorf("VIPState = %v, %v; want ready", st, err)
	}
	if has, err := m.HasVIP("vip0", testVIP6); err != nil || !has {
		t.Errorf("HasVIP = %v, %v", has, err)
	}

	// The kernel prefers the source that shares the longest prefix with
	// the destination (RFC 6724 rule 8): an ordinary address next to the
	// peer is chosen...
	control := netip.MustParsePrefix("2001:db8::12/128")
	addr6(t, h, vip0, control, unix.IFA_F_NODAD)
	if src := routeSource(t, h, netip.MustParseAddr("2001:db8::13")); src != control.Addr() {
		t.Fatalf("source towards 2001:db8::13 = %v, want %v (the test's premise)", src, control.Addr())
	}
	if err := h.AddrDel(vip0, &netlink.Addr{IPNet: ipNet(control)}); err != nil {
		t.Fatal(err)
	}
	// ...but never the VIP, which is deprecated, although it is the
	// closest to this peer.
	peer := netip.MustParseAddr("2001:db8::11")
	if src := routeSource(t, h, peer); src != hostAddr6.Addr() {
		t.Errorf("route get %v: source %v, want %v (not the VIP)", peer, src, hostAddr6.Addr())
	}
	var local netip.Addr
	err := nstest.Do(ns, func() error {
		c, err := net.Dial("udp6", netip.AddrPortFrom(peer, 9).String())
		if err != nil {
			return err
		}
		defer c.Close()
		local = c.LocalAddr().(*net.UDPAddr).AddrPort().Addr()
		return nil
	})
	if err != nil || local != hostAddr6.Addr() {
		t.Errorf("UDP socket connected to %v has source %v (%v), want %v", peer, local, err, hostAddr6.Addr())
	}

	// A VIP wider than /128 brings no prefix route.
	wide := netip.MustParsePrefix("2001:db8:1::10/64")
	if err := m.AddVIP("vip0", wide, ""); err != nil {
		t.Fatal(err)
	}
	if got := addrs6Of(t, h, vip0, wide); len(got) != 1 || got[0].Flags&unix.IFA_F_NOPREFIXROUTE == 0 {
		t.Errorf("addresses %v, want one with IFA_F_NOPREFIXROUTE", got)
	}
	routes, err := h.RouteListFiltered(netlink.FAMILY_V6, &netlink.Route{LinkIndex: vip0.Attrs().Index}, netlink.RT_FILTER_OIF)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == "2001:db8:1::/64" {
			t.Errorf("VIP %v brought prefix route %v", wide, r)
		}
	}

	for _, p := range []netip.Prefix{testVIP6, testVIP6, wide} {
		if err := m.RemoveVIP("vip0", p); err != nil {
			t.Errorf("RemoveVIP %v: %v", p, err)
		}
	}
	if got := addrs6Of(t, h, vip0, testVIP6); len(got) != 0 {
		t.Errorf("after removing: %v", got)
	}
	if _, err := m.VIPState("vip0", testVIP6); !errors.Is(err, ErrNoAddress) {
		t.Errorf("VIPState of a removed VIP = %v, want ErrNoAddress", err)
	}
}

// routeSource is `ip -6 route get dst`'s source address.
func routeSource(t *testing.T, h *netlink.Handle, dst netip.Addr) netip.Addr {
	t.Helper()
	routes, err := h.RouteGet(dst.AsSlice())
	if err != nil || len(routes) == 0 {
		t.Fatalf("route get %v: %v", dst, err)
	}
	src, _ := netip.AddrFromSlice(routes[0].Src)
	return src
}

// IPv6 addresses have no labels: vipd's are those with its marks (nodad,
// preferred lifetime 0), those it added and those listed with WithOwned.
func TestRemoveIPv6VIPOwnership(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	other := netip.MustParsePrefix("2001:db8::11/128")
	has := func(p netip.Prefix) bool { return len(addrs6Of(t, h, vip0, p)) == 1 }
	addMarked := func(p netip.Prefix) {
		t.Helper()
		a := &netlink.Addr{IPNet: ipNet(p), Flags: unix.IFA_F_NODAD, ValidLft: lifetimeInfinite}
		if err := h.AddrAdd(vip0, a); err != nil {
			t.Fatal(err)
		}
	}

	for _, m := range []*Manager{newTestManager(t, ns), newTestManager(t, ns, WithOwned())} {
		// An administrator's address: kept.
		addr6(t, h, vip0, testVIP6, unix.IFA_F_NODAD)
		err := m.RemoveVIP("vip0", testVIP6)
		if !errors.Is(err, ErrNotOurs) || !has(testVIP6) || !strings.Contains(err.Error(), "nodad") {
			t.Errorf("admin's address: RemoveVIP = %v, present %v; want ErrNotOurs naming vipd's flags, kept", err, has(testVIP6))
		}
		h.AddrDel(vip0, &netlink.Addr{IPNet: ipNet(testVIP6)})
		// One left by an earlier vipd: removed.
		addMarked(testVIP6)
		if err := m.RemoveVIP("vip0", testVIP6); err != nil || has(testVIP6) {
			t.Errorf("marked address: RemoveVIP = %v, present %v; want removed", err, has(testVIP6))
		}
	}

	strict := newTestManager(t, ns, WithOwned(OwnedAddr{Interface: "vip0", Prefix: other}))
	addr6(t, h, vip0, other, unix.IFA_F_NODAD)
	if err := strict.RemoveVIP("vip0", other); err != nil || has(other) {
		t.Errorf("listed: RemoveVIP = %v, present %v; want removed", err, has(other))
	}
	if err := strict.AddVIP("vip0", testVIP6, ""); err != nil {
		t.Fatal(err)
	}
	if err := strict.RemoveVIP("vip0", testVIP6); err != nil || has(testVIP6) {
		t.Errorf("added by this Manager: RemoveVIP = %v, present %v; want removed", err, has(testVIP6))
	}
}

// A VIP that someone added with duplicate address detection while another
// host has it fails detection; Watch and VIPState report it and AddVIP
// replaces it with one that works.
func TestDADFailedVIP(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	nsA, nsB := nstest.New(t), nstest.New(t)
	hA, hB := nsHandle(t, nsA), nsHandle(t, nsB)
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "dada"}, PeerName: "dadb", PeerNamespace: netlink.NsFd(int(nsB))}
	if err := hA.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	a, err := hA.LinkByName("dada")
	if err != nil {
		t.Fatal(err)
	}
	b, err := hB.LinkByName("dadb")
	if err != nil {
		t.Fatal(err)
	}
	setUp(t, hA, a)
	setUp(t, hB, b)
	addr6(t, hB, b, testVIP6, unix.IFA_F_NODAD)
	m := newTestManager(t, nsA)
	eventually(t, "dada up", func() bool { info, err := m.Link("dada"); return err == nil && info.Up })
	r := startWatch(t, m)
	r.waitFor("dada listed", is(LinkUp, "dada"))

	addr6(t, hA, a, testVIP6, 0)
	isVIP := func(p netip.Prefix) bool { return p == testVIP6 }
	r.waitFor("VIP added tentative", isAddr(AddrAdded, "dada", isVIP, AddrTentative))
	r.waitFor("VIP failed", isAddr(AddrChanged, "dada", isVIP, AddrDADFailed))
	if st, err := m.VIPState("dada", testVIP6); err != nil || st != AddrDADFailed {
		t.Errorf("VIPState = %v, %v; want dadfailed", st, err)
	}

	if err := m.AddVIP("dada", testVIP6, ""); err != nil {
		t.Fatalf("AddVIP over a failed VIP: %v", err)
	}
	if st, err := m.VIPState("dada", testVIP6); err != nil || st != AddrReady {
		t.Errorf("VIPState after AddVIP = %v, %v; want ready", st, err)
	}
	// Replaced: gone, then back, ready from the start (no detection).
	r.waitFor("failed VIP removed", func(ev Event) bool { return ev.Kind == AddrRemoved && ev.Prefix == testVIP6 })
	r.waitFor("VIP added ready", isAddr(AddrAdded, "dada", isVIP, AddrReady))
	if got := addrs6Of(t, hA, a, testVIP6); len(got) != 1 || got[0].Flags&unix.IFA_F_NODAD == 0 {
		t.Errorf("addresses %v, want vipd's", got)
	}
	if err := m.RemoveVIP("dada", testVIP6); err != nil {
		t.Errorf("RemoveVIP: %v", err)
	}
}
