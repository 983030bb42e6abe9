package announce

import (
	"net/netip"
	"time"
)

const (
	// AnswerEvery bounds how often a Master answers claims with its own
	// announcement: a burst of foreign claims is answered on its trailing
	// edge, never left unanswered and never echoed one for one.
	AnswerEvery = 100 * time.Millisecond
	// LogEvery bounds the log lines per foreign MAC; counters count all.
	LogEvery = 10 * time.Second
	// StandDownProbeEvery is how often a Master that stood down asks
	// whether the other claimant still answers for the addresses, and
	// StandDownMisses how many unanswered probes in a row mean it is gone.
	// A second Master across a partition answers within a millisecond; a
	// host that only sent a stray gratuitous ARP never does, and the
	// clients it moved come back within about 300 ms. Three misses, not
	// one: a lost reply must not restart the fight.
	StandDownProbeEvery = 100 * time.Millisecond
	StandDownMisses     = 3
)

// Config is when a Master announces.
type Config struct {
	// Repeat announcements after a takeover, Interval apart (Repeat ≥ 1).
	Repeat   int
	Interval time.Duration
	// Refresh re-announces while Master; zero never does.
	Refresh time.Duration
	// Probe: a Master asks who else holds its addresses at each takeover
	// and while it stands down for a claimant (there is a claim monitor
	// to hear the answers), and then every ProbeEvery; zero ProbeEvery
	// asks at those times only.
	Probe      bool
	ProbeEvery time.Duration
	// ClaimGrace is how long a claim waits for an advert that explains it:
	// a peer that preempts us sends its advert and then its announcement,
	// and the two may be read in either order.
	ClaimGrace time.Duration
	// SuccessorWait is how long a handover keeps the addresses after the
	// successor's first advert when no announcement of it arrives (BGP:
	// the graceful-shutdown drain time); zero is SuccessorAnnounceWait.
	SuccessorWait time.Duration
}

// A Claim is another host saying that it has one of our addresses.
type Claim struct {
	Addr netip.Addr
	MAC  string
	// Announcement: said unasked (gratuitous ARP), as a new owner does. A
	// claim that answers a question (our probe, a client's request) comes
	// from a passive owner: a host that has the address but does not fight
	// for it.
	Announcement bool
	At           time.Time
}

// ActionKind says what an Action asks the driver to do.
type ActionKind uint8

const (
	_ ActionKind = iota // invalid zero value
	// ActAnnounce: announce every held address now.
	ActAnnounce
	// ActProbe: ask who else holds the addresses.
	ActProbe
	// ActConflict: Claim is another host claiming one of our addresses
	// that no advert explains; count it and show it. Log: say so too.
	ActConflict
	// ActStandDown: Claim announced one of our addresses and no advert
	// explains it: a second Master we cannot hear (a VRRP partition). The
	// clients follow the latest announcement, so answering it would move
	// them again and start a war of announcements; we keep the addresses
	// but stop announcing until the claimant stops answering for them or
	// the election has decided (Reannounce). Always logged.
	ActStandDown
	// ActResume: the host we stood down for no longer answers for the
	// addresses; we announce again (a burst follows).
	ActResume
	// ActWithdraw: a handover is over; remove the addresses now. Late: no
	// successor was heard within the bound.
	ActWithdraw
)

func (k ActionKind) String() string {
	switch k {
	case ActAnnounce:
		return "announce"
	case ActProbe:
		return "probe"
	case ActConflict:
		return "conflict"
	case ActStandDown:
		return "stand_down"
	case ActResume:
		return "resume"
	case ActWithdraw:
		return "withdraw"
	}
	return "invalid_action"
}

// An Action is one thing the driver must do.
type Action struct {
	Kind  ActionKind
	Claim Claim
	Log   bool
	Late  bool
}

type timer uint8

const (
	timerGrace timer = iota
	timerBurst
	timerRefresh
	timerProbe
	timerAnswer
	timerHandover
	numTimers
)

// SuccessorAnnounceWait is how long a handover waits, after the
// successor's first advert, for its announcement before it removes the
// addresses anyway: a new vipd Master adds and announces them a few
// milliseconds after its advert (its takeover grace), keepalived at once.
const SuccessorAnnounceWait = 50 * time.Millisecond

// A Policy decides the announcements of one instance. Not safe for
// concurrent use: the instance's goroutine feeds it.
type Policy struct {
	cfg    Config
	ownMAC string

	held      bool
	burstLeft int
	due       [numTimers]time.Time // zero: not armed

	pending    Claim // the latest claim waiting out ClaimGrace
	hasPending bool

	lastAnswer time.Time

	standingDown    bool
	standFor        Claim
	heardSinceProbe bool
	misses          int

	logged map[string]time.Time // last log line per foreign MAC; nil until the first

	// A handover: priority 0 sent, the addresses kept until the successor
	// has taken over, nothing announced meanwhile.
	handingOver   bool
	successorSeen bool
}

// New returns a Policy for a host whose own hardware address is ownMAC.
func New(cfg Config, ownMAC string) *Policy {
	p := new(Policy)
	p.Init(cfg, ownMAC)
	return p
}

// Init makes p a new policy, as New does, where the caller keeps it.
func (p *Policy) Init(cfg Config, ownMAC string) { *p = Policy{cfg: cfg, ownMAC: ownMAC} }

// SetConfig applies a reload. A changed refresh period takes effect now;
// a shorter probe period brings a probe due later than it allows forward,
// and routine probes turned on start within their period.
func (p *Policy) SetConfig(cfg Config, now time.Time) {
	old := p.cfg
	p.cfg = cfg
	// Routine probes run while we speak for the addresses: not while we
	// stand down (its probes keep their pace) nor in a handover (silent).
	if p.held && !p.standingDown && !p.handingOver {
		due := p.due[timerProbe]
		switch {
		case !cfg.Probe || cfg.ProbeEvery == 0:
			p.due[timerProbe] = time.Time{}
		case due.IsZero() || due.After(now.Add(cfg.ProbeEvery)):
			p.due[timerProbe] = now.Add(cfg.ProbeEvery)
		}
	}
	if !p.held || old.Refresh == cfg.Refresh {
		return
	}
	p.due[timerRefresh] = time.Time{}
	if cfg.Refresh > 0 && !p.standingDown {
		p.due[timerRefresh] = now.Add(cfg.Refresh)
	}
}

// Held reports whether the policy speaks for the addresses.
func (p *Policy) Held() bool { return p.held }

// StandingDown reports whether we hold the addresses without announcing
// them, and for which claimant.
func (p *Policy) StandingDown() (bool, Claim) { return p.standingDown, p.standFor }

// Next is when Tick must run next; zero means no timer is armed.
func (p *Policy) Next() time.Time {
	var next time.Time
	for _, d := range p.due {
		if !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// TookOver starts a term as Master: the addresses are on the interface.
func (p *Policy) TookOver(now time.Time, out []Action) []Action {
	p.reset()
	p.held = true
	// A second owner found in this term is news, whatever an earlier one
	// logged.
	clear(p.logged)
	out = p.startBurst(now, out)
	if p.cfg.Refresh > 0 {
		p.due[timerRefresh] = now.Add(p.cfg.Refresh)
	}
	return p.probe(now, out)
}

// Released ends the term: say nothing more.
func (p *Policy) Released() {
	p.reset()
	p.held = false
}

func (p *Policy) reset() {
	p.due = [numTimers]time.Time{}
	p.burstLeft = 0
	p.hasPending = false
	p.standingDown, p.standFor, p.heardSinceProbe, p.misses = false, Claim{}, false, 0
	p.handingOver, p.successorSeen = false, false
}

// HandOver starts a make-before-break handover: priority 0 has been sent
// and the addresses stay until the successor has taken over, so that the
// clients are never without an owner. Meanwhile we say nothing — the
// successor's announcement must be the last word the clients hear — and
// its claims are expected, not conflicts. After bound the addresses go
// anyway (ActWithdraw, Late).
func (p *Policy) HandOver(now time.Time, bound time.Duration) {
	if !p.held {
		return
	}
	p.reset()
	p.handingOver = true
	p.due[timerHandover] = now.Add(bound)
}

// Yield starts a handover to a Master already heard — a higher one that
// preempted us and takes the addresses after its own grace: they go on its
// announcement, or after bound (not late: the successor is known).
func (p *Policy) Yield(now time.Time, bound time.Duration) {
	p.HandOver(now, bound)
	p.successorSeen = p.handingOver
}

// HandingOver reports whether a handover is under way.
func (p *Policy) HandingOver() bool { return p.handingOver }

// SuccessorHeard reports the first advert of a new Master during a
// handover: its announcement follows; the addresses go when it arrives, or
// SuccessorAnnounceWait later.
func (p *Policy) SuccessorHeard(now time.Time) {
	if !p.handingOver || p.successorSeen {
		return
	}
	p.successorSeen = true
	wait := p.cfg.SuccessorWait
	if wait <= 0 {
		wait = SuccessorAnnounceWait
	}
	if d := now.Add(wait); d.Before(p.due[timerHandover]) {
		p.due[timerHandover] = d
	}
}

func (p *Policy) withdraw(late bool, out []Action) []Action {
	p.Released()
	return append(out, Action{Kind: ActWithdraw, Late: late})
}

// Reannounce asks for a new burst: the election settled a split brain in
// our favour, an address deleted by hand was restored, or a reload added
// one. It ends a stand-down and drops a claim waiting out ClaimGrace: the
// adverts decide now, not the claims (a second owner that is no Master
// answers the next probe and is judged again).
func (p *Policy) Reannounce(now time.Time, out []Action) []Action {
	if !p.held || p.handingOver {
		return out
	}
	if p.hasPending {
		p.hasPending = false
		p.due[timerGrace] = time.Time{}
	}
	if p.standingDown {
		p.standingDown, p.standFor, p.misses = false, Claim{}, 0
		if p.cfg.Refresh > 0 {
			p.due[timerRefresh] = now.Add(p.cfg.Refresh)
		}
		p.nextProbe(now)
	}
	return p.startBurst(now, out)
}

// Claimed reports another host's claim of one of our addresses. It waits
// out ClaimGrace: if the election makes us Backup meanwhile (Released),
// the claimant was the new Master, not a second owner.
func (p *Policy) Claimed(c Claim, out []Action) []Action {
	if !p.held {
		return out
	}
	if p.handingOver {
		// The successor announces: it has the addresses now.
		if c.Announcement {
			return p.withdraw(false, out)
		}
		return out
	}
	if p.standingDown && c.MAC == p.standFor.MAC {
		p.heardSinceProbe = true
	}
	if !p.hasPending {
		p.due[timerGrace] = c.At.Add(p.cfg.ClaimGrace)
	} else if p.pending.Announcement && !c.Announcement && p.pending.MAC == c.MAC {
		c.Announcement = true // one claimant announced: keep that
	}
	p.pending, p.hasPending = c, true
	return out
}

// Tick handles every timer due at now.
func (p *Policy) Tick(now time.Time, out []Action) []Action {
	for t := range numTimers {
		d := p.due[t]
		if d.IsZero() || now.Before(d) {
			continue
		}
		p.due[t] = time.Time{}
		switch t {
		case timerGrace:
			out = p.judgeClaim(now, out)
		case timerBurst:
			out = p.burstStep(now, out)
		case timerRefresh:
			out = append(out, Action{Kind: ActAnnounce})
			p.due[timerRefresh] = now.Add(p.cfg.Refresh)
		case timerProbe:
			out = p.probe(now, out)
		case timerAnswer:
			out = p.answer(now, out)
		case timerHandover:
			return p.withdraw(!p.successorSeen, out)
		}
	}
	return out
}

// Ride runs early, at a Master's advert wake-up, the routine work due
// within the next `within` (the probe for a second owner, the refresh), so
// that the daemon need not wake again for it. The rest keeps its time: a
// claim's grace run early would judge the claim before the advert that
// explains it (a preempting Master's gratuitous ARP, read just before its
// advert) could come; a burst's step, a probe's answer and a handover are
// timed on the wire; and a stand-down's probes count misses.
func (p *Policy) Ride(now time.Time, within time.Duration, out []Action) []Action {
	if d := p.due[timerRefresh]; !d.IsZero() && d.Sub(now) < within {
		d = later(d, now)
		out = append(out, Action{Kind: ActAnnounce})
		p.due[timerRefresh] = d.Add(p.cfg.Refresh)
	}
	if d := p.due[timerProbe]; !d.IsZero() && d.Sub(now) < within && !p.standingDown {
		p.due[timerProbe] = time.Time{}
		out = p.probe(later(d, now), out)
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// judgeClaim decides on a claim that outlived ClaimGrace with us still
// Master: no advert explains it.
func (p *Policy) judgeClaim(now time.Time, out []Action) []Action {
	if !p.hasPending {
		return out
	}
	c := p.pending
	p.hasPending = false
	if p.standingDown {
		return p.report(c, now, out)
	}
	// Two Masters that took over together both announce; the higher MAC
	// keeps announcing so that exactly one of them stands down.
	bothNew := p.burstLeft > 0
	if c.Announcement && !(bothNew && p.ownMAC > c.MAC) {
		p.standingDown, p.standFor = true, c
		p.burstLeft, p.misses, p.heardSinceProbe = 0, 0, false
		p.due[timerBurst], p.due[timerRefresh], p.due[timerAnswer] = time.Time{}, time.Time{}, time.Time{}
		p.noteLogged(c.MAC, now)
		out = append(out, Action{Kind: ActStandDown, Claim: c, Log: true})
		// Ask at once whether it holds the address, then keep asking.
		out = append(out, Action{Kind: ActProbe})
		if p.cfg.Probe {
			p.due[timerProbe] = now.Add(StandDownProbeEvery)
		}
		return out
	}
	out = p.report(c, now, out)
	return p.answer(now, out)
}

func (p *Policy) report(c Claim, now time.Time, out []Action) []Action {
	last, seen := p.logged[c.MAC]
	log := !seen || now.Sub(last) >= LogEvery
	if log {
		if len(p.logged) > 256 {
			clear(p.logged) // a spoofing flood must not grow memory
		}
		p.noteLogged(c.MAC, now)
	}
	return append(out, Action{Kind: ActConflict, Claim: c, Log: log})
}

// noteLogged records a log line about mac. The map is made at the first:
// most groups never see a foreign claim.
func (p *Policy) noteLogged(mac string, now time.Time) {
	if p.logged == nil {
		p.logged = make(map[string]time.Time)
	}
	p.logged[mac] = now
}

// answer announces our own address now, or as soon as AnswerEvery allows.
func (p *Policy) answer(now time.Time, out []Action) []Action {
	if p.standingDown {
		return out
	}
	if next := p.lastAnswer.Add(AnswerEvery); !p.lastAnswer.IsZero() && now.Before(next) {
		p.due[timerAnswer] = next
		return out
	}
	p.lastAnswer = now
	return append(out, Action{Kind: ActAnnounce})
}

func (p *Policy) startBurst(now time.Time, out []Action) []Action {
	p.burstLeft = max(p.cfg.Repeat, 1)
	return p.burstStep(now, out)
}

func (p *Policy) burstStep(now time.Time, out []Action) []Action {
	if p.burstLeft <= 0 || p.standingDown {
		return out
	}
	p.burstLeft--
	out = append(out, Action{Kind: ActAnnounce})
	if p.burstLeft > 0 {
		p.due[timerBurst] = now.Add(p.cfg.Interval)
	}
	return out
}

func (p *Policy) probe(now time.Time, out []Action) []Action {
	if !p.cfg.Probe {
		return out
	}
	if !p.standingDown {
		p.nextProbe(now)
		return append(out, Action{Kind: ActProbe})
	}
	if p.heardSinceProbe {
		p.misses = 0
	} else {
		p.misses++
	}
	p.heardSinceProbe = false
	if p.misses < StandDownMisses {
		p.due[timerProbe] = now.Add(StandDownProbeEvery)
		return append(out, Action{Kind: ActProbe})
	}
	gone := p.standFor
	p.standingDown, p.standFor, p.misses = false, Claim{}, 0
	out = append(out, Action{Kind: ActResume, Claim: gone})
	if p.cfg.Refresh > 0 {
		p.due[timerRefresh] = now.Add(p.cfg.Refresh)
	}
	p.nextProbe(now)
	return p.startBurst(now, out)
}

// nextProbe schedules the next routine probe, if there are any.
func (p *Policy) nextProbe(now time.Time) {
	p.due[timerProbe] = time.Time{}
	if p.cfg.Probe && p.cfg.ProbeEvery > 0 {
		p.due[timerProbe] = now.Add(p.cfg.ProbeEvery)
	}
}
