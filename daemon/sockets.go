package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// One VRRP socket per interface, source and mode, shared by every instance
// on it: each advert is read and decoded once and handed to the instance of
// its VRID (keepalived's model). With N instances on a link, N sockets
// would read and decode every advert N times.

// socketKey identifies a shared socket: adverts go out from source, and a
// unicast socket joins no group.
type socketKey struct {
	ifindex int
	source  netip.Addr
	unicast bool
}

// socketPool owns the shared sockets of one daemon.
type socketPool struct {
	listen func(*net.Interface, transport.Options) (transport.Conn, error)
	log    *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	sockets map[socketKey]*vrrpSocket

	// rx recycles decoded adverts (and their address lists), so that the
	// receive path does not allocate.
	rx sync.Pool
}

func newSocketPool(env Env, log *slog.Logger) *socketPool {
	p := &socketPool{listen: env.ListenVRRP, log: log, now: env.Now, sockets: map[socketKey]*vrrpSocket{}}
	p.rx.New = func() any { return new(received) }
	return p
}

// free returns an advert the loop is done with.
func (p *socketPool) free(r *received) { p.rx.Put(r) }

// vrrpSocket is one shared socket and its reading goroutine.
type vrrpSocket struct {
	pool   *socketPool
	key    socketKey
	ifname string
	conn   transport.Conn
	refs   int // under pool.mu

	subs    [256]atomic.Pointer[instance]      // by VRID
	unknown [vrrp.NumDropReasons]atomic.Uint64 // drops no instance claims, by vrrp.DropReason.Index
	dropMu  sync.Mutex
	drops   *dropLog

	quiet *quietAdverts // nil: the Conn cannot set adverts aside
	// opened and grid: when the socket opened, and the instants its
	// Masters advertise at (grid.go), rebuilt as groups join and leave.
	opened time.Time
	grid   atomic.Pointer[advertGrid]

	closing chan struct{}
	done    chan struct{}
	failed  chan struct{} // closed when reading fails; err says why
	err     error
}

// join subscribes in to the socket of key, opening it first if no other
// instance has. The instance's VRID must be free on that socket.
func (p *socketPool) join(ifi *net.Interface, opts transport.Options, in *instance) (*vrrpSocket, error) {
	key := socketKey{ifindex: ifi.Index, source: opts.Source, unicast: opts.Unicast}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.sockets[key]
	if s == nil {
		conn, err := p.listen(ifi, opts)
		if err != nil {
			return nil, err
		}
		s = &vrrpSocket{pool: p, key: key, ifname: ifi.Name, conn: conn, quiet: newQuietAdverts(conn), opened: p.now(), closing: make(chan struct{}), done: make(chan struct{}),
			failed: make(chan struct{}), drops: newDropLog(dropLogPerSource, dropLogPerReason, dropLogWindow)}
		p.sockets[key] = s
		go s.read()
	}
	vrid := in.id.vrid
	if !s.subs[vrid].CompareAndSwap(nil, in) {
		return nil, fmt.Errorf("VRID %d is already used on %s by another instance", vrid, ifi.Name)
	}
	s.refs++
	s.regrid()
	if s.hasFailed() {
		in.mb.postFailed() // before this instance joined
	}
	return s, nil
}

// regrid deals the socket's groups round the grid's phases again; p.mu is
// held.
func (s *vrrpSocket) regrid() {
	var vrids []uint8
	for v := range s.subs {
		if s.subs[v].Load() != nil {
			vrids = append(vrids, uint8(v))
		}
	}
	s.grid.Store(newAdvertGrid(s.opened, vrids))
}

// leave unsubscribes in; the last instance to leave closes the socket and
// waits for its reader.
func (p *socketPool) leave(s *vrrpSocket, in *instance) {
	p.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		// Before the VRID goes: an advert read meanwhile (the successor's,
		// at a graceful stop) is not one "no instance has".
		close(s.closing)
		delete(p.sockets, s.key)
	}
	s.subs[in.id.vrid].CompareAndSwap(in, nil)
	if !last {
		s.regrid()
	}
	p.mu.Unlock()
	if !last {
		return
	}
	s.closeQuiet()
	s.conn.SetReadDeadline(time.Unix(1, 0))
	<-s.done
	s.conn.Close()
}

// hasFailed: reading the socket failed (err says why).
func (s *vrrpSocket) hasFailed() bool {
	select {
	case <-s.failed:
		return true
	default:
		return false
	}
}

func (s *vrrpSocket) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// WriteTo sends an advert on the shared socket.
func (s *vrrpSocket) WriteTo(b []byte, dst netip.Addr) error { return s.conn.WriteTo(b, dst) }

// read decodes each advert once and hands it to the instance of its VRID.
// A malformed packet is counted by the instance of its VRID when that byte
// can be read, by the socket otherwise; a packet for a VRID no instance
// has is counted once, by the socket.
func (s *vrrpSocket) read() {
	defer close(s.done)
	recv, batched := s.conn.(transport.Receiver)
	buf := make([]byte, 1500)
	handle := func(b []byte, info transport.PacketInfo) {
		if in := s.deliver(b, info); in != nil {
			in.counters.overruns.Add(1)
		}
	}
	for {
		var err error
		if batched {
			err = recv.Receive(handle)
		} else {
			var n int
			var info transport.PacketInfo
			if n, info, err = s.conn.ReadFrom(buf); err == nil {
				handle(buf[:n], info)
				continue
			}
		}
		select {
		case <-s.closing:
			return
		default:
		}
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			continue // a burst read, or a deadline that was not a stop
		}
		s.err = err
		close(s.failed)
		for v := range s.subs {
			if in := s.subs[v].Load(); in != nil {
				in.mb.postFailed()
			}
		}
		return
	}
}

// deliver decodes one packet and hands it to the instance of its VRID. It
// returns the instance if its queue was full: the loop is behind (or
// stopping), and one slow instance must not hold up the others on the link.
func (s *vrrpSocket) deliver(b []byte, info transport.PacketInfo) (overrun *instance) {
	p := s.pool.rx.Get().(*received)
	if err := p.adv.Decode(b, info.Src, info.Dst); err != nil {
		s.pool.free(p)
		if len(b) >= 2 {
			if in := s.subs[b[1]].Load(); in != nil {
				in.drop(err, info.Src, nil)
				return nil
			}
		}
		s.drop(err, info.Src, nil)
		return nil
	}
	in := s.subs[p.adv.VRID].Load()
	switch {
	case in == nil && s.isClosing():
		// The last instance left: the socket closes, nothing to report.
	case in == nil:
		s.drop(vrrp.DropVRID, info.Src, &p.adv)
	case len(in.filter.Load().peers) > 0 && !slices.Contains(in.filter.Load().peers, info.Src.WithZone("")):
		in.drop(vrrp.DropNotPeer, info.Src, &p.adv)
	default:
		p.src, p.ttl, p.deferred = info.Src, info.TTL, false
		p.keepRaw(b)
		if s.maybePending(p.adv.VRID) {
			// Those set aside came before this one.
			s.drainQuiet()
		}
		if in.mb.postPacket(p) {
			return nil
		}
		s.pool.free(p)
		return in
	}
	s.pool.free(p)
	return nil
}

// drop counts an advert no instance claims, once, and logs it within the
// drop log's limits.
func (s *vrrpSocket) drop(err error, src netip.Addr, adv *vrrp.Advertisement) {
	reason, ok := dropReason(err)
	if !ok {
		return
	}
	s.unknown[reason.Index()].Add(1)
	now := s.pool.now()
	s.dropMu.Lock()
	logIt := s.drops.allow(reason, src, now)
	suppressed := s.drops.suppressed(now)
	s.dropMu.Unlock()
	if !logIt && len(suppressed) == 0 {
		return // a flood's drops past the log's limits: counted only
	}
	log := s.pool.log.With("interface", s.ifname)
	for _, sd := range suppressed {
		log.Warn("more adverts dropped than logged", "reason", sd.Reason.String(), "suppressed", sd.Count)
	}
	if !logIt {
		return
	}
	attrs := []any{"reason", reason.String(), "source", src, "detail", reason.Error()}
	if adv != nil {
		attrs = append(attrs, "advert_vrid", adv.VRID, "advert_priority", adv.Priority)
	}
	log.Warn("advert dropped: no instance of this host has its VRID on this interface", attrs...)
}

// InterfaceDrops counts, per interface, the adverts that no instance
// claimed (an unknown VRID, a packet too short to name one), by reason.
func (d *Daemon) InterfaceDrops() map[string]map[string]uint64 {
	p := d.sockets
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]map[string]uint64{}
	for _, s := range p.sockets {
		for _, r := range vrrp.DropReasons() {
			if n := s.unknown[r.Index()].Load(); n > 0 {
				if out[s.ifname] == nil {
					out[s.ifname] = map[string]uint64{}
				}
				out[s.ifname][r.String()] += n
			}
		}
	}
	return out
}
