package netif

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/vipd/vipd/internal/nstest"
	"github.com/vishvananda/netlink"
)

// An address equal to a VIP that vipd did not add (an administrator's own,
// with another label or none) must survive RemoveVIP, which is what the
// daemon's start-up release and `vipd cleanup` call.
func TestRemoveVIPKeepsForeignAddresses(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	m := newTestManager(t, ns)

	for _, label := range []string{"vip0:admin", ""} {
		if err := h.AddrAdd(vip0, &netlink.Addr{IPNet: ipNet(testVIP), Label: label}); err != nil {
			t.Fatalf("adding %v with label %q: %v", testVIP, label, err)
		}
		err := m.RemoveVIP("vip0", testVIP)
		if got := addrsOf(t, h, vip0, testVIP); len(got) != 1 {
			t.Fatalf("label %q: RemoveVIP (%v) removed an address vipd did not add", label, err)
		}
		if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), testVIP.String()) || !strings.Contains(err.Error(), "vip0") {
			t.Errorf("label %q: RemoveVIP = %v, want ErrNotOurs naming the address and the interface", label, err)
		}
		if err := h.AddrDel(vip0, &netlink.Addr{IPNet: ipNet(testVIP)}); err != nil {
			t.Fatal(err)
		}
	}

	// vipd's own label: removed, whoever added it (a previous process).
	if err := h.AddrAdd(vip0, &netlink.Addr{IPNet: ipNet(testVIP), Label: "vip0:vip"}); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveVIP("vip0", testVIP); err != nil {
		t.Errorf("RemoveVIP of vipd's address: %v", err)
	}
	if got := addrsOf(t, h, vip0, testVIP); len(got) != 0 {
		t.Errorf("vipd's labelled address stayed: %v", got)
	}
}

// An interface whose name leaves no room for ":vip" gives vipd's addresses
// the kernel's default label. Without WithOwned the Manager removes those
// (the daemon must not keep a VIP it may have added), and never one with
// another label; with WithOwned only the listed ones, and what it added
// itself.
func TestRemoveVIPOnAnInterfaceWithoutRoomForTheLabel(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	const name = "vip-long-name01"
	long, _ := addVeth(t, h, name, "peer1")
	other := netip.MustParsePrefix("198.51.100.11/32")

	add := func(p netip.Prefix, label string) {
		t.Helper()
		if err := h.AddrAdd(long, &netlink.Addr{IPNet: ipNet(p), Label: label}); err != nil {
			t.Fatalf("adding %v: %v", p, err)
		}
	}
	has := func(p netip.Prefix) bool { return len(addrsOf(t, h, long, p)) == 1 }

	lax := newTestManager(t, ns)
	add(testVIP, "vip-long-name0:") // someone else's label
	if err := lax.RemoveVIP(name, testVIP); !errors.Is(err, ErrNotOurs) || !has(testVIP) {
		t.Errorf("another label: RemoveVIP = %v, present %v; want ErrNotOurs and kept", err, has(testVIP))
	}
	h.AddrDel(long, &netlink.Addr{IPNet: ipNet(testVIP)})
	add(testVIP, "")
	if err := lax.RemoveVIP(name, testVIP); err != nil || has(testVIP) {
		t.Errorf("no label, no list: RemoveVIP = %v, present %v; want removed", err, has(testVIP))
	}

	strict := newTestManager(t, ns, WithOwned(OwnedAddr{Interface: name, Prefix: other}))
	add(testVIP, "")
	add(other, "")
	if err := strict.RemoveVIP(name, testVIP); !errors.Is(err, ErrNotOurs) || !has(testVIP) {
		t.Errorf("unlisted: RemoveVIP = %v, present %v; want ErrNotOurs and kept", err, has(testVIP))
	}
	if err := strict.RemoveVIP(name, other); err != nil || has(other) {
		t.Errorf("listed: RemoveVIP = %v, present %v; want removed", err, has(other))
	}
	h.AddrDel(long, &netlink.Addr{IPNet: ipNet(testVIP)})
	if err := strict.AddVIP(name, testVIP, ""); err != nil {
		t.Fatal(err)
	}
	if err := strict.RemoveVIP(name, testVIP); err != nil || has(testVIP) {
		t.Errorf("added by this Manager: RemoveVIP = %v, present %v; want removed", err, has(testVIP))
	}
}

// AdoptVIP takes an address equal to a VIP (what keepalived leaves when
// killed, unlabelled or with its configured label) for vipd's, so the
// release removes it; a missing one is reported so.
func TestAdoptVIP(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./netif")
	ns := nstest.New(t)
	h := nsHandle(t, ns)
	vip0, _ := addVeth(t, h, "vip0", "peer0")
	m := newTestManager(t, ns)

	if found, err := m.AdoptVIP("vip0", testVIP); found || err != nil {
		t.Fatalf("AdoptVIP of a missing address = %v, %v; want false, nil", found, err)
	}
	if err := h.AddrAdd(vip0, &netlink.Addr{IPNet: ipNet(testVIP)}); err != nil {
		t.Fatal(err)
	}
	if found, err := m.AdoptVIP("vip0", testVIP); !found || err != nil {
		t.Fatalf("AdoptVIP = %v, %v; want true", found, err)
	}
	if err := m.RemoveVIP("vip0", testVIP); err != nil {
		t.Errorf("RemoveVIP of the adopted address: %v", err)
	}
	if got := addrsOf(t, h, vip0, testVIP); len(got) != 0 {
		t.Errorf("the adopted address stayed: %v", got)
	}

	// keepalived's `label vip0:1`: adopted too, and removed by the release.
	if err := h.AddrAdd(vip0, &netlink.Addr{IPNet: ipNet(testVIP), Label: "vip0:1"}); err != nil {
		t.Fatal(err)
	}
	if found, err := m.AdoptVIP("vip0", testVIP); !found || err != nil {
		t.Fatalf("AdoptVIP of a labelled address = %v, %v; want true", found, err)
	}
	if err := m.RemoveVIP("vip0", testVIP); err != nil {
		t.Errorf("RemoveVIP of the adopted labelled address: %v", err)
	}
	if got := addrsOf(t, h, vip0, testVIP); len(got) != 0 {
		t.Errorf("the adopted labelled address stayed: %v", got)
	}
	// Without adoption such an address is still someone else's.
	if err := h.AddrAdd(vip0, &netlink.Addr{IPNet: ipNet(testVIP), Label: "vip0:admin"}); err != nil {
		t.Fatal(err)
	}
	if err := newTestManager(t, ns).RemoveVIP("vip0", testVIP); !errors.Is(err, ErrNotOurs) {
		t.Errorf("RemoveVIP of an admin's address = %v, want ErrNotOurs", err)
	}
}
