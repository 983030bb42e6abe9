package daemon

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// A Backup hears its Master once per interval, and each advert only pushes
// its Master_Down_Timer back. Those adverts need not wake it: once the
// machine is steady (vrrp.Machine.Steady), the instance asks the kernel to
// set aside adverts byte for byte the same as the Master's last, from the
// same address, on a second socket, with their arrival times
// (transport.Quieter). The instance reads them before it decides anything:
// when its timer fires (the Master_Down_Timer is then pushed back to the
// last one's arrival plus Master_Down_Interval, exactly as if each had been
// read when it came), and before any other event. Any other advert (a new
// priority, priority 0, another router) is read at once, and the ones set
// aside before it are handed over first. A Backup then wakes about once per
// Master_Down_Interval instead of once per advert.

// quietAdverts is one shared socket's patterns, by VRID.
type quietAdverts struct {
	q transport.Quieter

	mu sync.Mutex // patterns, the filters and reading the queue
	// order is the VRIDs with a pattern set, oldest first; patterns theirs.
	order    []uint8
	patterns map[uint8]transport.QuietPattern
	// refused: VRIDs the kernel had no room for (filter memory, buffer),
	// not asked again until a pattern goes.
	refused [256]bool
	failed  bool // the filter could not be set: everything is read at once
	// pending: VRIDs whose adverts may wait in the queue (a pattern is set,
	// or was until the queue was last read).
	pending [256]atomic.Bool
}

func newQuietAdverts(conn transport.Conn) *quietAdverts {
	q, ok := conn.(transport.Quieter)
	if !ok {
		return nil
	}
	return &quietAdverts{q: q, patterns: map[uint8]transport.QuietPattern{}}
}

// setQuiet makes p the pattern of vrid (nil: none) and reports whether the
// kernel took it.
func (s *vrrpSocket) setQuiet(vrid uint8, p *transport.QuietPattern) bool {
	qa := s.quiet
	if qa == nil {
		return false
	}
	qa.mu.Lock()
	defer qa.mu.Unlock()
	old, had := qa.patterns[vrid]
	switch {
	case p != nil && (qa.failed || qa.refused[vrid]):
		return false
	case p == nil && !had:
		return true
	case p != nil && had && old.Src == p.Src && bytes.Equal(old.Payload, p.Payload):
		return true
	}
	order := slices.DeleteFunc(slices.Clone(qa.order), func(v uint8) bool { return v == vrid })
	patterns := maps.Clone(qa.patterns)
	if p == nil {
		delete(patterns, vrid)
		qa.refused = [256]bool{} // room again
	} else {
		order = append(order, vrid)
		patterns[vrid] = transport.QuietPattern{Src: p.Src, Payload: bytes.Clone(p.Payload)}
		qa.pending[vrid].Store(true)
	}
	list := make([]transport.QuietPattern, len(order))
	for i, v := range order {
		list[i] = patterns[v]
	}
	n, err := qa.q.SetQuiet(list)
	if err != nil {
		// Read everything at once from now on; what waits is read at the
		// next event, as pending says.
		s.pool.log.Warn("cannot set steady adverts aside in the kernel; reading every advert when it comes", "interface", s.ifname, "error", err)
		qa.failed = true
		qa.order, qa.patterns = nil, map[uint8]transport.QuietPattern{}
		qa.q.SetQuiet(nil)
		return false
	}
	for _, v := range order[n:] {
		delete(patterns, v)
		qa.refused[v] = true
	}
	if n < len(order) {
		s.pool.log.Debug("no room in the kernel to set more adverts aside; the others are read when they come", "interface", s.ifname, "set", n)
	}
	qa.order, qa.patterns = order[:n], patterns
	_, ok := patterns[vrid]
	return ok == (p != nil)
}

// drainQuiet hands every advert set aside to its instance, in order, marked
// with its arrival time.
func (s *vrrpSocket) drainQuiet() {
	qa := s.quiet
	if qa == nil {
		return
	}
	qa.mu.Lock()
	defer qa.mu.Unlock()
	for vrid := range qa.pending {
		if _, ok := qa.patterns[uint8(vrid)]; !ok {
			qa.pending[vrid].Store(false)
		}
	}
	err := qa.q.ReadQuiet(func(b []byte, info transport.PacketInfo, at time.Time) {
		p := s.pool.rx.Get().(*received)
		if err := p.adv.Decode(b, info.Src, info.Dst); err != nil {
			s.pool.free(p) // it matched a pattern that decoded: cannot happen
			return
		}
		in := s.subs[p.adv.VRID].Load()
		if in == nil {
			s.pool.free(p)
			return
		}
		p.src, p.ttl, p.deferred, p.at = info.Src, info.TTL, true, at
		p.keepRaw(b)
		select {
		case in.packets <- p:
		default:
			s.pool.free(p)
			in.counters.overruns.Add(1)
		}
	})
	if err != nil {
		s.pool.log.Warn("reading adverts set aside failed", "interface", s.ifname, "error", err)
	}
}

// maybePending: adverts of vrid may wait in the queue.
func (s *vrrpSocket) maybePending(vrid uint8) bool {
	return s.quiet != nil && s.quiet.pending[vrid].Load()
}

// catchUp reads, before the instance decides anything, the adverts the
// kernel set aside for it and whatever else is queued for it.
func (in *instance) catchUp(out []vrrp.Action) {
	if in.sock == nil {
		return
	}
	// Taken before the queue is read: an advert set aside after that is
	// newer than the event, not older.
	start := in.env.Now()
	if in.sock.maybePending(in.id.vrid) {
		in.sock.drainQuiet()
	}
	for {
		select {
		case p := <-in.packets:
			in.receive(p, out[:0])
			in.sockets.free(p)
		default:
			in.lastEventAt = start
			return
		}
	}
}

// updateQuiet sets or clears the instance's pattern after an advert: set
// when the advert only pushed the Master_Down_Timer back and the machine
// is steady on its sender.
func (in *instance) updateQuiet(p *received, actions []vrrp.Action) {
	if in.sock == nil || in.sock.quiet == nil {
		return
	}
	master, steady := in.m.Steady()
	ok := steady && master == p.src && p.rawLen > 0 && p.ttl == vrrp.TTL &&
		len(actions) == 1 && actions[0].Kind == vrrp.ActArmTimer && actions[0].Timer == vrrp.TimerMasterDown &&
		(in.policy == nil || !in.policy.HandingOver())
	if !ok {
		in.clearQuiet()
		return
	}
	prio, _ := in.steadyStamp()
	pat := transport.QuietPattern{Src: p.src, Payload: p.raw[:p.rawLen]}
	if in.sock.setQuiet(in.id.vrid, &pat) {
		in.quietSet, in.quietPrio = true, prio
	}
}

// clearQuiet: every advert of this instance is read when it comes again.
func (in *instance) clearQuiet() {
	if !in.quietSet {
		return
	}
	in.quietSet = false
	if in.sock != nil {
		in.sock.setQuiet(in.id.vrid, nil)
	}
}

// checkQuiet clears the pattern when what it assumed changed: the
// machine's state or its priority.
func (in *instance) checkQuiet() {
	if !in.quietSet {
		return
	}
	if prio, backup := in.steadyStamp(); !backup || prio != in.quietPrio {
		in.clearQuiet()
	}
}

func (in *instance) steadyStamp() (prio uint8, backup bool) {
	st, _ := in.m.State()
	return in.m.Priority(), st == vrrp.StateBackup
}

// keepRaw keeps the advert's bytes for a pattern, if it can be one.
func (p *received) keepRaw(b []byte) {
	p.rawLen = 0
	if len(b) <= len(p.raw) {
		p.rawLen = copy(p.raw[:], b)
	}
}

// clockNow is the machine's clock: an advert set aside is taken at the
// time it arrived.
func (in *instance) clockNow() time.Time {
	if !in.deferredAt.IsZero() {
		return in.deferredAt
	}
	return in.env.Now()
}
