package daemon

import (
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/vrrp"
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
		var timer *countingTimer
		env := h.env()
		env.NewTimer = func(fire func()) (Timer, error) {
			timer = &countingTimer{goTimer: stoppedFuncTimer(fire)}
			return timer, nil
		}
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

// A Master's advert wake-up runs on the goroutine that calls the timer
// (with kernel timers, the one that serves all of them), not on one
// started for it: the advert is out when the call returns. A Backup whose
// Master falls silent still takes over on its own goroutine.
func TestRoutineWakeRunsOnTheTimersCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		// timed starts a node whose timer counts the wake-ups that sent an
		// advert before the timer's call returned.
		timed := func(addr string, prio uint8) (*node, *atomic.Int64) {
			var inline atomic.Int64
			h := newFakeHost(lan, addr)
			env := h.env()
			env.NewTimer = func(fire func()) (Timer, error) {
				return stoppedFuncTimer(func() {
					before := lan.sentBy(51)
					fire()
					if lan.sentBy(51) > before {
						inline.Add(1)
					}
				}), nil
			}
			return startWithEnv(t, h, env, testInstance(prio)), &inline
		}
		n1, inline := timed("198.51.100.11", 150)
		n2, _ := timed("198.51.100.12", 100)
		time.Sleep(10 * time.Second) // n1 Master, its takeover burst over
		synctest.Wait()
		sentBefore, inlineBefore := lan.sentBy(51), inline.Load()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		adverts, within := lan.sentBy(51)-sentBefore, int(inline.Load()-inlineBefore)
		if adverts < 9 || within != adverts {
			t.Fatalf("%d of %d adverts sent within the timer's call", within, adverts)
		}
		n1.stop(t)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if st := n2.state(); st != vrrp.StateMaster {
			t.Fatalf("n2 is %v after its Master stopped", st)
		}
	})
}

// stoppedFuncTimer is a stopped runtime timer calling fire.
func stoppedFuncTimer(fire func()) goTimer {
	t := time.AfterFunc(time.Hour, fire)
	t.Stop()
	return goTimer{t}
}

// armedAt records where each Reset points the timer.
type armedAt struct {
	goTimer
	mu  sync.Mutex
	due []time.Time
}

func (a *armedAt) Reset(d time.Duration) {
	a.mu.Lock()
	a.due = append(a.due, time.Now().Add(d))
	a.mu.Unlock()
	a.goTimer.Reset(d)
}

func (a *armedAt) since(t time.Time) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []time.Time
	for _, d := range a.due {
		if d.After(t) {
			out = append(out, d)
		}
	}
	return out
}

// startTimedBackup starts a Backup at 198.51.100.12, priority 100, whose
// wake timer records where it is armed.
func startTimedBackup(t *testing.T, lan *fakeLAN) (*node, *armedAt) {
	t.Helper()
	h := newFakeHost(lan, "198.51.100.12")
	timer := &armedAt{}
	env := h.env()
	env.NewTimer = func(fire func()) (Timer, error) {
		timer.goTimer = stoppedFuncTimer(fire)
		return timer, nil
	}
	return startWithEnv(t, h, env, testInstance(100)), timer
}

// A steady Backup whose Master's adverts are set aside wakes just after
// one of them is due, not Skew_Time later, and no more often than its
// Master_Down_Timer would wake it; when the advert does not come, the
// deadline's wake-up still takes over on time.
func TestSteadyBackupWakesJustAfterAnAdvert(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2, timer := startTimedBackup(t, lan)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if c := lan.connOf("198.51.100.12"); c.patternsSet() != 1 {
			t.Fatalf("n2 is not steady: %d patterns", c.patternsSet())
		}
		lan.mu.Lock()
		phase := time.Duration(lan.lastFrom[netip.MustParseAddr("198.51.100.11")].UnixNano()) % time.Second
		lan.mu.Unlock()
		from := time.Now()
		time.Sleep(30 * time.Second)
		synctest.Wait()
		wakes := timer.since(from)
		// The deadline's wake-up would come Skew_Time(100) = 609 ms after
		// an advert, every three adverts.
		if len(wakes) < 9 || len(wakes) > 11 {
			t.Errorf("%d wake-ups in 30 s, want about 10: %v", len(wakes), wakes)
		}
		for _, w := range wakes {
			if off := (time.Duration(w.UnixNano()) - phase + time.Second) % time.Second; off != quietWakeAfter {
				t.Errorf("wake-up %v after an advert, want %v", off, quietWakeAfter)
			}
		}

		// The Master falls silent: the wake-up after the advert that does
		// not come finds nothing, and the deadline's takes over on time.
		cut := time.Now()
		cutMasterExpectTakeover(t, lan, n1, n2)
		// After the cut: the wake-up after the advert that did not come,
		// the deadline's, the takeover's grace, the first advert's; a
		// wake-up that found nothing and did not fall back would spin.
		if armed := timer.since(cut); len(armed) > 5 {
			t.Errorf("armed %d times between the cut and the takeover: %v", len(armed), armed)
		}
	})
}

// A Master whose adverts drift later (each interval a little over its
// advertised one, as a Master that arms its next advert after sending
// does) still finds a steady Backup awake just after them, and the Backup
// wakes no more often than once in three intervals.
func TestSteadyBackupFollowsADriftingMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		n2, timer := startTimedBackup(t, lan)
		master := netip.MustParseAddr("198.51.100.20")
		const drift = 700 * time.Microsecond // three of them: over quietWakeAfter
		var sent []time.Time
		advertise := func(d time.Duration) {
			for end := time.Now().Add(d); time.Now().Before(end); {
				lan.advertise(master, 200)
				sent = append(sent, time.Now())
				time.Sleep(time.Second + drift)
			}
		}
		advertise(10 * time.Second)
		synctest.Wait()
		if c := lan.connOf("198.51.100.12"); c.patternsSet() != 1 {
			t.Fatalf("n2 is not steady: %d patterns", c.patternsSet())
		}
		from := time.Now()
		advertise(30 * time.Second)
		synctest.Wait()
		wakes := timer.since(from)
		if len(wakes) < 9 || len(wakes) > 11 {
			t.Errorf("%d wake-ups in 30 s, want about 10", len(wakes))
		}
		for _, w := range wakes {
			i := sort.Search(len(sent), func(i int) bool { return sent[i].After(w) }) - 1
			if i < 0 || i == len(sent)-1 {
				continue // armed for an advert the test no longer sends
			}
			if off := w.Sub(sent[i]); off != quietWakeAfter {
				t.Errorf("wake-up %v after an advert", off)
			}
		}
		if n2.state() != vrrp.StateBackup {
			t.Errorf("n2 %v", n2.state())
		}
	})
}
