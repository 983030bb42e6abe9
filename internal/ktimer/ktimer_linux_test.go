package ktimer

import (
	"testing"
	"time"
)

func TestTimerFiresAfterItsDelay(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	start := time.Now()
	tm.Reset(30 * time.Millisecond)
	select {
	case at := <-tm.C():
		if at.Sub(start) < 30*time.Millisecond {
			t.Errorf("fired after %v, before its 30ms", at.Sub(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire")
	}
}

func TestStopAndResetLater(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Reset(20 * time.Millisecond)
	tm.Stop()
	select {
	case <-tm.C():
		t.Fatal("a stopped timer fired")
	case <-time.After(100 * time.Millisecond):
	}
	tm.Reset(10 * time.Millisecond)
	tm.Reset(200 * time.Millisecond) // moved later: the earlier expiry is gone
	start := time.Now()
	select {
	case <-tm.C():
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Errorf("fired after %v; the reset moved it to 200ms", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not fire")
	}
}

func TestZeroResetFiresAtOnce(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	tm.Reset(0)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("Reset(0) did not fire")
	}
}

func TestCloseEndsTheTimer(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tm.Reset(time.Hour)
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tm.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Each expiry is read once and the next one wakes the waiter again, with
// no read in between that heard EAGAIN: the poller's edge does it.
func TestTimerFiresAgainAfterEachExpiry(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	for i := range 5 {
		tm.Reset(5 * time.Millisecond)
		select {
		case <-tm.C():
		case <-time.After(5 * time.Second):
			t.Fatalf("expiry %d never came", i+1)
		}
	}
	// Expiries while nobody receives are one reading of the descriptor:
	// one value, then the next Reset's.
	tm.Reset(time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	<-tm.C()
	tm.Reset(5 * time.Millisecond)
	select {
	case <-tm.C():
	case <-time.After(5 * time.Second):
		t.Fatal("the expiry after a late receive never came")
	}
}

// A Master moves its timer at every advert: moving it allocates nothing,
// or each advert would be garbage for the collector to wake for.
func TestResetAndStopAllocateNothing(t *testing.T) {
	tm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if n := testing.AllocsPerRun(100, func() {
		tm.Reset(time.Hour)
		tm.Stop()
	}); n != 0 {
		t.Errorf("Reset and Stop allocate %v times, want none", n)
	}
}
