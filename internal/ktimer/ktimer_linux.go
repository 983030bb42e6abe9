package ktimer

import (
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Timer is a one-shot timer. Its channel receives the time of each expiry;
// a Reset or Stop does not take back an expiry already read from the
// kernel, so a receiver checks whether the deadline it wanted has come.
// Reset and Stop are called from one goroutine at a time.
type Timer struct {
	f    *os.File
	rc   syscall.RawConn
	fd   uintptr
	c    chan time.Time
	done chan struct{}
	once sync.Once
	// spec and set are the settime call, made once: a closure made at
	// each call escapes to the heap with what it holds.
	spec unix.ItimerSpec
	set  func(fd uintptr)
}

// New returns a stopped timer. Close releases it.
func New() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	t := &Timer{f: f, rc: rc, fd: uintptr(fd), c: make(chan time.Time), done: make(chan struct{})}
	t.set = func(fd uintptr) {
		unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
	}
	go t.wait()
	return t, nil
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
	_ = t.rc.Control(t.set)
}

// Close stops the timer and releases its descriptor.
func (t *Timer) Close() error {
	var err error
	t.once.Do(func() {
		close(t.done)
		err = t.f.Close() // wakes wait's poll with an error
	})
	return err
}

// wait reads each expiry from the descriptor, as the poller reports it
// readable, and hands it on. It stays inside one wait of the poller: a
// read that took the expiry leaves the descriptor unreadable until the
// next one, which is a new edge for the poller, so no read is spent only
// to hear EAGAIN.
func (t *Timer) wait() {
	var buf [8]byte
	t.rc.Read(func(fd uintptr) bool {
		for {
			_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
			switch errno {
			case 0:
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			default:
				return true
			}
			select {
			case t.c <- time.Now():
				return false
			case <-t.done:
				return true
			}
		}
	})
}
