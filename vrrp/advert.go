package vrrp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// Protocol constants from RFC 5798.
const (
	// IPProtocol is the IP protocol number of VRRP (section 5.1.1.4).
	IPProtocol = 112
	// Version is the only VRRP version this package speaks (section 5.2.1).
	Version = 3
	// TypeAdvertisement is the only packet type VRRPv3 defines (section 5.2.2).
	TypeAdvertisement = 1
	// TTL is the IPv4 TTL and IPv6 hop limit adverts are sent with and must
	// arrive with (sections 5.1.1.3, 5.1.2.3): a router never forwards them.
	TTL = 255

	// headerLen is the fixed part of an advertisement (section 5.2).
	headerLen = 8
	// maxIntervalCentis is the largest Max Advertise Interval: 12 bits of
	// centiseconds (section 5.2.7).
	maxIntervalCentis = 0x0fff
	centisecond       = 10 * time.Millisecond

	// MinAdvertInterval and MaxAdvertInterval bound the 12-bit interval.
	MinAdvertInterval = centisecond
	MaxAdvertInterval = maxIntervalCentis * centisecond
)

// Multicast groups adverts are sent to (sections 5.1.1.2, 5.1.2.2).
var (
	GroupIPv4 = netip.AddrFrom4([4]byte{224, 0, 0, 18})
	GroupIPv6 = netip.MustParseAddr("ff02::12")
)

// An Advertisement is a VRRPv3 advertisement (RFC 5798 section 5.2). The
// address family of Addresses follows the family of the IP packet that
// carries it.
type Advertisement struct {
	VRID     uint8
	Priority uint8
	// Interval is the Max Advertise Interval, carried in centiseconds.
	Interval  time.Duration
	Addresses []netip.Addr
}

// Append encodes a into b for an IP packet from src to dst (the pseudo-header
// of the checksum needs both) and returns the extended slice.
func (a *Advertisement) Append(b []byte, src, dst netip.Addr) ([]byte, error) {
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return b, fmt.Errorf("vrrp: source %v and destination %v must be addresses of one family", src, dst)
	}
	if len(a.Addresses) == 0 || len(a.Addresses) > 255 {
		return b, fmt.Errorf("vrrp: %d addresses: an advertisement carries 1..255", len(a.Addresses))
	}
	if a.Interval < MinAdvertInterval || a.Interval > MaxAdvertInterval || a.Interval%centisecond != 0 {
		return b, fmt.Errorf("vrrp: advert interval %v is not a multiple of 10ms between %v and %v", a.Interval, MinAdvertInterval, MaxAdvertInterval)
	}
	start := len(b)
	b = append(b,
		Version<<4|TypeAdvertisement,
		a.VRID,
		a.Priority,
		uint8(len(a.Addresses)),
	)
	b = binary.BigEndian.AppendUint16(b, uint16(a.Interval/centisecond))
	b = append(b, 0, 0) // checksum, filled in below
	for _, ip := range a.Addresses {
		if ip.Is4() != src.Is4() || ip.Is4In6() {
			return b[:start], fmt.Errorf("vrrp: address %v is not of the packet's family", ip)
		}
		b = append(b, ip.AsSlice()...)
	}
	sum := checksum(b[start:], src, dst)
	binary.BigEndian.PutUint16(b[start+6:], sum)
	return b, nil
}

// Decode parses b, the payload of an IP packet from src to dst, into a,
// reusing a.Addresses so that steady-state decoding does not allocate. It
// checks what the packet alone can tell (RFC 5798 section 7.1): version, type,
// length, address count, interval and checksum. The receiver's context (TTL,
// VRID, address list) is checked by Machine.ReceiveAdvert.
//
// A failed check returns a DropReason, so callers can count drops by reason.
func (a *Advertisement) Decode(b []byte, src, dst netip.Addr) error {
	if len(b) < headerLen {
		return DropTooShort
	}
	if b[0]>>4 != Version {
		return DropVersion
	}
	if b[0]&0x0f != TypeAdvertisement {
		return DropType
	}
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return DropFamily
	}
	addrLen := 16
	if src.Is4() {
		addrLen = 4
	}
	// At least one address (section 5.2.5): an empty list is malformed,
	// not another group's list.
	count := int(b[3])
	if count == 0 || len(b) != headerLen+count*addrLen {
		return DropLength
	}
	if checksum(b, src, dst) != 0 {
		return DropChecksum
	}
	centis := binary.BigEndian.Uint16(b[4:]) & maxIntervalCentis
	if centis == 0 {
		return DropInterval
	}
	a.VRID = b[1]
	a.Priority = b[2]
	a.Interval = time.Duration(centis) * centisecond
	a.Addresses = a.Addresses[:0]
	for off := headerLen; off < len(b); off += addrLen {
		if addrLen == 4 {
			a.Addresses = append(a.Addresses, netip.AddrFrom4([4]byte(b[off:off+4])))
		} else {
			a.Addresses = append(a.Addresses, netip.AddrFrom16([16]byte(b[off:off+16])))
		}
	}
	return nil
}

// checksum returns the Internet checksum (RFC 1071) of a VRRPv3 packet with
// the pseudo-header of its IP packet (RFC 5798 section 5.2.8). Over a packet
// whose checksum field is filled in correctly it returns 0; over one whose
// field is zero it returns the value to store.
func checksum(vrrp []byte, src, dst netip.Addr) uint16 {
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
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		add(s[:])
		add(d[:])
		sum += IPProtocol + uint32(len(vrrp))
	} else {
		s, d := src.As16(), dst.As16()
		add(s[:])
		add(d[:])
		sum += uint32(len(vrrp)) + IPProtocol
	}
	add(vrrp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// CheckTTL reports whether ttl, the TTL or hop limit an advert arrived with,
// proves it came from the local link (RFC 5798 section 7.1).
func CheckTTL(ttl int) error {
	if ttl != TTL {
		return DropTTL
	}
	return nil
}
