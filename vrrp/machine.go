package vrrp

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// flapAdverts bounds a link flap that the group cannot have noticed: a
// Backup waits Master_Down_Interval, at least 3 of our advert intervals
// (it learns our interval, MasterDownAdverts is never below 3, and Skew_Time
// is positive), after our last advert before it takes over.
const flapAdverts = 3

// mismatchSlots bounds the peers whose address-list mismatches are
// reported per Master_Down_Interval, so that no flood of sources can turn
// ActAddressMismatch into a log flood.
const mismatchSlots = 4

// A Clock tells the machine the time; the daemon passes the real clock,
// tests a fake one.
type Clock interface {
	Now() time.Time
}

// Config is what one virtual router needs to know about itself.
type Config struct {
	// Interface names the link, for the causes operators read.
	Interface string
	VRID      uint8
	// Priority is the base priority, 1..254. 255 (the address owner) is
	// not supported: vipd never owns the addresses it moves.
	Priority       uint8
	AdvertInterval time.Duration
	Preempt        bool
	// PreemptDelay is how long a Backup must have seen a lower-priority
	// Master before it stops accepting its adverts and takes over.
	PreemptDelay time.Duration
	// Addresses are the virtual addresses, all of Primary's family. An
	// IPv4 instance advertises IPv4 addresses, an IPv6 one IPv6 addresses
	// (RFC 5798 section 5.2.9); dual-stack takes two instances.
	Addresses []netip.Addr
	// Primary is this router's own address on the link: the source of its
	// adverts and the tie-break between equal priorities. Over IPv6 it is
	// the interface's link-local address (RFC 5798 section 5.1.2.1), or in
	// unicast the configured source, which may be global. Zones are
	// dropped: the machine compares addresses; the link is Interface.
	Primary netip.Addr
	// SplitBrainRecovery makes a Master that hears a lower-priority Master
	// answer at once and announce its addresses again, and a Master that
	// yields send one last advert, so that the winner re-announces. Both
	// repair neighbour caches that a partition left pointing at the loser.
	SplitBrainRecovery bool
	// TakeoverGrace is how long a new Master advertises before it takes
	// the addresses. Backups of equal priority time out at the same instant
	// and all become Master until the highest address wins; waiting a few
	// milliseconds for a competing advert keeps the losers from adding the
	// addresses (and announcing them) only to drop them again. Zero takes
	// them at once, as RFC 5798 does.
	TakeoverGrace time.Duration
	// PreemptGrace replaces TakeoverGrace for a takeover by preemption.
	// The Master preempted is up, so nothing is urgent, and Backups of
	// equal priority whose preempt delays end together need to hear each
	// other's first advert even on a loaded host. Zero: TakeoverGrace.
	PreemptGrace time.Duration
	// Peers are the configured unicast peers (empty in multicast), zones
	// dropped as for Primary. With
	// the Master a Backup follows, they are the hosts the machine trusts
	// with what one unauthenticated advert can otherwise abuse: a priority
	// 255 is accepted, and an advertised interval learnt, only from them.
	Peers []netip.Addr
	// TrustUnknownMasters lifts that limit (RFC 5798 behaviour): any host
	// may claim priority 255 and have its interval learnt at once. A group
	// with an address owner (a keepalived router at priority 255) in
	// multicast mode needs it, or the owner listed as a peer.
	TrustUnknownMasters bool
	// MasterDownAdverts is how many advert intervals a Backup waits before
	// declaring the Master dead: Master_Down_Interval is MasterDownAdverts
	// * Master_Adver_Interval + Skew_Time. RFC 5798 says 3 (0 means 3);
	// more rides out a starved host at the cost of a slower failover, and
	// every router of the group should use the same value.
	MasterDownAdverts int
	// Follower: this router's state follows a leader on the same host
	// (SetLeader) instead of its own election, so that two addresses —
	// an IPv4 and an IPv6 one — always end on one host. It advertises as
	// Master while the leader is Master, never takes over on its own
	// timers, and never yields to another Master's adverts: it reports
	// them (ActForeignMaster).
	Follower bool
	// UnicastMinTTL and UnicastMaxTTL are the TTL or hop limit range
	// accepted from unicast peers, so that peers behind routers (which
	// take one off the 255 sent per hop) can take part; 0 means 255.
	// Multicast always requires 255 (RFC 5798 section 7.1), and a range
	// without Peers is refused.
	UnicastMinTTL, UnicastMaxTTL uint8
	// Version is the VRRP version sent: 3 (RFC 5798; 0 means 3) or 2 (RFC
	// 3768: IPv4, whole seconds, Auth). A VRRPv2 router never learns the
	// Master's interval: RFC 3768 routers of a group agree on it, and an
	// advert with another is dropped.
	Version uint8
	// AcceptOtherVersion also accepts adverts of the other version of its
	// VRID (RFC 5798 section 8.4), so a group can move from VRRPv2 to
	// VRRPv3 one router at a time without two Masters.
	AcceptOtherVersion bool
	// Auth is the VRRPv2 authentication sent and required of VRRPv2
	// adverts (VRRPv3 adverts carry none).
	Auth Auth
	// AddressOwner is a host trusted with priority 255 besides Peers and
	// the Master followed: a keepalived router that owns the addresses
	// (state MASTER without a priority gives it 255).
	AddressOwner netip.Addr
}

// Limits of Config.MasterDownAdverts.
const (
	DefaultMasterDownAdverts = 3 // RFC 5798 section 6.1
	MaxMasterDownAdverts     = 10
)

// owned returns c with its slices copied and its defaults filled in.
func (c Config) owned() Config {
	cfgPeers := c.Peers
	c.Addresses = append([]netip.Addr(nil), c.Addresses...)
	c.Peers = make([]netip.Addr, len(c.Peers))
	for i, p := range cfgPeers {
		c.Peers[i] = p.WithZone("")
	}
	c.Primary = c.Primary.WithZone("")
	c.AddressOwner = c.AddressOwner.WithZone("")
	if c.Version == 0 {
		c.Version = Version
	}
	if c.MasterDownAdverts == 0 {
		c.MasterDownAdverts = DefaultMasterDownAdverts
	}
	if c.UnicastMinTTL == 0 {
		c.UnicastMinTTL = TTL
	}
	if c.UnicastMaxTTL == 0 {
		c.UnicastMaxTTL = TTL
	}
	return c
}

func (c *Config) validate() error {
	switch {
	case c.VRID == 0:
		return errors.New("vrrp: VRID 0 is not valid (1..255)")
	case c.Priority == 0 || c.Priority == 255:
		return fmt.Errorf("vrrp: priority %d is not valid (1..254)", c.Priority)
	case c.validateVersion() != nil:
		return c.validateVersion()
	case c.Version != Version2 && (c.AdvertInterval < MinAdvertInterval || c.AdvertInterval > MaxAdvertInterval || c.AdvertInterval%centisecond != 0):
		return fmt.Errorf("vrrp: advert interval %v is not a multiple of 10ms between %v and %v", c.AdvertInterval, MinAdvertInterval, MaxAdvertInterval)
	case c.PreemptDelay < 0:
		return fmt.Errorf("vrrp: negative preempt delay %v", c.PreemptDelay)
	case c.TakeoverGrace < 0 || c.TakeoverGrace >= c.AdvertInterval:
		return fmt.Errorf("vrrp: takeover grace %v must be shorter than the advert interval", c.TakeoverGrace)
	case c.PreemptGrace < 0 || c.PreemptGrace >= c.AdvertInterval:
		return fmt.Errorf("vrrp: preempt grace %v must be shorter than the advert interval", c.PreemptGrace)
	case !c.Primary.IsValid():
		return errors.New("vrrp: no primary address")
	case len(c.Addresses) == 0 || len(c.Addresses) > 255:
		return fmt.Errorf("vrrp: %d virtual addresses (1..255)", len(c.Addresses))
	case c.MasterDownAdverts != 0 && (c.MasterDownAdverts < DefaultMasterDownAdverts || c.MasterDownAdverts > MaxMasterDownAdverts):
		return fmt.Errorf("vrrp: master down adverts %d outside %d..%d", c.MasterDownAdverts, DefaultMasterDownAdverts, MaxMasterDownAdverts)
	case c.Primary.Is4In6():
		return fmt.Errorf("vrrp: primary address %v is IPv4-mapped: use %v", c.Primary, c.Primary.Unmap())
	case c.Primary.Is6() && len(c.Peers) == 0 && !c.Primary.IsLinkLocalUnicast():
		return fmt.Errorf("vrrp: primary address %v is not link-local: IPv6 adverts are sent from the interface's link-local address", c.Primary)
	}
	minTTL, maxTTL := cmp.Or(c.UnicastMinTTL, TTL), cmp.Or(c.UnicastMaxTTL, TTL)
	switch {
	case minTTL > maxTTL:
		return fmt.Errorf("vrrp: unicast TTL range %d..%d is empty", minTTL, maxTTL)
	case len(c.Peers) == 0 && minTTL != TTL:
		return fmt.Errorf("vrrp: a unicast TTL range (%d..%d) needs unicast peers: multicast adverts must arrive with TTL 255", minTTL, maxTTL)
	}
	for _, p := range c.Peers {
		if !p.IsValid() || p.Is4() != c.Primary.Is4() {
			return fmt.Errorf("vrrp: peer %v is not of the family of %v", p, c.Primary)
		}
	}
	for _, a := range c.Addresses {
		if a.Is4() != c.Primary.Is4() || a.Is4In6() {
			return fmt.Errorf("vrrp: virtual address %v is not of the family of %v", a, c.Primary)
		}
	}
	return nil
}

// ActionKind says what an Action asks the driver to do.
type ActionKind uint8

// Actions, executed by the driver in the order they are returned.
const (
	_ ActionKind = iota // invalid zero value
	// ActSendAdvert: send an advert with Priority (0 when releasing).
	ActSendAdvert
	// ActTakeAddresses: add the virtual addresses and announce them
	// (gratuitous ARP burst).
	ActTakeAddresses
	// ActReleaseAddresses: remove the virtual addresses (idempotent). Peer,
	// when set, is a higher Master we yield to: it takes them itself within
	// its grace, so the driver may keep them until it announces them.
	ActReleaseAddresses
	// ActAnnounce: announce the held addresses again (a new burst).
	ActAnnounce
	// ActArmTimer: (re)arm Timer to fire After from now.
	ActArmTimer
	// ActStopTimer: stop Timer.
	ActStopTimer
	// ActTransition: the state changed; Transition says how and why.
	ActTransition
	// ActAddressMismatch: an advert from Peer, the Master we follow or an
	// address owner, lists other addresses than ours. It was accepted for
	// the election (a rolling change of the VIP list); the driver warns
	// with the advert's addresses. Reported at most once per
	// Master_Down_Interval per peer, and for at most mismatchSlots peers
	// per Master_Down_Interval.
	ActAddressMismatch
	// ActDownTimerMismatch: Peer became Master after the Master we followed
	// had been silent for more than 3 advert intervals but less than our
	// Master_Down_Interval: it seems to wait fewer adverts than our
	// MasterDownAdverts. Detail says so in words; the driver warns.
	ActDownTimerMismatch
	// ActForeignMaster: a follower that is Master heard Peer advertise as
	// Master on its VRID; it keeps following its leader and the driver
	// warns. Reported at most once per Master_Down_Interval.
	ActForeignMaster
)

func (k ActionKind) String() string {
	switch k {
	case ActSendAdvert:
		return "send_advert"
	case ActTakeAddresses:
		return "take_addresses"
	case ActReleaseAddresses:
		return "release_addresses"
	case ActAnnounce:
		return "announce"
	case ActArmTimer:
		return "arm_timer"
	case ActStopTimer:
		return "stop_timer"
	case ActTransition:
		return "transition"
	case ActAddressMismatch:
		return "address_mismatch"
	case ActDownTimerMismatch:
		return "down_timer_mismatch"
	case ActForeignMaster:
		return "foreign_master"
	}
	return "invalid_action"
}

// An Action is one thing the driver must do. Only the fields its Kind
// names are set.
type Action struct {
	Kind       ActionKind
	Priority   uint8
	Timer      Timer
	After      time.Duration
	Transition Transition
	Peer       netip.Addr // the advert's source (mismatch actions, a yield)
	Detail     string     // the warning in words, for ActDownTimerMismatch
}

// A Transition is a change of state with its cause in an operator's words.
type Transition struct {
	At       time.Time
	From, To State
	Reason   Reason
	Cause    string
}

// MasterInfo is what the last accepted advert said about the Master.
type MasterInfo struct {
	Addr     netip.Addr
	Priority uint8
	Interval time.Duration
	At       time.Time
}

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
	// router afterwards (yieldedTo).
	probation bool
	frozenFor time.Duration
	yieldedTo netip.Addr
	// A Backup whose Master_Down_Timer fired late listens once more before
	// it takes over: adverts queued while it was frozen may still arrive.
	recheck bool

	lastAnnounce time.Time // of a split-brain re-announcement, to limit them
	lastAnswer   time.Time // of an immediate answer to another Master, to limit them
	lastAdvert   time.Time // when we last sent an advert as Master
	// flapFrom is when the link went down while we were Master, zero
	// otherwise: a link back soon enough resumes the term (SetLink).
	flapFrom time.Time

	mismatches [mismatchSlots]mismatchReport
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
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.owned()
	return &Machine{
		cfg:                 cfg,
		clock:               clock,
		state:               StateInitialize,
		since:               clock.Now(),
		prio:                cfg.Priority,
		masterAdverInterval: cfg.AdvertInterval,
	}, nil
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
	if m.yieldedTo.IsValid() && adv.Addr != m.yieldedTo {
		m.yieldedTo = netip.Addr{} // another router is Master now
	}
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
		m.yieldedTo = adv.Addr
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
