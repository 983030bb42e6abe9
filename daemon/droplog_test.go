package daemon

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vipd/vipd/vrrp"
)

var dropT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// spoofed returns the i-th of many forged sources, in 2001:db8::/32.
func spoofed(i int) netip.Addr {
	b := netip.MustParseAddr("2001:db8::").As16()
	b[12], b[13], b[14], b[15] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
	return netip.AddrFrom16(b)
}

func TestDropLogAllow(t *testing.T) {
	a, b := netip.MustParseAddr("198.51.100.12"), netip.MustParseAddr("198.51.100.13")
	type event struct {
		at     time.Duration
		reason vrrp.DropReason
		src    netip.Addr
		want   bool
	}
	tests := []struct {
		name   string
		events []event
	}{
		{"once per source and reason", []event{
			{0, vrrp.DropVRID, a, true},
			{time.Second, vrrp.DropVRID, a, false},
			{time.Second, vrrp.DropTTL, a, true},
			{time.Second, vrrp.DropVRID, b, true},
			{10*time.Minute - time.Nanosecond, vrrp.DropVRID, a, false},
			{10 * time.Minute, vrrp.DropVRID, a, true},
		}},
		{"the budget is per reason and per window", func() []event {
			var ev []event
			for i := range 12 {
				ev = append(ev, event{time.Duration(i) * time.Second, vrrp.DropChecksum, spoofed(i), i < 10})
			}
			ev = append(ev,
				event{15 * time.Second, vrrp.DropTTL, spoofed(20), true}, // another reason still has its budget
				event{time.Minute, vrrp.DropChecksum, spoofed(11), true}, // a new window
			)
			return ev
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)
			for i, e := range tt.events {
				if got := l.allow(e.reason, e.src, dropT0.Add(e.at)); got != e.want {
					t.Errorf("event %d (%v %v at %v): allow %v, want %v", i, e.reason, e.src, e.at, got, e.want)
				}
			}
		})
	}
}

func TestDropLogSpoofingFlood(t *testing.T) {
	l := newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)
	if got := l.suppressed(dropT0); got != nil {
		t.Fatalf("suppressed before any drop: %v", got)
	}
	// 10,000 forged sources in one minute, then the report.
	lines := 0
	for i := range 10000 {
		if l.allow(vrrp.DropAddressList, spoofed(i), dropT0.Add(time.Duration(i)*time.Millisecond*5)) {
			lines++
		}
	}
	l.allow(vrrp.DropTTL, spoofed(1), dropT0.Add(time.Second)) // logged, not suppressed
	if lines != dropLogPerReason {
		t.Errorf("%d lines for 10,000 sources, want %d", lines, dropLogPerReason)
	}
	if got := l.suppressed(dropT0.Add(30 * time.Second)); got != nil {
		t.Errorf("a second report within the window: %v", got)
	}
	want := []suppressedDrops{{Reason: vrrp.DropAddressList, Count: 10000 - dropLogPerReason}}
	if diff := cmp.Diff(want, l.suppressed(dropT0.Add(time.Minute))); diff != "" {
		t.Errorf("suppressed (-want +got):\n%s", diff)
	}
	if got := l.suppressed(dropT0.Add(2 * time.Minute)); got != nil {
		t.Errorf("the same suppression reported twice: %v", got)
	}
}

func TestDropLogMemoryIsBounded(t *testing.T) {
	l := newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)
	// Twenty minutes (twice perSource) of 1,000 new sources a second, over
	// every reason.
	reasons := vrrp.DropReasons()
	for i := range 1200 * 1000 {
		now := dropT0.Add(time.Duration(i) * time.Millisecond)
		l.allow(reasons[i%len(reasons)], spoofed(i), now)
		if i%1000 == 0 {
			l.suppressed(now)
		}
	}
	// Only logged sources are remembered, for perSource: at most
	// reasons x perReason x (perSource/window + 1).
	limit := len(reasons) * dropLogPerReason * int(dropLogPerSource/dropLogWindow+1)
	if n := len(l.logged); n > limit {
		t.Errorf("%d sources remembered, want at most %d", n, limit)
	}
}

func TestDropLogBackstop(t *testing.T) {
	// A budget so large that only the backstop bounds memory.
	l := newDropLog(time.Hour, 1<<30, time.Minute)
	for i := range 3 * dropLogMaxSources {
		if !l.allow(vrrp.DropVRID, spoofed(i), dropT0) {
			t.Fatalf("source %d not allowed", i)
		}
	}
	if n := len(l.logged); n > dropLogMaxSources {
		t.Errorf("%d sources remembered, want at most %d", n, dropLogMaxSources)
	}
}
