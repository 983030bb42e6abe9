package vrrp

import (
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// mismatchSlots bounds the peers whose address-list mismatches are
// reported per Master_Down_Interval, so that no flood of sources can turn
// ActAddressMismatch into a log flood.
const mismatchSlots = 4

// ReceiveAdvert handles an advert that Decode accepted, from src, received
// with the given TTL. A discarded advert returns a DropReason error; the
// driver counts it.
//
// Beyond RFC 5798 section 7.1, one unauthenticated advert may not do more
// than the protocol needs: priority 0 counts only from the Master we
// follow, priority 255 only from a configured peer or that Master (unless
// Config.TrustUnknownMasters), and another address list only from that
// Master or an address owner, reported (ActAddressMismatch) rather than
// taken for a VRID collision.
func (m *Machine) ReceiveAdvert(src netip.Addr, ttl int, adv *Advertisement, out []Action) ([]Action, error) {
	if err := m.checkTTL(ttl); err != nil {
		return out, err
	}
	if err := m.checkVersion(adv); err != nil {
		return out, err
	}
	if adv.VRID != m.cfg.VRID {
		return out, DropVRID
	}
	if err := m.checkAuth(adv); err != nil {
		return out, err
	}
	src = src.WithZone("")
	if src.Is4() != m.cfg.Primary.Is4() || src.Is4In6() {
		return out, DropFamily
	}
	if src.Is6() && len(m.cfg.Peers) == 0 && !src.IsLinkLocalUnicast() {
		return out, DropSourceNotLinkLocal
	}
	if src == m.cfg.Primary {
		return out, DropOwnAdvert
	}
	followed := m.following(src)
	mismatch := !m.sameAddresses(adv.Addresses)
	if mismatch && !followed && !(adv.Priority == 255 && m.trusted(src)) {
		return out, DropAddressList
	}
	if adv.Priority == 255 && !m.trusted(src) {
		return out, DropUnknownOwner
	}
	if adv.Priority == 0 && m.state == StateBackup && !followed && src != m.lowerMaster.Addr {
		return out, DropZeroNotMaster
	}
	if m.cfg.Version == Version2 && adv.Interval != m.cfg.AdvertInterval {
		return out, DropIntervalMismatch
	}
	if !m.running {
		return out, nil
	}
	now := m.clock.Now()
	if mismatch {
		out = m.reportMismatch(out, now, src)
	}
	info := MasterInfo{Addr: src, Priority: adv.Priority, Interval: adv.Interval, At: now}

	switch m.state {
	case StateBackup:
		return m.backupReceive(out, now, info), nil
	case StateMaster:
		return m.masterReceive(out, now, info), nil
	case StateFault:
		if adv.Priority > 0 {
			m.master = info // for status: who holds the addresses meanwhile
		}
	}
	return out, nil
}

// checkTTL applies the unicast TTL range to a unicast instance and the
// strict 255 to a multicast one.
func (m *Machine) checkTTL(ttl int) error {
	if len(m.cfg.Peers) == 0 {
		return CheckTTL(ttl)
	}
	return CheckTTLRange(ttl, int(m.cfg.UnicastMinTTL), int(m.cfg.UnicastMaxTTL))
}

// following reports whether src is the Master this Backup follows.
func (m *Machine) following(src netip.Addr) bool {
	return m.state == StateBackup && m.master.Addr.IsValid() && src == m.master.Addr
}

// trusted reports whether an advert from src may claim priority 255 and
// have its interval learnt at once: from a configured peer, or from the
// Master we follow or, as Master, followed last. (A Backup that timed out
// before a slow Master's second advert must learn its interval when it
// yields to it, or it would time out again after every advert.)
func (m *Machine) trusted(src netip.Addr) bool {
	return m.cfg.TrustUnknownMasters || m.master.Addr.IsValid() && src == m.master.Addr ||
		slices.Contains(m.cfg.Peers, src) || m.cfg.AddressOwner.IsValid() && src == m.cfg.AddressOwner
}

// learnt is the Master_Adver_Interval to use for a Master that sent adv: a
// host that is not trusted yet does not set it from one advert (it could be
// a forged 40.95s); its next advert, as the Master we follow, does.
func (m *Machine) learnt(adv MasterInfo) time.Duration {
	if m.trusted(adv.Addr) {
		return adv.Interval
	}
	return m.cfg.AdvertInterval
}

// reportMismatch emits ActAddressMismatch for src at most once per
// Master_Down_Interval, and for at most mismatchSlots peers in that time.
func (m *Machine) reportMismatch(out []Action, now time.Time, src netip.Addr) []Action {
	window := m.MasterDownInterval()
	if m.mismatches == nil {
		m.mismatches = new([mismatchSlots]mismatchReport)
	}
	oldest := 0
	for i := range m.mismatches {
		r := &m.mismatches[i]
		if r.peer == src {
			if now.Sub(r.at) < window {
				return out
			}
			r.at = now
			return append(out, Action{Kind: ActAddressMismatch, Peer: src})
		}
		if r.at.Before(m.mismatches[oldest].at) {
			oldest = i
		}
	}
	r := &m.mismatches[oldest]
	if r.peer.IsValid() && now.Sub(r.at) < window {
		return out
	}
	*r = mismatchReport{peer: src, at: now}
	return append(out, Action{Kind: ActAddressMismatch, Peer: src})
}

// backupReceive is RFC 5798 section 6.4.2, with a preempt delay.
func (m *Machine) backupReceive(out []Action, now time.Time, adv MasterInfo) []Action {
	if adv.Priority == 0 {
		// Only ever sooner: a stream of them (forged from the Master's
		// address) must not push the takeover back.
		m.released = true
		m.master.Addr, m.master.Priority, m.master.At = adv.Addr, 0, now
		m.recheck = false
		if due := m.deadline[TimerMasterDown]; !due.IsZero() && due.Sub(now) <= m.SkewTime() {
			return out
		}
		return m.arm(out, TimerMasterDown, m.SkewTime())
	}
	out = m.checkDownTimer(out, now, adv)
	m.released = false
	if m.yieldedTo.IsValid() && adv.Addr != m.yieldedTo && (adv.Priority > m.yieldedPrio ||
		adv.Priority == m.yieldedPrio && adv.Addr.Compare(m.yieldedTo) > 0) {
		if now.Sub(m.yieldedAt) < m.MasterDownInterval() {
			// Every Backup may have taken over while we were frozen, and
			// the one we heard first yields to this one: follow the
			// winner of that race, not preempt it.
			m.yieldedTo, m.yieldedPrio = adv.Addr, adv.Priority
		} else {
			m.yieldedTo = netip.Addr{} // a router above it is Master now
		}
	}
	// One below it (a Backup that took over too, about to yield to it)
	// changes nothing.
	lower := m.cfg.Preempt && adv.Priority < m.prio && adv.Addr != m.yieldedTo
	if !lower {
		m.lowerSince = time.Time{}
	} else if m.cfg.PreemptDelay > 0 {
		if m.lowerSince.IsZero() {
			m.lowerSince = now
		}
		if now.Sub(m.lowerSince) < m.cfg.PreemptDelay {
			lower = false // not higher for long enough: keep accepting
		}
	}
	if lower {
		// Discard it: the Master_Down_Timer runs out and we take over.
		m.lowerMaster = adv
		return out
	}
	if m.outranks(now, adv) {
		// Two Masters at once, one preempting the other: the lower one's
		// advert was sent before it heard the higher one, which wins.
		// Following the winner is what lets its release count.
		return m.arm(out, TimerMasterDown, m.MasterDownInterval())
	}
	m.masterAdverInterval = m.learnt(adv)
	m.master = adv
	m.lowerMaster = MasterInfo{}
	m.recheck = false
	return m.arm(out, TimerMasterDown, m.MasterDownInterval())
}

// outranks reports whether the Master we follow, heard within its advert
// interval, wins the election against adv's sender: a higher priority, or
// the same and a higher address (RFC 5798 section 6.4.3).
func (m *Machine) outranks(now time.Time, adv MasterInfo) bool {
	cur := m.master
	if !cur.Addr.IsValid() || cur.Addr == adv.Addr || cur.Priority == 0 || now.Sub(cur.At) >= m.masterAdverInterval {
		return false
	}
	return cur.Priority > adv.Priority || cur.Priority == adv.Priority && cur.Addr.Compare(adv.Addr) > 0
}

// checkDownTimer warns when another router became Master after the Master we
// followed was silent for more than the RFC's 3 intervals but less than our
// own Master_Down_Interval: with MasterDownAdverts above 3 here, that router
// seems to wait fewer adverts than we do. (A router that waits more than we
// do cannot be seen from here; it warns in our place if it runs vipd.)
func (m *Machine) checkDownTimer(out []Action, now time.Time, adv MasterInfo) []Action {
	if m.cfg.MasterDownAdverts <= DefaultMasterDownAdverts || m.released ||
		!m.master.Addr.IsValid() || adv.Addr == m.master.Addr || adv.Addr == m.lowerMaster.Addr {
		return out
	}
	silent := now.Sub(m.master.At)
	if silent <= DefaultMasterDownAdverts*m.masterAdverInterval || silent >= m.MasterDownInterval() {
		return out
	}
	if !m.lastDownWarn.IsZero() && now.Sub(m.lastDownWarn) < m.MasterDownInterval() {
		return out
	}
	m.lastDownWarn = now
	return append(out, Action{Kind: ActDownTimerMismatch, Peer: adv.Addr, Detail: fmt.Sprintf(
		"%v became Master %v after the last advert of %v, before our Master_Down_Interval of %v (master_down_adverts = %d): do all routers of the group use the same master_down_adverts?",
		adv.Addr, roundCause(silent), m.master.Addr, roundCause(m.MasterDownInterval()), m.cfg.MasterDownAdverts)})
}

// masterReceive is RFC 5798 section 6.4.3, with recovery from a split brain
// and from having been frozen.
func (m *Machine) masterReceive(out []Action, now time.Time, adv MasterInfo) []Action {
	if !m.probation {
		if due := m.deadline[TimerAdvert]; !due.IsZero() && now.Sub(due) > m.frozenLate() {
			// Our advert timer is long overdue: we were frozen and this
			// advert may come from whoever took over meanwhile.
			m.probation = true
			m.frozenFor = now.Sub(due)
		}
	}
	if m.probation {
		if adv.Priority == 0 {
			return out
		}
		m.probation = false
		m.yieldedTo, m.yieldedPrio, m.yieldedAt = adv.Addr, adv.Priority, now
		cause := fmt.Sprintf("our timers fired %v late (process or VM frozen?) and %v took over meanwhile: yielding to it",
			roundCause(m.frozenFor), adv.Addr)
		return m.enterBackupFrom(out, adv, ReasonFrozen, cause, false)
	}
	if adv.Priority == 0 {
		// Another Master releases: answer so that the Backups that
		// followed it hear us before their Skew_Time runs out.
		return m.answer(out, now)
	}
	if m.cfg.Follower {
		if m.lastForeign.IsZero() || now.Sub(m.lastForeign) >= m.MasterDownInterval() {
			m.lastForeign = now
			out = append(out, Action{Kind: ActForeignMaster, Peer: adv.Addr})
		}
		return out
	}
	if adv.Priority > m.prio {
		return m.enterBackupFrom(out, adv, ReasonHigherMaster,
			fmt.Sprintf("higher priority %d from %v", adv.Priority, adv.Addr), m.cfg.SplitBrainRecovery)
	}
	if adv.Priority == m.prio && adv.Addr.Compare(m.cfg.Primary) > 0 {
		return m.enterBackupFrom(out, adv, ReasonHigherMaster,
			fmt.Sprintf("equal priority %d from %v, a higher address than ours", adv.Priority, adv.Addr), m.cfg.SplitBrainRecovery)
	}
	if !m.cfg.SplitBrainRecovery {
		return out
	}
	// Two Masters: answer at once so the other yields, and announce again
	// in case neighbours followed the other one meanwhile.
	out = m.answer(out, now)
	if m.lastAnnounce.IsZero() || now.Sub(m.lastAnnounce) >= m.MasterDownInterval() {
		m.lastAnnounce = now
		out = append(out, Action{Kind: ActAnnounce})
	}
	return out
}

// answer sends an advert at once, out of turn, at most once per advert
// interval: the regular advert follows within an interval anyway, and a
// stream of forged adverts must not make us a reflector.
func (m *Machine) answer(out []Action, now time.Time) []Action {
	if !m.lastAnswer.IsZero() && now.Sub(m.lastAnswer) < m.cfg.AdvertInterval {
		return out
	}
	m.lastAnswer = now
	out = m.advertise(out)
	return m.arm(out, TimerAdvert, m.cfg.AdvertInterval)
}

// advertise sends an advert with our priority, as Master.
func (m *Machine) advertise(out []Action) []Action {
	m.lastAdvert = m.clock.Now()
	return append(out, Action{Kind: ActSendAdvert, Priority: m.prio})
}

// sameAddresses reports whether got holds exactly our virtual addresses, in
// any order. Lists are short, so a quadratic scan beats allocating a set.
func (m *Machine) sameAddresses(got []netip.Addr) bool {
	if len(got) != len(m.cfg.Addresses) {
		return false
	}
	for _, want := range m.cfg.Addresses {
		found := false
		for _, a := range got {
			if a == want {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
