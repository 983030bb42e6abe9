package arp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

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

// maxCachedVIPs bounds the frames an Announcer keeps ready: about 200
// bytes a VIP. VIPs beyond it are announced with frames built each time.
const maxCachedVIPs = 1024

// An Announcer sends gratuitous ARP for VIPs on one interface. It is safe
// for concurrent use, so one Announcer can serve every instance on the
// interface. It keeps each VIP's frames once built (see Prepare), so that
// announcing is one write a frame.
type Announcer struct {
	ifname string
	mac    net.HardwareAddr
	conn   net.PacketConn
	to     net.Addr // Ethernet broadcast

	mu     sync.Mutex
	frames map[netip.Addr]*vipFrames
}

// vipFrames are a VIP's frames. The bytes never change once built: a
// writer copies the slices out under the lock and writes without it.
type vipFrames struct {
	request, reply []byte // the gratuitous ARP
	probe          []byte // nil until the first Probe
	probeFrom      netip.Addr
}

// New returns an Announcer that writes frames for ifi to conn, addressed as
// *packet.Addr. It takes ifi's MAC address now.
func New(ifi *net.Interface, conn net.PacketConn) *Announcer {
	return &Announcer{
		ifname: ifi.Name, mac: ifi.HardwareAddr, conn: conn,
		to:     &packet.Addr{HardwareAddr: ethernet.Broadcast},
		frames: make(map[netip.Addr]*vipFrames),
	}
}

// Prepare builds the frames for vips now and forgets those of any other
// VIP, so that the first Announce after a takeover only writes. Call it
// with every VIP of the interface at start and on reload. An address that
// ARP cannot announce is an error and changes nothing.
func (a *Announcer) Prepare(vips []netip.Addr) error {
	if len(a.mac) != 6 {
		return fmt.Errorf("%w: %s", ErrNotEthernet, a.ifname)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	next := make(map[netip.Addr]*vipFrames, min(len(vips), maxCachedVIPs))
	for _, vip := range vips {
		vip = vip.Unmap()
		if !vip.Is4() || vip.IsUnspecified() {
			return fmt.Errorf("%w: %v", ErrNotIPv4, vip)
		}
		if _, ok := next[vip]; ok || len(next) == maxCachedVIPs {
			continue
		}
		f, ok := a.frames[vip]
		if !ok {
			var err error
			if f, err = a.build(vip); err != nil {
				return err
			}
		}
		next[vip] = f
	}
	a.frames = next
	return nil
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
	a.mu.Lock()
	f, err := a.lookup(vip)
	var request, reply []byte
	if f != nil {
		request, reply = f.request, f.reply
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	var errs []error
	for _, x := range []struct {
		op Operation
		b  []byte
	}{{OperationRequest, request}, {OperationReply, reply}} {
		if _, err := a.conn.WriteTo(x.b, a.to); err != nil {
			errs = append(errs, fmt.Errorf("arp: announcing %v on %s (%v): %w", vip, a.ifname, x.op, err))
		}
	}
	return errors.Join(errs...)
}

// Probe asks who has vip, from this interface's MAC and address from: any
// other host that holds vip answers with its own MAC, which a Monitor on
// this interface reports. A Master probes so that a second owner that never
// speaks first (a left-over address, a static one) is found too. From
// 0.0.0.0 it is RFC 5227's ARP Probe, which a holder answers all the same
// and which costs the hosts that only hear it less. Linux answers it only
// for an address it holds: a host that proxies ARP for the VIP answers a
// probe from an address, not this one.
func (a *Announcer) Probe(vip, from netip.Addr) error {
	vip, from = vip.Unmap(), from.Unmap()
	if !vip.Is4() || vip.IsUnspecified() || !from.Is4() {
		return fmt.Errorf("%w: %v from %v", ErrNotIPv4, vip, from)
	}
	if len(a.mac) != 6 {
		return fmt.Errorf("%w: %s", ErrNotEthernet, a.ifname)
	}
	a.mu.Lock()
	f, err := a.lookup(vip)
	var b []byte
	if err == nil {
		if f.probe == nil || f.probeFrom != from {
			if f.probe, err = probeFrame(a.mac, vip, from); err == nil {
				f.probeFrom = from
			}
		}
		b = f.probe
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := a.conn.WriteTo(b, a.to); err != nil {
		return fmt.Errorf("arp: probing %v on %s: %w", vip, a.ifname, err)
	}
	return nil
}

// Close closes the connection.
func (a *Announcer) Close() error { return a.conn.Close() }

// lookup returns vip's frames, building and keeping them if there is room.
// The caller holds mu.
func (a *Announcer) lookup(vip netip.Addr) (*vipFrames, error) {
	if f, ok := a.frames[vip]; ok {
		return f, nil
	}
	f, err := a.build(vip)
	if err != nil {
		return nil, err
	}
	if len(a.frames) < maxCachedVIPs {
		a.frames[vip] = f
	}
	return f, nil
}

func (a *Announcer) build(vip netip.Addr) (*vipFrames, error) {
	request, err := gratuitous(OperationRequest, a.mac, vip)
	if err != nil {
		return nil, fmt.Errorf("arp: building the announcement of %v: %w", vip, err)
	}
	reply, err := gratuitous(OperationReply, a.mac, vip)
	if err != nil {
		return nil, fmt.Errorf("arp: building the announcement of %v: %w", vip, err)
	}
	return &vipFrames{request: request, reply: reply}, nil
}

// probeFrame builds a broadcast request from mac and from asking who has
// vip.
func probeFrame(mac net.HardwareAddr, vip, from netip.Addr) ([]byte, error) {
	p, err := mdarp.NewPacket(OperationRequest, mac, from, ethernet.Broadcast, vip)
	if err != nil {
		return nil, err
	}
	p.TargetHardwareAddr = net.HardwareAddr{0, 0, 0, 0, 0, 0} // unknown, as RFC 826 asks
	pb, err := p.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return (&ethernet.Frame{Destination: ethernet.Broadcast, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
}

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
