package announce

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

var (
	t0  = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	vip = netip.MustParseAddr("198.51.100.10")
)

const (
	macA = "02:00:00:00:00:0a"
	macB = "02:00:00:00:00:0b"
)

func testConfig() Config {
	return Config{Repeat: 3, Interval: time.Second, Refresh: 0, Probe: true, ProbeEvery: time.Second, ClaimGrace: 20 * time.Millisecond}
}

// run drives p until end, ticking at every deadline, and returns what it did
// as "offset kind" lines.
func run(p *Policy, from, end time.Time) []string {
	var got []string
	for {
		next := p.Next()
		if next.IsZero() || next.After(end) {
			return got
		}
		if next.Before(from) {
			next = from
		}
		for _, a := range p.Tick(next, nil) {
			got = append(got, fmt.Sprintf("%v %s", next.Sub(t0), a.Kind))
		}
		from = next
	}
}

func kinds(as []Action) string {
	var s []string
	for _, a := range as {
		k := a.Kind.String()
		if a.Log {
			k += "+log"
		}
		s = append(s, k)
	}
	return strings.Join(s, ",")
}

func TestTakeoverBurstProbeAndRefresh(t *testing.T) {
	cfg := testConfig()
	cfg.Refresh = 2500 * time.Millisecond
	p := New(cfg, macA)
	if got := kinds(p.TookOver(t0, nil)); got != "announce,probe" {
		t.Fatalf("TookOver: %s, want announce,probe", got)
	}
	got := strings.Join(run(p, t0, t0.Add(3*time.Second)), "; ")
	want := "1s announce; 1s probe; 2s announce; 2s probe; 2.5s announce; 3s probe"
	if got != want {
		t.Errorf("after the takeover:\n got %s\nwant %s", got, want)
	}
	p.Released()
	if !p.Next().IsZero() {
		t.Errorf("a released policy still has a timer at %v", p.Next())
	}
}

func TestPassiveClaimIsAnsweredOnItsTrailingEdge(t *testing.T) {
	cfg := testConfig()
	cfg.Repeat, cfg.ProbeEvery = 1, time.Minute
	p := New(cfg, macA)
	p.TookOver(t0, nil)
	at := t0.Add(5 * time.Second)
	p.Claimed(Claim{Addr: vip, MAC: macB, At: at}, nil)
	if got := kinds(p.Tick(at.Add(19*time.Millisecond), nil)); got != "" {
		t.Fatalf("inside the grace: %s", got)
	}
	first := at.Add(20 * time.Millisecond)
	if got := kinds(p.Tick(first, nil)); got != "conflict+log,announce" {
		t.Fatalf("after the grace: %s, want conflict+log,announce", got)
	}
	// The second claim comes 30 ms after our answer: reported (not logged
	// again) and answered once AnswerEvery allows, not at once.
	second := first.Add(10 * time.Millisecond)
	p.Claimed(Claim{Addr: vip, MAC: macB, At: second}, nil)
	if got := kinds(p.Tick(second.Add(20*time.Millisecond), nil)); got != "conflict" {
		t.Fatalf("second claim: %s, want conflict only", got)
	}
	if got := kinds(p.Tick(first.Add(AnswerEvery), nil)); got != "announce" {
		t.Fatalf("trailing edge: %s, want announce", got)
	}
	// Another MAC is logged at once.
	third := first.Add(time.Second)
	p.Claimed(Claim{Addr: vip, MAC: "02:00:00:00:00:0c", At: third}, nil)
	if got := kinds(p.Tick(third.Add(20*time.Millisecond), nil)); got != "conflict+log,announce" {
		t.Fatalf("a new MAC: %s", got)
	}
}

func TestClaimExplainedByTheElection(t *testing.T) {
	// A peer that preempts us sends its advert and its announcement; the
	// advert makes us Backup within the grace: no conflict, no answer.
	p := New(testConfig(), macA)
	p.TookOver(t0, nil)
	at := t0.Add(5 * time.Second)
	p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: at}, nil)
	p.Released()
	if got := kinds(p.Tick(at.Add(time.Second), nil)); got != "" {
		t.Errorf("after a release: %s", got)
	}
	if got := kinds(p.Claimed(Claim{Addr: vip, MAC: macB, At: at}, nil)); got != "" || p.hasPending {
		t.Errorf("a Backup judged a claim: %s", got)
	}
}

// A Master's advert wake-up runs the probe due before its next advert,
// early, but leaves a claim read just before it to its grace: the
// preempting peer's advert that explains it may still come.
func TestRideRunsTheProbeNotAClaimsGrace(t *testing.T) {
	p := New(testConfig(), macA)
	p.TookOver(t0, nil)
	wake := t0.Add(900 * time.Millisecond) // the probe is due at 1 s
	p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: wake}, nil)
	if got := kinds(p.Ride(wake, time.Second, nil)); got != "probe" {
		t.Fatalf("ridden at the advert: %s, want probe", got)
	}
	if !p.hasPending {
		t.Fatal("the claim was judged before its grace")
	}
	if next := p.Next(); !next.Equal(wake.Add(20 * time.Millisecond)) {
		t.Errorf("next deadline %v, want the claim's grace at %v", next.Sub(t0), wake.Add(20*time.Millisecond).Sub(t0))
	}
	// The probe's cadence keeps its own time, not the wake-up's.
	p.Released()
	p.TookOver(t0, nil)
	p.Ride(wake, time.Second, nil)
	if due := p.due[timerProbe]; !due.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("the next probe is due at %v, want 2s", due.Sub(t0))
	}
}

func TestAnnouncementUnexplainedStandsDownUntilTheClaimantGoes(t *testing.T) {
	cfg := testConfig()
	cfg.Refresh = 2 * time.Second
	p := New(cfg, macA)
	p.TookOver(t0, nil)
	run(p, t0, t0.Add(10*time.Second))
	at := t0.Add(10 * time.Second)
	out := p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: at}, nil)
	out = p.Tick(at.Add(20*time.Millisecond), out)
	if got := kinds(out); got != "stand_down+log,probe" {
		t.Fatalf("an unexplained announcement: %s, want stand_down+log,probe", got)
	}
	if down, c := p.StandingDown(); !down || c.MAC != macB {
		t.Fatalf("StandingDown = %v %v", down, c)
	}
	// The claimant keeps answering our probes for 10 s: we only probe, we
	// never announce (no refresh, no answer to its claims).
	now := at.Add(20 * time.Millisecond)
	for end := now.Add(10 * time.Second); now.Before(end); {
		next := p.Next()
		for _, a := range p.Tick(next, nil) {
			switch a.Kind {
			case ActProbe:
				p.Claimed(Claim{Addr: vip, MAC: macB, At: next.Add(time.Millisecond)}, nil)
			case ActConflict:
			default:
				t.Fatalf("%v after standing down: %s", next.Sub(at), a.Kind)
			}
		}
		now = next
	}
	// It stops answering (released at the heal, or gone): two unanswered
	// probes, then we announce again.
	var got []string
	for len(got) == 0 || !strings.Contains(strings.Join(got, ","), "resume") {
		next := p.Next()
		as := p.Tick(next, nil)
		if len(as) > 0 {
			got = append(got, fmt.Sprintf("%v:%s", next.Sub(now).Round(time.Millisecond), kinds(as)))
		}
		if next.Sub(now) > 5*time.Second {
			t.Fatalf("never resumed: %v", got)
		}
	}
	if last := got[len(got)-1]; !strings.HasSuffix(last, "resume,announce") {
		t.Errorf("resume: %v, want a burst right after resume", got)
	}
	last := p.due[timerProbe].Add(-p.cfg.ProbeEvery)
	if took, bound := last.Sub(now), (StandDownMisses+1)*StandDownProbeEvery+p.cfg.ClaimGrace; took > bound {
		t.Errorf("resumed %v after the last answer, want at most %v: %v", took, bound, got)
	}
	if down, _ := p.StandingDown(); down {
		t.Error("still standing down")
	}
}

func TestReannounceEndsAStandDown(t *testing.T) {
	p := New(testConfig(), macA)
	p.TookOver(t0, nil)
	run(p, t0, t0.Add(5*time.Second))
	at := t0.Add(5 * time.Second)
	p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: at}, nil)
	p.Tick(at.Add(20*time.Millisecond), nil)
	if got := kinds(p.Reannounce(at.Add(time.Second), nil)); got != "announce" {
		t.Fatalf("Reannounce: %s", got)
	}
	if down, _ := p.StandingDown(); down {
		t.Error("still standing down after the election decided")
	}
}

// A split brain heals: the other Master's announcement is still waiting
// out ClaimGrace when its advert arrives and the election settles in our
// favour. The advert explains the claim: no stand-down after it, or the
// clients would stay on the Master that just yielded (seen in the chaos
// lab: 300 ms without an answer until the stand-down's probes missed).
func TestReannounceSettlesAPendingClaim(t *testing.T) {
	p := New(testConfig(), macA)
	p.TookOver(t0, nil)
	run(p, t0, t0.Add(5*time.Second))
	at := t0.Add(5 * time.Second)
	p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: at}, nil)
	if got := kinds(p.Reannounce(at.Add(5*time.Millisecond), nil)); got != "announce" {
		t.Fatalf("Reannounce: %s", got)
	}
	for _, a := range p.Tick(at.Add(20*time.Millisecond), nil) {
		if a.Kind == ActStandDown || a.Kind == ActConflict {
			t.Fatalf("the claim the election explained was judged: %v", a.Kind)
		}
	}
	if down, _ := p.StandingDown(); down {
		t.Error("standing down after the election decided")
	}
}

func TestTwoNewMastersTheHigherMACKeepsAnnouncing(t *testing.T) {
	for _, tc := range []struct {
		own, other string
		want       string
	}{
		{macB, macA, "conflict+log,announce"},
		{macA, macB, "stand_down+log,probe"},
	} {
		p := New(testConfig(), tc.own)
		p.TookOver(t0, nil)
		at := t0.Add(5 * time.Millisecond) // both still in their bursts
		p.Claimed(Claim{Addr: vip, MAC: tc.other, Announcement: true, At: at}, nil)
		if got := kinds(p.Tick(at.Add(20*time.Millisecond), nil)); got != tc.want {
			t.Errorf("own %s, other %s: %s, want %s", tc.own, tc.other, got, tc.want)
		}
	}
}

// lan is two Masters that cannot hear each other's adverts (a VRRP
// partition) on a segment where ARP flows, and a client whose neighbour
// entry follows the latest announcement.
type lan struct {
	t      *testing.T
	hosts  map[string]*Policy
	client string
	moves  int
}

func (l *lan) deliver(from string, now time.Time, as []Action) {
	for _, a := range as {
		switch a.Kind {
		case ActAnnounce:
			if l.client != from {
				l.client = from
				l.moves++
			}
			for mac, p := range l.hosts {
				if mac != from {
					p.Claimed(Claim{Addr: vip, MAC: from, Announcement: true, At: now.Add(time.Millisecond)}, nil)
				}
			}
		case ActProbe:
			// Every other holder's kernel answers.
			for mac, p := range l.hosts {
				if mac != from && p.Held() {
					l.hosts[from].Claimed(Claim{Addr: vip, MAC: mac, At: now.Add(time.Millisecond)}, nil)
				}
			}
		}
	}
}

func (l *lan) runUntil(from, end time.Time) time.Time {
	for {
		var who string
		var next time.Time
		for mac, p := range l.hosts {
			if n := p.Next(); !n.IsZero() && (next.IsZero() || n.Before(next)) {
				who, next = mac, n
			}
		}
		if next.IsZero() || next.After(end) {
			return end
		}
		l.deliver(who, next, l.hosts[who].Tick(next, nil))
	}
}

func TestPartitionCostsOneClientMove(t *testing.T) {
	cfg := testConfig()
	cfg.Refresh = 5 * time.Second
	cfg.Repeat = 5
	a, b := New(cfg, macA), New(cfg, macB)
	l := &lan{t: t, hosts: map[string]*Policy{macA: a}}
	l.deliver(macA, t0, a.TookOver(t0, nil))
	now := l.runUntil(t0, t0.Add(30*time.Second))
	l.moves = 0

	// The partition: B hears no adverts and takes over; both are Master.
	l.hosts[macB] = b
	l.deliver(macB, now, b.TookOver(now, nil))
	now = l.runUntil(now, now.Add(60*time.Second))
	if l.moves != 1 || l.client != macB {
		t.Errorf("during the partition: %d client moves, client on %s; want 1, on B", l.moves, l.client)
	}
	if down, _ := a.StandingDown(); !down {
		t.Error("A still announces")
	}
	// The heal: B hears A's higher priority and releases; A's probes go
	// unanswered and A announces again: the client returns once.
	b.Released()
	delete(l.hosts, macB)
	l.moves = 0
	l.runUntil(now, now.Add(5*time.Second))
	if l.moves != 1 || l.client != macA {
		t.Errorf("after the heal: %d client moves, client on %s; want 1, on A", l.moves, l.client)
	}
}

func TestSetConfigRearmsRefresh(t *testing.T) {
	p := New(testConfig(), macA)
	p.TookOver(t0, nil)
	run(p, t0, t0.Add(5*time.Second))
	cfg := testConfig()
	cfg.Refresh = 700 * time.Millisecond
	now := t0.Add(5 * time.Second)
	p.SetConfig(cfg, now)
	got := strings.Join(run(p, now, now.Add(1500*time.Millisecond)), "; ")
	if want := "5.7s announce; 6s probe; 6.4s announce"; got != want {
		t.Errorf("after the reload:\n got %s\nwant %s", got, want)
	}
}

// A handover keeps the addresses silently until the successor announces
// them; a yield (the successor already heard) does too, and its bound is
// not late.
func TestHandOverAndYield(t *testing.T) {
	for _, yield := range []bool{false, true} {
		t.Run(fmt.Sprint("yield ", yield), func(t *testing.T) {
			p := New(testConfig(), macA)
			p.TookOver(t0, nil)
			start := t0.Add(10 * time.Second)
			if yield {
				p.Yield(start, 70*time.Millisecond)
			} else {
				p.HandOver(start, 70*time.Millisecond)
			}
			if !p.HandingOver() {
				t.Fatal("not handing over")
			}
			// The successor's passive answers are expected, not conflicts.
			if got := kinds(p.Claimed(Claim{Addr: vip, MAC: macB, At: start.Add(time.Millisecond)}, nil)); got != "" {
				t.Errorf("a passive claim while handing over: %s", got)
			}
			if next := p.Next(); !next.Equal(start.Add(70 * time.Millisecond)) {
				t.Fatalf("next deadline %v after the start, want the bound", next.Sub(start))
			}
			got := p.Tick(p.Next(), nil)
			if len(got) != 1 || got[0].Kind != ActWithdraw || got[0].Late == yield {
				t.Fatalf("without an announcement: %+v, want a withdraw at the bound, late %v", got, !yield)
			}
			if !p.Next().IsZero() || p.HandingOver() || p.Held() {
				t.Error("the policy still runs after the withdraw")
			}

			// With the successor's announcement, the addresses go at once.
			p.TookOver(t0, nil)
			if yield {
				p.Yield(start, 70*time.Millisecond)
			} else {
				p.HandOver(start, 70*time.Millisecond)
			}
			out := p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: start.Add(20 * time.Millisecond)}, nil)
			if len(out) != 1 || out[0].Kind != ActWithdraw || out[0].Late {
				t.Errorf("on the announcement: %+v, want one withdraw, not late", out)
			}
		})
	}
}

// A reload that shortens the probe period (fewer VIPs on the interface)
// brings a probe scheduled under the old one forward; a longer period
// leaves the next probe where it was.
func TestSetConfigBringsTheProbeForward(t *testing.T) {
	p := New(testConfig(), macA)
	slow := testConfig()
	slow.ProbeEvery = 16 * time.Second
	p.SetConfig(slow, t0)
	p.TookOver(t0, nil)
	now := t0.Add(5 * time.Second)
	run(p, t0, now)
	p.SetConfig(testConfig(), now) // 1 s
	if got, want := p.due[timerProbe], now.Add(time.Second); !got.Equal(want) {
		t.Errorf("after a reload to 1 s probes the next probe is due at %v, want %v", got.Sub(t0), want.Sub(t0))
	}
	p.SetConfig(slow, now)
	if got, want := p.due[timerProbe], now.Add(time.Second); !got.Equal(want) {
		t.Errorf("after a reload back to 16 s the next probe is due at %v, want it left at %v", got.Sub(t0), want.Sub(t0))
	}
}

// With no routine probes (garp.probe = 0s) a Master still asks at its
// takeover and, standing down for a claimant, until the claimant is gone;
// it then announces and asks nothing more. Without a claim monitor there
// is no one to hear an answer, so it never asks.
func TestProbesOnlyWhenNeededWithoutAPeriod(t *testing.T) {
	cfg := testConfig()
	cfg.ProbeEvery = 0
	p := New(cfg, macA)
	if got := kinds(p.TookOver(t0, nil)); got != "announce,probe" {
		t.Fatalf("TookOver: %s, want announce,probe", got)
	}
	at := t0.Add(10 * time.Second)
	if got, want := strings.Join(run(p, t0, at), "; "), "1s announce; 2s announce"; got != want {
		t.Errorf("after the takeover:\n got %s\nwant %s", got, want)
	}
	p.Claimed(Claim{Addr: vip, MAC: macB, Announcement: true, At: at}, nil)
	if got := kinds(p.Tick(at.Add(cfg.ClaimGrace), nil)); got != "stand_down+log,probe" {
		t.Fatalf("an unexplained announcement: %s, want stand_down+log,probe", got)
	}
	// Nobody answers: the claimant is gone after StandDownMisses probes.
	got := strings.Join(run(p, at, at.Add(time.Second)), "; ")
	if !strings.Contains(got, "probe") || !strings.Contains(got, "resume") {
		t.Fatalf("standing down without answers: %s, want probes, then resume", got)
	}
	if tail := run(p, at.Add(time.Second), at.Add(time.Minute)); strings.Contains(strings.Join(tail, ";"), "probe") {
		t.Errorf("after resuming: %v, want no routine probes", tail)
	}

	// A reload turns them on, and off again.
	p.SetConfig(testConfig(), at.Add(time.Minute))
	if due, want := p.due[timerProbe], at.Add(time.Minute+time.Second); !due.Equal(want) {
		t.Errorf("probes turned on by a reload: next at %v, want %v", due.Sub(t0), want.Sub(t0))
	}
	p.SetConfig(cfg, at.Add(time.Minute))
	if due := p.due[timerProbe]; !due.IsZero() {
		t.Errorf("probes turned off by a reload: one still due at %v", due.Sub(t0))
	}

	cfg.Probe = false
	q := New(cfg, macA)
	if got := kinds(q.TookOver(t0, nil)); got != "announce" {
		t.Errorf("TookOver without a claim monitor: %s, want announce", got)
	}
}

// A reload during a handover, which must say nothing, starts no probes
// (found in review: an unchanged configuration armed one).
func TestReloadInAHandoverStartsNoProbes(t *testing.T) {
	p := New(testConfig(), macA)
	p.TookOver(t0, nil)
	p.HandOver(t0.Add(time.Second), 3*time.Second)
	p.SetConfig(testConfig(), t0.Add(1100*time.Millisecond))
	if got := run(p, t0.Add(1100*time.Millisecond), t0.Add(3*time.Second)); strings.Contains(strings.Join(got, ";"), "probe") {
		t.Errorf("a reload in a handover: %v, want no probes", got)
	}
}
