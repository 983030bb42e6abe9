package health

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var discard = slog.New(slog.DiscardHandler)

// scriptChecker answers from a script of '+' (pass) and '-' (fail), then
// passes forever; each check takes delay of (bubble) time.
type scriptChecker struct {
	mu     sync.Mutex
	script string
	n      int
	delay  time.Duration
}

func (c *scriptChecker) Check(ctx context.Context) Result {
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	ok := c.n > len(c.script) || c.script[c.n-1] == '+'
	return Result{OK: ok, Detail: fmt.Sprintf("check %d", c.n)}
}

// TestHysteresis feeds scripts through checkOnce and records the state
// after each check: H healthy, F failing.
func TestHysteresis(t *testing.T) {
	for _, tc := range []struct {
		fall, rise int
		script     string
		want       string
	}{
		{3, 2, "++++", "HHHH"},
		{3, 2, "--+--+", "HHHHHH"},         // never three in a row
		{3, 2, "---", "HHF"},               // the third failure
		{3, 2, "---+-++", "HHFFFFH"},       // a single success does not rise
		{3, 2, "----++-", "HHFFFHH"},       // one failure after rising is not a fall
		{1, 1, "-+-+", "FHFH"},             // no hysteresis at all
		{1, 3, "-++-+++", "FFFFFFH"},       // every failure restarts the rise
		{5, 1, "----+-----", "HHHHHHHHHF"}, // a success restarts the fall
	} {
		t.Run(fmt.Sprintf("fall%d-rise%d-%s", tc.fall, tc.rise, tc.script), func(t *testing.T) {
			s := Spec{Name: "t", Type: File, Weight: -10, Fall: tc.fall, Rise: tc.rise, Path: "/x"}.WithDefaults()
			tr := NewTracker(s, &scriptChecker{script: tc.script}, discard)
			got := ""
			for range tc.script {
				tr.checkOnce(t.Context())
				if tr.Status().Healthy {
					got += "H"
				} else {
					got += "F"
				}
			}
			if got != tc.want {
				t.Errorf("states %s, want %s", got, tc.want)
			}
		})
	}
}

func TestContribution(t *testing.T) {
	for _, tc := range []struct {
		weight  int
		healthy bool
		want    int
	}{
		{-50, true, 0}, {-50, false, -50}, {20, true, 20}, {20, false, 0}, {0, true, 0}, {0, false, 0},
	} {
		if got := contribution(tc.weight, tc.healthy); got != tc.want {
			t.Errorf("contribution(%d, %v) = %d, want %d", tc.weight, tc.healthy, got, tc.want)
		}
	}
}

// TestRun runs a tracker in fake time: checks every second, each taking
// 100ms, fall 3 and rise 2. It fails at the seventh check and recovers at
// the twelfth; exactly those two changes are sent.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s := Spec{Name: "apiserver", Type: HTTP, Weight: -50, URL: "http://127.0.0.1/readyz", Interval: time.Second}.WithDefaults()
		chk := &scriptChecker{script: "+--+-----+-++", delay: 100 * time.Millisecond}
		type obs struct {
			d  time.Duration
			ok bool
		}
		var seen []obs
		tr := NewTracker(s, chk, discard, WithCheckObserver(func(d time.Duration, ok bool) { seen = append(seen, obs{d, ok}) }))

		want := Status{Name: "apiserver", Type: HTTP, Healthy: true, Detail: "not checked yet", Since: start, Weight: -50}
		if diff := cmp.Diff(want, tr.Status()); diff != "" {
			t.Fatalf("initial Status (-want +got):\n%s", diff)
		}

		ctx, cancel := context.WithCancel(t.Context())
		changed := make(chan *Status)
		done := make(chan error)
		go func() { done <- tr.Run(ctx, changed) }()

		at := func(check int) time.Time { // when check n (from 1) ends
			return start.Add(time.Duration(check-1)*time.Second + 100*time.Millisecond)
		}
		var got []Status
		stop := time.After(14*time.Second + 500*time.Millisecond) // checks 1..15
	loop:
		for {
			select {
			case st := <-changed:
				if now := time.Now(); !now.Equal(st.Since) {
					t.Errorf("change sent at %v, Since %v", now.Sub(start), st.Since.Sub(start))
				}
				got = append(got, *st)
			case <-stop:
				break loop
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}

		wantChanges := []Status{{
			Name: "apiserver", Type: HTTP, Healthy: false, Detail: "check 7", Cause: "check 7", Since: at(7),
			Weight: -50, Contribution: -50, LastCheck: at(7).Add(-100 * time.Millisecond),
			LastDuration: 100 * time.Millisecond, Checks: 7, Failures: 5,
		}, {
			Name: "apiserver", Type: HTTP, Healthy: true, Detail: "check 13", Cause: "check 13", Since: at(13),
			Weight: -50, Contribution: 0, LastCheck: at(13).Add(-100 * time.Millisecond),
			LastDuration: 100 * time.Millisecond, Checks: 13, Failures: 8,
		}}
		if diff := cmp.Diff(wantChanges, got); diff != "" {
			t.Errorf("changes sent (-want +got):\n%s", diff)
		}
		final := wantChanges[1]
		final.Detail, final.LastCheck, final.Checks = "check 15", at(15).Add(-100*time.Millisecond), 15
		if diff := cmp.Diff(final, tr.Status()); diff != "" {
			t.Errorf("final Status (-want +got):\n%s", diff)
		}
		if len(seen) != 15 {
			t.Fatalf("observer called %d times, want 15", len(seen))
		}
		for i, o := range seen {
			if wantOK := i >= len(chk.script) || chk.script[i] == '+'; o != (obs{100 * time.Millisecond, wantOK}) {
				t.Errorf("observation %d = %+v, want 100ms, %v", i+1, o, wantOK)
			}
		}
	})
}

// blockingChecker blocks until ctx ends, as a probe of a hung server would
// until its timeout.
type blockingChecker struct{}

func (blockingChecker) Check(ctx context.Context) Result {
	<-ctx.Done()
	return Result{Detail: "canceled"}
}

// TestRunShutdownMidCheck: a check cut short by shutdown is no evidence; it
// is neither counted nor observed, and Run returns.
func TestRunShutdownMidCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Spec{Name: "t", Type: Exec, Weight: 0, Fall: 1, Command: []string{"true"}}.WithDefaults()
		observed := false
		tr := NewTracker(s, blockingChecker{}, discard, WithCheckObserver(func(time.Duration, bool) { observed = true }))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- tr.Run(ctx, make(chan *Status)) }()
		synctest.Wait() // Run is inside the check
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
		if st := tr.Status(); st.Checks != 0 || !st.Healthy || observed {
			t.Errorf("after shutdown mid-check: Status %+v, observed %v; want nothing recorded", st, observed)
		}
	})
}

// TestRunBlockedSend: a change waits for its receiver, no later check runs
// meanwhile, and shutdown still ends Run.
func TestRunBlockedSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Spec{Name: "t", Type: File, Weight: -1, Fall: 1, Path: "/x"}.WithDefaults()
		tr := NewTracker(s, &scriptChecker{script: "-------"}, discard)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- tr.Run(ctx, make(chan *Status)) }() // nobody receives
		time.Sleep(10 * s.Interval)
		if st := tr.Status(); st.Checks != 1 || st.Healthy {
			t.Errorf("Status %+v, want one check, failing, while the change is pending", st)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
	})
}

// TestStatusConcurrent reads Status while Run writes it; the race detector
// judges.
func TestStatusConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Spec{Name: "t", Type: File, Weight: 5, Fall: 1, Rise: 1, Interval: MinInterval, Path: "/x"}.WithDefaults()
		tr := NewTracker(s, &scriptChecker{script: "-+-+-+-+-+-+"}, discard)
		ctx, cancel := context.WithCancel(t.Context())
		changed := make(chan *Status, 100)
		done := make(chan error)
		go func() { done <- tr.Run(ctx, changed) }()
		for range 40 {
			_ = tr.Status()
			time.Sleep(MinInterval / 2)
		}
		cancel()
		<-done
		if len(changed) != 12 {
			t.Errorf("%d changes, want 12", len(changed))
		}
	})
}

// TestChangeLogged: each change names the tracker, its type and the check
// outcome that made it; a failure below fall is a debug line.
func TestChangeLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level:       slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
	}))
	s := Spec{Name: "apiserver", Type: HTTP, Weight: -50, Fall: 2, Rise: 1, URL: "http://127.0.0.1/readyz"}.WithDefaults()
	tr := NewTracker(s, &scriptChecker{script: "--+"}, log)
	for range 3 {
		tr.checkOnce(t.Context())
	}
	want := `level=DEBUG msg="check disagrees with the tracker's state" tracker=apiserver type=http detail="check 1" consecutive=1 healthy=true
level=WARN msg="tracker failing" tracker=apiserver type=http detail="check 2" consecutive=2 weight=-50 contribution=-50
level=INFO msg="tracker healthy again" tracker=apiserver type=http detail="check 3" consecutive=1 weight=-50 contribution=0
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// dropTime drops the record's time, which the journal adds under systemd.
func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
