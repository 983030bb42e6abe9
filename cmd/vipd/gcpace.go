package main

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// minHeadroom is the least the memory in use may grow between two
// collections: the runtime's own floor for the heap (GOGC's 4 MB minimum
// heap).
const minHeadroom = 4 << 20

// startGCPercent paces the collector while the daemon starts: GOGC=25,
// the runtime's own pacing, until the first rest (restWatch). Start-up
// allocates far more than it keeps (with 255 groups some 40 MB for 3.5 MB
// kept: the configuration's parse, netlink answers, filters rebuilt as
// groups join), and what it keeps is spread over the spans of the garbage
// around it: a span stays in use for one object kept. Collected four
// times as often, the freed slots are filled again before new spans are
// taken: a node of 255 groups holds about 0.7 MiB less private memory at
// rest (8.3 against 9.1 MiB, two lab runs each). Not the memory limit
// with a smaller headroom: the limit counts the idle pages the scavenger
// has not yet returned, and a headroom of a MiB under them made the
// runtime collect without pause (thousands of collections in a one-group
// start-up) until they were returned. A daemon that never settles (no
// group ever found its interface) stays at GOGC=25, with the runtime's
// collection every two minutes.
const startGCPercent = 25

// collectOnGrowth makes the collector run when memory grows, and no longer
// every two minutes. Under GOGC the runtime forces a collection whenever
// two minutes pass without one; a daemon at rest allocates nothing, so
// each of those finds nothing to free and costs its wake-ups (the
// collector's workers, the scavenger after it): about 0.7 ms of CPU a
// minute, a fifth of a Backup's whole cost at 1 s adverts. GOGC=off with a
// memory limit has no forced collection; the limit is moved after each
// collection to what is then in use plus as much again as the heap holds
// (at least minHeadroom), which is GOGC=100's pacing counted over all the
// runtime's memory. That starts once the daemon has settled (settle);
// until then GOGC is startGCPercent. A GOGC or GOMEMLIMIT from the
// environment is the operator's choice and stays.
func collectOnGrowth(log *slog.Logger) *gcPacer {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		log.Debug("collector paced from the environment", "GOGC", os.Getenv("GOGC"), "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
		return nil
	}
	p := &gcPacer{}
	debug.SetGCPercent(startGCPercent)
	return p
}

// gcPacer moves the memory limit after each collection until stopped.
type gcPacer struct {
	stopped atomic.Bool
	settled atomic.Bool // start-up is over: the limit paces
}

// paceNext sets the memory limit for the memory in use now, and arranges
// to be called again after the next collection.
func (p *gcPacer) paceNext() {
	if p.stopped.Load() {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// In use: what the runtime has mapped less its idle heap, returned to
	// the system or not. Counting idle pages kept would raise the limit
	// at each collection by what the last one left for the scavenger.
	debug.SetMemoryLimit(nextLimit(ms.Sys-ms.HeapIdle, ms.HeapAlloc))
	// A cleanup runs once the collector has found its object unreachable:
	// after each collection, whatever started it.
	runtime.AddCleanup(&collectionMark{}, func(p *gcPacer) { p.paceNext() }, p)
}

// stop leaves the limit where it is and the pacing to the caller.
func (p *gcPacer) stop() { p.stopped.Store(true) }

// settle ends start-up's pacing: GOGC off, the memory limit set for what
// is in use now and moved after each collection. Once; a nil pacer (the
// environment's GOGC) has nothing to settle.
func (p *gcPacer) settle() {
	if p == nil || p.settled.Swap(true) {
		return
	}
	p.paceNext()
	debug.SetGCPercent(-1)
}

// collectionMark is what each collection finds unreachable; large enough
// not to share a block with other small objects, whose lives would hold
// it.
type collectionMark struct {
	_ *byte
	_ [24]byte
}

// nextLimit is the memory limit for a runtime using inUse bytes, of which
// heap are live heap.
func nextLimit(inUse, heap uint64) int64 {
	limit := inUse + max(heap, minHeadroom)
	if limit > math.MaxInt64 || limit < inUse {
		return math.MaxInt64
	}
	return int64(limit)
}
