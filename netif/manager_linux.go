package netif

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// dumpRetries bounds how often a dump interrupted by a concurrent change
// (NLM_F_DUMP_INTR) is repeated before its possibly stale result is used.
const dumpRetries = 5

// A Manager adds and removes VIPs and watches addresses and links in one
// network namespace. Its methods are safe for concurrent use.
type Manager struct {
	log *slog.Logger
	h   *netlink.Handle
	// reqs makes the requests on h: see requests_linux.go.
	reqs *requests
	// ns is our own duplicate of the WithNamespace handle, or netns.None()
	// for the process's namespace (then no setns is ever done).
	ns  netns.NsHandle
	src source

	// minBackoff and maxBackoff pace Watch's re-subscriptions; tests shorten them.
	minBackoff, maxBackoff time.Duration

	mu   sync.Mutex
	vips map[netip.Addr]struct{} // every VIP seen, so Link can leave them out
	// links caches the links AddVIP adds to: a takeover is then one
	// netlink request, not a lookup and an add.
	links map[string]netlink.Link
	// added are the addresses this Manager added, with the label it gave
	// them; listed are those given with WithOwned.
	added  map[OwnedAddr]string
	listed map[OwnedAddr]struct{}
	strict bool // see WithOwned

	// closed stops use after Close: a closed netlink.Handle would quietly
	// open sockets in whatever namespace the calling thread is in.
	closed atomic.Bool
}

// errClosed reports use of a closed Manager.
var errClosed = errors.New("netif: manager closed")

// New returns a Manager for the process's network namespace, or the one
// given with WithNamespace. A nil log discards messages.
func New(log *slog.Logger, opts ...Option) (*Manager, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{
		log:        log,
		ns:         netns.None(),
		minBackoff: 100 * time.Millisecond,
		maxBackoff: 5 * time.Second,
		vips:       make(map[netip.Addr]struct{}),
		added:      make(map[OwnedAddr]string),
		listed:     make(map[OwnedAddr]struct{}),
		strict:     o.strict,
	}
	for _, p := range o.vips {
		m.remember(p)
	}
	for _, a := range o.owned {
		m.listed[OwnedAddr{Interface: a.Interface, Prefix: unmapPrefix(a.Prefix)}] = struct{}{}
	}
	if o.hasNS {
		if !o.ns.IsOpen() {
			return nil, errors.New("netif: namespace handle is not open")
		}
		// A duplicate keeps the namespace reachable however long the
		// caller keeps its own handle.
		fd, err := unix.FcntlInt(uintptr(o.ns), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("netif: duplicating namespace handle: %w", err)
		}
		m.ns = netns.NsHandle(fd)
	}
	h, err := netlink.NewHandleAt(m.ns, unix.NETLINK_ROUTE)
	if err != nil {
		m.ns.Close()
		return nil, fmt.Errorf("netif: opening netlink: %w", err)
	}
	m.h = h
	m.reqs = newRequests()
	m.src = &nlSource{m: m}
	return m, nil
}

// Close releases the netlink socket and the namespace handle. Call it after
// Watch has returned and when no other call is in progress.
func (m *Manager) Close() error {
	if m.closed.Swap(true) {
		return nil
	}
	m.reqs.close()
	m.h.Close()
	if !m.ns.IsOpen() {
		return nil
	}
	return m.ns.Close()
}

// Link returns a snapshot of the named link.
func (m *Manager) Link(name string) (LinkInfo, error) {
	l, err := m.link(name)
	if err != nil {
		return LinkInfo{}, err
	}
	addrs, err := m.addrList(l, netlink.FAMILY_V4)
	if err != nil {
		return LinkInfo{}, fmt.Errorf("netif: listing addresses of %s: %w", name, err)
	}
	a := l.Attrs()
	info := LinkInfo{
		Name:         a.Name,
		Index:        a.Index,
		HardwareAddr: a.HardwareAddr,
		Up:           linkUp(a),
	}
	label := vipLabel(a.Name)
	for _, ad := range addrs {
		p, ok := prefixFromIPNet(ad.IPNet)
		if !ok || !p.Addr().Is4() {
			continue
		}
		if (label != "" && ad.Label == label) || m.isVIP(p.Addr()) {
			continue
		}
		info.IPv4 = append(info.IPv4, p)
	}
	return info, nil
}

// PrimaryIPv4 returns the first IPv4 address of the link, in kernel order,
// that is neither in exclude nor a VIP this Manager knows of. It fails with
// ErrNoAddress when there is none.
func (m *Manager) PrimaryIPv4(ifname string, exclude []netip.Prefix) (netip.Addr, error) {
	info, err := m.Link(ifname)
	if err != nil {
		return netip.Addr{}, err
	}
next:
	for _, p := range info.IPv4 {
		// Compare addresses, not prefixes: a VIP written as /24 must not
		// exclude its whole subnet.
		for _, x := range exclude {
			if x.Addr().Unmap() == p.Addr() {
				continue next
			}
		}
		return p.Addr(), nil
	}
	return netip.Addr{}, &noAddressError{what: "IPv4 address", ifname: ifname}
}

// LinkLocal returns the link's IPv6 link-local address, without zone, the
// source of IPv6 adverts and NDP messages. tentative is true while
// duplicate address detection runs (or waits for carrier): the kernel
// refuses to send from the address until then, and Watch reports
// AddrChanged with State AddrReady when it ends. With several link-local
// addresses a ready one wins. A link-local address that failed detection
// (another host has it) is returned with an error matching ErrDADFailed;
// none at all fails with ErrNoAddress.
func (m *Manager) LinkLocal(ifname string) (addr netip.Addr, tentative bool, err error) {
	l, err := m.link(ifname)
	if err != nil {
		return netip.Addr{}, false, err
	}
	addrs, err := m.addrList(l, netlink.FAMILY_V6)
	if err != nil {
		return netip.Addr{}, false, fmt.Errorf("netif: listing addresses of %s: %w", ifname, err)
	}
	best := addrStateInvalid
	for _, a := range addrs {
		p, ok := prefixFromIPNet(a.IPNet)
		if !ok || !p.Addr().IsLinkLocalUnicast() {
			continue
		}
		if st := stateOf(a.Flags); best == addrStateInvalid || preference(st) > preference(best) {
			addr, best = p.Addr(), st
		}
	}
	switch best {
	case AddrReady:
		return addr, false, nil
	case AddrTentative:
		return addr, true, nil
	case AddrDADFailed:
		return addr, false, fmt.Errorf("netif: link-local address %v on %s: %w", addr, ifname, ErrDADFailed)
	}
	return netip.Addr{}, false, &noAddressError{what: "IPv6 link-local address", ifname: ifname}
}

// VIPState returns the state of the address vip (address and prefix
// length) on the link, or fails with ErrNoAddress when it is not there. A
// VIP in AddrDADFailed state does not work; AddVIP replaces it.
func (m *Manager) VIPState(ifname string, vip netip.Prefix) (AddrState, error) {
	a, err := m.find(ifname, unmapPrefix(vip))
	if err != nil {
		return addrStateInvalid, err
	}
	return stateOf(a.Flags), nil
}

// find returns the address equal to p on the link.
func (m *Manager) find(ifname string, p netip.Prefix) (netlink.Addr, error) {
	l, err := m.link(ifname)
	if err != nil {
		return netlink.Addr{}, err
	}
	addrs, err := m.addrList(l, familyOf(p))
	if err != nil {
		return netlink.Addr{}, fmt.Errorf("netif: listing addresses of %s: %w", ifname, err)
	}
	for _, a := range addrs {
		if q, ok := prefixFromIPNet(a.IPNet); ok && q == p {
			return a, nil
		}
	}
	return netlink.Addr{}, &noAddressError{what: "address " + p.String(), ifname: ifname}
}

// stateOf reads an address's state from its IFA flags. A failed address
// keeps the tentative flag too.
func stateOf(flags int) AddrState {
	switch {
	case flags&unix.IFA_F_DADFAILED != 0:
		return AddrDADFailed
	case flags&unix.IFA_F_TENTATIVE != 0:
		return AddrTentative
	}
	return AddrReady
}

// preference orders states for LinkLocal: ready, then tentative (it may
// become ready), then failed.
func preference(s AddrState) int {
	switch s {
	case AddrReady:
		return 3
	case AddrTentative:
		return 2
	case AddrDADFailed:
		return 1
	}
	return 0
}

// vipd's marks on an IPv6 VIP, which has no label: no duplicate address
// detection (the Master is the only owner by election, and the VIP must
// answer at once), and a preferred lifetime of 0 with an infinite valid
// one, so the kernel never picks the VIP as the source of the host's own
// connections (it is deprecated, RFC 6724 rule 3) but still accepts
// traffic to it.
const (
	ipv6VIPFlags     = unix.IFA_F_NODAD
	lifetimeInfinite = 0xffffffff // INFINITY_LIFE_TIME
)

// hasVIPMarks reports whether an IPv6 address carries vipd's marks, which
// is how RemoveVIP tells a VIP left by an earlier vipd from an
// administrator's address (those do not skip detection and are preferred).
func hasVIPMarks(a netlink.Addr) bool {
	return a.Flags&ipv6VIPFlags == ipv6VIPFlags && (a.PreferedLft == 0 || a.Flags&unix.IFA_F_DEPRECATED != 0)
}

// AddVIP ensures vip is configured on the link. An address that already
// exists counts as success. An empty label means "<ifname>:vip" when that
// fits in 15 characters and no label otherwise; labels apply to IPv4 only.
func (m *Manager) AddVIP(ifname string, vip netip.Prefix, label string) error {
	if !vip.IsValid() {
		return fmt.Errorf("netif: invalid VIP %v", vip)
	}
	vip = unmapPrefix(vip)
	if vip.Addr().Is4() {
		if label == "" {
			label = vipLabel(ifname)
		}
		// The kernel rejects longer labels with ERANGE; iproute2 expects
		// the interface name in front.
		if label != "" && (len(label) > maxLabelLen || !strings.HasPrefix(label, ifname)) {
			return fmt.Errorf("netif: label %q must start with %q and have at most %d characters", label, ifname, maxLabelLen)
		}
	} else {
		label = ""
	}
	l, err := m.cachedLink(ifname)
	if err != nil {
		return err
	}
	m.remember(vip)
	addr := &netlink.Addr{IPNet: ipNet(vip), Label: label}
	if vip.Bits() < vip.Addr().BitLen() {
		// The subnet route belongs to the host's own address; a VIP moves
		// between hosts and must not bring or take that route with it.
		addr.Flags |= unix.IFA_F_NOPREFIXROUTE
	}
	if vip.Addr().Is6() {
		addr.Flags |= ipv6VIPFlags
		addr.PreferedLft, addr.ValidLft = 0, lifetimeInfinite
	}
	err = askErr(m, func() error { return m.h.AddrAdd(l, addr) })
	if errors.Is(err, unix.ENODEV) {
		// The cached link is gone (recreated with another index): look
		// it up again once.
		m.forgetLink(ifname)
		if l, err = m.cachedLink(ifname); err != nil {
			return err
		}
		err = askErr(m, func() error { return m.h.AddrAdd(l, addr) })
	}
	if errors.Is(err, unix.EEXIST) && vip.Addr().Is6() {
		err = m.replaceFailed(l, ifname, vip, addr)
	}
	if err == nil && vip.Addr().Is6() {
		m.waitLocal(vip.Addr())
	}
	switch {
	case err == nil:
		// EEXIST is not ours: the address was there before.
		m.mu.Lock()
		m.added[OwnedAddr{Interface: ifname, Prefix: vip}] = label
		m.mu.Unlock()
		return nil
	case errors.Is(err, unix.EEXIST):
		return nil
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("netif: adding %v to %s: %w", vip, ifname, ErrNoLink)
	}
	return fmt.Errorf("netif: adding %v to %s: %w", vip, ifname, err)
}

// replaceFailed handles an IPv6 VIP that AddVIP found already there: one
// that failed duplicate address detection (added by someone else without
// nodad while another host had it) works for nobody, so it is replaced
// with vipd's; any other stays, and EEXIST is returned.
func (m *Manager) replaceFailed(l netlink.Link, ifname string, vip netip.Prefix, addr *netlink.Addr) error {
	old, err := m.find(ifname, vip)
	if err != nil || stateOf(old.Flags) != AddrDADFailed {
		return unix.EEXIST
	}
	m.log.Warn("replacing a VIP that failed duplicate address detection", "interface", ifname, "vip", vip)
	if err := askErr(m, func() error { return m.h.AddrDel(l, &netlink.Addr{IPNet: ipNet(vip)}) }); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return err
	}
	return askErr(m, func() error { return m.h.AddrAdd(l, addr) })
}

// RemoveVIP ensures vip is not configured on the link, as far as it is
// vipd's to remove. A missing address or a missing link counts as success.
// An address equal to vip that vipd did not add (another label; see
// WithOwned for interfaces that cannot carry vipd's label) stays, and the
// error, a *ForeignAddressError, names it and matches ErrNotOurs.
func (m *Manager) RemoveVIP(ifname string, vip netip.Prefix) error {
	if !vip.IsValid() {
		return fmt.Errorf("netif: invalid VIP %v", vip)
	}
	vip = unmapPrefix(vip)
	m.remember(vip)
	l, err := m.link(ifname)
	if errors.Is(err, ErrNoLink) {
		return nil
	}
	if err != nil {
		return err
	}
	addrs, err := m.addrList(l, familyOf(vip))
	if err != nil {
		return fmt.Errorf("netif: listing addresses of %s: %w", ifname, err)
	}
	for _, a := range addrs {
		if p, ok := prefixFromIPNet(a.IPNet); !ok || p != vip {
			continue
		}
		if foreign := m.foreign(ifname, vip, a); foreign != nil {
			return foreign
		}
		// With the label in the request the kernel deletes only that
		// address, not one that replaced it since the listing.
		del := &netlink.Addr{IPNet: ipNet(vip)}
		if vip.Addr().Is4() {
			del.Label = a.Label
		}
		err = askErr(m, func() error { return m.h.AddrDel(l, del) })
		switch {
		case err == nil, errors.Is(err, unix.EADDRNOTAVAIL), errors.Is(err, unix.ENODEV):
		default:
			return fmt.Errorf("netif: removing %v from %s: %w", vip, ifname, err)
		}
	}
	m.mu.Lock()
	delete(m.added, OwnedAddr{Interface: ifname, Prefix: vip})
	m.mu.Unlock()
	return nil
}

// foreign returns why the address a, equal to vip, on ifname is not vipd's
// to remove, or nil when it is.
func (m *Manager) foreign(ifname string, vip netip.Prefix, a netlink.Addr) *ForeignAddressError {
	label := a.Label
	if vip.Addr().Is6() {
		return m.foreign6(ifname, vip, a)
	}
	want := ""
	if vip.Addr().Is4() {
		want = vipLabel(ifname)
	}
	// The kernel gives an IPv4 address the interface's name when asked for
	// no label; IPv6 addresses have none.
	unlabelled := label == "" || label == ifname
	key := OwnedAddr{Interface: ifname, Prefix: vip}
	m.mu.Lock()
	addedLabel, added := m.added[key]
	_, listed := m.listed[key]
	m.mu.Unlock()
	switch {
	case want != "" && label == want:
		return nil
	case added && (label == addedLabel || addedLabel == "" && unlabelled):
		return nil
	case want == "" && unlabelled && (listed || !m.strict):
		// No room for vipd's label: an unlabelled address can be vipd's,
		// and the caller decides how sure it must be (WithOwned).
		return nil
	}
	e := &ForeignAddressError{Interface: ifname, Prefix: vip, Want: want}
	if !unlabelled {
		e.Label = label
	}
	return e
}

// foreign6 is foreign for IPv6, which has no labels: an address is vipd's
// when this Manager added it, when WithOwned listed it, or when it carries
// vipd's marks (see hasVIPMarks).
func (m *Manager) foreign6(ifname string, vip netip.Prefix, a netlink.Addr) *ForeignAddressError {
	key := OwnedAddr{Interface: ifname, Prefix: vip}
	m.mu.Lock()
	_, added := m.added[key]
	_, listed := m.listed[key]
	m.mu.Unlock()
	if added || listed || hasVIPMarks(a) {
		return nil
	}
	return &ForeignAddressError{Interface: ifname, Prefix: vip}
}

func familyOf(p netip.Prefix) int {
	if p.Addr().Is4() {
		return netlink.FAMILY_V4
	}
	return netlink.FAMILY_V6
}

// AdoptVIP makes an address equal to vip that is already on ifname vipd's,
// so that RemoveVIP takes it away when the instance releases: the address
// a replaced daemon (keepalived killed without its cleanup) left on its
// Master, whatever its label (keepalived's `label eth0:1` too: an address
// adopted and then kept as someone else's would stay on this host while
// another holds the VIP). It reports whether the address was there.
func (m *Manager) AdoptVIP(ifname string, vip netip.Prefix) (bool, error) {
	vip = unmapPrefix(vip)
	a, err := m.find(ifname, vip)
	var missing *noAddressError
	switch {
	case errors.As(err, &missing):
		return false, nil
	case err != nil:
		return false, err
	}
	label := ""
	if vip.Addr().Is4() && a.Label != ifname {
		label = a.Label
	}
	m.remember(vip)
	m.mu.Lock()
	m.added[OwnedAddr{Interface: ifname, Prefix: vip}] = label
	m.mu.Unlock()
	return true, nil
}

// HasVIP reports whether vip (address and prefix length) is configured on
// the link.
func (m *Manager) HasVIP(ifname string, vip netip.Prefix) (bool, error) {
	vip = unmapPrefix(vip)
	l, err := m.link(ifname)
	if err != nil {
		return false, err
	}
	addrs, err := m.addrList(l, familyOf(vip))
	if err != nil {
		return false, fmt.Errorf("netif: listing addresses of %s: %w", ifname, err)
	}
	for _, a := range addrs {
		if p, ok := prefixFromIPNet(a.IPNet); ok && p == vip {
			return true, nil
		}
	}
	return false, nil
}

// cachedLink is link, remembered; forgetLink drops it (a link gone or
// renamed answers ENODEV, and AddVIP looks it up again).
func (m *Manager) cachedLink(name string) (netlink.Link, error) {
	m.mu.Lock()
	l, ok := m.links[name]
	m.mu.Unlock()
	if ok {
		return l, nil
	}
	l, err := m.link(name)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.links == nil {
		m.links = map[string]netlink.Link{}
	}
	m.links[name] = l
	m.mu.Unlock()
	return l, nil
}

func (m *Manager) forgetLink(name string) {
	m.mu.Lock()
	delete(m.links, name)
	m.mu.Unlock()
}

func (m *Manager) link(name string) (netlink.Link, error) {
	if m.closed.Load() {
		return nil, errClosed
	}
	l, err := ask(m, func() (netlink.Link, error) { return m.h.LinkByName(name) })
	if err == nil || errors.Is(err, netlink.ErrDumpInterrupted) && l != nil {
		return l, nil
	}
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
		return nil, fmt.Errorf("%w: %s", ErrNoLink, name)
	}
	return nil, fmt.Errorf("netif: looking up link %s: %w", name, err)
}

func (m *Manager) addrList(l netlink.Link, family int) ([]netlink.Addr, error) {
	return retryDump(func() ([]netlink.Addr, error) {
		return ask(m, func() ([]netlink.Addr, error) { return m.h.AddrList(l, family) })
	})
}

func (m *Manager) remember(p netip.Prefix) {
	m.mu.Lock()
	m.vips[p.Addr().Unmap()] = struct{}{}
	m.mu.Unlock()
}

func (m *Manager) isVIP(a netip.Addr) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.vips[a]
	return ok
}

// retryDump repeats a dump that the kernel flagged as interrupted by a
// concurrent change, and accepts the last result when it keeps happening.
func retryDump[T any](dump func() ([]T, error)) ([]T, error) {
	var (
		res []T
		err error
	)
	for range dumpRetries {
		res, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return res, err
		}
	}
	return res, nil
}

// linkUp is LinkInfo.Up: admin up and carrier. Drivers that do not track
// carrier report the unknown operational state (RFC 2863) while working.
func linkUp(a *netlink.LinkAttrs) bool {
	return a.Flags&net.FlagUp != 0 && (a.OperState == netlink.OperUp || a.OperState == netlink.OperUnknown)
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func prefixFromIPNet(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	a = a.Unmap()
	ones, bits := n.Mask.Size()
	if bits != a.BitLen() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones), true
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() {
		return p
	}
	bits := p.Bits() - 96
	if bits < 0 {
		bits = 0
	}
	return netip.PrefixFrom(p.Addr().Unmap(), bits)
}

// localWait bounds waitLocal: the kernel's address work queue normally runs
// within a millisecond, later on a loaded host.
const localWait = 100 * time.Millisecond

// waitLocal waits until the kernel delivers packets for an IPv6 address
// just added. It finishes an IPv6 address (its local route, RTM_NEWADDR)
// on a work queue after the request returned, even with nodad; an
// announcement sent before that draws the clients to a host that drops
// their packets, and ends a predecessor's make-before-break too early.
// IPv4 addresses are complete when the request returns.
func (m *Manager) waitLocal(a netip.Addr) {
	deadline := time.Now().Add(localWait)
	for {
		rs, err := ask(m, func() ([]netlink.Route, error) { return m.h.RouteGet(a.AsSlice()) })
		if err == nil && len(rs) > 0 && rs[0].Type == unix.RTN_LOCAL {
			return
		}
		if time.Now().After(deadline) {
			m.log.Warn("an IPv6 VIP is not usable yet after adding it; announcing it anyway", "vip", a, "waited", localWait)
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}
