package daemon

import (
	"slices"
	"sync"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/netif"
)

// An election has no goroutine of its own while nothing happens to it.
// What other goroutines have for it (an advert, its timer, a claim, a
// command) goes into its mailbox; the first of a burst starts a goroutine
// that handles what is queued, in order, and ends when the mailbox is
// empty. A goroutine that waits costs its stack, 4 KiB at least once it
// has ever grown (the runtime shrinks a stack only while under a quarter
// of it is used, counting 800 bytes of headroom), and its select a
// waiter per channel: with 255 groups on a host, about 1.4 MiB of a
// daemon whose whole heap is 4. Between two adverts an election needs
// neither.
//
// A timer's expiry is the exception: an idle election whose wake-up is
// routine runs on the goroutine that fires the timers (timerFired).
//
// The phases that wait for something in particular (the link to appear,
// a handover's successor, an anycast instance's whole life) keep their
// goroutine and wait on the mailbox's signal.

// eventKind is what next found; evNone: nothing (of what was asked).
type eventKind uint8

const (
	evNone    eventKind = iota
	evStop              // the instance's context ended
	evFailed            // a socket it used can no longer be read
	evPacket            // an advert
	evCmd               // a function to run on the election (do)
	evLink              // a link or address event
	evTracker           // a tracker turned healthy or failing
	evClaim             // another host's claim of one of its VIPs
	evLeader            // a follower's leader changed
	evWake              // its timer fired
	evNudge             // adverts set aside for it wait to be read
)

// kinds is a set of eventKinds.
type kinds uint16

func kindSet(ks ...eventKind) kinds {
	var s kinds
	for _, k := range ks {
		s |= 1 << k
	}
	return s
}

func (s kinds) has(k eventKind) bool { return s&(1<<k) != 0 }

// allKinds: the steady loop takes everything.
const allKinds = ^kinds(0)

// event is one thing next took from the mailbox.
type event struct {
	kind    eventKind
	packet  *received
	cmd     func()
	link    *netif.Event
	tracker *health.Status
	claim   *arp.Claim
	leader  leaderState
}

// Bounds of the queues that a flood could fill: adverts (the overruns
// counter counts those refused), link events (the watcher logs one
// refused), commands (do fails: the election is stuck, and each status
// request that gave up would otherwise leave one behind). Claims are
// bounded by claimQueue.
const (
	maxQueuedPackets = 64
	maxQueuedLinks   = 64
	maxQueuedCmds    = 64
)

// mailbox queues an instance's events until its loop takes them.
type mailbox struct {
	mu sync.Mutex
	// Adverts, in arrival order, linked through received.next.
	head, tail *received
	packets    int
	// The rarer events, in arrival order: func(), *netif.Event,
	// *health.Status or *arp.Claim.
	other               []any
	links, claims, cmds int
	maxClaims           int
	leader              leaderState // latest only
	hasLeader           bool
	stop, wake          bool
	nudge               bool
	failed              bool
	// running: a goroutine owns the election and takes what is posted;
	// it is signalled in case it waits (signal, made by the first wait:
	// most elections never wait). Otherwise a post starts one with spawn
	// (nil while the instance starts: its own goroutine runs it).
	running bool
	signal  chan struct{}
	spawn   func()
	closed  bool
	free    func(*received) // where refused and forgotten adverts go
}

func newMailbox(maxClaims int, free func(*received)) *mailbox {
	mb := new(mailbox)
	mb.init(maxClaims, free)
	return mb
}

// init makes mb an empty mailbox, owned by the goroutine starting its
// election.
func (mb *mailbox) init(maxClaims int, free func(*received)) {
	mb.maxClaims, mb.running, mb.free = maxClaims, true, free
}

// posted wakes or starts the election's goroutine; mu is held.
func (mb *mailbox) posted() {
	if mb.running {
		select { // a nil signal: nobody waits
		case mb.signal <- struct{}{}:
		default:
		}
		return
	}
	if mb.spawn != nil {
		mb.running = true
		go mb.spawn()
	}
}

// postPacket queues an advert; false: the queue is full or the instance
// ended, and the caller keeps p.
func (mb *mailbox) postPacket(p *received) bool {
	ok, _ := mb.queuePacket(p, false)
	return ok
}

// postWakeQuick flags the timer's expiry. Unlike the other posts it does
// not start a goroutine for an idle election that has nothing else queued:
// claimed, the caller now owns it and must run it (timerFired), then let
// it go with letGo.
func (mb *mailbox) postWakeQuick() (claimed bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.closed {
		return false
	}
	mb.wake = true
	if !mb.running && mb.spawn != nil && !mb.pendingBesidesWake() {
		mb.running = true
		return true
	}
	mb.posted()
	return false
}

// pendingBesidesWake: something other than the timer's flag is queued; mu
// is held.
func (mb *mailbox) pendingBesidesWake() bool {
	return mb.head != nil || len(mb.other) > 0 || mb.stop || mb.failed || mb.hasLeader || mb.nudge
}

// letGo gives up an election a quick run owned. Anything queued
// meanwhile keeps it owned: true, and the caller starts its goroutine.
func (mb *mailbox) letGo() (keep bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.closed || !mb.pendingBesidesWake() && !mb.wake {
		mb.running = false
		return false
	}
	return true
}

// postIdle queues an advert like postPacket, but does not start a
// goroutine for an idle election: claimed, the caller now owns it and must
// run it (runElections).
func (mb *mailbox) postIdle(p *received) (ok, claimed bool) { return mb.queuePacket(p, true) }

func (mb *mailbox) queuePacket(p *received, claimIdle bool) (ok, claimed bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.closed || mb.packets >= maxQueuedPackets {
		return false, false
	}
	mb.pushPacket(p)
	if claimIdle && !mb.running && mb.spawn != nil {
		mb.running = true
		return true, true
	}
	mb.posted()
	return true, false
}

func (mb *mailbox) pushPacket(p *received) {
	p.next = nil
	if mb.tail == nil {
		mb.head = p
	} else {
		mb.tail.next = p
	}
	mb.tail = p
	mb.packets++
}

// takePacket takes the oldest advert queued, nil when there is none.
func (mb *mailbox) takePacket() *received {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.popPacket()
}

func (mb *mailbox) popPacket() *received {
	p := mb.head
	if p == nil {
		return nil
	}
	mb.head, p.next = p.next, nil
	if mb.head == nil {
		mb.tail = nil
	}
	mb.packets--
	return p
}

// postOther queues a rare event; false: its queue is full or the instance
// ended (closed says which).
func (mb *mailbox) postOther(v any) (ok, closed bool) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.closed {
		return false, true
	}
	switch v.(type) {
	case func():
		if mb.cmds >= maxQueuedCmds {
			return false, false
		}
		mb.cmds++
	case *netif.Event:
		if mb.links >= maxQueuedLinks {
			return false, false
		}
		mb.links++
	case *arp.Claim:
		if mb.claims >= mb.maxClaims {
			return false, false
		}
		mb.claims++
	}
	mb.other = append(mb.other, v)
	mb.posted()
	return true, false
}

// claimsFull: a claim posted now would be refused.
func (mb *mailbox) claimsFull() bool {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.claims >= mb.maxClaims
}

func (mb *mailbox) postLeader(ls leaderState) {
	mb.flag(func(mb *mailbox) { mb.leader, mb.hasLeader = ls, true })
}

// flag sets one of the events that are a flag, not a queue.
func (mb *mailbox) flag(set func(*mailbox)) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.closed {
		return
	}
	set(mb)
	mb.posted()
}

func (mb *mailbox) postStop()  { mb.flag(func(mb *mailbox) { mb.stop = true }) }
func (mb *mailbox) postNudge() { mb.flag(func(mb *mailbox) { mb.nudge = true }) }

// postFailed: a socket the election used failed. It is a hint: the
// election checks the socket it uses when it takes it (a reload may have
// moved it to another since).
func (mb *mailbox) postFailed() { mb.flag(func(mb *mailbox) { mb.failed = true }) }

// next takes the most urgent event of want: a stop or a failed socket
// first, then the adverts (every other event reads those queued before it
// anyway), then the rest in arrival order, the timer last (it reads the
// adverts again). With none queued and letGo, the goroutine gives the
// election up: the next post starts another.
func (mb *mailbox) next(want kinds, letGo bool) event {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	return mb.nextLocked(want, letGo)
}

// nextOrWait is next for a phase that waits when nothing of want is
// queued: then it returns the signal to wait on, made under the lock the
// posts take, so none posted after this call goes unsignalled.
func (mb *mailbox) nextOrWait(want kinds) (event, <-chan struct{}) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if ev := mb.nextLocked(want, false); ev.kind != evNone {
		return ev, nil
	}
	if mb.signal == nil {
		mb.signal = make(chan struct{}, 1)
	}
	return event{}, mb.signal
}

func (mb *mailbox) nextLocked(want kinds, letGo bool) event {
	switch {
	case mb.stop && want.has(evStop):
		mb.stop = false
		return event{kind: evStop}
	case mb.failed && want.has(evFailed):
		mb.failed = false
		return event{kind: evFailed}
	case mb.head != nil && want.has(evPacket):
		return event{kind: evPacket, packet: mb.popPacket()}
	}
	for i, v := range mb.other {
		ev := otherEvent(v)
		if !want.has(ev.kind) {
			continue
		}
		switch ev.kind {
		case evCmd:
			mb.cmds--
		case evLink:
			mb.links--
		case evClaim:
			mb.claims--
		}
		mb.other = slices.Delete(mb.other, i, i+1)
		if len(mb.other) == 0 && cap(mb.other) > 4 {
			mb.other = nil // a burst's room goes back
		}
		return ev
	}
	switch {
	case mb.hasLeader && want.has(evLeader):
		mb.hasLeader = false
		return event{kind: evLeader, leader: mb.leader}
	case mb.wake && want.has(evWake):
		mb.wake = false
		return event{kind: evWake}
	case mb.nudge && want.has(evNudge):
		mb.nudge = false
		return event{kind: evNudge}
	}
	if letGo {
		mb.running = false
	}
	return event{}
}

func otherEvent(v any) event {
	switch v := v.(type) {
	case func():
		return event{kind: evCmd, cmd: v}
	case *netif.Event:
		return event{kind: evLink, link: v}
	case *health.Status:
		return event{kind: evTracker, tracker: v}
	case *arp.Claim:
		return event{kind: evClaim, claim: v}
	}
	return event{}
}

// detach lets the election's goroutine go once it finds nothing queued:
// from now on posts start one (spawn).
func (mb *mailbox) detach(spawn func()) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.spawn = spawn
}

// close refuses what is posted from now on and forgets what is queued.
func (mb *mailbox) close() {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.closed = true
	for p := mb.popPacket(); p != nil; p = mb.popPacket() {
		mb.free(p)
	}
	mb.other, mb.links, mb.claims, mb.cmds = nil, 0, 0, 0
	mb.hasLeader, mb.stop, mb.wake, mb.nudge, mb.failed = false, false, false, false, false
}
