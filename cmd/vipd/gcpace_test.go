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
		if got := nextLimit(c.inUse, c.heap); got != c.want {
			t.Errorf("nextLimit(%d, %d) = %d, want %d", c.inUse, c.heap, got, c.want)
		}
	}
}

// startPacer starts a pacer as `vipd run` does, with neither GOGC nor
// GOMEMLIMIT in the environment and no limit set before it, and puts the
// collector's settings back when the test ends.
func startPacer(t *testing.T) *gcPacer {
	t.Helper()
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	oldPercent, oldLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(math.MaxInt64)
	debug.SetGCPercent(oldPercent)
	p := collectOnGrowth(slog.New(slog.DiscardHandler))
	if p == nil {
		t.Fatal("no pacer without GOGC and GOMEMLIMIT in the environment")
	}
	t.Cleanup(func() {
		p.stop()
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	return p
}

// The pacer starts with GOGC at startGCPercent and no limit, and once
// settled turns GOGC off and paces by the limit.
func TestPacerSettles(t *testing.T) {
	p := startPacer(t)
	if got := debug.SetGCPercent(startGCPercent); got != startGCPercent {
		t.Errorf("starting: GOGC %d, want %d", got, startGCPercent)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("starting: memory limit %d, want none", got)
	}
	p.settle()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("settled: GOGC %d, want off", got)
	}
	if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 {
		t.Error("settled: no memory limit")
	}
	p.settle() // twice is once
	var nilPacer *gcPacer
	nilPacer.settle() // the environment's GOGC: nothing to settle
}

// With the pacer settled, GOGC is off (no collection forced every two
// minutes), a collection still comes as memory grows, and each moves the
// limit for what is then in use.
func TestCollectOnGrowth(t *testing.T) {
	p := startPacer(t)
	p.settle()
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
