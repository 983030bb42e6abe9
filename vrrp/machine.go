package vrrp

import (
	"fmt"
	"net/netip"
	"time"
)

// flapAdverts bounds a link flap that the group cannot have noticed: a
// Backup waits Master_Down_Interval, at least 3 of our advert intervals
// (it learns our interval, MasterDownAdverts is never below 3, and Skew_Time
// is positive), after our last advert before it takes over.
const flapAdverts = 3

// A Machine is the RFC 5798 election for one virtual router. It is not safe
// for concurrent use: one goroutine feeds it events.
type Machine struct {
	cfg   Config
	clock Clock

	running bool
	state   State
	since   time.Time
	prio    uint8 // effective priority: base plus tracker contributions
	linkUp  bool
	fault   string // non-empty while a health check demands Fault

	masterAdverInterval time.Duration
	deadline            [numTimers]time.Time // zero: stopped

	master      MasterInfo // last accepted advert from another router
	lowerMaster MasterInfo // last lower-priority advert we ignored to preempt
	released    bool       // the Master's last advert had priority 0
	lowerSince  time.Time  // since when a lower-priority Master is heard (preempt delay)

	// A Master whose timers fired late (the process or VM was frozen) stays
	// silent for one advert interval: if another router took over while it
	// was frozen, it yields instead of fighting, and does not preempt that
	// router afterwards (yieldedTo, at yieldedPrio, since yieldedAt: until
	// a router above it becomes Master).
	probation   bool
	frozenFor   time.Duration
	yieldedTo   netip.Addr
	yieldedPrio uint8
	yieldedAt   time.Time
	// A Backup whose Master_Down_Timer fired late listens once more before
	// it takes over: adverts queued while it was frozen may still arrive.
	recheck bool

	lastAnnounce time.Time // of a split-brain re-announcement, to limit them
	lastAnswer   time.Time // of an immediate answer to another Master, to limit them
	lastAdvert   time.Time // when we last sent an advert as Master
	// flapFrom is when the link went down while we were Master, zero
	// otherwise: a link back soon enough resumes the term (SetLink).
	flapFrom time.Time

	// mismatches: made at the first address-list mismatch (a
	// misconfiguration, which most groups never see).
	mismatches *[mismatchSlots]mismatchReport
	// A follower's leader: whether it is Master, and why, in words.
	leader       bool
	leaderCause  string
	lastForeign  time.Time // of an ActForeignMaster, to limit them
	lastDownWarn time.Time // of an ActDownTimerMismatch, to limit them

	// pending is the transition to Master of a router still in its
	// TakeoverGrace: it is reported when the addresses are taken, and not at
	// all if the router loses a tie first (the address never moved).
	pending   *Transition
	prevSince time.Time
}

type mismatchReport struct {
	peer netip.Addr
	at   time.Time
}

// NewMachine returns a machine in Initialize. Start begins the election.
func NewMachine(cfg Config, clock Clock) (*Machine, error) {
	m := new(Machine)
	if err := m.Init(cfg, clock); err != nil {
		return nil, err
	}
	return m, nil
}

// Init makes m a new machine, as NewMachine does, where the caller keeps
// it (inside a larger struct: one object, not two). On an error m is
// unchanged.
func (m *Machine) Init(cfg Config, clock Clock) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	cfg = cfg.owned()
	*m = Machine{
		cfg:                 cfg,
		clock:               clock,
		state:               StateInitialize,
		since:               clock.Now(),
		prio:                cfg.Priority,
		masterAdverInterval: cfg.AdvertInterval,
	}
	return nil
}

// State returns the current state and since when it holds.
func (m *Machine) State() (State, time.Time) { return m.state, m.since }

// Steady reports whether another advert the same as the last one from the
// Master it follows would only push the Master_Down_Timer back: a Backup
// following a Master it does not preempt (nor is waiting to preempt), which
// has not said it is leaving. A driver may then read such adverts later,
// in order and with their arrival times, before it decides anything.
func (m *Machine) Steady() (master netip.Addr, ok bool) {
	if m.state != StateBackup || m.released || !m.master.Addr.IsValid() || m.master.Priority == 0 || m.lowerMaster.Addr.IsValid() {
		return netip.Addr{}, false
	}
	if m.cfg.Preempt && m.master.Priority < m.prio && m.master.Addr != m.yieldedTo {
		return netip.Addr{}, false
	}
	return m.master.Addr, true
}

// Priority returns the effective priority.
func (m *Machine) Priority() uint8 { return m.prio }

// Config returns the machine's configuration.
func (m *Machine) Config() Config { return m.cfg }

// Master returns what the newest advert from another Master said, whether
// it was accepted or ignored to preempt it.
func (m *Machine) Master() MasterInfo {
	if m.lowerMaster.At.After(m.master.At) {
		return m.lowerMaster
	}
	return m.master
}

// Silent reports whether a Master must not speak for its addresses now: it
// is listening after a freeze, or its advert timer is so overdue that it
// was frozen and has not noticed yet. Announcements (gratuitous ARP) that
// the driver times itself must wait, or they would pull neighbours back to
// a router about to yield.
func (m *Machine) Silent() bool {
	if m.state != StateMaster {
		return false
	}
	if m.probation {
		return true
	}
	due := m.deadline[TimerAdvert]
	return !due.IsZero() && m.clock.Now().Sub(due) > m.frozenLate()
}

// frozenLate is how late a Master's advert timer must fire for the Master
// to assume that it was frozen and that Backups took over: silent for
// MasterDownAdverts+1 intervals, it is past every Backup's
// Master_Down_Interval (under MasterDownAdverts+1 intervals).
func (m *Machine) frozenLate() time.Duration {
	return time.Duration(m.cfg.MasterDownAdverts) * m.cfg.AdvertInterval
}

// MasterAdverInterval is the interval learnt from the Master's adverts.
func (m *Machine) MasterAdverInterval() time.Duration { return m.masterAdverInterval }

// SkewTime is ((256 - Priority) * Master_Adver_Interval) / 256 (RFC 5798
// section 6.1), computed in nanoseconds as keepalived does in microseconds;
// for VRRPv2 (256 - Priority) / 256 seconds (RFC 3768 section 6.1).
func (m *Machine) SkewTime() time.Duration {
	if m.cfg.Version == Version2 {
		return time.Duration(256-int(m.prio)) * time.Second / 256
	}
	return time.Duration(256-int(m.prio)) * m.masterAdverInterval / 256
}

// MasterDownInterval is MasterDownAdverts (RFC 5798: 3) *
// Master_Adver_Interval + Skew_Time.
func (m *Machine) MasterDownInterval() time.Duration {
	return time.Duration(m.cfg.MasterDownAdverts)*m.masterAdverInterval + m.SkewTime()
}

// Start leaves Initialize: for Backup, or for Fault when the link is down or
// a health check demands it. Addresses left behind by an earlier run are
// released first, so two hosts never keep them.
func (m *Machine) Start(linkUp bool, out []Action) []Action {
	if m.running {
		return out
	}
	m.running = true
	m.linkUp = linkUp
	switch {
	case !linkUp:
		return m.enterFault(out, ReasonLinkDown, "interface "+m.cfg.Interface+" down", false)
	case m.fault != "":
		return m.enterFault(out, ReasonFault, m.fault, false)
	}
	return m.enterBackup(out, ReasonStartup, "started")
}

// Resume starts a machine that takes over from an earlier process of the
// same daemon (a binary upgrade): one that was Master carries on as Master
// without releasing or re-electing — it advertises at once, before any
// Backup's Master_Down_Timer can run out. Anything else starts as Start.
func (m *Machine) Resume(linkUp, wasMaster bool, out []Action) []Action {
	return m.resume(linkUp, wasMaster, "resumed from the previous process (binary upgrade)", out)
}

// Adopt is Start for a router whose addresses are already on its interface,
// left by the daemon it replaces (a keepalived Master stopped without its
// cleanup): it is Master at once and keeps them, so the replacement moves
// nothing; the election goes on from there (a higher-priority Master still
// wins).
func (m *Machine) Adopt(linkUp bool, out []Action) []Action {
	return m.resume(linkUp, true, "adopted the addresses found on "+m.cfg.Interface+" (replacing the daemon that held them)", out)
}

func (m *Machine) resume(linkUp, wasMaster bool, cause string, out []Action) []Action {
	if m.running {
		return out
	}
	if !wasMaster || !linkUp || m.fault != "" {
		return m.Start(linkUp, out)
	}
	m.running = true
	m.linkUp = true
	out = m.advertise(out)
	out = append(out, Action{Kind: ActTakeAddresses}) // they are there; this only makes sure
	out = m.arm(out, TimerAdvert, m.cfg.AdvertInterval)
	return m.transition(out, StateMaster, ReasonResumed, cause)
}

// Shutdown stops the election: a Master sends priority 0 so that a Backup
// takes over after Skew_Time, then releases its addresses (RFC 5798 section
// 6.4.3). The machine returns to Initialize; Start may run it again.
func (m *Machine) Shutdown(out []Action) []Action {
	if !m.running {
		return out
	}
	m.running = false
	m.flapFrom = time.Time{}
	out = m.stopTimers(out)
	if m.state == StateMaster {
		out = append(out, Action{Kind: ActSendAdvert, Priority: 0})
	}
	out = append(out, Action{Kind: ActReleaseAddresses})
	return m.transition(out, StateInitialize, ReasonShutdown, "shutting down")
}

// Resign makes a Master give its addresses away without stopping: it sends
// priority 0, so a Backup takes over after its Skew_Time, releases the
// addresses and waits as a Backup. Draining a node uses it with the lowest
// priority, so any peer wins; if none takes over, the Master_Down_Timer
// brings the addresses back here, because an address with no owner is worse.
func (m *Machine) Resign(cause string, out []Action) []Action {
	if !m.running || m.state != StateMaster {
		return out
	}
	out = m.stop(out, TimerAdvert)
	out = m.stop(out, TimerTakeover)
	out = append(out,
		Action{Kind: ActSendAdvert, Priority: 0},
		Action{Kind: ActReleaseAddresses},
	)
	m.probation = false
	m.master, m.lowerMaster = MasterInfo{}, MasterInfo{}
	m.lowerSince, m.released, m.recheck = time.Time{}, false, false
	m.masterAdverInterval = m.cfg.AdvertInterval
	out = m.arm(out, TimerMasterDown, m.MasterDownInterval())
	return m.transition(out, StateBackup, ReasonResigned, cause)
}

// Reconfigure changes what a reload may change in place: advert interval,
// preemption, the virtual addresses (the caller adds or removes them while
// Master) and the primary address (a new unicast source). VRID and
// interface are fixed for a machine's life; the base priority changes
// through SetPriority.
func (m *Machine) Reconfigure(cfg Config) error {
	cfg.VRID, cfg.Interface = m.cfg.VRID, m.cfg.Interface
	cfg.Priority = m.cfg.Priority
	if err := cfg.validate(); err != nil {
		return err
	}
	m.cfg = cfg.owned()
	if m.state != StateBackup || m.master.Addr.IsValid() {
		return nil
	}
	// No Master heard yet: the Backup's own interval is the one it waits on.
	m.masterAdverInterval = cfg.AdvertInterval
	return nil
}

// SetLeader tells a follower (Config.Follower) whether its leader is
// Master now, and why in words: it becomes Master at once when the leader
// does, and gives its addresses away (priority 0) when the leader stops
// being Master. A follower in Fault (its own link down) remembers it for
// when the link returns.
func (m *Machine) SetLeader(master bool, cause string, out []Action) []Action {
	if !m.cfg.Follower {
		return out
	}
	m.leader, m.leaderCause = master, cause
	if !m.running {
		return out
	}
	switch {
	case master && m.state == StateBackup:
		out = m.stop(out, TimerMasterDown)
		return m.enterMaster(out, ReasonLeader, "following "+cause)
	case !master && m.state == StateMaster:
		out = m.stop(out, TimerAdvert)
		out = m.stop(out, TimerTakeover)
		out = append(out, Action{Kind: ActSendAdvert, Priority: 0}, Action{Kind: ActReleaseAddresses})
		m.master, m.lowerMaster = MasterInfo{}, MasterInfo{}
		return m.transition(out, StateBackup, ReasonLeader, "following "+cause)
	}
	return out
}

// AdvertMayBeEarly reports whether the advert timer, when it fires early,
// still sends: a driver lines up the adverts of many groups to send them in
// one wake-up, and an advert sooner than the interval never shortens a
// Backup's Master_Down_Timer. True for a Master, however early (a reload
// may have shortened the interval since the timer was armed), except on
// probation after a freeze, whose full interval of listening is the point.
// A driver fires the timer early only when this holds at arming; a fire the
// machine would ignore would leave the timer unarmed.
func (m *Machine) AdvertMayBeEarly() bool {
	return m.running && m.state == StateMaster && !m.probation
}

// SetPriority changes the effective priority (1..254). A Master announces it
// in an advert at once; a Backup uses it for its next Master_Down_Interval.
func (m *Machine) SetPriority(p uint8, out []Action) []Action {
	if p == 0 || p == 255 || p == m.prio {
		return out
	}
	m.prio = p
	if m.running && m.state == StateMaster && !m.probation {
		out = m.advertise(out)
		out = m.arm(out, TimerAdvert, m.cfg.AdvertInterval)
	}
	return out
}

// SetLink reports the interface's state: down means Fault, up again means
// Backup (unless a health check still demands Fault).
func (m *Machine) SetLink(up bool, out []Action) []Action {
	if up == m.linkUp {
		return out
	}
	m.linkUp = up
	if !m.running {
		return out
	}
	if !up {
		if m.state == StateFault {
			return out
		}
		wasMaster := m.state == StateMaster
		out = m.enterFault(out, ReasonLinkDown, "interface "+m.cfg.Interface+" down", false)
		if wasMaster {
			m.flapFrom = m.clock.Now()
		}
		return out
	}
	if m.state == StateFault && m.fault == "" {
		if m.flapFrom.IsZero() {
			return m.enterBackup(out, ReasonLinkUp, "interface "+m.cfg.Interface+" up")
		}
		return m.linkReturned(out)
	}
	return out
}

// linkReturned ends a link flap of a Master. If no Backup can have timed
// out yet (our last advert is younger than flapAdverts intervals) and no
// other Master was heard, the group has not changed: carry on as Master at
// once instead of waiting Master_Down_Interval as a Backup. A peer that
// took over after all is met by the usual rules when its adverts arrive.
func (m *Machine) linkReturned(out []Action) []Action {
	now := m.clock.Now()
	down, age := now.Sub(m.flapFrom), now.Sub(m.lastAdvert)
	bound := flapAdverts * m.cfg.AdvertInterval
	otherMaster := m.master.Priority > 0 && m.master.At.After(m.flapFrom)
	m.flapFrom = time.Time{}
	if m.lastAdvert.IsZero() || age >= bound || otherMaster {
		return m.enterBackup(out, ReasonLinkUp, fmt.Sprintf("interface %s up after %v, our last advert %v ago: a peer may have taken over",
			m.cfg.Interface, roundCause(down), roundCause(age)))
	}
	out = m.stopTimers(out)
	out = m.advertise(out)
	out = append(out, Action{Kind: ActTakeAddresses})
	out = m.arm(out, TimerAdvert, m.cfg.AdvertInterval)
	m.resetTerm()
	return m.transition(out, StateMaster, ReasonLinkFlap,
		fmt.Sprintf("interface %s up again after %v, our last advert %v ago: no peer can have timed out yet (they wait at least %v)",
			m.cfg.Interface, roundCause(down), roundCause(age), bound))
}

// SetFault demands Fault (cause non-empty, e.g. "tracker apiserver failing:
// timeout after 1s") or lifts the demand (cause empty). A Master gives the
// addresses away gracefully with a priority 0 advert.
func (m *Machine) SetFault(cause string, out []Action) []Action {
	was := m.fault
	m.fault = cause
	if !m.running || cause == was {
		return out
	}
	if cause != "" {
		if m.state == StateFault {
			return out
		}
		return m.enterFault(out, ReasonFault, cause, true)
	}
	if m.state == StateFault && m.linkUp {
		return m.enterBackup(out, ReasonFaultCleared, "no longer failing: "+was)
	}
	return out
}

// TimerFired reports that a timer armed by an ActArmTimer expired. A timer
// that was stopped or re-armed since is ignored, so the driver need not
// drain stale expiries. The one exception is AdvertMayBeEarly.
func (m *Machine) TimerFired(t Timer, out []Action) []Action {
	if t <= timerInvalid || t >= numTimers || !m.running {
		return out
	}
	now := m.clock.Now()
	due := m.deadline[t]
	early := t == TimerAdvert && m.AdvertMayBeEarly()
	if due.IsZero() || now.Before(due) && !early {
		return out
	}
	m.deadline[t] = time.Time{}
	late := max(now.Sub(due), 0)

	switch {
	case t == TimerAdvert && m.state == StateMaster:
		if m.probation {
			// Nobody took over while we were frozen: carry on.
			m.probation = false
		} else if late > m.frozenLate() {
			// Silent for more than MasterDownAdverts+1 intervals: every
			// Backup has declared us dead (frozenLate), so another
			// router may be Master now. Listen for one interval
			// before speaking. A shorter delay is a busy scheduler, not a
			// freeze: carry on, or a Backup that never timed out would.
			m.probation = true
			m.frozenFor = late
			return m.arm(out, TimerAdvert, m.cfg.AdvertInterval)
		}
		out = m.advertise(out)
		return m.arm(out, TimerAdvert, m.cfg.AdvertInterval)

	case t == TimerTakeover && m.state == StateMaster:
		out = append(out, Action{Kind: ActTakeAddresses})
		return m.flushPending(out)

	case t == TimerMasterDown && m.state == StateBackup && m.cfg.Follower:
		// A follower's Backup never takes over on its own: its leader
		// decides.
		return out

	case t == TimerMasterDown && m.state == StateBackup:
		if !m.recheck && late > 2*m.masterAdverInterval {
			m.recheck = true
			return m.arm(out, TimerMasterDown, m.masterAdverInterval+m.SkewTime())
		}
		reason, cause := m.masterDownCause(now)
		return m.enterMaster(out, reason, cause)
	}
	return out
}

func (m *Machine) masterDownCause(now time.Time) (Reason, string) {
	switch {
	case m.released:
		return ReasonMasterLeft, fmt.Sprintf("priority 0 from master %v: it is releasing", m.master.Addr)
	case m.lowerMaster.Addr.IsValid() && !m.lowerMaster.At.Before(m.master.At):
		return ReasonPreempt, fmt.Sprintf("preempting master %v: its priority %d is lower than our %d",
			m.lowerMaster.Addr, m.lowerMaster.Priority, m.prio)
	case m.master.Addr.IsValid():
		return ReasonMasterDown, fmt.Sprintf("no advert from %v for %v", m.master.Addr, roundCause(now.Sub(m.master.At)))
	}
	return ReasonMasterDown, fmt.Sprintf("no advert from any master for %v", roundCause(now.Sub(m.since)))
}

// roundCause rounds a duration for a cause: "3.61s", not "3.609375s".
func roundCause(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
