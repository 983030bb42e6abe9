package health

import (
	"github.com/vipd/vipd/internal/nstest"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// TestInterfaceHost uses the real lookup in this process's namespace, on
// links every Linux host has (or lacks).
func TestInterfaceHost(t *testing.T) {
	// The loopback reports the unknown operational state: up all the same.
	checkResult(t, mustChecker(t, Spec{Name: "lo", Type: Interface, Interface: "lo"}.WithDefaults()), true, "interface lo up")
	checkResult(t, mustChecker(t, Spec{Name: "x", Type: Interface, Interface: "vipdnosuch0"}.WithDefaults()), false, "interface vipdnosuch0 not found")
}

// TestInterfaceNetns follows a veth end through up, no carrier (its peer
// down), administratively down and deleted, in a namespace of its own.
func TestInterfaceNetns(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./health")
	h, err := netlink.NewHandleAt(nstest.New(t), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatalf("netlink handle: %v", err)
	}
	t.Cleanup(h.Close)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "uplink0"}, PeerName: "peer0"}); err != nil {
		t.Fatalf("adding a veth pair: %v", err)
	}
	link := func(name string) netlink.Link {
		t.Helper()
		l, err := h.LinkByName(name)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	set := func(name string, up bool) {
		t.Helper()
		f := h.LinkSetDown
		if up {
			f = h.LinkSetUp
		}
		if err := f(link(name)); err != nil {
			t.Fatalf("setting %s up=%v: %v", name, up, err)
		}
	}
	c := &interfaceChecker{name: "uplink0", link: h.LinkByName}
	const noCarrier = "interface uplink0 down: no carrier (operational state " // its name follows
	// The kernel settles the operational state asynchronously (linkwatch):
	// wait for it rather than for a fixed time.
	await := func(wantOK bool, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := c.Check(t.Context())
			if got.OK == wantOK && (got.Detail == want || want == noCarrier && strings.HasPrefix(got.Detail, want)) {
				t.Logf("%s", got.Detail)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Check() = %+v, want OK %v and %q", got, wantOK, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	await(false, "interface uplink0 down") // created down
	set("uplink0", true)
	await(false, noCarrier) // the peer is down
	set("peer0", true)
	await(true, "interface uplink0 up")
	set("peer0", false)
	await(false, noCarrier)
	set("peer0", true)
	await(true, "interface uplink0 up")
	set("uplink0", false)
	await(false, "interface uplink0 down")
	if err := h.LinkDel(link("uplink0")); err != nil {
		t.Fatal(err)
	}
	await(false, "interface uplink0 not found")
}
