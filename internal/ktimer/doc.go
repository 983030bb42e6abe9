// Package ktimer is a one-shot timer kept by the kernel (timerfd), armed
// with raw system calls. The timers of a Group are waited on by one
// goroutine, through an epoll instance of the group's own that the Go
// runtime's network poller watches.
//
// A runtime timer makes the runtime's monitor thread (sysmon) sleep only
// until that timer's deadline, so every expiry, and every deadline a Reset
// moved later, wakes two threads; and an ordinary system call wakes the
// monitor as well. A daemon that does one thing a second pays more for
// those wake-ups than for its work. A ktimer leaves the runtime no timer
// to wait for: an idle process sleeps until the kernel says the time has
// come, and then only the thread that polls wakes. One goroutine for all
// of a group's timers, not one each, because a host with hundreds of
// elections would hold a stack per timer (4 KiB at rest) and wake as many
// goroutines as timers expire together (a socket's Masters share their
// instants).
package ktimer
