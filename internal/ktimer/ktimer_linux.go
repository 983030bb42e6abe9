package ktimer

import (
	"errors"
	"os"
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
	done chan struct{} // closed when the waiter has returned

	mu      sync.Mutex
	queue   []*Timer  // the armed timers, a min-heap by due
	armedAt time.Time // the deadline the timerfd is armed for; zero: disarmed
	closed  bool
	spec    unix.ItimerSpec // the settime call's argument, kept: no escape per call
	// firing is the waiter's: the calls of the timers an expiry found
	// due, made after the lock is let go; kept, so that an expiry
	// allocates nothing.
	firing []func()
	// settimes counts the timerfd's re-armings, for tests: a Reset that
	// leaves the earliest deadline where it was must make none.
	settimes int

	// waited and wait are the waiter's: the call given to the poller,
	// made once (a method value made at each wait escapes to the heap),
	// and whether it has been called once in the current wait.
	waited bool
	wait   func(fd uintptr) bool
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
	g.wait = g.ready
	go g.run()
	return g, nil
}

// Close stops the waiter and waits for it.
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

// run fires the timers that are due each time the timerfd expires.
func (g *Group) run() {
	defer close(g.done)
	for {
		g.waited = false
		if err := g.rc.Read(g.wait); err != nil {
			return // closed
		}
		if !g.expire(time.Now()) {
			return
		}
	}
}

// ready is the poller's call. The first call of a wait returns false, so
// the poller waits for the timerfd's next expiry (an edge: the expiry is
// never read, as the next arming resets the count), unless a deadline has
// passed already: the poller forgets an expiry that came while the timers
// were being fired. Called again, after the poller saw an expiry: true.
func (g *Group) ready(uintptr) bool {
	if g.waited {
		return true
	}
	g.waited = true
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed || len(g.queue) > 0 && !g.queue[0].due.After(time.Now())
}

// expire fires the timers due at now and arms the timerfd for the next;
// false: the group is closed. The calls are made without the lock, so a
// call may reset its own timer, or another of the group's.
func (g *Group) expire(now time.Time) bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	for len(g.queue) > 0 && !g.queue[0].due.After(now) {
		t := g.queue[0]
		g.remove(t)
		g.firing = append(g.firing, t.fire)
	}
	// The timerfd is one-shot: once expired it is disarmed, so arm starts
	// from nothing (and makes no call when no timer is left). Woken before
	// it expired (a deadline seen passed first), it may stay armed for a
	// deadline gone: one wake-up for nothing, as expire checks deadlines.
	g.armedAt = time.Time{}
	g.arm(now)
	firing := g.firing
	g.mu.Unlock()
	for i, fire := range firing {
		fire()
		firing[i] = nil
	}
	g.firing = firing[:0]
	return true
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
// expiry, on the group's goroutine, without the group's lock: fire may
// reset or stop the group's timers (a timer due in the same expiry is
// called even if an earlier call stopped it), but the group's other
// timers wait for it, so it must not block. Close releases it.
func (g *Group) New(fire func()) (*Timer, error) {
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
	fire   func()
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

// Close stops the timer for good.
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
