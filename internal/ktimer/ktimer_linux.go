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

// Group waits on its timers' descriptors with one goroutine. Close ends
// it; its timers then fire no more.
type Group struct {
	ep   *os.File // the group's epoll instance, in the Go poller
	epfd int      // its descriptor (ep.Fd would make it blocking)
	rc   syscall.RawConn
	done chan struct{} // closed when the waiter has returned

	mu     sync.Mutex
	timers map[uint32]*Timer // by the id in their epoll event
	nextID uint32
	closed bool

	// events is the waiter's buffer, and wait its call given to the
	// poller, made once: a method value made at each wait escapes to the
	// heap.
	events [64]unix.EpollEvent
	wait   func(fd uintptr) bool
}

// NewGroup starts a group's waiter.
func NewGroup() (*Group, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// The poller needs the descriptor non-blocking; an epoll descriptor
	// takes the flag like any other.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	ep := os.NewFile(uintptr(epfd), "ktimer-epoll")
	rc, err := ep.SyscallConn()
	if err != nil {
		ep.Close()
		return nil, err
	}
	g := &Group{ep: ep, epfd: epfd, rc: rc, done: make(chan struct{}), timers: map[uint32]*Timer{}}
	g.wait = g.collect
	go g.run()
	return g, nil
}

// Close stops the waiter and waits for it. The timers' own descriptors
// stay until each is closed.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.done
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	err := g.ep.Close() // wakes the waiter's poll with an error
	<-g.done
	return err
}

// run reads the expiries as the group's epoll instance reports them and
// hands each to its timer. It stays inside one wait of the poller: what
// was ready when it looked is read; anything that becomes ready later
// wakes the poller again, a new edge of the group's descriptor.
func (g *Group) run() {
	defer close(g.done)
	_ = g.rc.Read(g.wait)
}

// collect takes what is ready from the group's epoll instance; false: wait
// for more.
func (g *Group) collect(fd uintptr) bool {
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&g.events[0])), uintptr(len(g.events)), 0, 0, 0)
		switch errno {
		case 0:
		case unix.EINTR:
			continue
		default:
			return true // closed
		}
		now := time.Now()
		for i := range int(n) {
			g.fire(uint32(g.events[i].Fd), now)
		}
		if int(n) < len(g.events) {
			return false
		}
	}
}

// fire reads the expiry of timer id and hands it on without blocking: a
// value the receiver has not taken yet already tells it to look at its
// deadlines.
func (g *Group) fire(id uint32, now time.Time) {
	var buf [8]byte
	g.mu.Lock()
	t := g.timers[id]
	read := false
	if t != nil {
		// Under the lock: Close cannot close (and the kernel reuse) the
		// descriptor meanwhile.
		for {
			_, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(t.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			if errno == unix.EINTR {
				continue
			}
			read = errno == 0
			break
		}
	}
	g.mu.Unlock()
	if read {
		select {
		case t.c <- now:
		default:
		}
	}
}

var errClosed = errors.New("ktimer: group closed")

// New returns a stopped timer of the group. Close releases it.
func (g *Group) New() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	t := &Timer{g: g, fd: fd, c: make(chan time.Time, 1)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		unix.Close(fd)
		return nil, errClosed
	}
	for g.timers[g.nextID] != nil { // after 2^32 timers, an id still in use
		g.nextID++
	}
	t.id = g.nextID
	g.nextID++
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(t.id)}
	if err := unix.EpollCtl(g.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	g.timers[t.id] = t
	return t, nil
}

// Timer is a one-shot timer. Its channel receives the time of each expiry;
// a Reset or Stop does not take back an expiry already read from the
// kernel, so a receiver checks whether the deadline it wanted has come.
// Reset and Stop are called from one goroutine at a time.
type Timer struct {
	g    *Group
	id   uint32
	fd   int
	c    chan time.Time
	once sync.Once
	spec unix.ItimerSpec // the settime call's argument, kept: no escape per call
}

// C is the channel expiries are sent on.
func (t *Timer) C() <-chan time.Time { return t.c }

// Reset arms the timer to expire after d (at once for d <= 0).
func (t *Timer) Reset(d time.Duration) {
	d = max(d, time.Nanosecond) // an all-zero value would disarm it
	t.settime(unix.NsecToTimespec(int64(d)))
}

// Stop disarms the timer.
func (t *Timer) Stop() { t.settime(unix.Timespec{}) }

func (t *Timer) settime(value unix.Timespec) {
	t.spec = unix.ItimerSpec{Value: value}
	// Raw: timerfd_settime never blocks, and an ordinary call would wake
	// the runtime's monitor thread.
	unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(t.fd), 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
}

// Close stops the timer and releases its descriptor.
func (t *Timer) Close() error {
	var err error
	t.once.Do(func() {
		g := t.g
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.timers, t.id)
		if !g.closed {
			// Closing the descriptor takes it out of the epoll instance too;
			// said first, so no expiry of it is reported after.
			_ = unix.EpollCtl(g.epfd, unix.EPOLL_CTL_DEL, t.fd, nil)
		}
		err = unix.Close(t.fd)
	})
	return err
}
