package daemon

import (
	"slices"
	"time"
)

// advertsPerWake is how many Masters of one socket send in the same
// wake-up at most. Each wake-up of the process costs far more than an
// advert (about 100 µs on a virtual machine, against a few µs to send), so
// Masters sharing a socket send at the same instants of a grid instead of
// each at its own phase: 64 groups wake the host 4 times an interval, not
// 64. Sixteen adverts of one VIP are under 1 KiB on the wire and under 16
// KiB in a receiver's socket buffer, so a burst never fills one.
const advertsPerWake = 16

// advertGrid is the instants a socket's Masters advertise at: for groups
// of interval iv, base + phase + k·iv, the phase one of `slots` evenly
// spread over the interval, so that at most advertsPerWake Masters share
// an instant.
type advertGrid struct {
	base  time.Time // the socket's opening
	slots int
	slot  [256]uint8 // by VRID: the socket's groups in VRID order, dealt round the slots
}

// newAdvertGrid is the grid of a socket opened at base with groups vrids.
func newAdvertGrid(base time.Time, vrids []uint8) *advertGrid {
	g := &advertGrid{base: base, slots: max(1, (len(vrids)+advertsPerWake-1)/advertsPerWake)}
	sorted := slices.Clone(vrids)
	slices.Sort(sorted)
	for i, v := range sorted {
		g.slot[v] = uint8(i % g.slots)
	}
	return g
}

// due is when the advert a Master arms at now for after should go: the
// last instant of the grid at or before now+after and after now. Never
// later than asked, so a Backup's Master_Down_Timer never runs short; at
// most once earlier by under an interval, when the instance joins the grid
// or its phase moves (the first advert after a takeover, a group more or
// less on the socket). A deadline with no grid instant between now and it
// is kept as asked.
func (g *advertGrid) due(now time.Time, after, iv time.Duration, vrid uint8) time.Time {
	target := now.Add(after)
	if g == nil || iv <= 0 {
		return target
	}
	phase := iv * time.Duration(g.slot[vrid]) / time.Duration(g.slots)
	origin := g.base.Add(phase)
	since := target.Sub(origin)
	if since < 0 {
		return target
	}
	at := origin.Add(since - since%iv)
	if !at.After(now) {
		return target
	}
	return at
}
