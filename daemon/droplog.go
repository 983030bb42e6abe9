package daemon

import (
	"net/netip"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// Defaults of the drop log: a source is named once per reason every 10
// minutes, and no reason takes more than 10 lines a minute however many
// sources a spoofer invents; the rest is summed in one line per minute.
const (
	dropLogPerSource = 10 * time.Minute
	dropLogPerReason = 10
	dropLogWindow    = time.Minute
)

// dropLogMaxSources bounds the sources remembered. Only logged sources are
// remembered, so the budget already bounds them (reasons × perReason ×
// perSource/window); this is the backstop for odd settings.
const dropLogMaxSources = 4096

// dropLog decides which dropped adverts are logged. It is pure (time is
// passed in) and not safe for concurrent use; counters, not this, count
// every drop.
type dropLog struct {
	perSource time.Duration
	perReason int
	window    time.Duration

	logged     map[dropLogKey]time.Time        // when a source was last logged, per reason
	budgets    [vrrp.NumDropReasons]dropBudget // by vrrp.DropReason.Index
	lastReport time.Time                       // when suppressed() last did its work
}

type dropLogKey struct {
	reason vrrp.DropReason
	src    netip.Addr
}

type dropBudget struct {
	since      time.Time // start of the current window
	lines      int       // logged in the current window
	suppressed uint64    // not logged for want of budget since the last report
}

// suppressedDrops is how many lines of one reason were not logged.
type suppressedDrops struct {
	Reason vrrp.DropReason
	Count  uint64
}

// newDropLog returns a drop log that logs a (reason, source) once per
// perSource and at most perReason lines per reason per window.
func newDropLog(perSource time.Duration, perReason int, window time.Duration) *dropLog {
	return &dropLog{perSource: perSource, perReason: perReason, window: window, logged: map[dropLogKey]time.Time{}}
}

// allow reports whether the drop of an advert from src for reason should be
// logged now. A source already logged for the reason within perSource is
// not, and is not counted as suppressed (its first line stands for it); a
// new one beyond the reason's budget is counted for suppressed().
func (l *dropLog) allow(reason vrrp.DropReason, src netip.Addr, now time.Time) bool {
	key := dropLogKey{reason, src}
	if last, ok := l.logged[key]; ok && now.Sub(last) < l.perSource {
		return false
	}
	b := &l.budgets[reason.Index()]
	if b.since.IsZero() || now.Sub(b.since) >= l.window {
		b.since, b.lines = now, 0
	}
	if b.lines >= l.perReason {
		b.suppressed++
		return false
	}
	b.lines++
	if len(l.logged) >= dropLogMaxSources {
		l.expire(now)
		if len(l.logged) >= dropLogMaxSources {
			clear(l.logged) // at worst a source is logged again early
		}
	}
	l.logged[key] = now
	return true
}

// suppressed returns the reasons with lines not logged since the last
// answer, in the order of vrrp.DropReasons, and starts counting again. It
// does its work once per window (the first call, then one a window later
// at the earliest) and returns nil in between, so the driver may call it
// as often as it likes, on every drop or on a timer.
func (l *dropLog) suppressed(now time.Time) []suppressedDrops {
	if !l.lastReport.IsZero() && now.Sub(l.lastReport) < l.window {
		return nil
	}
	l.lastReport = now
	var out []suppressedDrops
	for r := range l.budgets {
		if n := l.budgets[r].suppressed; n > 0 {
			out = append(out, suppressedDrops{Reason: vrrp.DropReason(r), Count: n})
			l.budgets[r].suppressed = 0
		}
	}
	l.expire(now)
	return out
}

// expire forgets sources logged more than perSource ago.
func (l *dropLog) expire(now time.Time) {
	for k, at := range l.logged {
		if now.Sub(at) >= l.perSource {
			delete(l.logged, k)
		}
	}
}
