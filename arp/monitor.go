package arp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/bpf"
)

// readBuffer holds any ARP frame: 28 bytes of ARP for Ethernet and IPv4,
// plus headers and VLAN tags, are far below it.
const readBuffer = 2048

// ARP hardware types (RFC 826, IANA "Hardware Types"): Linux accepts both
// on Ethernet links.
const (
	hardwareEthernet = 1
	hardwareIEEE802  = 6
)

// A Claim is an ARP packet in which another host says that IP is at MAC.
type Claim struct {
	IP  netip.Addr
	MAC net.HardwareAddr
	Op  Operation
	// Target is the packet's target IP: IP itself in a gratuitous ARP.
	Target netip.Addr
	// At is when the packet was read.
	At time.Time
}

// Gratuitous reports whether the sender announced its address unasked (a
// gratuitous ARP request or reply) rather than answering or asking
// another host: what a host taking an address over sends.
func (c Claim) Gratuitous() bool { return c.Target == c.IP }

// A Monitor reports the ARP packets of other hosts on one interface. One
// Monitor serves every VRRP instance on the interface: Run reports claims
// of all the addresses given to SetAddresses and the caller hands each to
// the instance that has Claim.IP.
type Monitor struct {
	mac  net.HardwareAddr
	conn net.PacketConn
	// attach replaces the socket's kernel filter; nil when conn has none.
	attach func([]bpf.RawInstruction) error

	setMu sync.Mutex // serialises SetAddresses
	// want is the set Run reports; nil until SetAddresses: every address.
	want      atomic.Pointer[addrSet]
	received  atomic.Uint64
	malformed atomic.Uint64
}

// filterConn is a connection that takes a kernel filter, as
// *packet.Conn does.
type filterConn interface {
	SetBPF([]bpf.RawInstruction) error
}

// NewMonitor returns a Monitor reading ARP frames for ifi from conn. Frames
// whose sender MAC is ifi's own are ignored; it takes ifi's MAC now. If
// conn has a SetBPF method (as *packet.Conn has), SetAddresses filters in
// the kernel too.
func NewMonitor(ifi *net.Interface, conn net.PacketConn) *Monitor {
	m := &Monitor{mac: ifi.HardwareAddr, conn: conn}
	if fc, ok := conn.(filterConn); ok {
		m.attach = fc.SetBPF
	}
	return m
}

// SetAddresses makes the Monitor report claims of exactly these IPv4
// addresses: the VIPs of every instance on the interface. It is safe to
// call while Run runs, and cheap when the set is unchanged. An empty set
// reports nothing (no instance needs a claim then). Until the first call a
// Monitor reports claims of any address.
//
// The kernel filter (see claimFilter) then drops every other ARP frame
// before it reaches user space. Frames already queued under the previous
// filter are checked against the new set in Run. Up to MaxFilterAddresses
// addresses are compared in the kernel; beyond that the kernel passes
// every other host's ARP and Run selects. An address that is not IPv4, or
// a failure to attach the filter, is an error and leaves the set as it
// was.
func (m *Monitor) SetAddresses(vips []netip.Addr) error {
	next, err := newAddrSet(vips)
	if err != nil {
		return err
	}
	m.setMu.Lock()
	defer m.setMu.Unlock()
	prev := m.want.Load()
	if prev != nil && slices.Equal(prev.sorted, next.sorted) {
		return nil
	}
	if m.attach == nil {
		m.want.Store(next)
		return nil
	}
	kernel := next.sorted
	if len(kernel) > MaxFilterAddresses {
		kernel = nil
	}
	raw, err := bpf.Assemble(claimFilter(m.mac, kernel))
	if err != nil {
		return fmt.Errorf("arp: assembling the ARP filter: %w", err)
	}
	// Report the union while the filter changes, so that a claim of a
	// new address that the new filter passed is not dropped here because
	// Run still holds the old set.
	if prev != nil {
		m.want.Store(prev.union(next))
	}
	if err := m.attach(raw); err != nil {
		m.want.Store(prev)
		return fmt.Errorf("arp: attaching the ARP filter: %w", err)
	}
	m.want.Store(next)
	return nil
}

// Run calls onClaim, on Run's goroutine, for every ARP request or reply
// whose sender IP is one of the addresses set with SetAddresses (any IPv4
// address before the first SetAddresses) and whose sender MAC is not the
// interface's own. onClaim should return quickly. Malformed frames are
// counted and skipped. Run returns nil when ctx ends, or an error when
// reading fails otherwise. Run one Run at a time.
func (m *Monitor) Run(ctx context.Context, onClaim func(Claim)) error {
	if err := m.conn.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("arp: clearing read deadline: %w", err)
	}
	// A deadline in the past is the portable way to end a blocked read.
	stop := context.AfterFunc(ctx, func() { _ = m.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	buf := make([]byte, readBuffer)
	for {
		n, _, err := m.conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if transient(err) {
				continue
			}
			return fmt.Errorf("arp: reading: %w", err)
		}
		m.received.Add(1)
		c, ok, err := parseClaim(buf[:n], m.mac, m.want.Load())
		if err != nil {
			m.malformed.Add(1)
			continue
		}
		if ok {
			c.At = time.Now()
			onClaim(c)
		}
	}
}

// Received returns how many frames Run has read: what the kernel filter
// let through, claims or not.
func (m *Monitor) Received() uint64 { return m.received.Load() }

// Malformed returns how many frames Run has skipped as malformed. With the
// kernel filter most never reach Run, and are not counted.
func (m *Monitor) Malformed() uint64 { return m.malformed.Load() }

// Close closes the connection. Cancel Run's context first.
func (m *Monitor) Close() error { return m.conn.Close() }

// An addrSet is the IPv4 addresses a Monitor reports. A nil *addrSet holds
// every address.
type addrSet struct {
	sorted []netip.Addr
	has    map[netip.Addr]struct{}
}

func newAddrSet(vips []netip.Addr) (*addrSet, error) {
	s := &addrSet{sorted: make([]netip.Addr, 0, len(vips)), has: make(map[netip.Addr]struct{}, len(vips))}
	for _, v := range vips {
		v = v.Unmap()
		if !v.Is4() || v.IsUnspecified() {
			return nil, fmt.Errorf("%w: %v", ErrNotIPv4, v)
		}
		if _, dup := s.has[v]; !dup {
			s.has[v] = struct{}{}
			s.sorted = append(s.sorted, v)
		}
	}
	slices.SortFunc(s.sorted, netip.Addr.Compare)
	return s, nil
}

func (s *addrSet) contains(a netip.Addr) bool {
	if s == nil {
		return true
	}
	_, ok := s.has[a]
	return ok
}

func (s *addrSet) union(t *addrSet) *addrSet {
	u, _ := newAddrSet(slices.Concat(s.sorted, t.sorted))
	return u
}

var (
	errShortFrame = errors.New("arp: frame too short")
	// errNotEthernetIPv4 marks an ARP packet for other address kinds.
	errNotEthernetIPv4 = errors.New("arp: not an Ethernet/IPv4 ARP packet")
)

// parseClaim decodes an Ethernet frame in place. It returns an error for a
// frame that is not valid Ethernet/IPv4 ARP, and ok false for a valid frame
// that is no claim of an address in want by another host. It allocates
// only the claim's MAC.
func parseClaim(b []byte, own net.HardwareAddr, want *addrSet) (c Claim, ok bool, err error) {
	if len(b) < ethHeaderLen {
		return Claim{}, false, errShortFrame
	}
	if binary.BigEndian.Uint16(b[offEtherType:]) != etherTypeARP {
		return Claim{}, false, nil
	}
	if len(b) < offARP+arpHeaderLen {
		return Claim{}, false, errShortFrame
	}
	if ht := binary.BigEndian.Uint16(b[offHType:]); (ht != hardwareEthernet && ht != hardwareIEEE802) ||
		binary.BigEndian.Uint32(b[offPType:]) != ipv4OverEthernet {
		return Claim{}, false, errNotEthernetIPv4
	}
	if len(b) < offARP+arpIPv4Len {
		return Claim{}, false, errShortFrame
	}
	op := Operation(binary.BigEndian.Uint16(b[offOperation:]))
	if op != OperationRequest && op != OperationReply {
		return Claim{}, false, nil
	}
	sender := b[offSenderMAC : offSenderMAC+6]
	// Our own frames come back to a packet socket as outgoing packets.
	if bytes.Equal(sender, own) || bytes.Equal(b[6:12], own) {
		return Claim{}, false, nil
	}
	ip := netip.AddrFrom4([4]byte(b[offSenderIP:]))
	// Sender 0.0.0.0 is an address probe (RFC 5227 section 2.1.1), not a claim.
	if ip.IsUnspecified() || !want.contains(ip) {
		return Claim{}, false, nil
	}
	return Claim{
		IP:     ip,
		MAC:    bytes.Clone(sender),
		Op:     op,
		Target: netip.AddrFrom4([4]byte(b[offTargetIP:])),
	}, true, nil
}
