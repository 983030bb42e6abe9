package arp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	mdarp "github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
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

// errNotEthernetIPv4 marks an ARP packet for other address kinds.
var errNotEthernetIPv4 = errors.New("arp: not an Ethernet/IPv4 ARP packet")

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

// A Monitor reports the ARP packets of other hosts on one interface.
type Monitor struct {
	mac       net.HardwareAddr
	conn      net.PacketConn
	malformed atomic.Uint64
}

// NewMonitor returns a Monitor reading ARP frames for ifi from conn. Frames
// whose sender MAC is ifi's own are ignored; it takes ifi's MAC now.
func NewMonitor(ifi *net.Interface, conn net.PacketConn) *Monitor {
	return &Monitor{mac: ifi.HardwareAddr, conn: conn}
}

// Run calls onClaim, on Run's goroutine, for every ARP request or reply
// whose sender IP is a (specified) IPv4 address and whose sender MAC is not
// the interface's own. Callers filter by their VIPs; onClaim should return
// quickly. Malformed frames are counted and skipped. Run returns nil when
// ctx ends, or an error when reading fails otherwise.
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

// parseClaim decodes an Ethernet frame. It returns an error for a frame that
// is not valid Ethernet/IPv4 ARP, and ok false for a valid frame that is no
// claim of another host.
func parseClaim(b []byte, own net.HardwareAddr) (c Claim, ok bool, err error) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return Claim{}, false, err
	}
	if f.EtherType != ethernet.EtherTypeARP {
		return Claim{}, false, nil
	}
	var p mdarp.Packet
	if err := p.UnmarshalBinary(f.Payload); err != nil {
		return Claim{}, false, err
	}
	if (p.HardwareType != hardwareEthernet && p.HardwareType != hardwareIEEE802) ||
		p.ProtocolType != uint16(ethernet.EtherTypeIPv4) || p.HardwareAddrLength != 6 || p.IPLength != 4 {
		return Claim{}, false, errNotEthernetIPv4
	}
	if p.Operation != OperationRequest && p.Operation != OperationReply {
		return Claim{}, false, nil
	}
	// Our own frames come back to a packet socket as outgoing packets.
	if bytes.Equal(p.SenderHardwareAddr, own) || bytes.Equal(f.Source, own) {
		return Claim{}, false, nil
	}
	// Sender 0.0.0.0 is an address probe (RFC 5227 section 2.1.1), not a claim.
	if !p.SenderIP.Is4() || p.SenderIP.IsUnspecified() {
		return Claim{}, false, nil
	}
	return Claim{IP: p.SenderIP, MAC: p.SenderHardwareAddr, Op: p.Operation, Target: p.TargetIP}, true, nil
}
