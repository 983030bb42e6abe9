package main

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Memory is given back once per burst of transitions, after the last one
// and not while they keep coming.
func TestRestWatchReleasesOnceABurstIsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		h := newRestWatch()
		var mu sync.Mutex // the race detector does not count synctest.Wait as a sync
		var released []time.Time
		go h.run(ctx, restAfter, func() { mu.Lock(); released = append(released, time.Now()); mu.Unlock() })
		releases := func() []time.Time { mu.Lock(); defer mu.Unlock(); return slices.Clone(released) }
		start := time.Now()
		for range 20 { // a transition a second for 20 s
			h.mark()
			time.Sleep(time.Second)
		}
		synctest.Wait()
		if len(releases()) != 0 {
			t.Fatalf("released %d times while transitions kept coming", len(releases()))
		}
		time.Sleep(restAfter)
		synctest.Wait()
		if len(releases()) != 1 || releases()[0].Sub(start) != 19*time.Second+restAfter {
			t.Fatalf("releases at %v after the start, want one, %v after the last transition", releases(), restAfter)
		}
		time.Sleep(time.Minute) // at rest: nothing more
		synctest.Wait()
		if len(releases()) != 1 {
			t.Errorf("%d releases with nothing happening", len(releases()))
		}
		h.mark()
		time.Sleep(restAfter + time.Second)
		synctest.Wait()
		if len(releases()) != 2 {
			t.Errorf("%d releases after a second burst, want 2", len(releases()))
		}
	})
}

// A burst grows the stacks of the goroutines that ran it (64 KiB for the
// ones below) and a collection halves a parked goroutine's stack at most
// once: the release must collect until the stacks stop shrinking, or a
// daemon of many groups keeps most of the stacks its start-up grew.
func TestReleaseAtRestShrinksGrownStacks(t *testing.T) {
	const goroutines = 200
	base := stackBytes()
	park := make(chan struct{})
	grown := make(chan struct{})
	for range goroutines {
		go func() {
			growStack(48)
			grown <- struct{}{}
			<-park
		}()
	}
	for range goroutines {
		<-grown
	}
	defer close(park)
	before := stackBytes()
	if before-base < goroutines*32<<10 {
		t.Fatalf("stacks grew by %d KiB for %d goroutines, want at least 32 KiB each", (before-base)>>10, goroutines)
	}
	releaseAtRest(slog.New(slog.DiscardHandler), false)
	after := stackBytes()
	if per := int64(after-base) / goroutines; per > 8<<10 {
		t.Errorf("after the release the parked goroutines hold %d KiB of stack each (%d KiB before), want at most 8", per>>10, (before-base)/goroutines>>10)
	}
}

// growStack uses about depth KiB of stack.
//
//go:noinline
func growStack(depth int) byte {
	var frame [1 << 10]byte
	frame[depth%len(frame)] = byte(depth)
	if depth == 0 {
		return frame[0]
	}
	return growStack(depth-1) + frame[depth%len(frame)]
}
