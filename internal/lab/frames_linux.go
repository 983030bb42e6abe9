package lab

import (
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
)

// FloodFrame is one Ethernet frame of a flood, named for what is wrong
// with it.
type FloodFrame struct {
	Name  string
	Frame []byte
}

// Ethernet and IPv4 facts for hand-built frames.
const (
	etherTypeIPv4 = 0x0800
	etherTypeARP  = 0x0806
	ipv4HeaderLen = 20
	floodPriority = 200 // above every lab priority: a receiver that accepts one yields
)

// vrrpGroupMAC is 224.0.0.18's multicast MAC (RFC 1112 §6.4).
var vrrpGroupMAC = net.HardwareAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0x12}

// advertSpec is the content of a hand-built VRRP packet.
type advertSpec struct {
	verType    byte // version << 4 | type
	vrid, prio byte
	count      byte // the header's address count, whatever follows
	intervalCS uint16
	addrs      []netip.Addr
	ttl        byte
	breakSum   bool // checksum off by one
	// v2 lays the packet out as VRRPv2 (RFC 3768): 8 bytes of (empty)
	// authentication data after the addresses, the checksum without the
	// IPv4 pseudo-header; intervalCS is then the auth type and seconds.
	v2         bool
	ipLenExtra int // IPv4 total length beyond the real one
}

// FloodFrames are the malformed and foreign VRRP packets of the flood
// scenario, sent from src/srcMAC to 224.0.0.18: each has one defect for
// which RFC 5798 §7.1 (or plain IPv4) makes a receiver drop it, or belongs
// to another group. All that claim VRID vrid carry priority 200, so a
// receiver that wrongly accepts one yields to a host that is no router.
// Random payloads are added by the flooder itself.
func FloodFrames(src netip.Addr, srcMAC net.HardwareAddr, vip netip.Addr, vrid int) []FloodFrame {
	base := advertSpec{verType: vrrpVersion<<4 | vrrpTypeAdvert, vrid: byte(vrid), prio: floodPriority, count: 1,
		intervalCS: 100, addrs: []netip.Addr{vip}, ttl: 255}
	with := func(f func(*advertSpec)) advertSpec {
		s := base
		s.addrs = append([]netip.Addr(nil), base.addrs...)
		f(&s)
		return s
	}
	specs := []struct {
		name string
		spec advertSpec
	}{
		{"ttl-1", with(func(s *advertSpec) { s.ttl = 1 })},
		{"ttl-254", with(func(s *advertSpec) { s.ttl = 254 })},
		{"bad-checksum", with(func(s *advertSpec) { s.breakSum = true })},
		// Well formed, but VRRPv2: a VRRPv3 router drops it (RFC 5798 §7.1).
		{"version-2", with(func(s *advertSpec) { s.verType, s.v2, s.intervalCS = 2<<4|vrrpTypeAdvert, true, 1 })},
		{"version-15", with(func(s *advertSpec) { s.verType = 15<<4 | vrrpTypeAdvert })},
		{"type-2", with(func(s *advertSpec) { s.verType = vrrpVersion<<4 | 2 })},
		{"count-too-high", with(func(s *advertSpec) { s.count = 4 })},
		{"count-zero", with(func(s *advertSpec) { s.count, s.addrs = 0, nil })},
		{"interval-0", with(func(s *advertSpec) { s.intervalCS = 0 })},
		{"other-addresses", with(func(s *advertSpec) { s.addrs = []netip.Addr{netip.MustParseAddr("203.0.113.7")} })},
		{"ip-length-too-long", with(func(s *advertSpec) { s.ipLenExtra = 40 })},
		{"foreign-vrid", with(func(s *advertSpec) { s.vrid = byte(vrid%255 + 1) })},
	}
	out := make([]FloodFrame, 0, len(specs)+1)
	for _, s := range specs {
		out = append(out, FloodFrame{Name: s.name, Frame: vrrpFrame(src, srcMAC, s.spec)})
	}
	// Shorter than VRRP's fixed header.
	out = append(out, FloodFrame{Name: "truncated", Frame: ipv4Frame(src, srcMAC, 255, []byte{0x31, byte(vrid), floodPriority, 1}, 0)})
	return out
}

// RandomFloodFrame is a VRRP-protocol IPv4 packet with 1..64 random bytes
// as payload.
func RandomFloodFrame(src netip.Addr, srcMAC net.HardwareAddr, r *rand.Rand) FloodFrame {
	p := make([]byte, 1+r.IntN(64))
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return FloodFrame{Name: "random", Frame: ipv4Frame(src, srcMAC, 255, p, 0)}
}

func vrrpFrame(src netip.Addr, srcMAC net.HardwareAddr, s advertSpec) []byte {
	p := make([]byte, 8, 8+4*len(s.addrs)+8)
	p[0], p[1], p[2], p[3] = s.verType, s.vrid, s.prio, s.count
	binary.BigEndian.PutUint16(p[4:], s.intervalCS&0x0fff)
	for _, a := range s.addrs {
		b := a.As4()
		p = append(p, b[:]...)
	}
	var sum uint16
	if s.v2 {
		p = append(p, make([]byte, 8)...)
		sum = inetChecksum(p)
	} else {
		sum = vrrpChecksum(src, p)
	}
	if s.breakSum {
		sum++
	}
	binary.BigEndian.PutUint16(p[6:], sum)
	return ipv4Frame(src, srcMAC, s.ttl, p, s.ipLenExtra)
}

// vrrpChecksum is RFC 5798 §5.2.8: over the IPv4 pseudo-header and the
// VRRP message, whose checksum field is zero here.
func vrrpChecksum(src netip.Addr, msg []byte) uint16 {
	ph := make([]byte, 0, 12+len(msg))
	s, d := src.As4(), [4]byte{224, 0, 0, 18}
	ph = append(ph, s[:]...)
	ph = append(ph, d[:]...)
	ph = append(ph, 0, vrrpProto, byte(len(msg)>>8), byte(len(msg)))
	return inetChecksum(append(ph, msg...))
}

// ipv4Frame wraps payload in an IPv4 header (protocol 112, to 224.0.0.18)
// and an Ethernet header. ipLenExtra overstates the total length.
func ipv4Frame(src netip.Addr, srcMAC net.HardwareAddr, ttl byte, payload []byte, ipLenExtra int) []byte {
	f := make([]byte, 14+ipv4HeaderLen+len(payload))
	copy(f[0:6], vrrpGroupMAC)
	copy(f[6:12], srcMAC)
	binary.BigEndian.PutUint16(f[12:], etherTypeIPv4)
	ip := f[14:]
	ip[0], ip[1] = 0x45, 0xc0 // version 4, 20 bytes; DSCP CS6 as routers send
	binary.BigEndian.PutUint16(ip[2:], uint16(ipv4HeaderLen+len(payload)+ipLenExtra))
	ip[8], ip[9] = ttl, vrrpProto
	s := src.As4()
	copy(ip[12:16], s[:])
	copy(ip[16:20], []byte{224, 0, 0, 18})
	binary.BigEndian.PutUint16(ip[10:], inetChecksum(ip[:ipv4HeaderLen]))
	copy(ip[ipv4HeaderLen:], payload)
	return f
}

// GratuitousARP is the pair a host sends to claim ip for mac: a request and
// a reply, both broadcast, sender and target ip (RFC 5227 §3).
func GratuitousARP(mac net.HardwareAddr, ip netip.Addr) [2][]byte {
	frame := func(op uint16, target net.HardwareAddr) []byte {
		f := make([]byte, 14+28)
		copy(f[0:6], broadcastMAC)
		copy(f[6:12], mac)
		binary.BigEndian.PutUint16(f[12:], etherTypeARP)
		a := f[14:]
		binary.BigEndian.PutUint16(a[0:], 1) // Ethernet
		binary.BigEndian.PutUint16(a[2:], etherTypeIPv4)
		a[4], a[5] = 6, 4
		binary.BigEndian.PutUint16(a[6:], op)
		b := ip.As4()
		copy(a[8:14], mac)
		copy(a[14:18], b[:])
		copy(a[18:24], target)
		copy(a[24:28], b[:])
		return f
	}
	return [2][]byte{frame(1, make(net.HardwareAddr, 6)), frame(2, broadcastMAC)}
}

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
