package vrrp

import (
	"net/netip"
	"time"
)

func (m *Machine) enterMaster(out []Action, reason Reason, cause string) []Action {
	out = m.stop(out, TimerMasterDown)
	out = m.advertise(out)
	grace := m.cfg.TakeoverGrace
	if reason == ReasonPreempt && m.cfg.PreemptGrace > 0 {
		grace = m.cfg.PreemptGrace
	}
	if grace > 0 {
		out = m.arm(out, TimerTakeover, grace)
	} else {
		out = append(out, Action{Kind: ActTakeAddresses})
	}
	out = m.arm(out, TimerAdvert, m.cfg.AdvertInterval)
	m.resetTerm()
	if grace > 0 {
		now := m.clock.Now()
		m.pending = &Transition{At: now, From: m.state, To: StateMaster, Reason: reason, Cause: cause}
		m.prevSince = m.since
		m.state, m.since = StateMaster, now
		return out
	}
	return m.transition(out, StateMaster, reason, cause)
}

// resetTerm forgets what the previous term as Backup or Master noted.
func (m *Machine) resetTerm() {
	m.released, m.recheck, m.probation = false, false, false
	m.lowerSince, m.lowerMaster, m.yieldedTo = time.Time{}, MasterInfo{}, netip.Addr{}
	m.lastAnnounce, m.lastAnswer, m.flapFrom = time.Time{}, time.Time{}, time.Time{}
}

// flushPending reports a transition to Master held back by the grace.
func (m *Machine) flushPending(out []Action) []Action {
	if m.pending == nil {
		return out
	}
	tr := *m.pending
	m.pending = nil
	tr.At = m.clock.Now()
	m.since = tr.At
	return append(out, Action{Kind: ActTransition, Transition: tr})
}

// enterBackupFrom yields to the Master that sent adv.
func (m *Machine) enterBackupFrom(out []Action, adv MasterInfo, reason Reason, cause string, lastAdvert bool) []Action {
	lostTie := m.pending != nil
	if lostTie {
		// Still in the grace: the addresses never moved, no neighbour
		// needs repair, and no transition was reported. Go back quietly.
		lastAdvert = false
	}
	if lastAdvert {
		out = m.advertise(out)
	}
	out = m.stop(out, TimerAdvert)
	out = m.stop(out, TimerTakeover)
	release := Action{Kind: ActReleaseAddresses}
	if reason == ReasonHigherMaster && !lostTie {
		release.Peer = adv.Addr
	}
	out = append(out, release)
	m.masterAdverInterval = m.learnt(adv) // before m.master: we follow no one yet
	m.master = adv
	m.lowerMaster = MasterInfo{}
	m.lowerSince = time.Time{}
	out = m.arm(out, TimerMasterDown, m.MasterDownInterval())
	if lostTie {
		m.state, m.since = m.pending.From, m.prevSince
		m.pending = nil
		return out
	}
	return m.transition(out, StateBackup, reason, cause)
}

// enterBackup is RFC 5798 section 6.4.1 for a router that does not own the
// addresses: wait Master_Down_Interval for a Master's advert.
func (m *Machine) enterBackup(out []Action, reason Reason, cause string) []Action {
	if m.cfg.Follower && m.leader {
		// Back from Fault with the leader Master: follow it at once.
		out = m.stopTimers(out)
		return m.enterMaster(out, ReasonLeader, "following "+m.leaderCause)
	}
	out = m.stopTimers(out)
	out = append(out, Action{Kind: ActReleaseAddresses})
	m.masterAdverInterval = m.cfg.AdvertInterval
	m.master, m.lowerMaster = MasterInfo{}, MasterInfo{}
	m.released, m.recheck, m.probation = false, false, false
	m.lowerSince, m.flapFrom = time.Time{}, time.Time{}
	out = m.arm(out, TimerMasterDown, m.MasterDownInterval())
	return m.transition(out, StateBackup, reason, cause)
}

func (m *Machine) enterFault(out []Action, reason Reason, cause string, canSend bool) []Action {
	out = m.stopTimers(out)
	if canSend && m.state == StateMaster && m.linkUp {
		out = append(out, Action{Kind: ActSendAdvert, Priority: 0})
	}
	out = append(out, Action{Kind: ActReleaseAddresses})
	m.probation, m.recheck = false, false
	return m.transition(out, StateFault, reason, cause)
}

func (m *Machine) transition(out []Action, to State, reason Reason, cause string) []Action {
	// A Master leaving during its grace (link down, shutdown) did become
	// Master: say so first, so the history reads in order.
	out = m.flushPending(out)
	now := m.clock.Now()
	tr := Transition{At: now, From: m.state, To: to, Reason: reason, Cause: cause}
	m.state, m.since = to, now
	return append(out, Action{Kind: ActTransition, Transition: tr})
}

func (m *Machine) arm(out []Action, t Timer, after time.Duration) []Action {
	m.deadline[t] = m.clock.Now().Add(after)
	return append(out, Action{Kind: ActArmTimer, Timer: t, After: after})
}

func (m *Machine) stop(out []Action, t Timer) []Action {
	if m.deadline[t].IsZero() {
		return out
	}
	m.deadline[t] = time.Time{}
	return append(out, Action{Kind: ActStopTimer, Timer: t})
}

func (m *Machine) stopTimers(out []Action) []Action {
	out = m.stop(out, TimerAdvert)
	out = m.stop(out, TimerTakeover)
	return m.stop(out, TimerMasterDown)
}
