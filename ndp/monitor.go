package ndp

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

	"github.com/mdlayher/ethernet"
	mdndp "github.com/mdlayher/ndp"
	"github.com/vipd/vipd/arp"
	"golang.org/x/net/bpf"
)

// readBuffer holds any NDP frame the monitor looks at: an advertisement or
// solicitation with a few options is far below it; longer frames arrive
// truncated and fail the length check.
const readBuffer = 2048

var (
	errShortPacket = errors.New("ndp: truncated IPv6 packet")
	errChecksum    = errors.New("ndp: bad ICMPv6 checksum")
	errCode        = errors.New("ndp: ICMPv6 code is not 0")
)

// A Monitor reports the Neighbor Advertisements and Solicitations of other
// hosts on one interface as claims.
type Monitor struct {
	mac  net.HardwareAddr
	conn net.PacketConn
	// attach replaces the socket's kernel filter; nil when conn has none.
	attach func([]bpf.RawInstruction) error

	setMu     sync.Mutex   // serialises SetAddresses
	filtered  []netip.Addr // what the kernel filter passes claims of, sorted
	malformed atomic.Uint64
}

// filterConn is a connection that takes a kernel filter, as *packet.Conn
// does.
type filterConn interface {
	SetBPF([]bpf.RawInstruction) error
}

// NewMonitor returns a Monitor reading Ethernet frames for ifi from conn.
// Frames from ifi's own MAC are ignored; it takes ifi's MAC now. If conn
// has a SetBPF method (as *packet.Conn has), SetAddresses filters in the
// kernel.
func NewMonitor(ifi *net.Interface, conn net.PacketConn) *Monitor {
	m := &Monitor{mac: ifi.HardwareAddr, conn: conn}
	if fc, ok := conn.(filterConn); ok {
		m.attach = fc.SetBPF
	}
	return m
}

// SetAddresses has the kernel pass only what can be a claim of these IPv6
// addresses, the VIPs of every instance on the interface (see
// claimFilter); until the first call, and with more than
// MaxFilterAddresses, it passes every Solicitation and Advertisement. Run
// reports what the kernel passes and its callers select by address, so a
// frame queued under the previous filter is no harm. It is safe to call
// while Run runs, and cheap when the set is unchanged. An address that is
// not IPv6, or a failure to attach the filter, is an error and changes
// nothing.
func (m *Monitor) SetAddresses(vips []netip.Addr) error {
	set := make([]netip.Addr, 0, len(vips))
	for _, v := range vips {
		v = v.WithZone("")
		if !v.Is6() || v.Is4In6() || v.IsUnspecified() {
			return fmt.Errorf("ndp: %v is not an IPv6 address", v)
		}
		set = append(set, v)
	}
	slices.SortFunc(set, netip.Addr.Compare)
	set = slices.Compact(set)
	m.setMu.Lock()
	defer m.setMu.Unlock()
	if m.attach == nil || m.filtered != nil && slices.Equal(m.filtered, set) {
		return nil
	}
	prog := ndpFilter
	if len(set) <= MaxFilterAddresses {
		prog = claimFilter(m.mac, set)
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("ndp: assembling the claim filter: %w", err)
	}
	if err := m.attach(raw); err != nil {
		return fmt.Errorf("ndp: attaching the claim filter: %w", err)
	}
	m.filtered = set
	return nil
}

// Run calls onClaim, on Run's goroutine, for every NDP message in which
// another host says where an address is, in the terms of package arp:
//
//   - A Neighbor Advertisement: IP is its target, MAC its Target Link-Layer
//     Address option (or the frame's source without one), Op
//     arp.OperationReply. Target is IP for an unsolicited one, so that
//     Gratuitous reports true (a host taking the address over), and the
//     IPv6 destination for a solicited one (an answer to that host).
//   - A Neighbor Solicitation from a specified address: IP is its source,
//     MAC its Source Link-Layer Address option (or the frame's source), Op
//     arp.OperationRequest, Target the address asked for. DAD probes (from
//     the unspecified address) are no claim.
//
// Messages with a hop limit other than 255 did not come from the link and
// are ignored, as the kernel ignores them (RFC 4861 section 7.1). Callers
// filter by their VIPs; onClaim should return quickly. Malformed frames
// (truncated, bad checksum, undecodable) are counted and skipped. Run
// returns nil when ctx ends, or an error when reading fails otherwise.
func (m *Monitor) Run(ctx context.Context, onClaim func(arp.Claim)) error {
	if err := m.conn.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("ndp: clearing read deadline: %w", err)
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
			return fmt.Errorf("ndp: reading: %w", err)
		}
		c, ok, err := parseClaim(buf[:n], m.mac)
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

// Malformed returns how many frames Run has skipped as malformed.
func (m *Monitor) Malformed() uint64 { return m.malformed.Load() }

// Close closes the connection. Cancel Run's context first.
func (m *Monitor) Close() error { return m.conn.Close() }

// parseClaim decodes an Ethernet frame. It returns an error for a malformed
// NDP frame, and ok false for a valid frame that is no claim of another
// host.
func parseClaim(b []byte, own net.HardwareAddr) (c arp.Claim, ok bool, err error) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return arp.Claim{}, false, err
	}
	// Our own frames come back to a packet socket as outgoing packets.
	if f.EtherType != ethernet.EtherTypeIPv6 || bytes.Equal(f.Source, own) {
		return arp.Claim{}, false, nil
	}
	p := f.Payload
	if len(p) < ipv6HeaderLen || p[0]>>4 != 6 {
		return arp.Claim{}, false, errShortPacket
	}
	// Ethernet pads short frames: the payload length says where the
	// packet ends.
	plen := int(binary.BigEndian.Uint16(p[4:]))
	if ipv6HeaderLen+plen > len(p) {
		return arp.Claim{}, false, errShortPacket
	}
	// NDP messages carry no extension headers in practice; a packet that
	// has some is not looked into.
	if p[6] != protocolICMPv6 {
		return arp.Claim{}, false, nil
	}
	src := netip.AddrFrom16([16]byte(p[8:24]))
	dst := netip.AddrFrom16([16]byte(p[24:40]))
	icmp := p[ipv6HeaderLen : ipv6HeaderLen+plen]
	if len(icmp) < 4 || (icmp[0] != typeNeighborSolicitation && icmp[0] != typeNeighborAdvertisement) {
		return arp.Claim{}, false, nil
	}
	if icmp[1] != 0 {
		return arp.Claim{}, false, errCode
	}
	if icmpChecksum(icmp, src, dst) != 0 {
		return arp.Claim{}, false, errChecksum
	}
	if p[7] != hopLimit {
		return arp.Claim{}, false, nil
	}
	msg, err := mdndp.ParseMessage(icmp)
	if err != nil {
		return arp.Claim{}, false, err
	}
	mac := slices.Clone(f.Source)
	switch msg := msg.(type) {
	case *mdndp.NeighborAdvertisement:
		if msg.TargetAddress.IsMulticast() {
			return arp.Claim{}, false, nil // invalid (RFC 4861 section 7.1.2)
		}
		c = arp.Claim{IP: msg.TargetAddress, MAC: linkLayer(msg.Options, mdndp.Target, mac), Op: arp.OperationReply, Target: msg.TargetAddress}
		if msg.Solicited {
			c.Target = dst
		}
	case *mdndp.NeighborSolicitation:
		if src.IsUnspecified() {
			return arp.Claim{}, false, nil // duplicate address detection
		}
		c = arp.Claim{IP: src, MAC: linkLayer(msg.Options, mdndp.Source, mac), Op: arp.OperationRequest, Target: msg.TargetAddress}
	default:
		return arp.Claim{}, false, nil
	}
	if bytes.Equal(c.MAC, own) {
		return arp.Claim{}, false, nil
	}
	return c, true, nil
}

// linkLayer returns the message's link-layer address option of direction d,
// or fallback without one.
func linkLayer(opts []mdndp.Option, d mdndp.Direction, fallback net.HardwareAddr) net.HardwareAddr {
	for _, o := range opts {
		if lla, ok := o.(*mdndp.LinkLayerAddress); ok && lla.Direction == d {
			return slices.Clone(lla.Addr)
		}
	}
	return fallback
}

// icmpChecksum is the Internet checksum (RFC 1071) of an ICMPv6 message
// with its pseudo-header (RFC 8200 section 8.1): 0 over a correct message.
func icmpChecksum(icmp []byte, src, dst netip.Addr) uint16 {
	var sum uint32
	add := func(b []byte) {
		for len(b) >= 2 {
			sum += uint32(b[0])<<8 | uint32(b[1])
			b = b[2:]
		}
		if len(b) == 1 {
			sum += uint32(b[0]) << 8
		}
	}
	s, d := src.As16(), dst.As16()
	add(s[:])
	add(d[:])
	sum += uint32(len(icmp)) + protocolICMPv6
	add(icmp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
