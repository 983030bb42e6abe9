package daemon

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countingTimer is a kernel-like Timer (moved eagerly) that records each
// Reset.
type countingTimer struct {
	goTimer
	mu     sync.Mutex
	resets []time.Duration
}

func (c *countingTimer) Reset(d time.Duration) {
	c.mu.Lock()
	c.resets = append(c.resets, d)
	c.mu.Unlock()
	c.goTimer.Reset(d)
}

func (c *countingTimer) taken() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.resets...)
}

// A Master's advert wake-up, with the second-owner probe riding on it,
// arms the timer once, for the next advert: not first for the probe still
// due at that instant (a system call and an expiry for nothing).
func TestMasterWakeArmsTheTimerOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		timer := &countingTimer{goTimer: goTimer{stoppedTimer()}}
		env := h.env()
		env.NewTimer = func() (Timer, error) { return timer, nil }
		startWithEnv(t, h, env, testInstance(150))
		time.Sleep(10 * time.Second) // Master, the takeover burst over
		synctest.Wait()
		before := len(timer.taken())
		sent := lan.sentBy(51)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		resets := timer.taken()[before:]
		adverts := lan.sentBy(51) - sent
		if adverts < 9 {
			t.Fatalf("%d adverts in 10s", adverts)
		}
		for _, d := range resets {
			if d < time.Millisecond {
				t.Errorf("timer armed for %v: a deadline the same wake-up serves", d)
			}
		}
		if len(resets) > adverts+1 {
			t.Errorf("%d resets for %d adverts: %v", len(resets), adverts, resets)
		}
	})
}
