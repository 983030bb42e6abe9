package daemon

import (
	"net/netip"
	"time"

	"github.com/vipd/vipd/announce"
	"github.com/vipd/vipd/arp"
)

// runPolicy carries out the announcement policy's actions and re-arms its
// timer. The policy decides when; this only says how (ARP today).
func (in *instance) runPolicy(actions []announce.Action) {
	for _, a := range actions {
		switch a.Kind {
		case announce.ActAnnounce:
			in.announce()
		case announce.ActProbe:
			in.probe()
		case announce.ActConflict:
			in.conflict(a.Claim)
			if a.Log {
				in.log.Warn("another host claims our virtual address: announcing ours again",
					"vip", a.Claim.Addr, "foreign_mac", a.Claim.MAC, "gratuitous", a.Claim.Announcement,
					"claims_seen", in.counters.conflicts.Load())
			}
		case announce.ActStandDown:
			in.conflict(a.Claim)
			in.log.Error("another host claims our virtual address by announcing it and we hear no advert from it: two Masters that cannot hear each other (adverts filtered or lost: a VRRP partition?); not fighting over the clients, we stop announcing until it stops answering for the address or the election decides",
				"vip", a.Claim.Addr, "foreign_mac", a.Claim.MAC)
		case announce.ActWithdraw:
			in.withdraw(a.Late)
		case announce.ActResume:
			in.log.Warn("the other claimant no longer answers for our virtual address: announcing it again",
				"vip", a.Claim.Addr, "foreign_mac", a.Claim.MAC)
		}
	}
	in.armPolicy()
}

// armPolicy points the wake timer's policy deadline at the policy's next.
func (in *instance) armPolicy() {
	in.policyDue = in.policy.Next()
	if in.wake != nil {
		in.rearm(in.env.Now())
	}
}

// silent: a Master that was frozen (or thinks it may have been) must not
// pull neighbours back to itself before it knows it is still Master.
func (in *instance) silent() bool { return in.m != nil && in.m.Silent() }

func (in *instance) announce() {
	if in.ann == nil || !in.holder.held || in.silent() {
		return
	}
	for _, v := range in.cfg.VIPs {
		if err := in.ann.announce.Announce(v.Addr()); err != nil {
			in.log.Warn("announcing the address failed", "vip", v, "error", err)
			continue
		}
		in.counters.garpSent.Add(1)
	}
}

// probe asks who else holds our VIPs: a host that answers is a second
// owner (see onClaim).
func (in *instance) probe() {
	if in.ann == nil || in.ann.monitor == nil || in.silent() {
		return
	}
	// IPv4 asks as RFC 5227's ARP Probe does, from 0.0.0.0: a holder
	// answers it as it would a question from our address, and every host
	// that only hears it is spared the route lookup a sender address costs
	// (on a bridge the sender pays for every receiver: a one-group Master
	// 31 against 24 ms/min in the lab).
	from := in.primary
	if from.Is4() {
		from = netip.IPv4Unspecified()
	}
	for _, v := range in.cfg.VIPs {
		if err := in.ann.announce.Probe(v.Addr(), from); err != nil {
			in.log.Debug("ARP probe failed", "vip", v, "error", err)
		}
	}
}

func (in *instance) conflict(c announce.Claim) {
	in.counters.conflicts.Add(1)
	in.pubMu.Lock()
	in.pub.conflict = &c // never changed once published: status reads it unlocked
	in.pubMu.Unlock()
	if in.hooks.conflict != nil {
		in.hooks.conflict(in.id.name)
	}
}

// onClaim hands another host's ARP packet for one of our VIPs to the policy.
func (in *instance) onClaim(c *arp.Claim) {
	ours := false
	for _, v := range in.cfg.VIPs {
		if v.Addr() == c.IP {
			ours = true
			break
		}
	}
	if !ours || !in.policy.Held() {
		return
	}
	at := c.At
	if at.IsZero() {
		at = in.env.Now()
	}
	in.lastClaim = at
	if c.Gratuitous() {
		in.successorAnnounced(at, c.MAC.String())
	}
	in.runPolicy(in.policy.Claimed(announce.Claim{
		Addr: c.IP, MAC: c.MAC.String(), Announcement: c.Gratuitous(), At: at,
	}, nil))
}

// takeoverGrace is how long a new Master advertises before it takes the
// addresses: long enough for the advert of an equal-priority Backup that
// timed out at the same instant to arrive, short against the outage.
func takeoverGrace(interval time.Duration) time.Duration {
	return min(interval/50, 3*time.Millisecond)
}

// preemptGrace is the takeover grace of a preempting Master: the Master it
// preempts keeps the addresses meanwhile (startYield), so it can wait long
// enough for an equal Backup on a loaded host, whose preempt delay ended
// with the same advert, to be heard.
func preemptGrace(interval time.Duration) time.Duration {
	return min(interval/5, 20*time.Millisecond)
}

// rideAdvert runs, at a Master's advert wake-up, the announcement policy's
// work due before the next advert (the probe for a second owner, the
// refresh), a little early, instead of waking the daemon again for it.
func (in *instance) rideAdvert() {
	if in.hooks.tick != nil {
		in.hooks.tick()
	}
	if in.policy == nil {
		return
	}
	buf := in.policyActions
	in.policyActions = nil
	buf = in.policy.Ride(in.env.Now(), in.cfg.AdvertInterval, buf[:0])
	in.runPolicy(buf)
	in.policyActions = buf[:0]
}

// tickPolicy runs the policy's timer work due at t. Its actions go in a
// buffer kept between calls, as a Master probes at every advert or so; one
// taken while a call uses it (a nested one) is a new slice.
func (in *instance) tickPolicy(t time.Time) {
	buf := in.policyActions
	in.policyActions = nil
	buf = in.policy.Tick(t, buf[:0])
	in.runPolicy(buf)
	in.policyActions = buf[:0]
}
