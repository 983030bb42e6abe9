package daemon

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// fakeLAN connects fake VRRP sockets: what one writes, the others on the
// same LAN read, as a switch would deliver it.
type fakeLAN struct {
	mu     sync.Mutex
	conns  []*fakeConn
	byVRID map[uint8]int // adverts sent, by VRID
	hosts  []*fakeHost   // whose ARP monitors hear each other's announcements
	// noIPv6: adverts over IPv6 are filtered (a switch that drops them).
	noIPv6 bool
	// advertDelay holds every advert back this long (a loaded receiver
	// whose VRRP socket is read after its ARP socket); set before start.
	advertDelay time.Duration
	delayed     []func() // the adverts held back, oldest first
	// quiet: sockets can set adverts aside (transport.Quieter), as the
	// real IPv4 one can; set before start.
	quiet bool
	// quietRoom: how many patterns a socket takes (0: any number).
	quietRoom int
	// lastFrom is when each source's last advert went out.
	lastFrom map[netip.Addr]time.Time
	// sentAt: when each advert went out, by VRID (with recordSends).
	recordSends bool
	sentAt      map[uint8][]time.Time
}

// blocked: the LAN filters adverts from src; l.mu must be held.
func (l *fakeLAN) blocked(src netip.Addr) bool { return l.noIPv6 && !src.Is4() }

type fakePacket struct {
	b    []byte
	info transport.PacketInfo
}

type fakeConn struct {
	lan      *fakeLAN
	src      netip.Addr
	in       chan fakePacket
	mu       sync.Mutex
	deadline chan struct{} // closed when a past deadline is set
	closed   chan struct{}
	cut      *atomic.Bool // the host's link is down: nothing in or out
	// unicast: the socket joined no group, so it hears only what is sent
	// to its own address.
	unicast bool
	// With the LAN's quiet: the patterns, the adverts set aside, and how
	// many adverts were read at once (each a wake-up of a real daemon).
	patterns []transport.QuietPattern
	aside    []fakeAside
	readNow  atomic.Int64
	// filterChanges counts SetQuiet calls (each a compile of the
	// socket's programs in the kernel).
	filterChanges atomic.Int64
	// onChange, when set (under the LAN's mu), is called at each SetQuiet.
	onChange func()
}

type fakeAside struct {
	p  fakePacket
	at time.Time
}

// quietFakeConn is a fakeConn that is a transport.Quieter.
type quietFakeConn struct{ *fakeConn }

func (c quietFakeConn) SetQuiet(ps []transport.QuietPattern) (int, error) {
	c.filterChanges.Add(1)
	c.lan.mu.Lock()
	onChange := c.onChange
	c.lan.mu.Unlock()
	if onChange != nil {
		onChange()
	}
	for _, p := range ps {
		if len(p.Payload) > transport.MaxQuietPayloadFrom(p.Src) {
			return 0, fmt.Errorf("fake kernel: %v with %d bytes cannot be set aside", p.Src, len(p.Payload))
		}
	}
	c.lan.mu.Lock()
	defer c.lan.mu.Unlock()
	n := len(ps)
	if c.lan.quietRoom > 0 {
		n = min(n, c.lan.quietRoom)
	}
	c.patterns = slices.Clone(ps[:n])
	return n, nil
}

func (c quietFakeConn) ReadQuiet(fn func([]byte, transport.PacketInfo, time.Time)) error {
	c.lan.mu.Lock()
	aside := c.aside
	c.aside = nil
	c.lan.mu.Unlock()
	for _, a := range aside {
		fn(a.p.b, a.p.info, a.at)
	}
	return nil
}

// setAside: c keeps p aside; l.mu is held.
func (c *fakeConn) setAside(p fakePacket) bool {
	for _, q := range c.patterns {
		if q.Src == p.info.Src && p.info.TTL == 255 && string(q.Payload) == string(p.b) {
			c.aside = append(c.aside, fakeAside{p, time.Now()})
			return true
		}
	}
	return false
}

// listenConn is listen as the daemon sees it: a Quieter on a quiet LAN.
func (l *fakeLAN) listenConn(src netip.Addr, cut *atomic.Bool, unicast bool) transport.Conn {
	c := l.listen(src, cut, unicast)
	if l.quiet {
		return quietFakeConn{c}
	}
	return c
}

func (l *fakeLAN) listen(src netip.Addr, cut *atomic.Bool, unicast bool) *fakeConn {
	c := &fakeConn{lan: l, src: src, in: make(chan fakePacket, 1024), deadline: make(chan struct{}), closed: make(chan struct{}), cut: cut, unicast: unicast}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c
}

// inject delivers a packet as if from src: to the group's members, or to
// the socket of the destination address.
func (l *fakeLAN) inject(b []byte, src, dst netip.Addr, ttl int) {
	if l.advertDelay > 0 {
		// A wire keeps the order: each timer delivers the oldest packet
		// held back, whichever of timers due together runs first.
		b = slices.Clone(b)
		l.mu.Lock()
		l.delayed = append(l.delayed, func() { l.deliver(b, src, dst, ttl) })
		l.mu.Unlock()
		time.AfterFunc(l.advertDelay, func() {
			l.mu.Lock()
			next := l.delayed[0]
			l.delayed = l.delayed[1:]
			l.mu.Unlock()
			next()
		})
		return
	}
	l.deliver(b, src, dst, ttl)
}

// advertise sends, from a host outside the test's nodes, the advert of a
// Master of VRID 51 at prio holding testVIP.
func (l *fakeLAN) advertise(from netip.Addr, prio uint8) {
	adv, _ := (&vrrp.Advertisement{VRID: 51, Priority: prio, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, from, vrrp.GroupIPv4)
	l.inject(adv, from, vrrp.GroupIPv4, 255)
}

func (l *fakeLAN) deliver(b []byte, src, dst netip.Addr, ttl int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(b) > 1 {
		if l.byVRID == nil {
			l.byVRID = map[uint8]int{}
		}
		l.byVRID[b[1]]++
	}
	if l.lastFrom == nil {
		l.lastFrom = map[netip.Addr]time.Time{}
	}
	l.lastFrom[src] = time.Now()
	if l.recordSends && len(b) > 1 {
		if l.sentAt == nil {
			l.sentAt = map[uint8][]time.Time{}
		}
		l.sentAt[b[1]] = append(l.sentAt[b[1]], time.Now())
	}
	for _, c := range l.conns {
		if c.src == src || c.cut.Load() || c.src.Is4() != src.Is4() || l.blocked(src) {
			continue
		}
		if dst.IsMulticast() && c.unicast || !dst.IsMulticast() && dst != c.src {
			continue
		}
		p := fakePacket{b: slices.Clone(b), info: transport.PacketInfo{Src: src, Dst: dst, TTL: ttl, IfIndex: 2}}
		if c.setAside(p) {
			continue
		}
		select {
		case c.in <- p:
			c.readNow.Add(1)
		default: // a full socket buffer drops, as the kernel does
		}
	}
}

func (c *fakeConn) ReadFrom(b []byte) (int, transport.PacketInfo, error) {
	c.mu.Lock()
	dl := c.deadline
	c.mu.Unlock()
	select {
	case p := <-c.in:
		return copy(b, p.b), p.info, nil
	case <-dl:
		return 0, transport.PacketInfo{}, os.ErrDeadlineExceeded
	case <-c.closed:
		return 0, transport.PacketInfo{}, net.ErrClosed
	}
}

func (c *fakeConn) WriteTo(b []byte, dst netip.Addr) error {
	if c.cut.Load() {
		return nil
	}
	c.lan.inject(b, c.src, dst, 255)
	return nil
}

func (c *fakeConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.IsZero() && !t.After(time.Now()) {
		select {
		case <-c.deadline:
		default:
			close(c.deadline)
		}
	} else {
		c.deadline = make(chan struct{})
	}
	return nil
}

func (c *fakeConn) Close() error {
	c.lan.mu.Lock()
	c.lan.conns = slices.DeleteFunc(c.lan.conns, func(x *fakeConn) bool { return x == c })
	c.lan.mu.Unlock()
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

// fakeHost is one host: its links, addresses and ARP announcements.
type fakeHost struct {
	mu        sync.Mutex
	ifname    string
	exists    bool
	up        bool
	cut       atomic.Bool
	addr      netip.Addr
	vips      map[netip.Prefix]bool
	announce  map[netip.Addr]int
	events    chan netif.Event
	lan       *fakeLAN
	claims    chan arp.Claim // ARP packets of other hosts, as the monitor would see them
	probes    int
	probeFrom netip.Addr          // the sender address of the last probe
	opened    []transport.Options // every VRRP socket opened, in order
	noAddr    bool                // the interface has no IPv4 address
	tentative bool                // its link-local address is in DAD
}

type fakeMonitor struct{ claims chan arp.Claim }

func (m fakeMonitor) Run(ctx context.Context, onClaim func(arp.Claim)) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-m.claims:
			onClaim(c)
		}
	}
}

func (m fakeMonitor) Close() error { return nil }

func newFakeHost(lan *fakeLAN, addr string) *fakeHost {
	h := &fakeHost{
		ifname: "eth0", exists: true, up: true, addr: netip.MustParseAddr(addr),
		vips: map[netip.Prefix]bool{}, announce: map[netip.Addr]int{},
		events: make(chan netif.Event, 64), lan: lan, claims: make(chan arp.Claim, 16),
	}
	lan.mu.Lock()
	lan.hosts = append(lan.hosts, h)
	lan.mu.Unlock()
	return h
}

func (h *fakeHost) mac() net.HardwareAddr {
	return net.HardwareAddr{2, 0, 0, 0, 0, h.addr.As4()[3]}
}

// hear delivers a gratuitous ARP of vip from h to every other host's
// monitor, as a switch floods it.
func (l *fakeLAN) hear(from *fakeHost, vip netip.Addr) {
	l.mu.Lock()
	hosts := slices.Clone(l.hosts)
	l.mu.Unlock()
	for _, o := range hosts {
		if o == from || o.claims == nil {
			continue
		}
		select {
		case o.claims <- arp.Claim{IP: vip, MAC: from.mac(), Op: arp.OperationReply, Target: vip, At: time.Now()}:
		default:
		}
	}
}

func (h *fakeHost) env() Env {
	return Env{
		ListenARP: func(ifi *net.Interface) (ARPMonitor, error) { return fakeMonitor{h.claims}, nil },
		Links:     h,
		ListenVRRP: func(ifi *net.Interface, opts transport.Options) (transport.Conn, error) {
			h.mu.Lock()
			h.opened = append(h.opened, opts)
			h.mu.Unlock()
			return h.lan.listenConn(opts.Source, &h.cut, opts.Unicast), nil
		},
		DialARP: func(ifi *net.Interface) (Announcer, error) { return fakeAnnouncer{h}, nil },
	}
}

func (h *fakeHost) Link(name string) (netif.LinkInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if name != h.ifname || !h.exists {
		return netif.LinkInfo{}, netif.ErrNoLink
	}
	return netif.LinkInfo{Name: name, Index: 2, Up: h.up && !h.cut.Load(), HardwareAddr: h.mac()}, nil
}

func (h *fakeHost) PrimaryIPv4(ifname string, exclude []netip.Prefix) (netip.Addr, error) {
	if _, err := h.Link(ifname); err != nil {
		return netip.Addr{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.noAddr {
		return netip.Addr{}, netif.ErrNoAddress
	}
	return h.addr, nil
}

// sentBy counts the adverts of vrid sent on the LAN so far.
func (l *fakeLAN) sentBy(vrid uint8) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byVRID[vrid]
}

func (h *fakeHost) AddVIP(ifname string, vip netip.Prefix, label string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.vips[vip] {
		h.vips[vip] = true
		h.emit(netif.Event{Kind: netif.AddrAdded, Link: ifname, Index: 2, Prefix: vip})
	}
	return nil
}

func (h *fakeHost) AdoptVIP(ifname string, vip netip.Prefix) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.vips[vip], nil
}

func (h *fakeHost) RemoveVIP(ifname string, vip netip.Prefix) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.vips[vip] {
		delete(h.vips, vip)
		h.emit(netif.Event{Kind: netif.AddrRemoved, Link: ifname, Index: 2, Prefix: vip})
	}
	return nil
}

// emit must be called with h.mu held.
func (h *fakeHost) emit(ev netif.Event) {
	ev.At = time.Now()
	select {
	case h.events <- ev:
	default:
	}
}

func (h *fakeHost) Watch(ctx context.Context, events chan<- netif.Event) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-h.events:
			select {
			case events <- ev:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// setCarrier cuts or restores the host's cable.
func (h *fakeHost) setCarrier(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cut.Store(!on)
	kind := netif.LinkDown
	if on {
		kind = netif.LinkUp
	}
	h.emit(netif.Event{Kind: kind, Link: h.ifname, Index: 2, Up: on})
}

// deleteVIPBehindOurBack removes an address as `ip addr del` would.
func (h *fakeHost) deleteVIPBehindOurBack(vip netip.Prefix) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.vips, vip)
	h.emit(netif.Event{Kind: netif.AddrRemoved, Link: h.ifname, Index: 2, Prefix: vip})
}

func (h *fakeHost) holds(vip netip.Prefix) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.vips[vip]
}

func (h *fakeHost) announced(vip netip.Addr) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.announce[vip]
}

type fakeAnnouncer struct{ h *fakeHost }

func (a fakeAnnouncer) Announce(vip netip.Addr) error {
	if a.h.cut.Load() {
		return nil
	}
	a.h.mu.Lock()
	a.h.announce[vip]++
	a.h.mu.Unlock()
	a.h.lan.hear(a.h, vip)
	return nil
}

func (a fakeAnnouncer) Probe(vip, from netip.Addr) error {
	a.h.mu.Lock()
	defer a.h.mu.Unlock()
	a.h.probes++
	a.h.probeFrom = from
	return nil
}

func (a fakeAnnouncer) Close() error { return nil }

// sockets returns the options of every VRRP socket opened so far.
func (h *fakeHost) sockets() []transport.Options {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.opened)
}

// LinkLocal is the host's IPv6 link-local address, fe80::<last byte of its
// IPv4 address>, tentative while h.tentative is set.
func (h *fakeHost) LinkLocal(ifname string) (netip.Addr, bool, error) {
	if _, err := h.Link(ifname); err != nil {
		return netip.Addr{}, false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var b [16]byte
	b[0], b[1], b[15] = 0xfe, 0x80, h.addr.As4()[3]
	return netip.AddrFrom16(b), h.tentative, nil
}

// hasVIP reports whether vip is on the host's interface now.
func (h *fakeHost) hasVIP(vip netip.Prefix) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.vips[vip]
}
