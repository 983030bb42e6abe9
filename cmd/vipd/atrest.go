package main

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/vipd/vipd/internal/residency"
)

// restAfter is how long the daemon must have been without a
// transition before it gives back what the last burst of them allocated.
const restAfter = 5 * time.Second

// restWatch gives memory back once a burst of transitions is over:
// start-up, a failover of many groups. Each allocates far more than it
// keeps (with 255 groups, about 60 MB for 13 MB kept: the configuration's
// parse, a netlink dump per instance, the set-aside filters compiled as
// groups join). Left to the runtime, its scavenger returns the idle pages
// over minutes, and goroutines keep the stacks they grew until the forced
// collections halve them, one every two minutes: a daemon measured at rest
// a minute after start would still hold its start-up.
type restWatch struct{ busy chan struct{} }

func newRestWatch() *restWatch { return &restWatch{busy: make(chan struct{}, 1)} }

// mark: something happened (a transition).
func (h *restWatch) mark() {
	select {
	case h.busy <- struct{}{}:
	default:
	}
}

// run calls release once `quiet` has passed without a mark after one,
// until ctx ends: once per burst, never while marks keep coming.
func (h *restWatch) run(ctx context.Context, quiet time.Duration, release func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.busy:
		}
		t := time.NewTimer(quiet)
	settling:
		for {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-h.busy:
				t.Reset(quiet)
			case <-t.C:
				break settling
			}
		}
		release()
	}
}

// releaseAtRest gives back what the last burst of work touched and rest
// does not use: the pages of the binary (start-up's parsing and package
// initialisation, a takeover's paths: the page cache keeps them) and the
// heap's.
func releaseAtRest(log *slog.Logger) {
	if r, err := residency.ReleaseExecutable(); err != nil {
		log.Debug("the pages of the binary stay mapped", "error", err)
	} else {
		log.Debug("released the pages of the binary used only while busy", "mappings", len(r))
	}
	releaseHeap()
}

// releaseHeap collects twice, which halves each goroutine's stack twice
// where it uses little of it, and the second collection returns every
// free page to the system at once.
func releaseHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}
