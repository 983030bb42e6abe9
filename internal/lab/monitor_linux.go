package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// VRRP wire facts (RFC 5798).
const (
	vrrpProto      = 112 // §5.1.1.4
	vrrpVersion    = 3   // §5.2.1
	vrrpTypeAdvert = 1   // §5.2.2
	advertRing     = 512 // adverts kept per node (5 s at a 10 ms interval)
)

func vrrpGroup() net.IP { return net.IPv4(224, 0, 0, 18) } // §5.1.1.2

// Monitor watches a lab from the outside: the VIP's address events in every
// node namespace, the client's neighbour entry for the VIP, and the VRRP
// adverts that reach the client. All times are the lab's receive times.
type Monitor struct {
	lab     *Lab
	log     *slog.Logger
	vip     netip.Addr
	vrid    int
	onEvent func(Event)

	cancel context.CancelFunc
	wg     sync.WaitGroup
	advert *net.IPConn

	cbMu sync.Mutex // serialises onEvent calls

	mu       sync.Mutex
	events   []Event
	held     []bool // held[i-1]: node i has the VIP
	neighMAC net.HardwareAddr
	adverts  []advertLog // per node
	wake     chan struct{}
}

type advertRec struct {
	at       time.Time
	prio     int
	interval time.Duration
}

type advertLog struct {
	recs [advertRing]advertRec
	n    int // total received
}

func (a *advertLog) last() (advertRec, bool) {
	if a.n == 0 {
		return advertRec{}, false
	}
	return a.recs[(a.n-1)%advertRing], true
}

// Watch starts a Monitor for vip and VRRP group vrid. It returns once every
// subscription is open, so nothing after it is missed. onEvent, if set, is
// called for every Event (one call at a time). The monitor runs until ctx
// ends or Close.
func (l *Lab) Watch(ctx context.Context, vip netip.Addr, vrid int, onEvent func(Event)) (*Monitor, error) {
	ctx, cancel := context.WithCancel(ctx)
	m := &Monitor{
		lab: l, log: l.log.With("part", "monitor"), vip: vip, vrid: vrid, onEvent: onEvent,
		cancel: cancel, held: make([]bool, l.Nodes()), adverts: make([]advertLog, l.Nodes()),
		wake: make(chan struct{}),
	}
	var errs []error
	for i := 1; i <= l.Nodes(); i++ {
		ch, done, err := m.subscribeAddrs(i)
		if err != nil {
			errs = append(errs, err)
			break
		}
		m.wg.Go(func() { m.watchAddrs(ctx, i, ch, done) })
	}
	if len(errs) == 0 {
		ch, done, err := m.subscribeNeigh()
		if err != nil {
			errs = append(errs, err)
		} else {
			m.wg.Go(func() { m.watchNeigh(ctx, ch, done) })
		}
	}
	if len(errs) == 0 {
		if err := m.openAdvertCapture(); err != nil {
			errs = append(errs, err)
		} else {
			m.wg.Go(func() { m.captureAdverts(ctx) })
			// Closing the socket is what unblocks the capture read.
			m.wg.Go(func() {
				<-ctx.Done()
				m.advert.Close()
			})
		}
	}
	if len(errs) == 0 && !l.track(m, m.stop) {
		errs = append(errs, errors.New("lab closed"))
	}
	if err := errors.Join(errs...); err != nil {
		m.stop()
		return nil, fmt.Errorf("lab: monitor: %w", err)
	}
	return m, nil
}

// Close stops every watcher and waits for them. It is idempotent; the lab's
// Close calls it too.
func (m *Monitor) Close() {
	m.stop()
	m.lab.untrack(m)
}

func (m *Monitor) stop() {
	m.cancel()
	m.wg.Wait()
}

func (m *Monitor) subscribeAddrs(i int) (chan netlink.AddrUpdate, chan struct{}, error) {
	ch := make(chan netlink.AddrUpdate, 256)
	done := make(chan struct{})
	ns := m.lab.NodeNetns(i)
	err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{
		Namespace:     &ns,
		ErrorCallback: func(err error) { m.log.Debug("address subscription ended", "node", NodeName(i), "err", err) },
	})
	if err != nil {
		close(done)
		return nil, nil, fmt.Errorf("subscribe addresses in n%d: %w", i, err)
	}
	// Subscribed first, listed second: a change in between shows up twice,
	// never zero times, and set() ignores the repeat.
	if err := m.reconcileAddrs(i); err != nil {
		close(done)
		return nil, nil, err
	}
	return ch, done, nil
}

func (m *Monitor) reconcileAddrs(i int) error {
	has, err := m.lab.NodeHasAddr(i, m.vip)
	if err != nil {
		return fmt.Errorf("list addresses in n%d: %w", i, err)
	}
	m.setHeld(time.Now(), i, has)
	return nil
}

// watchAddrs follows node i's address events; the library closes ch after
// a receive error, so it subscribes again and reconciles.
func (m *Monitor) watchAddrs(ctx context.Context, i int, ch chan netlink.AddrUpdate, done chan struct{}) {
	for {
		for open := true; open; {
			select {
			case <-ctx.Done():
				close(done)
				for range ch {
				}
				return
			case u, ok := <-ch:
				if !ok {
					open = false
					break
				}
				at := time.Now()
				ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
				if ok && ip.Unmap() == m.vip {
					m.setHeld(at, i, u.NewAddr)
				}
			}
		}
		close(done)
		var err error
		for {
			if ch, done, err = m.subscribeAddrs(i); err == nil {
				break
			}
			m.log.Warn("resubscribing to addresses", "node", NodeName(i), "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (m *Monitor) setHeld(at time.Time, i int, has bool) {
	m.mu.Lock()
	if m.held[i-1] == has {
		m.mu.Unlock()
		return // the kernel repeats itself; only changes are events
	}
	m.held[i-1] = has
	kind := VIPRemoved
	if has {
		kind = VIPAdded
	}
	m.addLocked(Event{At: at, Kind: kind, Node: i})
}

// addLocked records e, wakes waiters and unlocks m.mu before the callback.
func (m *Monitor) addLocked(e Event) {
	// Watchers stamp before locking, so keep the log in time order.
	i := len(m.events)
	for i > 0 && m.events[i-1].At.After(e.At) {
		i--
	}
	m.events = slices.Insert(m.events, i, e)
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
	if m.onEvent != nil {
		m.cbMu.Lock()
		m.onEvent(e)
		m.cbMu.Unlock()
	}
}

func (m *Monitor) subscribeNeigh() (chan netlink.NeighUpdate, chan struct{}, error) {
	ch := make(chan netlink.NeighUpdate, 256)
	done := make(chan struct{})
	ns := m.lab.ClientNetns()
	err := netlink.NeighSubscribeWithOptions(ch, done, netlink.NeighSubscribeOptions{
		Namespace:     &ns,
		ListExisting:  true,
		ErrorCallback: func(err error) { m.log.Debug("neighbour subscription ended", "err", err) },
	})
	if err != nil {
		close(done)
		return nil, nil, fmt.Errorf("subscribe neighbours in client: %w", err)
	}
	return ch, done, nil
}

func (m *Monitor) watchNeigh(ctx context.Context, ch chan netlink.NeighUpdate, done chan struct{}) {
	for {
		for open := true; open; {
			select {
			case <-ctx.Done():
				close(done)
				for range ch {
				}
				return
			case u, ok := <-ch:
				if !ok {
					open = false
					break
				}
				at := time.Now()
				ip, ok := netip.AddrFromSlice(u.IP)
				if !ok || ip.Unmap() != m.vip {
					continue
				}
				mac := u.HardwareAddr
				if u.Type == unix.RTM_DELNEIGH || u.State&(netlink.NUD_FAILED|netlink.NUD_INCOMPLETE) != 0 {
					mac = nil
				}
				m.setNeigh(at, mac, neighState(u.Type, u.State))
			}
		}
		close(done)
		var err error
		for {
			if ch, done, err = m.subscribeNeigh(); err == nil {
				break // ListExisting replays the current entry
			}
			m.log.Warn("resubscribing to neighbours", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func neighState(typ uint16, s int) string {
	if typ == unix.RTM_DELNEIGH {
		return "deleted"
	}
	names := []struct {
		bit  int
		name string
	}{
		{netlink.NUD_INCOMPLETE, "incomplete"}, {netlink.NUD_REACHABLE, "reachable"},
		{netlink.NUD_STALE, "stale"}, {netlink.NUD_DELAY, "delay"}, {netlink.NUD_PROBE, "probe"},
		{netlink.NUD_FAILED, "failed"}, {netlink.NUD_NOARP, "noarp"}, {netlink.NUD_PERMANENT, "permanent"},
	}
	for _, n := range names {
		if s&n.bit != 0 {
			return n.name
		}
	}
	return "none"
}

func (m *Monitor) setNeigh(at time.Time, mac net.HardwareAddr, state string) {
	m.mu.Lock()
	if string(m.neighMAC) == string(mac) {
		m.mu.Unlock()
		return // a state change towards the same host is not a move
	}
	m.neighMAC = slices.Clone(mac)
	m.addLocked(Event{At: at, Kind: NeighChanged, Node: m.lab.NodeByMAC(mac), MAC: slices.Clone(mac), State: state})
}

// openAdvertCapture opens a raw IP protocol 112 socket in the client
// namespace and joins 224.0.0.18 there; the kernel drops multicast for
// groups nobody on the host joined.
func (m *Monitor) openAdvertCapture() error {
	if m.vip.Is6() {
		return m.openAdvertCapture6()
	}
	return inNetns(m.lab.ClientNetns(), func() error {
		c, err := net.ListenPacket(fmt.Sprintf("ip4:%d", vrrpProto), "0.0.0.0")
		if err != nil {
			return fmt.Errorf("advert capture socket: %w", err)
		}
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			err = ipv4.NewPacketConn(c).JoinGroup(ifi, &net.IPAddr{IP: vrrpGroup()})
		}
		if err != nil {
			c.Close()
			return fmt.Errorf("join VRRP group in client: %w", err)
		}
		m.advert = c.(*net.IPConn)
		enableStamps(m.advert)
		return nil
	})
}

func (m *Monitor) captureAdverts(ctx context.Context) {
	buf, oob := make([]byte, 1500), make([]byte, 128)
	for {
		n, from, at, err := readStamped(m.advert, buf, oob)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("advert capture stopped", "err", err)
			}
			return
		}
		a, ok := parseAdvert(buf[:n])
		if !ok || a.vrid != m.vrid {
			continue
		}
		src, _ := netip.AddrFromSlice(from.IP)
		if node := m.lab.NodeByAddr(src.Unmap()); node > 0 {
			m.addAdvert(at, node, a)
		}
	}
}

type advert struct {
	vrid, prio int
	interval   time.Duration
}

// parseAdvert reads the fields the lab needs from a VRRPv3 advert (RFC 5798
// §5.2) or a VRRPv2 one (RFC 3768 §5.3: whole seconds in byte 5); the kernel
// strips the IPv4 header from raw reads.
func parseAdvert(b []byte) (advert, bool) {
	if len(b) < 8 || b[0]&0x0f != vrrpTypeAdvert {
		return advert{}, false
	}
	switch b[0] >> 4 {
	case 2:
		return advert{vrid: int(b[1]), prio: int(b[2]), interval: time.Duration(b[5]) * time.Second}, true
	case vrrpVersion:
	default:
		return advert{}, false
	}
	cs := binary.BigEndian.Uint16(b[4:6]) & 0x0fff // §5.2.7: centiseconds
	return advert{vrid: int(b[1]), prio: int(b[2]), interval: time.Duration(cs) * 10 * time.Millisecond}, true
}

func (m *Monitor) addAdvert(at time.Time, node int, a advert) {
	m.mu.Lock()
	lg := &m.adverts[node-1]
	prev, seen := lg.last()
	lg.recs[lg.n%advertRing] = advertRec{at: at, prio: a.prio, interval: a.interval}
	lg.n++
	silent := seen && at.Sub(prev.at) > 3*max(prev.interval, MinAdvertInterval)
	if seen && prev.prio == a.prio && !silent {
		m.mu.Unlock()
		return
	}
	m.addLocked(Event{At: at, Kind: AdvertChanged, Node: node, Priority: a.prio, Interval: a.interval})
}

// State returns a snapshot of the current state.
func (m *Monitor) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stateLocked()
}

func (m *Monitor) stateLocked() State {
	s := State{At: time.Now(), NeighMAC: slices.Clone(m.neighMAC), NeighNode: m.lab.NodeByMAC(m.neighMAC)}
	for i, h := range m.held {
		if h {
			s.Holders = append(s.Holders, i+1)
		}
	}
	for i := range m.adverts {
		if r, ok := m.adverts[i].last(); ok && r.prio > 0 && r.at.After(s.LastAdvert) {
			s.Advertiser, s.LastAdvert, s.AdvertPriority = i+1, r.at, r.prio
		}
	}
	return s
}

// Wait blocks until cond holds for the current state, checking on every
// event and every poll interval (for conditions about elapsed time).
func (m *Monitor) Wait(ctx context.Context, poll time.Duration, cond func(State) bool) (State, error) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		m.mu.Lock()
		s, wake := m.stateLocked(), m.wake
		m.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-wake:
		case <-t.C:
		}
	}
}

// Events returns the events with from <= At < to (zero to: no upper bound).
func (m *Monitor) Events(from, to time.Time) []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Event
	for _, e := range m.events {
		if !e.At.Before(from) && (to.IsZero() || e.At.Before(to)) {
			out = append(out, e)
		}
	}
	return out
}

// LastAdvert is the last advert with priority > 0 from node that arrived at
// or before t.
func (m *Monitor) LastAdvert(node int, t time.Time) (at time.Time, prio int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lg := &m.adverts[node-1]
	for k := lg.n - 1; k >= 0 && k >= lg.n-advertRing; k-- {
		r := lg.recs[k%advertRing]
		if r.prio > 0 && !r.at.After(t) {
			return r.at, r.prio, true
		}
	}
	return time.Time{}, 0, false
}

// AdvertsFrom counts node's adverts with priority > 0 that arrived in
// [from, to] (only the most recent few hundred are kept).
func (m *Monitor) AdvertsFrom(node int, from, to time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	lg := &m.adverts[node-1]
	n := 0
	for k := lg.n - 1; k >= 0 && k >= lg.n-advertRing; k-- {
		r := lg.recs[k%advertRing]
		if r.at.Before(from) {
			break
		}
		if r.prio > 0 && !r.at.After(to) {
			n++
		}
	}
	return n
}

// DuplicateTime is the total time in [from, to) during which two or more
// nodes held the VIP, from the address events.
func (m *Monitor) DuplicateTime(from, to time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return duplicateTime(m.events, len(m.held), from, to)
}

// duplicateTime replays address events: the state at from is what the
// events before it left; overlap is summed until to.
func duplicateTime(events []Event, nodes int, from, to time.Time) time.Duration {
	held := make([]bool, nodes+1)
	count := 0
	var dup time.Duration
	cursor := from
	for _, e := range events {
		if e.Kind != VIPAdded && e.Kind != VIPRemoved || e.Node < 1 || e.Node > nodes {
			continue
		}
		if !e.At.Before(to) {
			break
		}
		if e.At.After(cursor) && e.At.After(from) {
			if count >= 2 {
				dup += e.At.Sub(cursor)
			}
			cursor = e.At
		}
		has := e.Kind == VIPAdded
		if held[e.Node] != has {
			held[e.Node] = has
			if has {
				count++
			} else {
				count--
			}
		}
	}
	if count >= 2 && to.After(cursor) {
		dup += to.Sub(cursor)
	}
	return dup
}
