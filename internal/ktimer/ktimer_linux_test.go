package ktimer

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// chanTimer is a Timer whose calls send on a channel, as a caller that
// waits for the time would have it.
type chanTimer struct {
	*Timer
	c chan time.Time
}

func (c chanTimer) C() <-chan time.Time { return c.c }

// newChanTimer makes a chanTimer of g. A value not yet taken already says
// the timer fired: a call finding the channel full sends nothing.
func newChanTimer(g *Group) (chanTimer, error) {
	c := make(chan time.Time, 1)
	t, err := g.New(func() {
		select {
		case c <- time.Now():
		default:
		}
	})
	return chanTimer{t, c}, err
}

// newGroup is a group closed at the end of the test.
func newGroup(t *testing.T) *Group {
	t.Helper()
	g, err := NewGroup()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func TestTimerFiresAfterItsDelay(t *testing.T) {
	tm, err := newChanTimer(newGroup(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	start := time.Now()
	tm.Reset(30 * time.Millisecond)
	select {
	case at := <-tm.C():
		if at.Sub(start) < 30*time.Millisecond {
			t.Errorf("fired after %v, before its 30ms", at.Sub(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire")
	}
}

func TestStopAndResetLater(t *testing.T) {
	tm, err := newChanTimer(newGroup(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Reset(20 * time.Millisecond)
	tm.Stop()
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	case <-time.After(100 * time.Millisecond):
	}
	tm.Reset(10 * time.Millisecond)
	tm.Reset(200 * time.Millisecond) // moved later: the earlier expiry is gone
	start := time.Now()
	select {
	case <-tm.C():
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Errorf("fired after %v; the reset moved it to 200ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire")
	}
}

func TestZeroResetFiresAtOnce(t *testing.T) {
	tm, err := newChanTimer(newGroup(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Reset(0)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("Reset(0) did not fire")
	}
}

func TestCloseEndsTheTimer(t *testing.T) {
	tm, err := newChanTimer(newGroup(t))
	if err != nil {
		t.Fatal(err)
	}
	tm.Reset(time.Hour)
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tm.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Each expiry wakes the waiter again: the timerfd is never read, and the
// poller's edge of the next expiry does it.
func TestTimerFiresAgainAfterEachExpiry(t *testing.T) {
	tm, err := newChanTimer(newGroup(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	for i := range 5 {
		tm.Reset(5 * time.Millisecond)
		select {
		case <-tm.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("expiry %d never came", i+1)
		}
	}
	// Expiries while nobody receives are one value on the channel, then
	// the next Reset's.
	tm.Reset(time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	<-tm.C()
	tm.Reset(5 * time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the expiry after a late receive never came")
	}
}

// A Master moves its timer at every advert: moving it allocates nothing,
// or each advert would be garbage for the collector to wake for.
func TestResetAndStopAllocateNothing(t *testing.T) {
	tm, err := newChanTimer(newGroup(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if n := testing.AllocsPerRun(100, func() {
		tm.Reset(time.Hour)
		tm.Stop()
	}); n != 0 {
		t.Errorf("Reset and Stop allocate %v times, want none", n)
	}
}

// A group's timers fire each after its own delay, in their order, with one
// goroutine for all of them.
func TestGroupTimersFireIndependently(t *testing.T) {
	g := newGroup(t)
	before := runtime.NumGoroutine()
	const n = 50
	timers := make([]chanTimer, n)
	for i := range timers {
		tm, err := newChanTimer(g)
		if err != nil {
			t.Fatal(err)
		}
		defer tm.Close()
		timers[i] = tm
	}
	if got := runtime.NumGoroutine() - before; got > 0 {
		t.Errorf("%d timers started %d goroutines, want none (the group's waiter serves them)", n, got)
	}
	start := time.Now()
	for i, tm := range timers {
		tm.Reset(time.Duration(10+2*i) * time.Millisecond)
	}
	// Every second timer is stopped: it must not fire.
	for i := 1; i < n; i += 2 {
		timers[i].Stop()
	}
	for i := 0; i < n; i += 2 {
		select {
		case at := <-timers[i].C():
			if want := time.Duration(10+2*i) * time.Millisecond; at.Sub(start) < want {
				t.Errorf("timer %d fired after %v, before its %v", i, at.Sub(start), want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("timer %d did not fire", i)
		}
	}
	for i := 1; i < n; i += 2 {
		select {
		case <-timers[i].C():
			t.Errorf("stopped timer %d fired", i)
		default:
		}
	}
}

// A closed timer hears nothing more, and the timer made after it gets its
// own expiries.
func TestGroupClosedTimerHearsNothing(t *testing.T) {
	g := newGroup(t)
	old, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	old.Reset(time.Millisecond)
	time.Sleep(10 * time.Millisecond) // expired, maybe not read yet
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	drainNow(old.C()) // an expiry sent before Close
	fresh, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	fresh.Reset(5 * time.Millisecond)
	select {
	case <-fresh.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the new timer did not fire")
	}
	select {
	case <-old.C():
		t.Error("the closed timer fired")
	case <-time.After(20 * time.Millisecond):
	}
}

// openFDs counts the process's open descriptors; without /proc the test
// is skipped.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", os.Getpid()))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}

func drainNow(c <-chan time.Time) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// A timer whose receiver is busy does not hold up the others: its second
// expiry, while the first waits unread, is not queued (the first already
// tells the receiver to look at its deadlines), and the group goes on.
func TestGroupBusyReceiverBlocksNobody(t *testing.T) {
	g := newGroup(t)
	busy, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	other, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	busy.Reset(time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	busy.Reset(time.Millisecond) // fires again, the first still unread
	time.Sleep(20 * time.Millisecond)
	other.Reset(time.Millisecond)
	select {
	case <-other.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the other timer did not fire while the busy one's receiver slept")
	}
	<-busy.C()
	select {
	case <-busy.C():
		t.Error("two expiries queued for the busy timer, want one")
	default:
	}
}

// Closing the group ends its waiter and closes its timerfd; new timers are
// refused.
func TestGroupCloseEndsTheWaiter(t *testing.T) {
	before, goroutines := openFDs(t), runtime.NumGoroutine()
	g, err := NewGroup()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	tm.Reset(time.Hour)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := newChanTimer(g); err == nil {
		t.Error("a closed group made a timer")
	}
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if got := openFDs(t); got != before {
		t.Errorf("%d descriptors open after, %d before", got, before)
	}
	// Close returns once the waiter has closed done; the goroutine itself
	// ends a moment later, which on a loaded machine the count can still
	// see: give it a bounded while to go.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > goroutines {
		t.Errorf("%d goroutines after, %d before", got, goroutines)
	}
}

// Many timers expire at once: each fires.
func TestGroupManyExpiriesAtOnce(t *testing.T) {
	g := newGroup(t)
	const n = 200
	timers := make([]chanTimer, n)
	for i := range timers {
		tm, err := newChanTimer(g)
		if err != nil {
			t.Fatal(err)
		}
		defer tm.Close()
		timers[i] = tm
	}
	for _, tm := range timers {
		tm.Reset(5 * time.Millisecond)
	}
	for i, tm := range timers {
		select {
		case <-tm.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("timer %d of %d did not fire", i, n)
		}
	}
}

// A group of many timers holds one descriptor, not one per timer.
func TestGroupHoldsOneDescriptor(t *testing.T) {
	before := openFDs(t)
	g := newGroup(t)
	for range 64 {
		tm, err := newChanTimer(g)
		if err != nil {
			t.Fatal(err)
		}
		defer tm.Close()
		tm.Reset(time.Hour)
	}
	if got := openFDs(t) - before; got != 1 {
		t.Errorf("a group of 64 armed timers holds %d descriptors, want 1", got)
	}
}

// The timerfd is re-armed only when the earliest deadline moves: a Backup
// pushing back one of many Master_Down timers, or a Master re-arming its
// advert timer while another's comes first, makes no system call.
func TestResetKeepingTheEarliestMakesNoSystemCall(t *testing.T) {
	g := newGroup(t)
	first, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	later, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	first.Reset(time.Hour)
	settimes := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.settimes
	}
	n := settimes()
	for i := range 10 {
		later.Reset(2*time.Hour + time.Duration(i)*time.Second)
	}
	later.Stop()
	if got := settimes() - n; got != 0 {
		t.Errorf("moving a timer behind the earliest re-armed the timerfd %d times, want 0", got)
	}
	later.Reset(time.Minute) // now the earliest
	first.Stop()             // not the earliest any more: nothing to re-arm
	if got := settimes() - n; got != 1 {
		t.Errorf("a new earliest deadline re-armed the timerfd %d times, want 1", got)
	}
	later.Stop() // the earliest goes: the timerfd is disarmed
	if got := settimes() - n; got != 2 {
		t.Errorf("stopping the earliest re-armed the timerfd %d times in all, want 2", got)
	}
}

// Timers reset concurrently from many goroutines, often to expire at once
// or within a millisecond, each fire every time: no expiry is lost between
// the poller and the heap.
func TestGroupLosesNoExpiry(t *testing.T) {
	g := newGroup(t)
	const timers, rounds = 16, 100
	errs := make(chan error, timers)
	for i := range timers {
		tm, err := newChanTimer(g)
		if err != nil {
			t.Fatal(err)
		}
		defer tm.Close()
		go func() {
			for r := range rounds {
				tm.Reset(time.Duration((i+r)%3) * 500 * time.Microsecond)
				select {
				case <-tm.C():
				case <-time.After(5 * time.Second):
					errs <- fmt.Errorf("timer %d: expiry %d never came", i, r)
					return
				}
			}
			errs <- nil
		}()
	}
	for range timers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A timer's call runs without the group's lock: it may re-arm its own
// timer and stop another of the group's, as an election run on the group's
// goroutine does, and the re-armed timer fires again.
func TestFireResetsTimersOfItsGroup(t *testing.T) {
	g := newGroup(t)
	other, err := newChanTimer(g)
	if err != nil {
		t.Fatal(err)
	}
	fired := make(chan int, 3)
	var self *Timer
	n := 0
	self, err = g.New(func() {
		n++
		fired <- n
		if n < 3 {
			self.Reset(time.Millisecond)
			other.Stop()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	other.Reset(50 * time.Millisecond)
	self.Reset(time.Millisecond)
	for want := 1; want <= 3; want++ {
		select {
		case got := <-fired:
			if got != want {
				t.Fatalf("call %d, want %d", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d did not come: a call that re-arms its timer must not deadlock the group", want)
		}
	}
	select {
	case <-other.C():
		t.Error("the timer stopped from another's call fired")
	case <-time.After(100 * time.Millisecond):
	}
}
