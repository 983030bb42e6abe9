package sched

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Policy is a real-time scheduling policy.
type Policy string

const (
	RoundRobin Policy = "rr"
	FIFO       Policy = "fifo"
)

func (p Policy) kernel() (uint32, error) {
	switch p {
	case RoundRobin:
		return unix.SCHED_RR, nil
	case FIFO:
		return unix.SCHED_FIFO, nil
	}
	return 0, fmt.Errorf("sched: unknown policy %q (rr, fifo)", p)
}

// Realtime puts every thread of this process under p at priority prio
// (1..99), with SCHED_RESET_ON_FORK: whatever the daemon starts (hooks,
// exec trackers) begins on the ordinary scheduler, decided by the kernel
// at fork, with no window in between. The flag also resets threads the Go
// runtime creates later; Keep gives those the policy. It needs
// CAP_SYS_NICE (or an RLIMIT_RTPRIO of at least prio); without it the
// error says so and nothing changes.
func Realtime(p Policy, prio int) error {
	_, err := apply(p, prio, true)
	return err
}

// Keep gives the policy to threads created since Realtime (or the last
// call), and returns how many it found.
func Keep(p Policy, prio int) (int, error) {
	return apply(p, prio, false)
}

func apply(p Policy, prio int, all bool) (int, error) {
	pol, err := p.kernel()
	if err != nil {
		return 0, err
	}
	if prio < 1 || prio > 99 {
		return 0, fmt.Errorf("sched: priority %d out of range 1..99", prio)
	}
	tids, err := threads()
	if err != nil {
		return 0, err
	}
	attr := &unix.SchedAttr{Policy: pol, Priority: uint32(prio), Flags: unix.SCHED_FLAG_RESET_ON_FORK}
	var done []int
	for _, tid := range tids {
		if !all {
			if cur, _, err := Of(tid); err != nil || cur == pol {
				continue
			}
		}
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // the thread ended meanwhile
			}
			if !all {
				return len(done), fmt.Errorf("sched: thread %d: %w", tid, err)
			}
			// All or nothing: a half real-time process is the worst of both.
			for _, t := range done {
				Normal(t)
			}
			if errors.Is(err, unix.EPERM) {
				return 0, fmt.Errorf("sched: real-time scheduling refused: the daemon needs CAP_SYS_NICE (AmbientCapabilities= and CapabilityBoundingSet= in the unit, and RestrictRealtime=no): %w", err)
			}
			return 0, fmt.Errorf("sched: setting %s priority %d: %w", p, prio, err)
		}
		done = append(done, tid)
	}
	return len(done), nil
}

// Normal puts the process or thread pid back to SCHED_OTHER: a started
// hook or tracker program runs as ordinary load.
func Normal(pid int) error {
	return unix.SchedSetAttr(pid, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0)
}

// Of returns the policy and priority of the process or thread pid.
func Of(pid int) (policy uint32, prio int, err error) {
	a, err := unix.SchedGetAttr(pid, 0)
	if err != nil {
		return 0, 0, err
	}
	return a.Policy, int(a.Priority), nil
}

// LockMemory locks the daemon's current and future pages in memory. It
// needs CAP_IPC_LOCK or LimitMEMLOCK=infinity in the unit.
func LockMemory() error {
	if err := unix.Mlockall(unix.MCL_CURRENT | unix.MCL_FUTURE); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM) {
			return fmt.Errorf("sched: locking memory refused: the daemon needs CAP_IPC_LOCK or LimitMEMLOCK=infinity in the unit: %w", err)
		}
		return fmt.Errorf("sched: mlockall: %w", err)
	}
	return nil
}

// threads lists this process's thread IDs.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("sched: listing threads: %w", err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
