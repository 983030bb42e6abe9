package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// ipv6Options is Options.IPv6 and Options.DAD as the lab keeps them.
type ipv6Options struct {
	on  bool
	dad int
}

// linkLocalWait bounds how long New waits for the link-local addresses
// when DAD is off (they appear as soon as the link has carrier).
const linkLocalWait = 5 * time.Second

func vrrpGroup6() net.IP { return net.ParseIP("ff02::12") } // RFC 5798 §5.1.2.2

func addrFamily(a netip.Addr) int {
	if a.Is4() || a.Is4In6() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// setupIPv6 prepares eth0 of e, still down, for IPv6: DAD as the options
// say, no router discovery (the lab has no router), addresses kept when
// the link goes down (as IPv4 keeps them), and the host's 2001:db8::
// address.
func (l *Lab) setupIPv6(e *endpoint, eth0 netlink.Link) error {
	if !l.ipv6.on {
		return nil
	}
	dad := "0"
	if l.ipv6.dad > 0 {
		dad = "1"
	}
	set := []struct{ key, value string }{
		// default: interfaces made later (FRR's macvlan) behave alike.
		{"all/accept_dad", dad}, {"default/accept_dad", dad}, {"eth0/accept_dad", dad},
		{"all/accept_ra", "0"}, {"default/accept_ra", "0"}, {"eth0/accept_ra", "0"},
		{"default/autoconf", "0"}, {"eth0/autoconf", "0"},
		{"eth0/keep_addr_on_down", "1"},
		{"eth0/disable_ipv6", "0"},
	}
	if l.ipv6.dad > 0 {
		set = append(set, struct{ key, value string }{"eth0/dad_transmits", strconv.Itoa(l.ipv6.dad)})
	}
	err := inNetns(e.ns, func() error {
		for _, s := range set {
			p := filepath.Join("/proc/sys/net/ipv6/conf", s.key)
			if err := os.WriteFile(p, []byte(s.value), 0o644); err != nil {
				return fmt.Errorf("sysctl %s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("IPv6 settings in %s: %w", e.name, err)
	}
	e.addr6 = hostAddr6(e.addr.As4()[3])
	pfx := netip.PrefixFrom(e.addr6, LANPrefix6().Bits())
	// No DAD for the host's own global address: the lab made it unique,
	// and only link-local addresses are meant to be tentative.
	if err := e.h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixIPNet(pfx), Flags: unix.IFA_F_NODAD}); err != nil {
		return fmt.Errorf("IPv6 address on %s: %w", e.name, err)
	}
	return nil
}

func (l *Lab) endpoints() []*endpoint {
	eps := append([]*endpoint{}, l.nodes...)
	if l.client != nil {
		eps = append(eps, l.client)
	}
	if l.stranger != nil {
		eps = append(eps, l.stranger)
	}
	return eps
}

// waitLinkLocals records each eth0's link-local address; without DAD it
// also waits until they are usable, so a lab is ready when New returns.
func (l *Lab) waitLinkLocals(ctx context.Context) error {
	if !l.ipv6.on {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, linkLocalWait)
	defer cancel()
	for _, e := range l.endpoints() {
		for {
			ll, tentative, err := linkLocalOf(e)
			if err != nil {
				return err
			}
			if ll.IsValid() && (!tentative || l.ipv6.dad > 0) {
				e.linkLocal = ll
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("no usable link-local address on eth0 in %s: %w", e.name, ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return nil
}

// linkLocalOf is the fe80:: address of e's eth0 and whether it is still
// tentative (duplicate address detection running).
func linkLocalOf(e *endpoint) (netip.Addr, bool, error) {
	eth0, err := e.h.LinkByName("eth0")
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("eth0 in %s: %w", e.name, err)
	}
	addrs, err := e.h.AddrList(eth0, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("addresses in %s: %w", e.name, err)
	}
	for _, ad := range addrs {
		if a, ok := netip.AddrFromSlice(ad.IP); ok && a.IsLinkLocalUnicast() {
			return a, ad.Flags&unix.IFA_F_TENTATIVE != 0, nil
		}
	}
	return netip.Addr{}, false, nil
}

func (l *Lab) mustIPv6() {
	if !l.ipv6.on {
		panic("lab: built without Options.IPv6")
	}
}

// NodeAddr6 is node i's IPv6 address (2001:db8::11 for n1); it panics
// when the lab was built without Options.IPv6.
func (l *Lab) NodeAddr6(i int) netip.Addr {
	l.mustIPv6()
	return l.node(i).addr6
}

// NodeLinkLocal is the link-local address of node i's eth0, the source of
// its IPv6 adverts.
func (l *Lab) NodeLinkLocal(i int) netip.Addr {
	l.mustIPv6()
	return l.node(i).linkLocal
}

// NodeLinkLocalTentative reports whether node i's link-local address is
// still tentative now.
func (l *Lab) NodeLinkLocalTentative(i int) (bool, error) {
	l.mustIPv6()
	_, tentative, err := linkLocalOf(l.node(i))
	return tentative, err
}

// ClientIPv6 is the client's IPv6 address, ClientAddr6.
func (l *Lab) ClientIPv6() netip.Addr {
	l.mustIPv6()
	return l.client.addr6
}

// nodeByAddr6 maps an IPv6 address to its node: eth0's own addresses
// first, then any address of the node's namespace (an FRR macvlan sends
// from a link-local of its own).
func (l *Lab) nodeByAddr6(a netip.Addr) int {
	a = a.WithZone("")
	for i, e := range l.nodes {
		if e.addr6 == a || e.linkLocal == a {
			return i + 1
		}
	}
	for i, e := range l.nodes {
		addrs, err := e.h.AddrList(nil, netlink.FAMILY_V6)
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if b, ok := netip.AddrFromSlice(ad.IP); ok && b == a {
				return i + 1
			}
		}
	}
	return 0
}

// openAdvertCapture6 is openAdvertCapture for an IPv6 VIP: a raw protocol
// 112 socket in the client namespace joined to ff02::12.
func (m *Monitor) openAdvertCapture6() error {
	return inNetns(m.lab.ClientNetns(), func() error {
		c, err := net.ListenPacket(fmt.Sprintf("ip6:%d", vrrpProto), "::")
		if err != nil {
			return fmt.Errorf("IPv6 advert capture socket: %w", err)
		}
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			err = ipv6.NewPacketConn(c).JoinGroup(ifi, &net.IPAddr{IP: vrrpGroup6()})
		}
		if err != nil {
			c.Close()
			return fmt.Errorf("join ff02::12 in client: %w", err)
		}
		m.advert = c.(*net.IPConn)
		enableStamps(m.advert)
		return nil
	})
}

// LinkLocalWatch records, per node, when eth0's link-local address was
// seen leaving the tentative state (netlink address events), to check a
// daemon's first advert against it.
type LinkLocalWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	ready []time.Time // by node-1; zero: not seen usable yet
}

// WatchLinkLocals starts a LinkLocalWatch; it returns once every node's
// subscription is open and its current state recorded.
func (l *Lab) WatchLinkLocals(ctx context.Context) (*LinkLocalWatch, error) {
	l.mustIPv6()
	ctx, cancel := context.WithCancel(ctx)
	w := &LinkLocalWatch{cancel: cancel, ready: make([]time.Time, l.Nodes())}
	for i := 1; i <= l.Nodes(); i++ {
		ch := make(chan netlink.AddrUpdate, 64)
		done := make(chan struct{})
		ns := l.NodeNetns(i)
		if err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{Namespace: &ns}); err != nil {
			close(done)
			w.Close()
			return nil, fmt.Errorf("lab: subscribe addresses in n%d: %w", i, err)
		}
		// Subscribed first, listed second: nothing is missed.
		if tentative, err := l.NodeLinkLocalTentative(i); err == nil && !tentative {
			w.set(i, time.Now())
		}
		w.wg.Go(func() {
			defer func() {
				close(done)
				for range ch {
				}
			}()
			for {
				select {
				case <-ctx.Done():
					return
				case u, ok := <-ch:
					if !ok {
						return
					}
					at := time.Now()
					a, ok := netip.AddrFromSlice(u.LinkAddress.IP)
					if ok && a.IsLinkLocalUnicast() && u.NewAddr && u.Flags&unix.IFA_F_TENTATIVE == 0 && u.Flags&unix.IFA_F_DADFAILED == 0 {
						w.set(i, at)
					}
				}
			}
		})
	}
	return w, nil
}

func (w *LinkLocalWatch) set(i int, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ready[i-1].IsZero() {
		w.ready[i-1] = at
	}
}

// Ready is when node i's link-local address was first seen usable.
func (w *LinkLocalWatch) Ready(i int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready[i-1], !w.ready[i-1].IsZero()
}

// Close stops the watch; it is idempotent.
func (w *LinkLocalWatch) Close() {
	w.cancel()
	w.wg.Wait()
}

// DropIPv6Adverts drops every VRRP advert over IPv6 (next header 112) on
// the bridge, between all hosts, while IPv4 adverts, ARP, NDP and data flow:
// one family's election cut off.
func (f *Filter) DropIPv6Adverts(ctx context.Context) error {
	return f.add(ctx, fmt.Sprintf("ip6 nexthdr %d counter drop", vrrpProto))
}

// DropIPv4Adverts drops every VRRP advert over IPv4 on the bridge: the
// other family's election cut off.
func (f *Filter) DropIPv4Adverts(ctx context.Context) error {
	return f.add(ctx, fmt.Sprintf("ip protocol %d counter drop", vrrpProto))
}

// SetTTLFrom rewrites the TTL of the IPv4 adverts node i sends to ttl, as
// if they had crossed 255-ttl routers (the bridge updates the header
// checksum). It counts the packets it rewrote, so Dropped includes them.
func (f *Filter) SetTTLFrom(ctx context.Context, i, ttl int) error {
	if ttl < 1 || ttl > 255 {
		return fmt.Errorf("lab: ttl %d: want 1..255", ttl)
	}
	return f.add(ctx, fmt.Sprintf("iifname %q ip protocol %d counter ip ttl set %d", f.lab.node(i).port, vrrpProto, ttl))
}

// errNoIPv6 is returned by IPv6 helpers on a lab built without IPv6.
var errNoIPv6 = errors.New("lab: built without Options.IPv6")

// benchVariant is how benchGroup runs one daemon kind: the label of its
// column, the lab it needs, and whether it has a steady window.
type benchVariant struct {
	label    string
	opts     Options
	noSteady bool
}

func ipv6Variant(kind DaemonKind) benchVariant {
	return benchVariant{label: IPv6Label(kind), opts: Options{IPv6: true}, noSteady: true}
}

// ipv6Spec is spec with the group's VIP replaced by DefaultVIP6.
func ipv6Spec(spec DaemonSpec) DaemonSpec {
	spec.Group.VIP = DefaultVIP6()
	return spec
}
