package netif

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// These tests drive Watch through a fake source: no kernel, no privileges.

// fakeSub is one pair of subscriptions made by Watch.
type fakeSub struct {
	addrs      chan<- netlink.AddrUpdate
	links      chan<- netlink.LinkUpdate
	closeAddrs func()
	closeLinks func()
}

type fakeSource struct {
	subs chan *fakeSub
	fail error

	mu      sync.Mutex
	pending *fakeSub
	lnks    []netlink.Link
	adrs    []netlink.Addr
}

func newFakeSource() *fakeSource { return &fakeSource{subs: make(chan *fakeSub, 4)} }

// closer closes ch once, when done is closed or when called, like the
// library does after done or a receive error.
func closer[T any](ch chan<- T, done <-chan struct{}) func() {
	var once sync.Once
	c := func() { once.Do(func() { close(ch) }) }
	go func() {
		<-done
		c()
	}()
	return c
}

func (f *fakeSource) subscribeAddrs(ch chan<- netlink.AddrUpdate, done <-chan struct{}, _ func(error)) error {
	if f.fail != nil {
		return f.fail
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = &fakeSub{addrs: ch, closeAddrs: closer(ch, done)}
	return nil
}

func (f *fakeSource) subscribeLinks(ch chan<- netlink.LinkUpdate, done <-chan struct{}, _ func(error)) error {
	f.mu.Lock()
	s := f.pending
	f.mu.Unlock()
	s.links, s.closeLinks = ch, closer(ch, done)
	f.subs <- s
	return nil
}

func (f *fakeSource) links() ([]netlink.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lnks, nil
}

func (f *fakeSource) addrs() ([]netlink.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.adrs, nil
}

func (f *fakeSource) linkName(index int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range f.lnks {
		if l.Attrs().Index == index {
			return l.Attrs().Name, nil
		}
	}
	return "", errors.New("no such link")
}

func (f *fakeSource) set(links []netlink.Link, addrs []netlink.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lnks, f.adrs = links, addrs
}

func device(index int, name string, up bool) netlink.Link {
	a := netlink.LinkAttrs{Index: index, Name: name, OperState: netlink.OperLowerLayerDown}
	if up {
		a.Flags, a.OperState = net.FlagUp, netlink.OperUp
	}
	return &netlink.Device{LinkAttrs: a}
}

func linkMsg(typ uint16, family uint8, l netlink.Link) netlink.LinkUpdate {
	return netlink.LinkUpdate{
		IfInfomsg: nl.IfInfomsg{IfInfomsg: unix.IfInfomsg{Family: family, Index: int32(l.Attrs().Index)}},
		Header:    unix.NlMsghdr{Type: typ},
		Link:      l,
	}
}

func newLink(index int, name string, up bool) netlink.LinkUpdate {
	return linkMsg(unix.RTM_NEWLINK, unix.AF_UNSPEC, device(index, name, up))
}

func delLink(index int, name string) netlink.LinkUpdate {
	return linkMsg(unix.RTM_DELLINK, unix.AF_UNSPEC, device(index, name, false))
}

func addrMsg(add bool, index int, p string) netlink.AddrUpdate {
	return netlink.AddrUpdate{LinkAddress: *ipNet(netip.MustParsePrefix(p)), LinkIndex: index, NewAddr: add}
}

func addrMsgFlags(index int, p string, flags int) netlink.AddrUpdate {
	u := addrMsg(true, index, p)
	u.Flags = flags
	return u
}

func addr(index int, p string) netlink.Addr {
	return netlink.Addr{IPNet: ipNet(netip.MustParsePrefix(p)), LinkIndex: index}
}

// startFakeWatch runs Watch on f and stops it at the end of the test,
// checking that it returned nil.
func startFakeWatch(t *testing.T, f *fakeSource) <-chan Event {
	t.Helper()
	m := &Manager{
		log:        slog.New(slog.DiscardHandler),
		src:        f,
		minBackoff: time.Millisecond,
		maxBackoff: time.Millisecond,
		vips:       make(map[netip.Addr]struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan Event)
	errc := make(chan error, 1)
	go func() { errc <- m.Watch(ctx, events) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	return events
}

// expect reads len(want) events and compares them, ignoring At.
func expect(t *testing.T, events <-chan Event, want ...Event) {
	t.Helper()
	var got []Event
	timeout := time.After(10 * time.Second)
	for range want {
		select {
		case ev := <-events:
			if ev.At.IsZero() {
				t.Errorf("event %v has no time", ev)
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("timed out after %d of %d events: got %+v", len(got), len(want), got)
		}
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Event{}, "At"), cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestWatchLinkDeduplication(t *testing.T) {
	f := newFakeSource()
	events := startFakeWatch(t, f)
	s := <-f.subs

	s.links <- newLink(2, "eth0", true) // the listing
	s.links <- newLink(2, "eth0", true) // repeats change nothing
	s.links <- newLink(2, "eth0", true)
	s.links <- newLink(2, "eth0", false)
	s.links <- newLink(2, "eth0", false)
	// A bridge port leaving its bridge is not the link going away.
	s.links <- linkMsg(unix.RTM_DELLINK, unix.AF_BRIDGE, device(2, "eth0", false))
	s.links <- linkMsg(unix.RTM_NEWLINK, unix.AF_BRIDGE, device(2, "eth0", true))
	s.links <- newLink(2, "lan0", false) // a rename is not a change of state
	s.links <- newLink(2, "lan0", true)
	s.links <- delLink(2, "lan0")
	s.links <- delLink(2, "lan0") // unknown by now: ignored
	s.links <- newLink(3, "eth1", false)

	expect(t, events,
		Event{Kind: LinkUp, Link: "eth0", Index: 2, Up: true},
		Event{Kind: LinkDown, Link: "eth0", Index: 2},
		Event{Kind: LinkUp, Link: "lan0", Index: 2, Up: true},
		Event{Kind: LinkGone, Link: "lan0", Index: 2},
		Event{Kind: LinkDown, Link: "eth1", Index: 3},
	)
}

func TestWatchAddresses(t *testing.T) {
	f := newFakeSource()
	f.set([]netlink.Link{device(2, "eth0", true)}, nil)
	events := startFakeWatch(t, f)
	s := <-f.subs

	// Address and link messages come on different channels, so each step
	// waits for its event before the next channel is used.
	s.addrs <- addrMsg(true, 2, "198.51.100.1/24")
	s.addrs <- addrMsg(true, 2, "198.51.100.1/24") // repeat
	s.addrs <- addrMsg(true, 2, "198.51.100.10/32")
	s.addrs <- addrMsg(false, 2, "198.51.100.10/32")
	s.addrs <- addrMsg(false, 2, "198.51.100.10/32") // repeat
	s.addrs <- addrMsg(true, 9, "198.51.100.9/32")   // a link nobody can name
	expect(t, events,
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.1/24"), State: AddrReady},
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.10/32"), State: AddrReady},
		Event{Kind: AddrRemoved, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.10/32")},
		Event{Kind: AddrAdded, Index: 9, Prefix: netip.MustParsePrefix("198.51.100.9/32"), State: AddrReady},
	)

	// Deleting a link reports its addresses gone first, and the kernel's
	// late RTM_DELADDR is then a repeat.
	s.links <- newLink(2, "eth0", true)
	expect(t, events, Event{Kind: LinkUp, Link: "eth0", Index: 2, Up: true})
	s.links <- delLink(2, "eth0")
	expect(t, events,
		Event{Kind: AddrRemoved, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.1/24")},
		Event{Kind: LinkGone, Link: "eth0", Index: 2},
	)
	s.addrs <- addrMsg(false, 2, "198.51.100.1/24")
	s.addrs <- addrMsg(false, 9, "198.51.100.9/32")
	expect(t, events, Event{Kind: AddrRemoved, Index: 9, Prefix: netip.MustParsePrefix("198.51.100.9/32")})
}

func TestWatchResubscribes(t *testing.T) {
	f := newFakeSource()
	f.set([]netlink.Link{device(2, "eth0", true), device(3, "eth1", true)},
		[]netlink.Addr{addr(2, "198.51.100.1/24"), addr(3, "198.51.100.2/24")})
	events := startFakeWatch(t, f)
	s := <-f.subs
	s.links <- newLink(2, "eth0", true)
	s.links <- newLink(3, "eth1", true)
	expect(t, events,
		Event{Kind: LinkUp, Link: "eth0", Index: 2, Up: true},
		Event{Kind: LinkUp, Link: "eth1", Index: 3, Up: true},
	)
	s.addrs <- addrMsg(true, 2, "198.51.100.1/24")
	s.addrs <- addrMsg(true, 3, "198.51.100.2/24")
	s.addrs <- addrMsg(true, 2, "198.51.100.10/32")
	expect(t, events,
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.1/24"), State: AddrReady},
		Event{Kind: AddrAdded, Link: "eth1", Index: 3, Prefix: netip.MustParsePrefix("198.51.100.2/24"), State: AddrReady},
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.10/32"), State: AddrReady},
	)

	// While no subscription is open, eth1 and the VIP vanish.
	f.set([]netlink.Link{device(2, "eth0", true)}, []netlink.Addr{addr(2, "198.51.100.1/24")})
	s.closeLinks() // as the library does after a receive error

	expect(t, events,
		Event{Kind: AddrRemoved, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.10/32")},
		Event{Kind: AddrRemoved, Link: "eth1", Index: 3, Prefix: netip.MustParsePrefix("198.51.100.2/24")},
		Event{Kind: LinkGone, Link: "eth1", Index: 3},
	)
	// The new subscription's listing is reported again in full.
	s = <-f.subs
	s.links <- newLink(2, "eth0", true)
	expect(t, events, Event{Kind: LinkUp, Link: "eth0", Index: 2, Up: true})
	s.addrs <- addrMsg(true, 2, "198.51.100.1/24")
	expect(t, events, Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix("198.51.100.1/24"), State: AddrReady})

	// The address channel closing works the same way.
	s.closeAddrs()
	s = <-f.subs
	s.links <- newLink(2, "eth0", true)
	expect(t, events, Event{Kind: LinkUp, Link: "eth0", Index: 2, Up: true})
}

func TestWatchFirstSubscriptionFails(t *testing.T) {
	f := newFakeSource()
	f.fail = unix.EPERM
	m := &Manager{log: slog.New(slog.DiscardHandler), src: f, minBackoff: time.Millisecond, maxBackoff: time.Millisecond}
	err := m.Watch(context.Background(), make(chan Event))
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("Watch = %v, want EPERM", err)
	}
}

func TestWatchCancelWhileBlocked(t *testing.T) {
	f := newFakeSource()
	m := &Manager{log: slog.New(slog.DiscardHandler), src: f, minBackoff: time.Millisecond, maxBackoff: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Watch(ctx, make(chan Event)) }() // nobody reads events
	s := <-f.subs
	s.links <- newLink(2, "eth0", true)
	s.links <- newLink(3, "eth1", true) // Watch is blocked sending the first
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Watch = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
}

func TestPrefixConversion(t *testing.T) {
	for _, s := range []string{"198.51.100.10/32", "198.51.100.1/24", "2001:db8::1/64", "0.0.0.0/0"} {
		p := netip.MustParsePrefix(s)
		got, ok := prefixFromIPNet(ipNet(p))
		if !ok || got != p {
			t.Errorf("prefixFromIPNet(ipNet(%v)) = %v, %v", p, got, ok)
		}
	}
	if got := unmapPrefix(netip.MustParsePrefix("::ffff:198.51.100.10/128")); got != netip.MustParsePrefix("198.51.100.10/32") {
		t.Errorf("unmapPrefix = %v", got)
	}
	if _, ok := prefixFromIPNet(nil); ok {
		t.Error("prefixFromIPNet(nil) ok")
	}
}

// An IPv6 address changing state is reported; a lifetime update is not.
func TestWatchAddressStates(t *testing.T) {
	f := newFakeSource()
	f.set([]netlink.Link{device(2, "eth0", true)}, nil)
	events := startFakeWatch(t, f)
	s := <-f.subs

	const ll, vip = "fe80::1/64", "2001:db8::10/128"
	s.addrs <- addrMsgFlags(2, ll, unix.IFA_F_TENTATIVE|unix.IFA_F_PERMANENT)
	s.addrs <- addrMsgFlags(2, ll, unix.IFA_F_TENTATIVE|unix.IFA_F_PERMANENT) // repeat
	s.addrs <- addrMsgFlags(2, ll, unix.IFA_F_PERMANENT)
	s.addrs <- addrMsgFlags(2, ll, unix.IFA_F_PERMANENT) // lifetime update
	s.addrs <- addrMsgFlags(2, vip, unix.IFA_F_TENTATIVE)
	s.addrs <- addrMsgFlags(2, vip, unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED)
	s.addrs <- addrMsg(false, 2, vip)
	s.addrs <- addrMsgFlags(2, vip, unix.IFA_F_NODAD)
	expect(t, events,
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix(ll), State: AddrTentative},
		Event{Kind: AddrChanged, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix(ll), State: AddrReady},
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix(vip), State: AddrTentative},
		Event{Kind: AddrChanged, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix(vip), State: AddrDADFailed},
		Event{Kind: AddrRemoved, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix(vip)},
		Event{Kind: AddrAdded, Link: "eth0", Index: 2, Prefix: netip.MustParsePrefix(vip), State: AddrReady},
	)
}
