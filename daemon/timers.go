package daemon

import (
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

// The election's timers are armed lazily. Every advert a Backup hears pushes
// its Master_Down_Timer back; resetting a runtime timer to a later time
// leaves its old deadline in the runtime's timer heap, which then wakes the
// process, and the runtime's monitor thread, for nothing once per advert.
// Instead the runtime timer keeps its earlier deadline and, when it fires,
// is armed again for what is left of the real one (dueAt): one wake-up per
// Master_Down_Interval instead of one per advert.

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

// armTimer makes timer t wake the loop by its deadline dueAt[t], unless it
// is a runtime timer armed to wake sooner already. A kernel timer is moved
// for one raw system call and no wake-up, so it is always moved.
func (in *instance) armTimer(t vrrp.Timer, now time.Time) {
	at := wakeAt(t, in.dueAt[t])
	if f := in.firesAt[t]; !in.kernelTimers && !f.IsZero() && !f.After(at) {
		return
	}
	in.timers[t].Reset(max(at.Sub(now), 0))
	in.firesAt[t] = at
}

// timerDue is called when timer t fired: it reports whether its deadline
// has come, or arms it again for a deadline moved later meanwhile.
func (in *instance) timerDue(t vrrp.Timer) bool {
	in.firesAt[t] = time.Time{}
	if in.dueAt[t].IsZero() {
		return false // stopped since it was armed
	}
	now := in.env.Now()
	if now.Before(wakeAt(t, in.dueAt[t])) {
		in.armTimer(t, now)
		return false
	}
	return true
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}

// A Timer is a one-shot timer the election loop waits on. A Reset or Stop
// need not take back an expiry already on its way: the loop checks its
// deadlines (timerDue).
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
	Close() error
}

// goTimer is a Timer on the runtime's timers, where Env.NewTimer is nil
// (tests, whose clock is the runtime's) or fails.
type goTimer struct{ t *time.Timer }

func (g goTimer) C() <-chan time.Time   { return g.t.C }
func (g goTimer) Reset(d time.Duration) { g.t.Reset(d) }
func (g goTimer) Stop()                 { g.t.Stop() }
func (g goTimer) Close() error          { g.t.Stop(); return nil }

// newTimer returns a stopped Timer from the environment, or a goTimer
// (kernelTimers says which the loop has: it makes them all at once).
func (in *instance) newTimer() Timer {
	if in.env.NewTimer != nil {
		t, err := in.env.NewTimer()
		if err == nil {
			in.kernelTimers = true
			return t
		}
		in.log.Warn("kernel timer unavailable; using the runtime's", "error", err)
	}
	return goTimer{stoppedTimer()}
}

// closeTimers releases the loop's timers when the instance ends.
func (in *instance) closeTimers() {
	for _, t := range in.timers {
		if t != nil {
			t.Close()
		}
	}
	if in.policyT != nil {
		in.policyT.Close()
	}
}
