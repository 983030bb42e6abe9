package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/vipd/vipd/transport"

	"github.com/vipd/vipd/vrrp"
)

// received is one decoded advert on its way to the election loop.
type received struct {
	src netip.Addr
	ttl int
	adv vrrp.Advertisement
	// deferred: set aside by the kernel (quiet.go), arrived at at.
	deferred bool
	at       time.Time
	// raw is the advert's bytes when short enough to be a pattern.
	raw    [transport.MaxQuietPayload]byte
	rawLen int
	next   *received // in its instance's mailbox
}

// readFilter is what the shared socket's reader needs to know of an
// instance's configuration. A reload replaces it whole (an atomic pointer),
// never edits it: the reader runs on its own goroutine.
type readFilter struct {
	peers []netip.Addr // unicast peers; empty in multicast
}

// drop counts a discarded advert and logs it within the drop log's limits.
// It runs on the reader's goroutine and on the loop's.
func (in *instance) drop(err error, src netip.Addr, adv *vrrp.Advertisement) {
	reason, ok := dropReason(err)
	if !ok {
		in.log.Error("unexpected error from the election", "error", err)
		return
	}
	in.counters.drop(reason.Index())
	now := in.env.Now()
	in.dropMu.Lock()
	if in.drops == nil {
		in.drops = newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)
	}
	logIt := in.drops.allow(reason, src, now)
	suppressed := in.drops.suppressed(now)
	if reason == vrrp.DropAddressList && adv != nil {
		// A colliding group's Master sends the same advert again and
		// again: its words are made once, not at each advert.
		if key := collisionKey(src, adv); key != in.collisionKey {
			in.collision = fmt.Sprintf("VRID collision: %v advertises VRID %d with %v, not our addresses", src, adv.VRID, adv.Addresses)
			in.collisionKey = key
		}
		in.collisionAt = now
	}
	in.dropMu.Unlock()
	for _, s := range suppressed {
		in.log.Warn("more adverts dropped than logged", "reason", s.Reason.String(), "suppressed", s.Count)
	}
	if !logIt {
		return
	}
	attrs := []any{"reason", reason.String(), "source", src, "detail", reason.Error()}
	if adv != nil {
		attrs = append(attrs, "advert_vrid", adv.VRID, "advert_priority", adv.Priority, "advert_addresses", adv.Addresses)
	}
	switch reason {
	case vrrp.DropAddressList:
		in.log.Warn("advert for our VRID with other addresses: another group uses this VRID on this link", attrs...)
	case vrrp.DropOwnAdvert:
		in.log.Warn("advert from our own address: another host on this link uses it", attrs...)
	default:
		in.log.Warn("advert dropped", attrs...)
	}
}

// dropReason is why err dropped an advert. The machine and the decoder
// return a bare reason: asserted, it costs a flood of bad adverts no
// allocation, where errors.As moves its target to the heap at each call.
func dropReason(err error) (vrrp.DropReason, bool) {
	if r, ok := err.(vrrp.DropReason); ok {
		return r, true
	}
	var wrapped vrrp.DropReason
	return wrapped, errors.As(err, &wrapped)
}

// collisionKey identifies a colliding advert by its source, VRID and
// addresses (FNV-1a); never 0, which is no collision's.
func collisionKey(src netip.Addr, adv *vrrp.Advertisement) uint64 {
	h := uint64(14695981039346656037)
	mix := func(a netip.Addr) {
		for _, b := range a.As16() {
			h = (h ^ uint64(b)) * 1099511628211
		}
	}
	mix(src)
	h = (h ^ uint64(adv.VRID)) * 1099511628211
	for _, a := range adv.Addresses {
		mix(a)
	}
	return h | 1
}
