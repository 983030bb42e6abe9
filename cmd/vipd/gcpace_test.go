package main

import (
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestNextLimit(t *testing.T) {
	for _, c := range []struct {
		inUse, heap uint64
		want        int64
	}{
		{10 << 20, 1 << 20, 14 << 20},  // a small heap grows by the floor
		{40 << 20, 30 << 20, 70 << 20}, // a large one by as much again
		{math.MaxUint64 - 1, 8 << 20, math.MaxInt64},
	} {
		if got := nextLimit(c.inUse, c.heap, false); got != c.want {
			t.Errorf("nextLimit(%d, %d) = %d, want %d", c.inUse, c.heap, got, c.want)
		}
	}
	// Starting: a quarter of the heap, at least a MiB.
	for _, c := range []struct {
		inUse, heap uint64
		want        int64
	}{
		{10 << 20, 1 << 20, 11 << 20},
		{40 << 20, 32 << 20, 48 << 20},
		{math.MaxUint64 - 1, 8 << 20, math.MaxInt64},
	} {
		if got := nextLimit(c.inUse, c.heap, true); got != c.want {
			t.Errorf("starting: nextLimit(%d, %d) = %d, want %d", c.inUse, c.heap, got, c.want)
		}
	}
}

// The pacer starts with start-up's headroom and moves to rest's once
// settled.
func TestPacerSettles(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	oldPercent, oldLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(oldPercent)
	p := collectOnGrowth(slog.New(slog.DiscardHandler))
	if p == nil {
		t.Fatal("no pacer without GOGC and GOMEMLIMIT in the environment")
	}
	defer func() {
		p.stop()
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	// headroom: the limit set over what is in use, and what nextLimit
	// gives for the heap of that moment.
	headroom := func(starting bool) (got, want int64) {
		p.paceNext()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		inUse := ms.Sys - ms.HeapIdle
		return debug.SetMemoryLimit(-1) - int64(inUse), nextLimit(inUse, ms.HeapAlloc, starting) - int64(inUse)
	}
	const slack = 512 << 10 // what the heap may move between the two reads
	near := func(a, b int64) bool { return a > b-slack && a < b+slack }
	if got, want := headroom(true); !near(got, want) {
		t.Errorf("starting: headroom %d, want about %d", got, want)
	}
	p.settle()
	if got, want := headroom(false); !near(got, want) || got < minHeadroom-slack {
		t.Errorf("settled: headroom %d, want about %d (at least %d)", got, want, minHeadroom)
	}
	var nilPacer *gcPacer
	nilPacer.settle() // the environment's GOGC: nothing to settle
}

// With the pacer, GOGC is off (no collection forced every two minutes),
// a collection still comes as memory grows, and each moves the limit for
// what is then in use.
func TestCollectOnGrowth(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	oldPercent, oldLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	debug.SetGCPercent(oldPercent)
	p := collectOnGrowth(slog.New(slog.DiscardHandler))
	if p == nil {
		t.Fatal("no pacer without GOGC and GOMEMLIMIT in the environment")
	}
	defer func() {
		p.stop()
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	if old := debug.SetGCPercent(-1); old != -1 {
		t.Fatalf("GOGC is %d with the pacer, want off", old)
	}
	first := debug.SetMemoryLimit(-1)
	if first == math.MaxInt64 {
		t.Fatal("no memory limit set")
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// Allocate well past the limit, keeping a part: collections must come.
	var keep [][]byte
	for i := 0; i < 64; i++ {
		b := make([]byte, 1<<20)
		if i%8 == 0 {
			keep = append(keep, b)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC {
		t.Fatalf("no collection while 64 MiB were allocated under a limit of %d", first)
	}
	// The cleanup that moves the limit runs just after a collection.
	deadline := time.Now().Add(2 * time.Second)
	for debug.SetMemoryLimit(-1) == first && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if debug.SetMemoryLimit(-1) == first {
		t.Errorf("the limit stayed %d after %d collections", first, after.NumGC-before.NumGC)
	}
	runtime.KeepAlive(keep)
}

// GOGC or GOMEMLIMIT from the environment leave the collector alone.
func TestCollectOnGrowthLeavesTheEnvironmentsChoice(t *testing.T) {
	t.Setenv("GOGC", "200")
	if p := collectOnGrowth(slog.New(slog.DiscardHandler)); p != nil {
		p.stop()
		t.Fatal("a pacer with GOGC set")
	}
}
