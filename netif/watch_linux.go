package netif

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const (
	// updateBuffer is the depth of the channels the library writes into.
	updateBuffer = 64
	// receiveBuffer asks the kernel for room for bursts (many links going
	// down at once) before it drops messages with ENOBUFS; it is capped by
	// net.core.rmem_max.
	receiveBuffer = 1 << 20
	// stableAfter is how long a subscription must last for the backoff to
	// start again from its minimum.
	stableAfter = 30 * time.Second
)

// errSubscriptionClosed reports that the library closed an update channel
// after a receive error.
var errSubscriptionClosed = errors.New("netlink subscription closed")

// source is what Watch needs from netlink. nlSource is the real one; tests
// replace it to drive re-subscription without a kernel.
type source interface {
	// subscribeAddrs and subscribeLinks start a subscription that lists the
	// current state first. On success the channel is closed after done is
	// closed (or after a receive error); on error it is never closed.
	subscribeAddrs(ch chan<- netlink.AddrUpdate, done <-chan struct{}, cberr func(error)) error
	subscribeLinks(ch chan<- netlink.LinkUpdate, done <-chan struct{}, cberr func(error)) error
	links() ([]netlink.Link, error)
	addrs() ([]netlink.Addr, error)
	linkName(index int) (string, error)
}

// nlSource subscribes in the Manager's namespace and lists with its handle.
type nlSource struct{ m *Manager }

var _ source = (*nlSource)(nil)

func (s *nlSource) nsOption() *netns.NsHandle {
	if !s.m.ns.IsOpen() {
		return nil // the process's namespace: no setns needed
	}
	ns := s.m.ns
	return &ns
}

func (s *nlSource) subscribeAddrs(ch chan<- netlink.AddrUpdate, done <-chan struct{}, cberr func(error)) error {
	if s.m.closed.Load() {
		return errClosed
	}
	return netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{
		Namespace:         s.nsOption(),
		ErrorCallback:     cberr,
		ListExisting:      true,
		ReceiveBufferSize: receiveBuffer,
	})
}

func (s *nlSource) subscribeLinks(ch chan<- netlink.LinkUpdate, done <-chan struct{}, cberr func(error)) error {
	if s.m.closed.Load() {
		return errClosed
	}
	return netlink.LinkSubscribeWithOptions(ch, done, netlink.LinkSubscribeOptions{
		Namespace:         s.nsOption(),
		ErrorCallback:     cberr,
		ListExisting:      true,
		ReceiveBufferSize: receiveBuffer,
	})
}

func (s *nlSource) links() ([]netlink.Link, error) {
	if s.m.closed.Load() {
		return nil, errClosed
	}
	return retryDump(func() ([]netlink.Link, error) { return ask(s.m, s.m.h.LinkList) })
}

func (s *nlSource) addrs() ([]netlink.Addr, error) {
	if s.m.closed.Load() {
		return nil, errClosed
	}
	return retryDump(func() ([]netlink.Addr, error) {
		return ask(s.m, func() ([]netlink.Addr, error) { return s.m.h.AddrList(nil, netlink.FAMILY_ALL) })
	})
}

func (s *nlSource) linkName(index int) (string, error) {
	if s.m.closed.Load() {
		return "", errClosed
	}
	l, err := ask(s.m, func() (netlink.Link, error) { return s.m.h.LinkByIndex(index) })
	if err != nil {
		return "", err
	}
	return l.Attrs().Name, nil
}

// Watch sends address and link events to events until ctx ends, then
// returns nil. It starts by listing every current link (LinkUp or LinkDown)
// and address (AddrAdded), and lists them again after every re-subscription,
// first reporting what vanished meanwhile (AddrRemoved, LinkGone). Between
// listings it reports only changes: the kernel repeats link messages, but
// LinkUp and LinkDown come only when a link's Up changes. It fails only when
// the first subscription cannot be made; later failures are retried with a
// backoff. Sends to events block, so the consumer must keep reading.
func (m *Manager) Watch(ctx context.Context, events chan<- Event) error {
	w := &watcher{
		m:     m,
		out:   events,
		links: make(map[int]linkState),
		addrs: make(map[addrKey]AddrState),
		names: make(map[int]string),
	}
	backoff := m.minBackoff
	for attempt := 0; ; attempt++ {
		start := time.Now()
		subscribed, err := w.run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if attempt == 0 && !subscribed {
			return fmt.Errorf("netif: watching: %w", err)
		}
		if time.Since(start) >= stableAfter {
			backoff = m.minBackoff
		}
		m.log.Warn("netlink watch interrupted, re-subscribing", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, m.maxBackoff)
	}
}

type linkState struct {
	name string
	up   bool
}

type addrKey struct {
	index  int
	prefix netip.Prefix
}

// watcher holds what Watch has reported, to de-duplicate and to find what
// vanished while no subscription was open. Only Watch's goroutine uses it.
type watcher struct {
	m     *Manager
	out   chan<- Event
	links map[int]linkState     // links reported in the current subscription
	addrs map[addrKey]AddrState // addresses reported in the current subscription
	names map[int]string        // index to name, for address events
}

// run holds one pair of subscriptions until ctx ends or one of them closes.
// subscribed reports whether both subscriptions were made.
func (w *watcher) run(ctx context.Context) (subscribed bool, err error) {
	done := make(chan struct{})
	addrCh := make(chan netlink.AddrUpdate, updateBuffer)
	linkCh := make(chan netlink.LinkUpdate, updateBuffer)
	var addrOpen, linkOpen bool
	var stopping atomic.Bool
	cberr := func(err error) {
		// Closing the sockets ourselves makes the library report a receive
		// error; that one is expected.
		if stopping.Load() {
			w.m.log.Debug("netlink subscription", "err", err)
			return
		}
		w.m.log.Warn("netlink subscription", "err", err)
	}
	defer func() {
		stopping.Store(true)
		close(done) // the library closes its sockets on this
		// Its receiving goroutines may be blocked sending to us: drain
		// until they close their channels, so they exit.
		if addrOpen {
			for range addrCh {
			}
		}
		if linkOpen {
			for range linkCh {
			}
		}
	}()

	if err := w.m.src.subscribeAddrs(addrCh, done, cberr); err != nil {
		return false, fmt.Errorf("subscribing to addresses: %w", err)
	}
	addrOpen = true
	if err := w.m.src.subscribeLinks(linkCh, done, cberr); err != nil {
		return false, fmt.Errorf("subscribing to links: %w", err)
	}
	linkOpen = true
	if err := w.resync(ctx); err != nil {
		return false, err
	}

	for {
		select {
		case <-ctx.Done():
			return true, nil
		case u, ok := <-addrCh:
			if !ok {
				addrOpen = false
				return true, fmt.Errorf("addresses: %w", errSubscriptionClosed)
			}
			if err := w.addr(ctx, u, time.Now()); err != nil {
				return true, err
			}
		case u, ok := <-linkCh:
			if !ok {
				linkOpen = false
				return true, fmt.Errorf("links: %w", errSubscriptionClosed)
			}
			if err := w.link(ctx, u, time.Now()); err != nil {
				return true, err
			}
		}
	}
}

// resync runs right after subscribing, before any update is read. It
// reports the links and addresses that vanished since the last
// subscription, and forgets what was reported so the listing that the new
// subscription starts with is reported again in full.
func (w *watcher) resync(ctx context.Context) error {
	links, err := w.m.src.links()
	if err != nil {
		return fmt.Errorf("listing links: %w", err)
	}
	addrs, err := w.m.src.addrs()
	if err != nil {
		return fmt.Errorf("listing addresses: %w", err)
	}
	now := time.Now()

	nowLinks := make(map[int]string, len(links))
	for _, l := range links {
		a := l.Attrs()
		nowLinks[a.Index] = a.Name
	}
	nowAddrs := make(map[addrKey]struct{}, len(addrs))
	for _, a := range addrs {
		if p, ok := prefixFromIPNet(a.IPNet); ok {
			nowAddrs[addrKey{a.LinkIndex, p}] = struct{}{}
		}
	}

	for _, k := range sortedAddrKeys(w.addrs) {
		if _, ok := nowAddrs[k]; ok {
			continue
		}
		if err := w.emit(ctx, Event{Kind: AddrRemoved, Link: w.names[k.index], Index: k.index, Prefix: k.prefix, At: now}); err != nil {
			return err
		}
	}
	for _, idx := range sortedKeys(w.links) {
		if _, ok := nowLinks[idx]; ok {
			continue
		}
		if err := w.emit(ctx, Event{Kind: LinkGone, Link: w.links[idx].name, Index: idx, At: now}); err != nil {
			return err
		}
	}
	w.links = make(map[int]linkState)
	w.addrs = make(map[addrKey]AddrState)
	w.names = nowLinks
	return nil
}

func (w *watcher) link(ctx context.Context, u netlink.LinkUpdate, at time.Time) error {
	// AF_BRIDGE messages describe bridge ports (an RTM_DELLINK of that
	// family means "left the bridge"), not the link's life.
	if u.IfInfomsg.Family != unix.AF_UNSPEC || u.Link == nil {
		return nil
	}
	a := u.Link.Attrs()
	switch u.Header.Type {
	case unix.RTM_DELLINK:
		delete(w.names, a.Index)
		prev, ok := w.links[a.Index]
		if !ok {
			return nil
		}
		delete(w.links, a.Index)
		// Report the link's addresses gone first; the kernel's own
		// RTM_DELADDR may race with this message on the other socket and
		// is then ignored as already reported.
		for _, k := range sortedAddrKeys(w.addrs) {
			if k.index != a.Index {
				continue
			}
			delete(w.addrs, k)
			if err := w.emit(ctx, Event{Kind: AddrRemoved, Link: prev.name, Index: k.index, Prefix: k.prefix, At: at}); err != nil {
				return err
			}
		}
		return w.emit(ctx, Event{Kind: LinkGone, Link: prev.name, Index: a.Index, At: at})
	case unix.RTM_NEWLINK:
		up := linkUp(a)
		w.names[a.Index] = a.Name
		prev, seen := w.links[a.Index]
		w.links[a.Index] = linkState{name: a.Name, up: up}
		if seen && prev.up == up {
			return nil // the kernel repeats RTM_NEWLINK for many reasons
		}
		kind := LinkDown
		if up {
			kind = LinkUp
		}
		return w.emit(ctx, Event{Kind: kind, Link: a.Name, Index: a.Index, Up: up, At: at})
	}
	return nil
}

func (w *watcher) addr(ctx context.Context, u netlink.AddrUpdate, at time.Time) error {
	p, ok := prefixFromIPNet(&u.LinkAddress)
	if !ok {
		return nil
	}
	k := addrKey{u.LinkIndex, p}
	prev, seen := w.addrs[k]
	ev := Event{Kind: AddrRemoved, Index: k.index, Prefix: p, At: at}
	switch {
	case !u.NewAddr && !seen:
		return nil
	case !u.NewAddr:
		delete(w.addrs, k)
	default:
		ev.State = stateOf(u.Flags)
		switch {
		case !seen:
			ev.Kind = AddrAdded
		case prev != ev.State:
			ev.Kind = AddrChanged
		default:
			return nil // a repeat, such as an IPv6 lifetime update
		}
		w.addrs[k] = ev.State
	}
	ev.Link = w.name(k.index)
	return w.emit(ctx, ev)
}

// name names a link for an address event. The link's own messages come on
// another socket and may not have been read yet, so it may have to ask.
func (w *watcher) name(index int) string {
	if n, ok := w.names[index]; ok {
		return n
	}
	n, err := w.m.src.linkName(index)
	if err != nil {
		return ""
	}
	w.names[index] = n
	return n
}

func (w *watcher) emit(ctx context.Context, ev Event) error {
	select {
	case w.out <- ev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sortedAddrKeys(m map[addrKey]AddrState) []addrKey {
	keys := make([]addrKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b addrKey) int {
		return cmp.Or(cmp.Compare(a.index, b.index), a.prefix.Addr().Compare(b.prefix.Addr()), cmp.Compare(a.prefix.Bits(), b.prefix.Bits()))
	})
	return keys
}
