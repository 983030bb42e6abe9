// Package sched sets the daemon's CPU scheduling and memory locking, the
// starvation protection an operator can turn on: a real-time policy
// (SCHED_RR or SCHED_FIFO) for every thread of the daemon, so that the
// election's adverts and timers are served before ordinary load, and
// mlockall, so that they never wait for a page to come back from swap.
//
// The programs the daemon starts (notify hooks, exec trackers) must not
// inherit a real-time policy — a hook that spins would starve the host —
// so Normal puts a started child back to SCHED_OTHER.
package sched
