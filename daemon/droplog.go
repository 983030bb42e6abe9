package daemon

import (
	"net/netip"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// Placeholder with the agreed API; replaced by the limiter of the vrrp
// hardening branch at merge.
type dropLog struct {
	perSource time.Duration
	seen      map[dropKey]time.Time
}

type dropKey struct {
	reason vrrp.DropReason
	src    netip.Addr
}

type suppressedDrops struct {
	Reason vrrp.DropReason
	Count  uint64
}

func newDropLog(perSource time.Duration, perReason int, window time.Duration) *dropLog {
	return &dropLog{perSource: perSource, seen: map[dropKey]time.Time{}}
}

func (l *dropLog) allow(reason vrrp.DropReason, src netip.Addr, now time.Time) bool {
	k := dropKey{reason, src}
	if last, ok := l.seen[k]; ok && now.Sub(last) < l.perSource {
		return false
	}
	if len(l.seen) > 1024 {
		clear(l.seen)
	}
	l.seen[k] = now
	return true
}

func (l *dropLog) suppressed(now time.Time) []suppressedDrops { return nil }
