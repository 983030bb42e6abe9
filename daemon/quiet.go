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

// quietApplyEvery is the least time between two changes of a socket's
// filters. Each change compiles programs that hold every pattern of the
// socket, so a burst (255 groups taking over at a cut, or turning steady
// after a start) would otherwise cost the square of the groups; changes
// asked meanwhile are applied together. Nothing is lost by the wait: a
// pattern not yet set only means adverts read at once, and one not yet
// cleared keeps its adverts aside, where the instance still reads them
// before it decides anything (pending), at the latest when its own timer
// fires.
const quietApplyEvery = 50 * time.Millisecond

// quietApplySettle is how long the filters' first change after a quiet
// spell waits for others. A burst's first change is a group taking over
// (clearing its pattern) or turning steady, and the groups whose timers
// expired with it are about to do the same: applied at once, the change
// (some 20 ms of CPU at 255 patterns) ran ahead of their adverts, their
// takeover grace and their VIPs on the processor they share, and took the
// VIPs of the fifteen other groups of the first instant of the lab's
// 255-group cut 24 ms past Master_Down_Interval. An instant's takeovers
// (the grace, then a netlink add and a gratuitous ARP for each of up to
// 16 groups) are over within about 12 ms there. A pattern cleared late only
// keeps adverts aside a little longer; the instance is nudged to read
// them when the change is made.
const quietApplySettle = 30 * time.Millisecond

// quietAdverts is one shared socket's patterns, by VRID.
type quietAdverts struct {
	q transport.Quieter

	// applyMu keeps one change of the filters at a time (applyQuiet); it
	// is taken before mu.
	applyMu sync.Mutex

	mu sync.Mutex // patterns, the filters' state and reading the queue
	// order is the VRIDs with a pattern in the kernel, oldest first;
	// patterns theirs.
	order    []uint8
	patterns map[uint8]transport.QuietPattern
	// inKernel: the VRIDs whose adverts the kernel may set aside, for
	// drainQuiet's every read: those of order, and while a change is under
	// way those it brings.
	inKernel [256]bool
	// want and wantOrder: the patterns asked for, applied at the next
	// change of the filters.
	wantOrder []uint8
	want      map[uint8]transport.QuietPattern
	// lastApply is when the filters last began to change; apply is the
	// change waiting for quietApplyEvery to pass.
	lastApply time.Time
	apply     *time.Timer
	closed    bool
	// refused: VRIDs the kernel had no room for (filter memory, buffer),
	// not asked again until a pattern goes.
	refused [256]bool
	failed  bool // the filter could not be set: everything is read at once
	// pending: VRIDs whose adverts may wait in the queue (a pattern is set,
	// or was until the queue was last read).
	pending [256]atomic.Bool
	// handOver is drainQuiet's call for each advert, made once: a method
	// value made at each read escapes to the heap.
	handOver func(b []byte, info transport.PacketInfo, at time.Time)
	// idle: the elections handOver found idle and took, which drainQuiet
	// runs one after the other (runElections).
	idle []*instance
}

func newQuietAdverts(conn transport.Conn) *quietAdverts {
	q, ok := conn.(transport.Quieter)
	if !ok {
		return nil
	}
	return &quietAdverts{q: q, patterns: map[uint8]transport.QuietPattern{}, want: map[uint8]transport.QuietPattern{}}
}

// setQuiet asks for p as the pattern of vrid (nil: none) and reports
// whether it stands to be set: false when the kernel refused vrid's
// pattern at an earlier change. The filters change later, on a goroutine
// of their own (applyQuiet); a refusal then is seen by the instance's
// checkQuiet.
func (s *vrrpSocket) setQuiet(vrid uint8, p *transport.QuietPattern) bool {
	qa := s.quiet
	if qa == nil {
		return false
	}
	qa.mu.Lock()
	defer qa.mu.Unlock()
	old, had := qa.want[vrid]
	switch {
	case p != nil && (qa.failed || qa.refused[vrid]):
		return false
	case p == nil && !had:
		return true
	case p != nil && had && old.Src == p.Src && bytes.Equal(old.Payload, p.Payload):
		return true
	}
	qa.wantOrder = slices.DeleteFunc(qa.wantOrder, func(v uint8) bool { return v == vrid })
	if p == nil {
		delete(qa.want, vrid)
	} else {
		qa.wantOrder = append(qa.wantOrder, vrid)
		qa.want[vrid] = transport.QuietPattern{Src: p.Src, Payload: bytes.Clone(p.Payload)}
	}
	if qa.apply == nil && !qa.closed {
		qa.apply = time.AfterFunc(max(quietApplyEvery-time.Since(qa.lastApply), quietApplySettle), s.applyQuiet)
	}
	return true
}

// applyQuiet changes the filters to what was asked since the last change.
// It runs on the timer's goroutine, and makes its system calls without mu:
// a change of 255 patterns takes the kernel 5 to 25 ms (checking and
// compiling three programs), and every group of the socket reads what was
// set aside for it under mu before it decides anything (drainQuiet). Made
// on a group's loop under mu, as until 2026-12-06, a change stopped that
// group's loop, and held the reads of every other group that took over
// meanwhile, for that long.
func (s *vrrpSocket) applyQuiet() {
	qa := s.quiet
	qa.applyMu.Lock()
	defer qa.applyMu.Unlock()
	qa.mu.Lock()
	qa.apply = nil
	if qa.closed || qa.failed {
		qa.mu.Unlock()
		return
	}
	qa.lastApply = time.Now()
	if slices.Equal(qa.order, qa.wantOrder) && maps.EqualFunc(qa.patterns, qa.want, func(a, b transport.QuietPattern) bool {
		return a.Src == b.Src && bytes.Equal(a.Payload, b.Payload)
	}) {
		qa.mu.Unlock()
		return
	}
	// want's patterns are replaced, never changed in place: list may be
	// read without mu.
	order := slices.Clone(qa.wantOrder)
	list := make([]transport.QuietPattern, len(order))
	for i, v := range order {
		list[i] = qa.want[v]
		// Before the kernel may set one aside: drainQuiet keeps it pending.
		qa.pending[v].Store(true)
		qa.inKernel[v] = true
	}
	qa.mu.Unlock()
	n, err := qa.q.SetQuiet(list)
	qa.mu.Lock()
	defer qa.mu.Unlock()
	if err != nil {
		// Read everything at once from now on; what waits is read at the
		// next event, as pending says.
		s.pool.log.Warn("cannot set steady adverts aside in the kernel; reading every advert when it comes", "interface", s.ifname, "error", err)
		qa.failed = true
		qa.order, qa.patterns, qa.inKernel = nil, map[uint8]transport.QuietPattern{}, [256]bool{}
		qa.wantOrder, qa.want = nil, map[uint8]transport.QuietPattern{}
		qa.q.SetQuiet(nil)
		return
	}
	applied := order[:n]
	var isApplied [256]bool
	for _, v := range applied {
		isApplied[v] = true
	}
	if slices.ContainsFunc(qa.order, func(v uint8) bool { return !isApplied[v] }) {
		qa.refused = [256]bool{} // a pattern went: room again
	}
	for i, v := range order[n:] {
		// Refused unless asked otherwise meanwhile: a newer pattern is
		// tried at the next change.
		if w, ok := qa.want[v]; ok && w.Src == list[n+i].Src && bytes.Equal(w.Payload, list[n+i].Payload) {
			qa.refused[v] = true
			delete(qa.want, v)
			qa.wantOrder = slices.DeleteFunc(qa.wantOrder, func(x uint8) bool { return x == v })
		}
	}
	if n < len(order) {
		s.pool.log.Debug("no room in the kernel to set more adverts aside; the others are read when they come", "interface", s.ifname, "set", n)
	}
	// A pattern cleared while the change waited may have set adverts aside
	// that nobody reads until its instance's next event: a Master that
	// took over, for one, would hear its returning predecessor only at its
	// next advert. Each such instance reads what waits now.
	for _, v := range qa.order {
		if !isApplied[v] {
			if in := s.subs[v].Load(); in != nil {
				in.nudge()
			}
		}
	}
	qa.order = slices.Clone(applied)
	qa.patterns = make(map[uint8]transport.QuietPattern, len(applied))
	qa.inKernel = [256]bool{}
	for i, v := range applied {
		qa.patterns[v] = list[i]
		qa.inKernel[v] = true
	}
}

// nudge makes the instance's loop run soon: it reads what the kernel set
// aside for it before anything it does (catchUp). A command already queued
// does the same.
func (in *instance) nudge() { in.mb.postNudge() }

// closeQuiet stops a change of the filters still waiting, and waits for
// one under way: the socket is closing.
func (s *vrrpSocket) closeQuiet() {
	qa := s.quiet
	if qa == nil {
		return
	}
	qa.applyMu.Lock()
	defer qa.applyMu.Unlock()
	qa.mu.Lock()
	defer qa.mu.Unlock()
	qa.closed = true
	if qa.apply != nil {
		qa.apply.Stop()
		qa.apply = nil
	}
}

// drainQuiet hands every advert set aside to its instance, in order, marked
// with its arrival time.
//
// The elections it finds idle run one after the other on one goroutine
// (runElections), not each on a goroutine of its own: one read hands
// adverts to up to every group of the socket, and 255 goroutines started
// at once grew 255 stacks that, with no collection at rest, stayed
// (1.7 MB more on a 255-group Backup).
func (s *vrrpSocket) drainQuiet() {
	if s.quiet == nil {
		return
	}
	idle, err := s.readQuiet()
	if err != nil {
		s.pool.log.Warn("reading adverts set aside failed", "interface", s.ifname, "error", err)
	}
	if len(idle) > 0 {
		go runElections(idle)
	}
}

// readQuiet reads the queue under the lock, and returns the elections it
// found idle and took.
func (s *vrrpSocket) readQuiet() (idle []*instance, err error) {
	qa := s.quiet
	qa.mu.Lock()
	defer qa.mu.Unlock()
	for vrid := range qa.pending {
		if !qa.inKernel[vrid] && qa.pending[vrid].Load() {
			qa.pending[vrid].Store(false)
		}
	}
	if qa.handOver == nil {
		qa.handOver = s.handOverQuiet
	}
	err = qa.q.ReadQuiet(qa.handOver)
	if len(qa.idle) > 0 {
		idle = slices.Clone(qa.idle)
		clear(qa.idle)
		qa.idle = qa.idle[:0]
	}
	return idle, err
}

// handOverQuiet gives an advert the kernel set aside to its instance.
func (s *vrrpSocket) handOverQuiet(b []byte, info transport.PacketInfo, at time.Time) {
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
	ok, claimed := in.mb.postIdle(p)
	switch {
	case !ok:
		s.pool.free(p)
		in.counters.overruns.Add(1)
	case claimed:
		s.quiet.idle = append(s.quiet.idle, in)
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
	for p := in.mb.takePacket(); p != nil; p = in.mb.takePacket() {
		in.receive(p, out[:0])
		in.sockets.free(p)
	}
	in.lastEventAt = start
}

// updateQuiet sets or clears the instance's pattern after an advert: set
// when the advert only pushed the Master_Down_Timer back and the machine
// is steady on its sender.
func (in *instance) updateQuiet(p *received, actions []vrrp.Action) {
	if in.sock == nil || in.sock.quiet == nil {
		return
	}
	master, steady := in.m.Steady()
	ok := steady && master == p.src && p.rawLen > 0 && p.rawLen <= transport.MaxQuietPayloadFrom(p.src) && p.ttl == vrrp.TTL &&
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
		return
	}
	// Refused after setQuiet said yes (the change came later): its adverts
	// are read when they come, and its wake-ups are timed as such.
	if in.sock != nil && in.sock.quietRefused(in.id.vrid) {
		in.quietSet = false
	}
}

// quietRefused: vrid's pattern is not wanted in the kernel any more
// because the kernel had no room for it, or the filters failed.
func (s *vrrpSocket) quietRefused(vrid uint8) bool {
	qa := s.quiet
	if qa == nil {
		return true
	}
	qa.mu.Lock()
	defer qa.mu.Unlock()
	return qa.failed || qa.refused[vrid]
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
