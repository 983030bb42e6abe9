package daemon

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// received is one decoded advert on its way to the election loop.
type received struct {
	src netip.Addr
	ttl int
	adv vrrp.Advertisement
}

// readFilter is what the reader needs to know of the configuration. A
// reload replaces it whole (an atomic pointer), never edits it: the reader
// runs on its own goroutine.
type readFilter struct {
	vrid     uint8
	siblings []uint8      // VRIDs of other instances on the same interface
	peers    []netip.Addr // unicast peers; empty in multicast
}

// reader is one socket's reading goroutine.
type reader struct {
	conn transport.Conn
	stop chan struct{}
	done chan error
}

func (in *instance) startReader() {
	r := &reader{conn: in.conn, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { r.done <- in.read(r.conn, r.stop) }()
	in.reader = r
}

// stopReader unblocks the reader and waits for it: it must not outlive the
// socket.
func (in *instance) stopReader() {
	r := in.reader
	if r == nil {
		return
	}
	in.reader = nil
	close(r.stop)
	r.conn.SetReadDeadline(time.Unix(1, 0))
	err := <-r.done
	r.done <- err
}

// read decodes adverts until the socket fails or stop is closed. Malformed
// packets are counted and dropped here, so a flood never reaches the loop.
func (in *instance) read(conn transport.Conn, stop <-chan struct{}) error {
	buf := make([]byte, 1500)
	for {
		n, info, err := conn.ReadFrom(buf)
		if err != nil {
			select {
			case <-stop:
				return nil
			default:
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			return err
		}
		var p received
		if err := p.adv.Decode(buf[:n], info.Src, info.Dst); err != nil {
			in.drop(err, info.Src, nil)
			continue
		}
		f := in.filter.Load()
		if p.adv.VRID != f.vrid {
			if !slices.Contains(f.siblings, p.adv.VRID) {
				in.drop(vrrp.DropVRID, info.Src, &p.adv)
			}
			continue
		}
		if len(f.peers) > 0 && !slices.Contains(f.peers, info.Src) {
			in.drop(vrrp.DropNotPeer, info.Src, &p.adv)
			continue
		}
		p.src, p.ttl = info.Src, info.TTL
		select {
		case in.packets <- p:
		case <-stop:
			return nil
		}
	}
}

// drop counts a discarded advert and logs it within the drop log's limits.
// It runs on the reader's goroutine and on the loop's.
func (in *instance) drop(err error, src netip.Addr, adv *vrrp.Advertisement) {
	var reason vrrp.DropReason
	if !errors.As(err, &reason) {
		in.log.Error("unexpected error from the election", "error", err)
		return
	}
	in.counters.drops[reason].Add(1)
	now := in.env.Now()
	in.dropMu.Lock()
	logIt := in.drops.allow(reason, src, now)
	suppressed := in.drops.suppressed(now)
	if reason == vrrp.DropAddressList && adv != nil {
		in.collision = fmt.Sprintf("VRID collision: %v advertises VRID %d with %v, not our addresses", src, adv.VRID, adv.Addresses)
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
