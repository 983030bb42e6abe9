package ktimer

import (
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Group keeps its timers' deadlines in a heap and one timerfd armed for
// the earliest, which the Go poller watches. Close ends it; its timers
// then fire no more.
type Group struct {
	f    *os.File // the timerfd, in the Go poller
	fd   int      // its descriptor (f.Fd would make it blocking)
	rc   syscall.RawConn
	done chan struct{} // closed when the last waiter has returned

	mu      sync.Mutex
	queue   []*Timer  // the armed timers, a min-heap by due
	armedAt time.Time // the deadline the timerfd is armed for; zero: disarmed
	closed  bool
	spec    unix.ItimerSpec // the settime call's argument, kept: no escape per call
	// settimes counts the timerfd's re-armings, for tests: a Reset that
	// leaves the earliest deadline where it was must make none.
	settimes int
}

// A waiter is the goroutine that waits for the timerfd and fires what is
// due, one timer after the other; there is one at a time. A timer's
// function that would take long hands the waiting on (handOff): a new
// waiter fires the rest of the batch and waits on, and this one ends when
// the function returns.
type waiter struct {
	g *Group
	// batch: the timers found due, fired in order; next: the index of the
	// one after the timer firing now.
	batch []*Timer
	next  int
	// handed: handOff was called; the rest of batch is another waiter's.
	handed bool
	// waited is whether the poller has called wait once in the current
	// wait. wait and handOff are the waiter's methods as values, made once
	// (a method value made at each call escapes to the heap).
	waited  bool
	wait    func(fd uintptr) bool
	handOff func()
}

func newWaiter(g *Group, batch []*Timer) *waiter {
	w := &waiter{g: g, batch: batch}
	w.wait, w.handOff = w.ready, w.hand
	return w
}

// NewGroup starts a group's waiter.
func NewGroup() (*Group, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "ktimer")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	g := &Group{f: f, fd: fd, rc: rc, done: make(chan struct{})}
	go newWaiter(g, nil).run()
	return g, nil
}

// Close stops the waiter and waits for it; not for a timer's function that
// handed the waiting on, which goes on to its end.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.done
		return nil
	}
	g.closed = true
	for _, t := range g.queue {
		t.index = -1
	}
	g.queue = nil
	g.mu.Unlock()
	err := g.f.Close() // wakes the waiter's poll with an error
	<-g.done
	return err
}

// run fires the batch it was given, then waits for the timerfd's expiries
// and fires the timers due at each, until the group closes or a timer's
// function hands the waiting on.
func (w *waiter) run() {
	g := w.g
	for w.fire() {
		w.waited = false
		if err := g.rc.Read(w.wait); err != nil {
			close(g.done) // closed
			return
		}
		var open bool
		if w.batch, open = g.expire(time.Now(), w.batch[:0]); !open {
			close(g.done)
			return
		}
	}
}

// fire calls the batch's functions in order, the group unlocked (they may
// use its timers); false: one handed the waiting on.
func (w *waiter) fire() bool {
	for i, t := range w.batch {
		w.next = i + 1
		if !w.g.open(t) {
			continue // closed since it was found due
		}
		t.fire(w.handOff)
		if w.handed {
			return false
		}
	}
	clear(w.batch) // no timer kept reachable from here
	return true
}

// open reports whether t is still open.
func (g *Group) open(t *Timer) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !t.closed
}

// hand starts the next waiter with the rest of the batch, once; the timer
// function that called it goes on on this goroutine.
func (w *waiter) hand() {
	if w.handed {
		return
	}
	w.handed = true
	go newWaiter(w.g, slices.Clone(w.batch[w.next:])).run()
}

// ready is the poller's call. The first call of a wait returns false, so
// the poller waits for the timerfd's next expiry (an edge: the expiry is
// never read, as the next arming resets the count), unless a deadline has
// passed already: the poller forgets an expiry that came while the timers
// were being fired. Called again, after the poller saw an expiry: true.
func (w *waiter) ready(uintptr) bool {
	if w.waited {
		return true
	}
	w.waited = true
	g := w.g
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed || len(g.queue) > 0 && !g.queue[0].due.After(time.Now())
}

// expire takes the timers due at now out of the queue, appending them to
// due, and arms the timerfd for the next; false: the group is closed.
func (g *Group) expire(now time.Time, due []*Timer) ([]*Timer, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return due, false
	}
	for len(g.queue) > 0 && !g.queue[0].due.After(now) {
		t := g.queue[0]
		g.remove(t)
		due = append(due, t)
	}
	// The timerfd is one-shot: once expired it is disarmed, so arm starts
	// from nothing (and makes no call when no timer is left). Woken before
	// it expired (a deadline seen passed first), it may stay armed for a
	// deadline gone: one wake-up for nothing, as expire checks deadlines.
	g.armedAt = time.Time{}
	g.arm(now)
	return due, true
}

// arm points the timerfd at the earliest deadline, if that moved. The
// caller holds mu.
func (g *Group) arm(now time.Time) {
	var next time.Time
	if len(g.queue) > 0 {
		next = g.queue[0].due
	}
	if next.Equal(g.armedAt) || g.closed {
		return
	}
	g.armedAt = next
	var value unix.Timespec // zero disarms
	if !next.IsZero() {
		value = unix.NsecToTimespec(max(int64(next.Sub(now)), 1))
	}
	g.spec = unix.ItimerSpec{Value: value}
	g.settimes++
	// Raw: timerfd_settime never blocks, and an ordinary call would wake
	// the runtime's monitor thread.
	unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(g.fd), 0, uintptr(unsafe.Pointer(&g.spec)), 0, 0, 0)
}

var errClosed = errors.New("ktimer: group closed")

// New returns a stopped timer of the group that calls fire at each
// expiry, on the group's goroutine: the timers due after it fire when it
// returns. fire may use the group's timers. Before it does anything that
// may take long or block, it calls the handOff it is given (and only
// during the call): the group's timers then fire on another goroutine, and
// fire goes on on this one. Close releases it.
//
// Running the timer's work on the goroutine that waited for it, not on one
// started for it, is what makes an expiry cheap: a goroutine's start and
// end cost more than a Backup's whole wake-up does without them.
func (g *Group) New(fire func(handOff func())) (*Timer, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errClosed
	}
	return &Timer{g: g, fire: fire, index: -1}, nil
}

// Timer is a one-shot timer calling its function at each expiry; a Reset
// or Stop does not take back a call already made, so the function's owner
// checks whether the deadline it wanted has come. Reset and Stop are
// called from one goroutine at a time.
type Timer struct {
	g      *Group
	fire   func(handOff func())
	due    time.Time
	index  int // in the group's queue; -1: not armed
	closed bool
}

// Reset arms the timer to expire after d (at once for d <= 0).
func (t *Timer) Reset(d time.Duration) {
	g := t.g
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.closed || g.closed {
		return
	}
	t.due = now.Add(max(d, 0))
	if t.index < 0 {
		g.push(t)
	} else {
		g.fix(t.index)
	}
	g.arm(now)
}

// Stop disarms the timer.
func (t *Timer) Stop() {
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.index >= 0 {
		g.remove(t)
		g.arm(time.Now())
	}
}

// Close stops the timer for good. A call of its function already begun
// may still be running, and one that was beginning may still run.
func (t *Timer) Close() error {
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	t.closed = true
	if t.index >= 0 {
		g.remove(t)
		g.arm(time.Now())
	}
	return nil
}

// The queue is a binary min-heap by due, each timer knowing its index; the
// caller holds mu. Hand-written rather than container/heap: no interface
// calls on a path a Master takes at every advert.

func (g *Group) push(t *Timer) {
	t.index = len(g.queue)
	g.queue = append(g.queue, t)
	g.up(t.index)
}

func (g *Group) remove(t *Timer) {
	i, last := t.index, len(g.queue)-1
	if i != last {
		g.swap(i, last)
	}
	g.queue[last] = nil
	g.queue = g.queue[:last]
	t.index = -1
	if i != last {
		g.fix(i)
	}
}

func (g *Group) fix(i int) {
	if !g.down(i) {
		g.up(i)
	}
}

func (g *Group) less(i, j int) bool { return g.queue[i].due.Before(g.queue[j].due) }

func (g *Group) swap(i, j int) {
	g.queue[i], g.queue[j] = g.queue[j], g.queue[i]
	g.queue[i].index, g.queue[j].index = i, j
}

func (g *Group) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !g.less(i, parent) {
			return
		}
		g.swap(i, parent)
		i = parent
	}
}

// down reports whether it moved the element at i.
func (g *Group) down(i int) bool {
	start, n := i, len(g.queue)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if right := child + 1; right < n && g.less(right, child) {
			child = right
		}
		if !g.less(child, i) {
			break
		}
		g.swap(i, child)
		i = child
	}
	return i > start
}
