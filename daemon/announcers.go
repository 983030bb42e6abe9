package daemon

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/vipd/vipd/arp"
)

// One announcer and one claim monitor per interface and family — ARP for
// IPv4, NDP for IPv6 — shared by the instances on it. The monitor's kernel
// filter passes only frames whose sender is one of the link's VIPs (arp
// SetAddresses), so a flat L2 segment's background ARP never reaches user
// space; the claims it passes go to the instance holding that VIP.

type linkKey struct {
	ifindex int
	ipv6    bool
}

// announcerPool owns the shared announcers of one daemon.
type announcerPool struct {
	env Env

	mu    sync.Mutex
	links map[linkKey]*linkAnnouncer
}

func newAnnouncerPool(env Env) *announcerPool {
	return &announcerPool{env: env, links: map[linkKey]*linkAnnouncer{}}
}

// linkAnnouncer is one interface's announcer and monitor.
type linkAnnouncer struct {
	key      linkKey
	announce Announcer
	monitor  ARPMonitor // nil: no claim detection
	stop     func()
	// Under the pool's mutex.
	refs int
	subs map[netip.Addr]*instance // by VIP
}

// The optional methods of the real announcer and monitor: prepared frames
// and the kernel filter.
type preparer interface{ Prepare([]netip.Addr) error }
type addressFilter interface{ SetAddresses([]netip.Addr) error }

// join subscribes in, with its VIPs, to the announcer of its interface and
// family, opening it first if no other instance has.
func (p *announcerPool) join(ifi *net.Interface, in *instance) (*linkAnnouncer, error) {
	key := linkKey{ifindex: ifi.Index, ipv6: in.cfg.IPv6()}
	p.mu.Lock()
	defer p.mu.Unlock()
	la := p.links[key]
	if la == nil {
		var err error
		if la, err = p.open(ifi, key, in); err != nil {
			return nil, err
		}
		p.links[key] = la
	}
	la.refs++
	for _, v := range in.cfg.VIPs {
		la.subs[v.Addr()] = in
	}
	p.refilter(la)
	return la, nil
}

func (p *announcerPool) open(ifi *net.Interface, key linkKey, in *instance) (*linkAnnouncer, error) {
	dial, listen := p.env.DialARP, p.env.ListenARP
	if key.ipv6 {
		dial, listen = p.env.DialNDP, p.env.ListenNDP
	}
	la := &linkAnnouncer{key: key, subs: map[netip.Addr]*instance{}, stop: func() {}}
	if dial == nil {
		la.announce = silentAnnouncer{}
	} else {
		ann, err := dial(ifi)
		if err != nil {
			return nil, err
		}
		la.announce = ann
	}
	if listen != nil {
		mon, err := listen(ifi)
		if err != nil {
			// Detection of a second owner is a help, not a requirement.
			in.log.Warn("cannot watch for a second owner of the VIPs", "error", err)
		} else {
			la.monitor = mon
			p.runMonitor(la, in)
		}
	}
	return la, nil
}

// runMonitor hands each claim to the instance holding its VIP.
func (p *announcerPool) runMonitor(la *linkAnnouncer, first *instance) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	log := first.log
	go func() {
		defer close(done)
		err := la.monitor.Run(ctx, func(c arp.Claim) {
			p.mu.Lock()
			in := la.subs[c.IP]
			p.mu.Unlock()
			if in == nil {
				return
			}
			if in.mb.claimsFull() {
				return // a storm of claims: the next one will do
			}
			claim := c // on the heap only when delivered
			in.mb.postOther(&claim)
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("claim monitor stopped", "error", err)
		}
	}()
	la.stop = func() { cancel(); <-done }
}

// setVIPs applies a reload's address list for in.
func (p *announcerPool) setVIPs(la *linkAnnouncer, in *instance, vips []netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, sub := range la.subs {
		if sub == in {
			delete(la.subs, a)
		}
	}
	for _, a := range vips {
		la.subs[a] = in
	}
	p.refilter(la)
}

// leave unsubscribes in; the last instance closes the announcer.
func (p *announcerPool) leave(la *linkAnnouncer, in *instance) {
	p.mu.Lock()
	for a, sub := range la.subs {
		if sub == in {
			delete(la.subs, a)
		}
	}
	la.refs--
	last := la.refs == 0
	if last {
		delete(p.links, la.key)
	} else {
		p.refilter(la)
	}
	p.mu.Unlock()
	if !last {
		return
	}
	la.stop()
	if la.monitor != nil {
		la.monitor.Close()
	}
	la.announce.Close()
}

// refilter gives the kernel filter and the prepared frames the link's VIPs;
// p.mu must be held.
func (p *announcerPool) refilter(la *linkAnnouncer) {
	vips := make([]netip.Addr, 0, len(la.subs))
	for a := range la.subs {
		vips = append(vips, a)
	}
	slices.SortFunc(vips, netip.Addr.Compare)
	if f, ok := la.monitor.(addressFilter); ok {
		if err := f.SetAddresses(vips); err != nil {
			for _, in := range la.subs {
				in.log.Warn("cannot filter claims in the kernel; user space filters them", "error", err)
				break
			}
		}
	}
	if pr, ok := la.announce.(preparer); ok {
		pr.Prepare(vips)
	}
}

// silentAnnouncer stands in where no announcer exists for the family.
type silentAnnouncer struct{}

func (silentAnnouncer) Announce(netip.Addr) error          { return nil }
func (silentAnnouncer) Probe(netip.Addr, netip.Addr) error { return nil }
func (silentAnnouncer) Close() error                       { return nil }
