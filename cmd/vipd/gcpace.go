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

// While the daemon starts, memory in use may grow by a quarter of the heap
// between two collections, at least startHeadroom (GOGC=25's pacing).
// Start-up allocates far more than it keeps (with 255 groups some 40 MB
// for 3.5 MB kept: the configuration's parse, netlink answers, filters
// rebuilt as groups join), and what it keeps is spread over the spans of
// the garbage around it: a span stays in use for one object kept. With
// the pacing of rest, 255 groups ended start-up with 2.4 MB of heap in
// spans beyond what they held; collected four times as often, the freed
// slots are filled again before new spans are taken: a node of 255 groups
// holds about 1 MiB less private memory at rest (8.2 against 9.2 MiB, two
// lab runs each), one of one group as much. Start-up ends at the first
// rest (restWatch).
const startHeadroom = 1 << 20

// collectOnGrowth makes the collector run when memory grows, and no longer
// every two minutes. Under GOGC the runtime forces a collection whenever
// two minutes pass without one; a daemon at rest allocates nothing, so
// each of those finds nothing to free and costs its wake-ups (the
// collector's workers, the scavenger after it): about 0.7 ms of CPU a
// minute, a fifth of a Backup's whole cost at 1 s adverts. GOGC=off with a
// memory limit has no forced collection; the limit is moved after each
// collection to what is then in use plus as much again as the heap holds
// (at least minHeadroom), which is GOGC=100's pacing counted over all the
// runtime's memory; start-up is paced tighter (startHeadroom). A GOGC or
// GOMEMLIMIT from the environment is the operator's choice and stays.
func collectOnGrowth(log *slog.Logger) *gcPacer {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		log.Debug("collector paced from the environment", "GOGC", os.Getenv("GOGC"), "GOMEMLIMIT", os.Getenv("GOMEMLIMIT"))
		return nil
	}
	p := &gcPacer{}
	p.paceNext()
	debug.SetGCPercent(-1)
	return p
}

// gcPacer moves the memory limit after each collection until stopped.
type gcPacer struct {
	stopped atomic.Bool
	settled atomic.Bool // start-up is over: rest's pacing
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
	debug.SetMemoryLimit(nextLimit(ms.Sys-ms.HeapIdle, ms.HeapAlloc, !p.settled.Load()))
	// A cleanup runs once the collector has found its object unreachable:
	// after each collection, whatever started it.
	runtime.AddCleanup(&collectionMark{}, func(p *gcPacer) { p.paceNext() }, p)
}

// stop leaves the limit where it is and the pacing to the caller.
func (p *gcPacer) stop() { p.stopped.Store(true) }

// settle ends start-up's pacing: from the next collection, rest's. A nil
// pacer (the environment's GOGC) has nothing to settle.
func (p *gcPacer) settle() {
	if p != nil {
		p.settled.Store(true)
	}
}

// collectionMark is what each collection finds unreachable; large enough
// not to share a block with other small objects, whose lives would hold
// it.
type collectionMark struct {
	_ *byte
	_ [24]byte
}

// nextLimit is the memory limit for a runtime using inUse bytes, of which
// heap are live heap, starting or at rest.
func nextLimit(inUse, heap uint64, starting bool) int64 {
	headroom := max(heap, minHeadroom)
	if starting {
		headroom = max(heap/4, startHeadroom)
	}
	limit := inUse + headroom
	if limit > math.MaxInt64 || limit < inUse {
		return math.MaxInt64
	}
	return int64(limit)
}
