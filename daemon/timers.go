package daemon

import (
	"runtime"
	"time"
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

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
