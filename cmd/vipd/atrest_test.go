package main

import (
	"context"
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
