package ndp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/ethernet"
	mdndp "github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
)

const (
	// hopLimit is the hop limit of every NDP message; receivers discard
	// others as possibly forwarded (RFC 4861 sections 7.1.1, 7.1.2).
	hopLimit = 255
	// protocolICMPv6 is the IPv6 next header of ICMPv6.
	protocolICMPv6 = 58
	// ipv6HeaderLen is the fixed IPv6 header (RFC 8200 section 3).
	ipv6HeaderLen = 40
	// ICMPv6 types of Neighbor Solicitation and Advertisement (RFC 4861
	// sections 4.3, 4.4).
	typeNeighborSolicitation  = 135
	typeNeighborAdvertisement = 136
)

// allNodes is where unsolicited advertisements go (RFC 4861 section 7.2.6).
var allNodes = netip.MustParseAddr("ff02::1")

var (
	// ErrNotEthernet reports an interface without a 6-byte MAC address.
	ErrNotEthernet = errors.New("ndp: interface has no Ethernet address")
	// ErrNotIPv6 reports an address that NDP cannot announce.
	ErrNotIPv6 = errors.New("ndp: not a unicast IPv6 address")
	// ErrNoLinkLocal reports an interface without an IPv6 link-local
	// address, the source NDP messages need.
	ErrNoLinkLocal = errors.New("ndp: interface has no IPv6 link-local address")
	// ErrUnsupported is returned by Dial and ListenMonitor outside Linux.
	ErrUnsupported = errors.New("ndp: not supported on this operating system")
)

// An Announcer sends unsolicited Neighbor Advertisements and probes for
// VIPs on one interface. It is safe for concurrent use.
type Announcer struct {
	ifname string
	mac    net.HardwareAddr
	source netip.Addr
	router bool
	conn   net.PacketConn
}

// New returns an Announcer that writes frames for ifi to conn, addressed as
// *packet.Addr, from source (the interface's link-local address), with the
// Router flag set when router is true. It takes ifi's MAC address now.
func New(ifi *net.Interface, conn net.PacketConn, source netip.Addr, router bool) *Announcer {
	return &Announcer{ifname: ifi.Name, mac: ifi.HardwareAddr, source: source.WithZone(""), router: router, conn: conn}
}

// Announce tells all nodes on the link that vip is at this interface's MAC
// address, overriding what they cached.
func (a *Announcer) Announce(vip netip.Addr) error {
	vip, err := a.check(vip)
	if err != nil {
		return err
	}
	na := &mdndp.NeighborAdvertisement{
		Router:        a.router,
		Override:      true,
		TargetAddress: vip,
		Options:       []mdndp.Option{&mdndp.LinkLayerAddress{Direction: mdndp.Target, Addr: a.mac}},
	}
	b, err := frame(a.mac, a.source, allNodes, na)
	if err == nil {
		_, err = a.conn.WriteTo(b, &packet.Addr{HardwareAddr: multicastMAC(allNodes)})
	}
	if err != nil {
		return fmt.Errorf("ndp: announcing %v on %s: %w", vip, a.ifname, err)
	}
	return nil
}

// Probe asks who has vip, from this interface's MAC and the address from
// (the Announcer's source when from is not IPv6): a host holding vip
// answers with a solicited advertisement from its MAC, which a Monitor on
// this interface reports. A Master probes so that a second owner that never
// speaks first is found too.
func (a *Announcer) Probe(vip, from netip.Addr) error {
	vip, err := a.check(vip)
	if err != nil {
		return err
	}
	if !from.Is6() || from.Is4In6() || from.IsUnspecified() || from.IsMulticast() {
		from = a.source
	}
	group, err := mdndp.SolicitedNodeMulticast(vip)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotIPv6, vip)
	}
	ns := &mdndp.NeighborSolicitation{
		TargetAddress: vip,
		Options:       []mdndp.Option{&mdndp.LinkLayerAddress{Direction: mdndp.Source, Addr: a.mac}},
	}
	b, err := frame(a.mac, from.WithZone(""), group, ns)
	if err == nil {
		_, err = a.conn.WriteTo(b, &packet.Addr{HardwareAddr: multicastMAC(group)})
	}
	if err != nil {
		return fmt.Errorf("ndp: probing %v on %s: %w", vip, a.ifname, err)
	}
	return nil
}

// Close closes the connection.
func (a *Announcer) Close() error { return a.conn.Close() }

func (a *Announcer) check(vip netip.Addr) (netip.Addr, error) {
	vip = vip.WithZone("")
	if !vip.Is6() || vip.Is4In6() || vip.IsUnspecified() || vip.IsMulticast() || vip.IsLoopback() {
		return netip.Addr{}, fmt.Errorf("%w: %v", ErrNotIPv6, vip)
	}
	if len(a.mac) != 6 {
		return netip.Addr{}, fmt.Errorf("%w: %s", ErrNotEthernet, a.ifname)
	}
	if !a.source.Is6() || a.source.Is4In6() {
		return netip.Addr{}, fmt.Errorf("%w: %s (source %v)", ErrNoLinkLocal, a.ifname, a.source)
	}
	return vip, nil
}

// frame builds an Ethernet frame carrying m in an IPv6 packet from src to
// the multicast group dst, hop limit 255, with the ICMPv6 checksum filled
// in (a packet socket gets no help from the kernel).
func frame(mac net.HardwareAddr, src, dst netip.Addr, m mdndp.Message) ([]byte, error) {
	icmp, err := mdndp.MarshalMessageChecksum(m, src, dst)
	if err != nil {
		return nil, err
	}
	ip := make([]byte, ipv6HeaderLen, ipv6HeaderLen+len(icmp))
	ip[0] = 6 << 4 // version; traffic class and flow label zero
	binary.BigEndian.PutUint16(ip[4:], uint16(len(icmp)))
	ip[6] = protocolICMPv6
	ip[7] = hopLimit
	s, d := src.As16(), dst.As16()
	copy(ip[8:24], s[:])
	copy(ip[24:40], d[:])
	f := ethernet.Frame{
		Destination: multicastMAC(dst),
		Source:      mac,
		EtherType:   ethernet.EtherTypeIPv6,
		Payload:     append(ip, icmp...),
	}
	return f.MarshalBinary()
}

// multicastMAC maps an IPv6 multicast group to its Ethernet address
// (RFC 2464 section 7): 33:33 and the group's last four bytes.
func multicastMAC(group netip.Addr) net.HardwareAddr {
	g := group.As16()
	return net.HardwareAddr{0x33, 0x33, g[12], g[13], g[14], g[15]}
}
