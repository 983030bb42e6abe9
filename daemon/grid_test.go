package daemon

import (
	"testing"
	"time"
)

func TestAdvertGridNeverLateAndConverges(t *testing.T) {
	base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const iv = time.Second
	for _, tc := range []struct{ groups, step int }{{1, 1}, {16, 1}, {17, 1}, {64, 1}, {255, 1}, {40, 2}, {32, 7}} {
		groups := tc.groups
		var vrids []uint8
		for i := range groups {
			vrids = append(vrids, uint8(1+i*tc.step))
		}
		g := newAdvertGrid(base, vrids)
		instants := map[time.Duration]int{}
		for _, v := range vrids {
			vrid := int(v)
			// Each Master starts at its own moment and sends every
			// interval, as it arms its advert timer each time.
			now := base.Add(time.Duration(vrid*7919) * time.Millisecond / 13)
			var early int
			for range 10 {
				next := g.due(now, iv, iv, uint8(vrid))
				gap := next.Sub(now)
				if gap > iv || gap <= 0 {
					t.Fatalf("%d groups, VRID %d: next advert %v after the last, want (0, %v]", groups, vrid, gap, iv)
				}
				if gap < iv {
					early++
				}
				now = next
			}
			if early > 1 {
				t.Errorf("%d groups, VRID %d: %d adverts early, want at most the first", groups, vrid, early)
			}
			instants[now.Sub(base)%iv]++
		}
		if got, want := len(instants), (groups+advertsPerWake-1)/advertsPerWake; got != want {
			t.Errorf("%d groups advertise at %d instants of an interval, want %d", groups, got, want)
		}
		for at, n := range instants {
			if n > advertsPerWake {
				t.Errorf("%d groups (VRIDs %d apart): %d Masters advertise %v into the interval", groups, tc.step, n, at)
			}
		}
	}
}

func TestAdvertGridKeepsWhatItCannotPlace(t *testing.T) {
	base := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	g := newAdvertGrid(base, []uint8{1})
	now := base.Add(1500 * time.Millisecond)
	// A deadline shorter than the time to the next instant stays as asked.
	if got := g.due(now, 200*time.Millisecond, time.Second, 1); !got.Equal(now.Add(200 * time.Millisecond)) {
		t.Errorf("due = %v after now, want 200ms", got.Sub(now))
	}
	if got := (*advertGrid)(nil).due(now, time.Second, time.Second, 1); !got.Equal(now.Add(time.Second)) {
		t.Errorf("without a grid: due = %v after now, want 1s", got.Sub(now))
	}
	if got := g.due(now, time.Second, time.Second, 1); !got.Equal(base.Add(2 * time.Second)) {
		t.Errorf("due = %v, want the grid's instant 2s after its base", got.Sub(base))
	}
}
