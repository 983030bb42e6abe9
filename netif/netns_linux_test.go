package netif

import (
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nsHandle returns a netlink handle in ns, closed at the end of the test.
// Tests use it to act "from outside" the Manager.
func nsHandle(t *testing.T, ns netns.NsHandle) *netlink.Handle {
	t.Helper()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	return h
}

// addVeth creates a veth pair name/peer in the handle's namespace, both ends
// up, and deletes it at the end of the test.
func addVeth(t *testing.T, h *netlink.Handle, name, peer string) (netlink.Link, netlink.Link) {
	t.Helper()
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}); err != nil {
		t.Fatalf("adding veth %s/%s: %v", name, peer, err)
	}
	t.Cleanup(func() {
		if l, err := h.LinkByName(name); err == nil {
			_ = h.LinkDel(l)
		}
	})
	var links [2]netlink.Link
	for i, n := range []string{name, peer} {
		l, err := h.LinkByName(n)
		if err != nil {
			t.Fatalf("link %s: %v", n, err)
		}
		if err := h.LinkSetUp(l); err != nil {
			t.Fatalf("setting %s up: %v", n, err)
		}
		links[i] = l
	}
	return links[0], links[1]
}
