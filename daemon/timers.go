package daemon

import (
	"net/netip"
	"runtime"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// timerLead is how early the Master_Down_Timer wakes the loop; the rest is
// waited out precisely. It only fires at a takeover, so the spin is rare.
const timerLead = 2 * time.Millisecond

// waitUntil yields the processor until t, for at most timerLead. A clock
// that stands still while we spin (a test's fake one) is slept on instead.
func (in *instance) waitUntil(t time.Time) {
	now := in.env.Now()
	if t.Sub(now) > timerLead {
		return
	}
	for still := 0; now.Before(t); {
		runtime.Gosched()
		next := in.env.Now()
		if next.Equal(now) {
			if still++; still > 100 {
				time.Sleep(t.Sub(now))
				return
			}
		}
		now = next
	}
}

// An instance waits on one timer for all its deadlines: the election's
// (dueAt, by vrrp.Timer) and the announcement policy's (policyDue). It is
// armed for the earliest (rearm); when it fires, whatever is due runs
// (onWake). One timer, not five, keeps a host with hundreds of groups
// light (one deadline each in the kernel timers' heap, which one timerfd
// and one goroutine serve for the whole daemon).
//
// A runtime timer is moved later lazily. Every advert a Backup hears pushes
// its Master_Down_Timer back; resetting a runtime timer to a later time
// leaves its old deadline in the runtime's timer heap, which then wakes the
// process, and the runtime's monitor thread, for nothing once per advert.
// So the runtime timer keeps its earlier deadline and, when it fires, is
// armed again for what is left: one wake-up per Master_Down_Interval
// instead of one per advert. A kernel timer (Env.NewTimer) is moved for
// at most one raw system call (none unless it is the daemon's earliest)
// and no wake-up, so it is always moved.

// wakeAt is when timer t must wake the loop for a deadline due: early by
// timerLead for the precise ones, since Go's timers wake through epoll in
// whole milliseconds and so fire up to a millisecond late; a takeover
// should not, so the rest is waited out (waitUntil).
func wakeAt(t vrrp.Timer, due time.Time) time.Time {
	if t == vrrp.TimerAdvert {
		return due
	}
	return due.Add(-timerLead)
}

// electionTimers are the machine's timers in the order onWake runs them
// when several are due.
func electionTimers() [3]vrrp.Timer {
	return [...]vrrp.Timer{vrrp.TimerTakeover, vrrp.TimerMasterDown, vrrp.TimerAdvert}
}

// quietWakeAfter is how long after its Master's advert is expected a
// steady Backup wakes (afterAdvert): time for the advert to arrive, late
// by the Master's own wake-up and the wire.
const quietWakeAfter = time.Millisecond

// afterAdvert is when a steady Backup whose Master's adverts are set aside
// wakes for its Master_Down_Timer due at due: just after the last of the
// Master's adverts expected before then, not at the deadline. It reads as
// many adverts either way, so it wakes as often, but while the Master's
// send has just been taken in, not Skew_Time later from an idle CPU (a
// fifth less of a Backup's CPU at 100 ms adverts in the lab). An advert
// later than expected leaves the deadline unmoved; rearm then falls back to
// it. Zero: the deadline's own wake-up (wakeAt) reads as many adverts, or
// the interval is unknown.
func (in *instance) afterAdvert(due time.Time) time.Time {
	iv, mdi := in.m.MasterAdverInterval(), in.m.MasterDownInterval()
	if iv <= 0 || mdi <= timerLead {
		return time.Time{}
	}
	// A Master that arms its next advert after sending one drifts later
	// by its own latency every interval: expect its adverts as far apart
	// as they came, not as its interval says.
	if gap := in.advertGap; gap > iv && gap < iv+iv/8 {
		iv = gap
	}
	adverts := (mdi - timerLead) / iv // read by the deadline's wake-up
	if adverts < 1 || time.Duration(adverts)*iv+quietWakeAfter > mdi-timerLead {
		return time.Time{} // one advert fewer: a wake-up more often
	}
	return due.Add(time.Duration(adverts)*iv - mdi + quietWakeAfter)
}

// noteArrival keeps when an advert from src arrived, at, and how long
// after the one before it from the same router.
func (in *instance) noteArrival(src netip.Addr, at time.Time) {
	in.advertGap = 0
	if src == in.advertFrom && !in.advertAt.IsZero() {
		in.advertGap = at.Sub(in.advertAt)
	}
	in.advertAt, in.advertFrom = at, src
}

// nextWake is the earliest moment anything waits for; zero: nothing. A
// steady Backup's early wake-up counts only while it is after now.
func (in *instance) nextWake(now time.Time) time.Time {
	next := in.policyDue
	for _, t := range electionTimers() {
		if due := in.dueAt[t]; !due.IsZero() {
			at := wakeAt(t, due)
			if t == vrrp.TimerMasterDown && in.quietSet {
				// Passed: that advert was late; the deadline is next.
				if a := in.afterAdvert(due); a.After(now) {
					at = a
				}
			}
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	return next
}

// rearm points the wake timer at nextWake. While onWake runs what is due,
// it waits for onWake's own rearm at the end: the advert a Master sends
// re-arms the advert timer with the policy's probe still due, and arming
// the kernel timer for that instant costs a system call and an expiry for
// a deadline the same wake-up serves a moment later.
func (in *instance) rearm(now time.Time) {
	if in.waking {
		return
	}
	next := in.nextWake(now)
	switch {
	case next.IsZero() && in.kernelTimers:
		in.wake.Stop()
		in.firesAt = time.Time{}
	case next.IsZero():
		// Left armed: it fires once for nothing, as a stopped runtime
		// timer would still wake the process.
	case in.kernelTimers && !next.Equal(in.firesAt), !in.kernelTimers && (in.firesAt.IsZero() || in.firesAt.After(next)):
		in.wake.Reset(max(next.Sub(now), 0))
		in.firesAt = next
	}
}

// onWake runs what is due when the wake timer fired: the election's
// timers, then the policy's, and arms it for what is next.
func (in *instance) onWake(out []vrrp.Action) {
	in.firesAt = time.Time{}
	in.waking = true
	// A Backup's Master_Down_Timer fired: its Master's steady adverts set
	// aside meanwhile push it back first.
	in.catchUp(out)
	for _, t := range electionTimers() {
		due := in.dueAt[t]
		if due.IsZero() || in.env.Now().Before(wakeAt(t, due)) {
			continue
		}
		if t != vrrp.TimerAdvert {
			if in.quick {
				// A precise deadline is not waited out on the timers'
				// goroutine: rearm below arms the timer at once, and
				// its next call starts the election's goroutine.
				continue
			}
			in.waitUntil(due)
		}
		in.late = max(in.env.Now().Sub(due), 0)
		in.dueAt[t] = time.Time{} // fired; the machine arms it again if it wants
		out = in.m.TimerFired(t, out[:0])
		in.exec(out)
		in.late = 0
		if t == vrrp.TimerAdvert {
			in.rideAdvert()
		}
	}
	in.policyWake()
	in.waking = false
	in.rearm(in.env.Now())
}

// policyWake runs the policy's timer if it is due.
func (in *instance) policyWake() {
	if due := in.policyDue; !due.IsZero() && !in.env.Now().Before(due) {
		in.policyDue = time.Time{}
		in.tickPolicy(in.env.Now())
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// A Timer is a one-shot timer that posts to the election's mailbox when
// it fires. A Reset or Stop need not take back an expiry already on its
// way: the loop checks its deadlines (onWake).
type Timer interface {
	Reset(d time.Duration)
	Stop()
	Close() error
}

// goTimer is a Timer on the runtime's timers, where Env.NewTimer is nil
// (tests, whose clock is the runtime's) or fails.
type goTimer struct{ t *time.Timer }

func (g goTimer) Reset(d time.Duration) { g.t.Reset(d) }
func (g goTimer) Stop()                 { g.t.Stop() }
func (g goTimer) Close() error          { g.t.Stop(); return nil }

// newTimer returns a stopped Timer from the environment, or a goTimer
// (kernelTimers says which), that wakes the election.
func (in *instance) newTimer() Timer {
	if in.env.NewTimer != nil {
		t, err := in.env.NewTimer(in.timerFired)
		if err == nil {
			in.kernelTimers = true
			return t
		}
		in.log.Warn("kernel timer unavailable; using the runtime's", "error", err)
	}
	t := time.AfterFunc(time.Hour, in.timerFired)
	t.Stop()
	return goTimer{t}
}

// timerFired is the wake timer's call. Kernel timers call it on the one
// goroutine that serves all of the daemon's timers, so an election that
// was idle, has nothing else queued and wakes for routine work (a
// Master's advert and the probe riding on it, the policy's timer, a
// steady Backup's early look at the adverts set aside: routineWake) runs
// right there, for one wake-up: starting a goroutine for it and ending it
// cost 40-70 µs of CPU a wake-up in the lab, where a Master's whole
// wake-up costs about 450 and a Backup's 150. Anything else (a precise
// deadline, a takeover, whatever else is queued) gets the election's own
// goroutine, as before.
func (in *instance) timerFired() {
	if !in.mb.postWakeQuick() {
		return
	}
	if !in.routineWake(in.env.Now()) {
		go in.drive()
		return
	}
	room := in.actions.get()
	in.quick = true
	in.checkQuiet()
	if ev := in.mb.next(kindSet(evWake), false); ev.kind == evWake {
		in.onWake(room[:0])
	}
	in.quick = false
	in.actions.put(room)
	if in.mb.letGo() {
		go in.drive()
	}
}

// routineWake: no deadline that must be waited out precisely (a Backup's
// Master_Down_Timer, a new Master's grace) is due by now, and the
// announcements are made on the link, not through a BGP speaker.
func (in *instance) routineWake(now time.Time) bool {
	if in.cfg.Announce.BGPMode() {
		return false
	}
	for _, t := range electionTimers() {
		if due := in.dueAt[t]; t != vrrp.TimerAdvert && !due.IsZero() && !now.Before(wakeAt(t, due)) {
			return false
		}
	}
	return true
}

// closeTimer releases the wake timer when the instance ends.
func (in *instance) closeTimer() {
	if in.wake != nil {
		in.wake.Close()
	}
}
