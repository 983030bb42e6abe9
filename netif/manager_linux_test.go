package netif

import (
	"bytes"
	"context"
	"errors"
	"github.com/vipd/vipd/internal/nstest"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// These tests use the real kernel in a private network namespace with a
// veth pair, and only addresses from 198.51.100.0/24 (TEST-NET-2).

var (
	hostAddr = netip.MustParsePrefix("198.51.100.1/24")
	testVIP  = netip.MustParsePrefix("198.51.100.10/32")
)

// patience bounds waits for the kernel (carrier changes go through the
// link watcher, which batches them); it is a deadline, not a measurement.
const patience = 10 * time.Second

func newTestManager(t *testing.T, ns netns.NsHandle, opts ...Option) *Manager {
	t.Helper()
	m, err := New(slog.New(slog.DiscardHandler), append([]Option{WithNamespace(ns)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func addAddr(t *testing.T, h *netlink.Handle, l netlink.Link, p netip.Prefix) {
	t.Helper()
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: ipNet(p)}); err != nil {
		t.Fatalf("adding %v: %v", p, err)
	}
}

// addrsOf lists the addresses equal to p on l, with their labels and flags.
func addrsOf(t *testing.T, h *netlink.Handle, l netlink.Link, p netip.Prefix) []netlink.Addr {
	t.Helper()
	all, err := h.AddrList(l, netlink.FAMILY_V4)
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

// eventually polls cond until it holds or patience runs out.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAddRemoveVIP(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	addAddr(t, h, vip0, hostAddr)
	m := newTestManager(t, ns)

	for i := range 2 {
		if err := m.AddVIP("vip0", testVIP, ""); err != nil {
			t.Fatalf("AddVIP #%d: %v", i+1, err)
		}
	}
	got := addrsOf(t, h, vip0, testVIP)
	if len(got) != 1 {
		t.Fatalf("after adding twice: %d addresses %v, want 1", len(got), got)
	}
	if got[0].Label != "vip0:vip" {
		t.Errorf("label = %q, want %q", got[0].Label, "vip0:vip")
	}
	if got[0].Broadcast != nil {
		t.Errorf("a /32 VIP got broadcast %v", got[0].Broadcast)
	}
	if has, err := m.HasVIP("vip0", testVIP); err != nil || !has {
		t.Errorf("HasVIP after add = %v, %v; want true", has, err)
	}
	// Same address, other length: not the VIP.
	if has, err := m.HasVIP("vip0", netip.MustParsePrefix("198.51.100.10/24")); err != nil || has {
		t.Errorf("HasVIP(/24) = %v, %v; want false", has, err)
	}

	info, err := m.Link("vip0")
	if err != nil {
		t.Fatalf("Link: %v", err)
	}
	if len(info.IPv4) != 1 || info.IPv4[0] != hostAddr {
		t.Errorf("Link IPv4 = %v, want [%v] (the VIP left out)", info.IPv4, hostAddr)
	}
	if a, err := m.PrimaryIPv4("vip0", nil); err != nil || a != hostAddr.Addr() {
		t.Errorf("PrimaryIPv4 = %v, %v; want %v", a, err, hostAddr.Addr())
	}

	for i := range 2 {
		if err := m.RemoveVIP("vip0", testVIP); err != nil {
			t.Fatalf("RemoveVIP #%d: %v", i+1, err)
		}
	}
	if got := addrsOf(t, h, vip0, testVIP); len(got) != 0 {
		t.Errorf("after removing: %v", got)
	}
	if got := addrsOf(t, h, vip0, hostAddr); len(got) != 1 {
		t.Errorf("removing the VIP touched the host address: %v", got)
	}
	if has, err := m.HasVIP("vip0", testVIP); err != nil || has {
		t.Errorf("HasVIP after remove = %v, %v; want false", has, err)
	}
}

func TestVIPLabelsAndFlags(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	long, _ := addVeth(t, h, "vip-long-name01", "peer1") // 15 characters, the longest name
	m := newTestManager(t, ns)

	// "<ifname>:vip" would be 19 characters, which the kernel refuses.
	if err := m.AddVIP("vip-long-name01", testVIP, ""); err != nil {
		t.Fatalf("AddVIP on a long name: %v", err)
	}
	if got := addrsOf(t, h, long, testVIP); len(got) != 1 || got[0].Label != "vip-long-name01" {
		t.Errorf("addresses %v, want one with the kernel's default label", got)
	}

	if err := m.AddVIP("vip-long-name01", netip.MustParsePrefix("198.51.100.11/32"), "bad"); err == nil {
		t.Error("AddVIP with a label not starting with the name succeeded")
	}

	// A VIP wider than /32 must not bring a subnet route.
	wide := netip.MustParsePrefix("198.51.100.20/24")
	if err := m.AddVIP("vip-long-name01", wide, "vip-long-name01"); err != nil {
		t.Fatalf("AddVIP %v: %v", wide, err)
	}
	got := addrsOf(t, h, long, wide)
	if len(got) != 1 || got[0].Flags&unix.IFA_F_NOPREFIXROUTE == 0 {
		t.Errorf("addresses %v, want one with IFA_F_NOPREFIXROUTE", got)
	}
	routes, err := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{LinkIndex: long.Attrs().Index}, netlink.RT_FILTER_OIF)
	if err != nil {
		t.Fatalf("routes: %v", err)
	}
	for _, r := range routes {
		if r.Dst != nil && r.Dst.String() == "198.51.100.0/24" {
			t.Errorf("VIP %v brought subnet route %v", wide, r)
		}
	}
}

func TestMissingLink(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	m := newTestManager(t, ns)

	if _, err := m.Link("nope0"); !errors.Is(err, ErrNoLink) {
		t.Errorf("Link = %v, want ErrNoLink", err)
	}
	if err := m.AddVIP("nope0", testVIP, ""); !errors.Is(err, ErrNoLink) {
		t.Errorf("AddVIP = %v, want ErrNoLink", err)
	}
	if _, err := m.HasVIP("nope0", testVIP); !errors.Is(err, ErrNoLink) {
		t.Errorf("HasVIP = %v, want ErrNoLink", err)
	}
	if err := m.RemoveVIP("nope0", testVIP); err != nil {
		t.Errorf("RemoveVIP on a missing link = %v, want nil", err)
	}
	if _, err := m.PrimaryIPv4("nope0", nil); !errors.Is(err, ErrNoLink) {
		t.Errorf("PrimaryIPv4 = %v, want ErrNoLink", err)
	}
}

func TestPrimaryIPv4(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	stale := netip.MustParsePrefix("198.51.100.12/32")
	// A VIP left over by an earlier run, listed first by the kernel.
	if err := h.AddrAdd(vip0, &netlink.Addr{IPNet: ipNet(testVIP), Label: "vip0:vip"}); err != nil {
		t.Fatal(err)
	}
	addAddr(t, h, vip0, stale)
	addAddr(t, h, vip0, hostAddr)

	m := newTestManager(t, ns, WithVIPs(stale))
	if _, err := m.PrimaryIPv4("vip0", []netip.Prefix{hostAddr}); !errors.Is(err, ErrNoAddress) {
		t.Errorf("PrimaryIPv4 excluding everything = %v, want ErrNoAddress", err)
	}
	// The labelled one is recognised as a VIP, the other was declared.
	a, err := m.PrimaryIPv4("vip0", nil)
	if err != nil || a != hostAddr.Addr() {
		t.Errorf("PrimaryIPv4 = %v, %v; want %v", a, err, hostAddr.Addr())
	}

	addVeth(t, h, "vip1", "peer1")
	if _, err := m.PrimaryIPv4("vip1", nil); !errors.Is(err, ErrNoAddress) {
		t.Errorf("PrimaryIPv4 without addresses = %v, want ErrNoAddress", err)
	}
}

func TestLinkState(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, peer0 := addVeth(t, h, "vip0", "peer0")
	m := newTestManager(t, ns)

	up := func(want bool) func() bool {
		return func() bool {
			info, err := m.Link("vip0")
			if err != nil {
				t.Fatalf("Link: %v", err)
			}
			return info.Up == want
		}
	}
	eventually(t, "vip0 up", up(true))
	info, _ := m.Link("vip0")
	if info.Name != "vip0" || info.Index != vip0.Attrs().Index || !bytes.Equal(info.HardwareAddr, vip0.Attrs().HardwareAddr) {
		t.Errorf("Link = %+v, want vip0 with index %d and MAC %v", info, vip0.Attrs().Index, vip0.Attrs().HardwareAddr)
	}

	// The peer going down takes the carrier away: admin up, no carrier.
	if err := h.LinkSetDown(peer0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "vip0 without carrier to be down", up(false))
	if err := h.LinkSetUp(peer0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "vip0 up again", up(true))
	if err := h.LinkSetDown(vip0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "vip0 admin down", up(false))
}

// watchRecorder keeps every event Watch sends.
type watchRecorder struct {
	t       *testing.T
	events  chan Event
	seen    []Event
	claimed map[int]bool
}

// waitFor returns the first event not returned before that matches, reading
// more events as needed. Address and link messages come on separate sockets,
// so events of the two kinds may arrive in either order.
func (r *watchRecorder) waitFor(what string, match func(Event) bool) Event {
	r.t.Helper()
	timeout := time.After(patience)
	for i := 0; ; {
		for ; i < len(r.seen); i++ {
			if !r.claimed[i] && match(r.seen[i]) {
				r.claimed[i] = true
				return r.seen[i]
			}
		}
		select {
		case ev := <-r.events:
			r.seen = append(r.seen, ev)
		case <-timeout:
			r.t.Fatalf("no %s event; got %v", what, r.seen)
		}
	}
}

func is(kind EventKind, link string) func(Event) bool {
	return func(ev Event) bool { return ev.Kind == kind && ev.Link == link }
}

func TestWatch(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, peer0 := addVeth(t, h, "vip0", "peer0")
	addAddr(t, h, vip0, hostAddr)
	m := newTestManager(t, ns)
	// Start from a settled link, so the listing reports it up.
	eventually(t, "vip0 up", func() bool { info, err := m.Link("vip0"); return err == nil && info.Up })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &watchRecorder{t: t, events: make(chan Event, 16), claimed: make(map[int]bool)}
	errc := make(chan error, 1)
	go func() { errc <- m.Watch(ctx, r.events) }()

	ev := r.waitFor("listed vip0", func(ev Event) bool {
		return ev.Index == vip0.Attrs().Index && (ev.Kind == LinkUp || ev.Kind == LinkDown)
	})
	if ev.Kind != LinkUp || ev.Link != "vip0" || !ev.Up || ev.At.IsZero() {
		t.Errorf("first vip0 event = %+v, want LinkUp", ev)
	}
	r.waitFor("listed host address", func(ev Event) bool { return ev.Kind == AddrAdded && ev.Prefix == hostAddr })

	// Our own change comes back.
	if err := m.AddVIP("vip0", testVIP, ""); err != nil {
		t.Fatal(err)
	}
	ev = r.waitFor("VIP added", func(ev Event) bool { return ev.Prefix == testVIP })
	if ev.Kind != AddrAdded || ev.Link != "vip0" || ev.Index != vip0.Attrs().Index {
		t.Errorf("got %+v, want AddrAdded on vip0", ev)
	}
	// Someone else removes the VIP.
	if err := h.AddrDel(vip0, &netlink.Addr{IPNet: ipNet(testVIP)}); err != nil {
		t.Fatal(err)
	}
	ev = r.waitFor("VIP removed", func(ev Event) bool { return ev.Prefix == testVIP })
	if ev.Kind != AddrRemoved || ev.Link != "vip0" {
		t.Errorf("got %+v, want AddrRemoved on vip0", ev)
	}

	// Carrier loss and return, then changes that repeat RTM_NEWLINK without
	// changing Up, then admin down.
	if err := h.LinkSetDown(peer0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("vip0 down", is(LinkDown, "vip0"))
	if err := h.LinkSetUp(peer0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("vip0 up", is(LinkUp, "vip0"))
	if err := h.LinkSetMTU(vip0, 1400); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetAlias(vip0, "vipd test"); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetDown(vip0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("vip0 admin down", is(LinkDown, "vip0"))

	var kinds []EventKind
	for _, ev := range r.seen {
		if ev.Link == "vip0" && (ev.Kind == LinkUp || ev.Kind == LinkDown) {
			kinds = append(kinds, ev.Kind)
		}
	}
	want := []EventKind{LinkUp, LinkDown, LinkUp, LinkDown}
	if !slices.Equal(kinds, want) {
		t.Errorf("vip0 link events %v, want %v (no repeats)", kinds, want)
	}

	// Deleting one end deletes both; vip0's address goes first.
	if err := h.LinkDel(peer0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("vip0 gone", is(LinkGone, "vip0"))
	r.waitFor("peer0 gone", is(LinkGone, "peer0"))
	var removed bool
	for _, ev := range r.seen {
		if ev.Kind == AddrRemoved && ev.Prefix == hostAddr && ev.Link == "vip0" {
			removed = true
		}
	}
	if !removed {
		t.Errorf("no AddrRemoved for %v before LinkGone: %v", hostAddr, r.seen)
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	case <-time.After(patience):
		t.Fatal("Watch did not return after cancel")
	}
	// The library's goroutines must be gone too.
	eventually(t, "netlink subscription goroutines to exit", func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "vishvananda/netlink.")
	})
}

func TestClose(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	m, err := New(nil, WithNamespace(ns))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := m.Link("lo"); !errors.Is(err, errClosed) {
		t.Errorf("Link after Close = %v, want errClosed", err)
	}
	if err := m.Watch(context.Background(), make(chan Event)); !errors.Is(err, errClosed) {
		t.Errorf("Watch after Close = %v, want errClosed", err)
	}
}

// AddVIP remembers the link (a takeover is one netlink request); a link
// deleted and created again under the same name gets a new index, and
// AddVIP finds it again.
func TestAddVIPAfterTheLinkWasRecreated(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	m := newTestManager(t, ns)
	if err := m.AddVIP("vip0", testVIP, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkDel(vip0); err != nil {
		t.Fatal(err)
	}
	vip0, _ = addVeth(t, h, "vip0", "peer0")
	if err := m.AddVIP("vip0", testVIP, ""); err != nil {
		t.Fatalf("AddVIP on the new link: %v", err)
	}
	if got := addrsOf(t, h, vip0, testVIP); len(got) != 1 {
		t.Errorf("the new link has %v", got)
	}
}
