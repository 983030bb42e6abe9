// Package ktimer is a one-shot timer kept by the kernel (timerfd) and
// waited on through the Go runtime's network poller, armed with raw system
// calls.
//
// A runtime timer makes the runtime's monitor thread (sysmon) sleep only
// until that timer's deadline, so every expiry, and every deadline a Reset
// moved later, wakes two threads; and an ordinary system call wakes the
// monitor as well. A daemon that does one thing a second pays more for
// those wake-ups than for its work. A ktimer leaves the runtime no timer
// to wait for: an idle process sleeps until the kernel says the time has
// come, and then only the thread that polls wakes.
package ktimer
