package daemon

import (
	"net/netip"
	"time"
)

// A planned move (drain, graceful stop, an instance removed by a reload) is
// make-before-break: priority 0 goes out as RFC 5798 says, but the
// addresses stay until the successor has taken over — its first advert as
// Master, then its announcement — so the clients always have an owner.
// The policy (announce.Policy.HandOver) keeps us quiet meanwhile.

// HandoverReport is the measured gap of the last planned move.
type HandoverReport struct {
	PriorityZeroAt time.Time // when priority 0 was sent
	// SuccessorAt: when the successor was first heard, by its advert or
	// its announcement (a loaded host may read its ARP socket first);
	// zero if none.
	SuccessorAt  time.Time
	Successor    netip.Addr // its address, from its first advert
	SuccessorMAC string     // the hardware address its announcement came from
	RemovedAt    time.Time  // when our addresses were removed; zero while handing over
	// Late: no successor within the bound; the addresses were removed
	// anyway.
	Late bool
}

// handoverMargin is added to the lowest priority's Skew_Time for the bound:
// the successor's own timer lateness and takeover grace, and the time its
// announcement takes to reach us.
func handoverMargin(interval time.Duration) time.Duration {
	return interval/10 + 50*time.Millisecond
}

// handoverBound is how long a handover waits for a successor: a Backup of
// the lowest priority (1) takes over after its Skew_Time, (256 − 1) / 256
// of our advert interval, plus handoverMargin.
func handoverBound(interval time.Duration) time.Duration {
	return 255*interval/256 + handoverMargin(interval)
}

// planned runs fn — which makes the machine send priority 0 and release —
// as a make-before-break handover.
func (in *instance) planned(fn func()) {
	in.handover = true
	defer func() { in.handover = false }()
	fn()
}

// A preempted Master yields the same way: the preempting Master waits its
// preempt grace before it takes the addresses, and the clients keep an
// owner if we keep them until it announces them (or yieldBound passes).
// Without a claim monitor we could not hear that announcement, and a
// route announcer's withdraw is already make-before-break: release at once.
// So too when another host claimed our addresses within the last
// Master_Down_Interval: a split brain healing (the other Master answered
// our probes all along) or an announcement read before its advert. There
// is nothing left to wait for, and two hosts answering ARP for the VIP
// could send a client to the one about to drop it. And not when we took
// the addresses less than a Master_Down_Interval ago (two Backups timing
// out at start-up): nobody relies on us yet, and a hand-over would put the
// VIP on two hosts for nothing.
func (in *instance) canYield() bool {
	if in.ann == nil || in.ann.monitor == nil || in.routes != nil {
		return false
	}
	now, mdi := in.env.Now(), in.m.MasterDownInterval()
	if now.Sub(in.tookAt) < mdi {
		return false
	}
	return in.lastClaim.IsZero() || now.Sub(in.lastClaim) >= mdi
}

// yieldBound is how long a preempted Master keeps its addresses for the
// preempting one's announcement.
func yieldBound(interval time.Duration) time.Duration {
	return preemptGrace(interval) + handoverMargin(interval)
}

func (in *instance) startYield(to netip.Addr) {
	in.yielding = true
	in.policy.Yield(in.env.Now(), yieldBound(in.cfg.AdvertInterval))
	in.armPolicy()
	in.log.Debug("preempted: keeping the addresses until the new Master announces them",
		"master", to, "bound", yieldBound(in.cfg.AdvertInterval))
}

// startHandover keeps the addresses past the machine's release.
func (in *instance) startHandover() {
	in.yielding = false
	now := in.env.Now()
	bound := handoverBound(in.cfg.AdvertInterval)
	if in.routes != nil {
		// The routers move traffic off our path before the withdraw.
		in.routes.shutdown()
		bound += in.cfg.BGP.GracefulShutdownTime
	}
	in.policy.HandOver(now, bound)
	in.setHandover(HandoverReport{PriorityZeroAt: now})
	in.awaitSuccessor = true
	in.armPolicy()
	in.log.Info("handing over: priority 0 sent; keeping the addresses until the successor has taken over",
		"bound", handoverBound(in.cfg.AdvertInterval))
}

// successorHeard notes the first advert of a new Master while handing over,
// or just after: when its announcement came first and ended the handover,
// its advert still names it in the report.
// Every received advert comes here: only a planned move's report that still
// lacks its successor costs more than a branch.
func (in *instance) successorHeard(src netip.Addr) {
	if !in.awaitSuccessor {
		return
	}
	in.awaitSuccessor = false
	now := in.env.Now()
	in.pubMu.Lock()
	h := in.pub.handoverToFill()
	h.Successor = src
	if h.SuccessorAt.IsZero() {
		h.SuccessorAt = now
	}
	in.pubMu.Unlock()
	if in.policy.HandingOver() {
		in.policy.SuccessorHeard(now)
		in.armPolicy()
	}
}

// successorAnnounced notes the successor's announcement while handing
// over; it may arrive before the advert.
func (in *instance) successorAnnounced(at time.Time, mac string) {
	if !in.policy.HandingOver() || in.yielding {
		return
	}
	in.pubMu.Lock()
	h := in.pub.handoverToFill()
	if h.SuccessorAt.IsZero() {
		h.SuccessorAt = at
	}
	if h.SuccessorMAC == "" {
		h.SuccessorMAC = mac
	}
	in.pubMu.Unlock()
}

// withdraw ends a handover: the successor has the addresses, or nobody
// came within the bound.
func (in *instance) withdraw(late bool) {
	if in.yielding {
		in.yielding = false
		in.holder.release()
		in.log.Debug("preempted: the new Master has the addresses; ours removed")
		return
	}
	if in.routes != nil {
		in.routes.withdraw("handed over")
	}
	in.holder.release()
	now := in.env.Now()
	in.pubMu.Lock()
	h := in.pub.handoverToFill()
	h.RemovedAt, h.Late = now, late
	in.awaitSuccessor = in.awaitSuccessor && !late
	r := *h
	in.pubMu.Unlock()
	if late {
		in.log.Warn("handover: no successor took over within the bound; addresses removed anyway",
			"bound", handoverBound(in.cfg.AdvertInterval), "vips", in.cfg.VIPs)
		return
	}
	who := []any{"successor", r.Successor}
	if !r.Successor.IsValid() {
		who = []any{"successor_mac", r.SuccessorMAC}
	}
	in.log.Info("handover done: the successor took over; addresses removed",
		append(who, "successor_after", r.SuccessorAt.Sub(r.PriorityZeroAt),
			"both_held_for", now.Sub(r.SuccessorAt))...)
}

func (in *instance) setHandover(r HandoverReport) {
	in.pubMu.Lock()
	*in.pub.handoverToFill() = r
	in.pubMu.Unlock()
}

// awaitHandover runs what a handover needs after the election stopped (a
// graceful stop): the successor's adverts and announcements, and the
// policy's timer, until the addresses are withdrawn.
func (in *instance) awaitHandover() {
	want := kindSet(evPacket, evClaim, evWake)
	for in.policy.HandingOver() {
		switch ev, signal := in.mb.nextOrWait(want); ev.kind {
		case evPacket:
			p := ev.packet
			if p.adv.VRID == in.cfg.VRID && p.adv.Priority > 0 && p.src != in.primary {
				in.successorHeard(p.src)
			}
			in.sockets.free(p)
		case evClaim:
			in.onClaim(ev.claim)
		case evWake:
			// Only the policy's deadline counts now; the election stopped.
			in.firesAt = time.Time{}
			in.dueAt = [len(in.dueAt)]time.Time{}
			in.policyWake()
			in.rearm(in.env.Now())
		default:
			<-signal
		}
	}
}
