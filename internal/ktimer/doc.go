// Package ktimer is a one-shot timer whose expiry the kernel keeps
// (timerfd), armed with raw system calls. A Group keeps its timers'
// deadlines in a heap and one timerfd armed for the earliest, which the Go
// runtime's network poller watches; one goroutine fires what is due.
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
// instants). One timerfd for all, not one each: an expiry is then one
// poll and no read (an inner epoll instance and a read per timer cost a
// Master two system calls an advert), a Reset that leaves the earliest
// deadline where it was is no system call, and a host with 255 groups
// holds one descriptor for their timers, not 255.
package ktimer
