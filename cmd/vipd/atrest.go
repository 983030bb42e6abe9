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
// keeps (with 255 groups, 50 to 160 MB for 13 MB kept: the
// configuration's parse, a netlink dump per instance, the set-aside
// filters compiled as groups turn steady). Left to the runtime, its scavenger returns the idle pages
// over minutes, and goroutines keep the stacks they grew until the forced
// collections halve them, one every two minutes: a daemon measured at rest
// a minute after start would still hold its start-up.
type restWatch struct{ busy marks }

func newRestWatch() *restWatch { return &restWatch{busy: newMarks()} }

// mark: something happened (a transition).
func (h *restWatch) mark() { h.busy.mark() }

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

// maxShrinkCollections bounds the collections a release runs to shrink
// stacks: each halves a parked goroutine's stack at most once, and a burst
// grows an election's to 32 or 64 KiB where rest needs 4. Another one runs
// only while the last gave back minStackGain: each costs the collector's
// own memory too (its mark bits), some 100 KiB more resident for a daemon
// of one group that had little to shrink.
const (
	maxShrinkCollections = 6
	minStackGain         = 256 << 10
)

// releaseAtRest gives back what the last burst of work allocated and
// rest does not use. After start-up (first), also the pages of the binary
// it ran only to start (parsing, package initialisation: the page cache
// keeps them), once: later bursts are takeovers, whose pages had better
// stay mapped for the next one. Every time, the stacks the burst grew are
// shrunk (a collection at a time, while they shrink) and the heap's free
// pages go back to the system at once.
//
// The binary's pages go last: the collections read its tables (the stack
// maps of every frame they scan) and run code rest never runs, and no
// collection runs at rest (gcpace.go), so pages released before them came
// straight back and stayed, about 4.7 MiB. They are found first, while
// reading smaps may still allocate, so its text is garbage the
// collections free.
func releaseAtRest(log *slog.Logger, first bool) {
	restSteps{
		findBinary:    residency.ExecutableRegions,
		collect:       runtime.GC,
		stacks:        stackBytes,
		freeOS:        debug.FreeOSMemory,
		releaseBinary: residency.Release,
	}.release(log, first)
}

// restSteps are the steps of a release at rest, in the runtime and the
// kernel; a test puts its own in their place to see their order.
type restSteps struct {
	findBinary    func() ([]residency.Region, error)
	collect       func()
	stacks        func() uint64
	freeOS        func()
	releaseBinary func([]residency.Region) error
}

func (s restSteps) release(log *slog.Logger, first bool) {
	var binary []residency.Region
	if first {
		var err error
		if binary, err = s.findBinary(); err != nil {
			log.Debug("the start-up pages of the binary stay mapped", "error", err)
		}
	}
	stacks := s.stacks()
	for range maxShrinkCollections {
		s.collect()
		now := s.stacks()
		if now+minStackGain > stacks {
			break
		}
		stacks = now
	}
	s.freeOS()
	if len(binary) == 0 {
		return
	}
	if err := s.releaseBinary(binary); err != nil {
		log.Debug("the start-up pages of the binary stay mapped", "error", err)
		return
	}
	log.Debug("released the start-up pages of the binary", "mappings", len(binary))
}

// stackBytes is the memory the runtime holds for goroutine stacks. Not
// from runtime/metrics: its first read builds a table of every metric,
// heap and code pages that would then stay resident for nothing.
func stackBytes() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.StackInuse
}
