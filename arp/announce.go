package arp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	mdarp "github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
)

// Operation is an ARP operation code (RFC 826).
type Operation = mdarp.Operation

// The ARP operations (RFC 826).
const (
	OperationRequest = mdarp.OperationRequest
	OperationReply   = mdarp.OperationReply
)

var (
	// ErrNotEthernet reports an interface without a 6-byte MAC address.
	ErrNotEthernet = errors.New("arp: interface has no Ethernet address")
	// ErrNotIPv4 reports an address that ARP cannot announce.
	ErrNotIPv4 = errors.New("arp: not an IPv4 address")
	// ErrUnsupported is returned by Dial and ListenMonitor outside Linux.
	ErrUnsupported = errors.New("arp: not supported on this operating system")
)

// An Announcer sends gratuitous ARP for VIPs on one interface. It is safe
// for concurrent use.
type Announcer struct {
	ifname string
	mac    net.HardwareAddr
	conn   net.PacketConn
}

// New returns an Announcer that writes frames for ifi to conn, addressed as
// *packet.Addr. It takes ifi's MAC address now.
func New(ifi *net.Interface, conn net.PacketConn) *Announcer {
	return &Announcer{ifname: ifi.Name, mac: ifi.HardwareAddr, conn: conn}
}

// Announce broadcasts that vip is at this interface's MAC address, as an
// ARP request and as an ARP reply. It tries both and reports any failure.
func (a *Announcer) Announce(vip netip.Addr) error {
	vip = vip.Unmap()
	if !vip.Is4() || vip.IsUnspecified() {
		return fmt.Errorf("%w: %v", ErrNotIPv4, vip)
	}
	if len(a.mac) != 6 {
		return fmt.Errorf("%w: %s", ErrNotEthernet, a.ifname)
	}
	var errs []error
	for _, op := range []Operation{OperationRequest, OperationReply} {
		b, err := gratuitous(op, a.mac, vip)
		if err == nil {
			_, err = a.conn.WriteTo(b, &packet.Addr{HardwareAddr: ethernet.Broadcast})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("arp: announcing %v on %s (%v): %w", vip, a.ifname, op, err))
		}
	}
	return errors.Join(errs...)
}

// Probe asks who has vip, from this interface's MAC and address from: any
// other host that holds vip answers with its own MAC, which a Monitor on
// this interface reports. A Master probes so that a second owner that never
// speaks first (a left-over address, a static one) is found too.
func (a *Announcer) Probe(vip, from netip.Addr) error {
	vip, from = vip.Unmap(), from.Unmap()
	if !vip.Is4() || vip.IsUnspecified() || !from.Is4() {
		return fmt.Errorf("%w: %v from %v", ErrNotIPv4, vip, from)
	}
	if len(a.mac) != 6 {
		return fmt.Errorf("%w: %s", ErrNotEthernet, a.ifname)
	}
	p, err := mdarp.NewPacket(OperationRequest, a.mac, from, ethernet.Broadcast, vip)
	if err != nil {
		return err
	}
	p.TargetHardwareAddr = net.HardwareAddr{0, 0, 0, 0, 0, 0} // unknown, as RFC 826 asks
	pb, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	fb, err := (&ethernet.Frame{Destination: ethernet.Broadcast, Source: a.mac, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := a.conn.WriteTo(fb, &packet.Addr{HardwareAddr: ethernet.Broadcast}); err != nil {
		return fmt.Errorf("arp: probing %v on %s: %w", vip, a.ifname, err)
	}
	return nil
}

// Close closes the connection.
func (a *Announcer) Close() error { return a.conn.Close() }

// gratuitous builds a broadcast frame saying vip is at mac: sender and
// target IP are both vip, the sender MAC is mac.
//
// The target MAC differs by operation. The request carries the broadcast
// address, as keepalived, MetalLB and `arping -U` send it; receivers ignore
// it in a request. The reply carries our own MAC, as RFC 5944 section 4.6
// and `arping -A` do, and not broadcast as MetalLB does: Linux takes a reply
// as gratuitous only when its target MAC equals its sender MAC, and only a
// gratuitous one overrides an entry changed in the last second (locktime)
// or, with arp_accept=1, creates one.
func gratuitous(op Operation, mac net.HardwareAddr, vip netip.Addr) ([]byte, error) {
	target := ethernet.Broadcast
	if op == OperationReply {
		target = mac
	}
	p, err := mdarp.NewPacket(op, mac, vip, target, vip)
	if err != nil {
		return nil, err
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	f := ethernet.Frame{
		Destination: ethernet.Broadcast,
		Source:      mac,
		EtherType:   ethernet.EtherTypeARP,
		Payload:     pb,
	}
	return f.MarshalBinary()
}
