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
	// Version is VRRPv3's version (section 5.2.1), the default.
	Version = 3
	// Version2 is VRRPv2's (RFC 3768), spoken for groups that still run it.
	Version2 = 2
	// TypeAdvertisement is the only packet type VRRP defines (section 5.2.2).
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

// A ChecksumForm says how the checksum of an IPv4 advertisement is computed.
// The zero value is RFC 5798's, which stock keepalived and FRR send, so an
// Advertisement that does not say otherwise interoperates with them.
type ChecksumForm uint8

const (
	// ChecksumPseudoHeader sums the IP pseudo-header and the VRRP packet
	// (RFC 5798 section 5.2.8). IPv6 adverts always use it.
	ChecksumPseudoHeader ChecksumForm = iota
	// ChecksumNoPseudoHeader sums the VRRP packet alone, as RFC 9568 (which
	// obsoletes RFC 5798) says for IPv4 and as Cisco and Juniper always did.
	ChecksumNoPseudoHeader
	numChecksumForms
)

// String names the form as the config file does: "rfc5798" or "rfc9568".
func (f ChecksumForm) String() string {
	switch f {
	case ChecksumPseudoHeader:
		return "rfc5798"
	case ChecksumNoPseudoHeader:
		return "rfc9568"
	}
	return "invalid"
}

// ChecksumForms lists the forms, for callers that pre-create counters.
func ChecksumForms() []ChecksumForm {
	return []ChecksumForm{ChecksumPseudoHeader, ChecksumNoPseudoHeader}
}

// An Advertisement is a VRRPv3 advertisement (RFC 5798 section 5.2) or a
// VRRPv2 one (RFC 3768 section 5.3). The address family of Addresses follows
// the family of the IP packet that carries it.
type Advertisement struct {
	// Version is 3 or 2; zero encodes as 3.
	Version  uint8
	VRID     uint8
	Priority uint8
	// Interval is the Max Advertise Interval, carried in centiseconds.
	Interval  time.Duration
	Addresses []netip.Addr
	// Checksum is the form Append computes and Decode found. Decode
	// accepts either form over IPv4, and only the pseudo-header over IPv6.
	// VRRPv2 always sums the packet alone (ChecksumNoPseudoHeader).
	Checksum ChecksumForm
	// Auth is VRRPv2's authentication (zero: none); VRRPv3 has none.
	Auth Auth
}

// Append encodes a into b for an IP packet from src to dst (the pseudo-header
// of the checksum needs both) and returns the extended slice.
func (a *Advertisement) Append(b []byte, src, dst netip.Addr) ([]byte, error) {
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return b, fmt.Errorf("vrrp: source %v and destination %v must be addresses of one family", src, dst)
	}
	switch a.Version {
	case 0, Version:
	case Version2:
		return a.appendV2(b, src)
	default:
		return b, fmt.Errorf("vrrp: version %d: only 2 and 3 are spoken", a.Version)
	}
	if a.Checksum >= numChecksumForms || a.Checksum == ChecksumNoPseudoHeader && !src.Is4() {
		return b, fmt.Errorf("vrrp: checksum form %v over %v: IPv6 adverts always include the pseudo-header", a.Checksum, src)
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
	binary.BigEndian.PutUint16(b[start+6:], checksum(b[start:], src, dst, a.Checksum))
	return b, nil
}

// Decode parses b, the payload of an IP packet from src to dst, into a,
// reusing a.Addresses so that steady-state decoding does not allocate. It
// checks what the packet alone can tell (RFC 5798 section 7.1, RFC 3768
// section 7.1): version (2 or 3), type, length, address count, interval and
// checksum, and sets a.Version and a.Checksum to what it found. Whether the
// version is one the virtual router accepts, and its authentication, are the
// receiver's to check. The receiver's context (TTL, VRID, source,
// address list) is checked by Machine.ReceiveAdvert.
//
// A failed check returns a DropReason, so callers can count drops by reason.
func (a *Advertisement) Decode(b []byte, src, dst netip.Addr) error {
	if len(b) < headerLen {
		return DropTooShort
	}
	version := b[0] >> 4
	if version != Version && version != Version2 {
		return DropVersion
	}
	if b[0]&0x0f != TypeAdvertisement {
		return DropType
	}
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return DropFamily
	}
	if version == Version2 {
		return a.decodeV2(b, src)
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
	// The pseudo-header form first: it is the default of stock peers. An
	// IPv4 packet whose pseudo-header adds nothing to the one's-complement
	// sum verifies in both forms and is taken for that one.
	body := wordSum(b, 0)
	form := ChecksumPseudoHeader
	if fold(pseudoHeaderSum(src, dst, len(b), body)) != 0xffff {
		if !src.Is4() || fold(body) != 0xffff {
			return DropChecksum
		}
		form = ChecksumNoPseudoHeader
	}
	centis := binary.BigEndian.Uint16(b[4:]) & maxIntervalCentis
	if centis == 0 {
		return DropInterval
	}
	a.Version = Version
	a.VRID = b[1]
	a.Priority = b[2]
	a.Interval = time.Duration(centis) * centisecond
	a.Checksum = form
	a.Auth = Auth{}
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

// wordSum adds b to sum as big-endian 16-bit words, the Internet checksum
// (RFC 1071) before folding; an odd last byte is padded with zero.
func wordSum(b []byte, sum uint32) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

// pseudoHeaderSum adds the pseudo-header of an IP packet from src to dst
// carrying length bytes of VRRP to sum (RFC 5798 section 5.2.8): for IPv4
// src, dst, zero, protocol and length (RFC 768); for IPv6 src, dst, a 32-bit
// length, three zero bytes and the next header (RFC 8200 section 8.1). Both
// sum to the same words but for the addresses.
func pseudoHeaderSum(src, dst netip.Addr, length int, sum uint32) uint32 {
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		sum = wordSum(d[:], wordSum(s[:], sum))
	} else {
		s, d := src.As16(), dst.As16()
		sum = wordSum(d[:], wordSum(s[:], sum))
	}
	return sum + IPProtocol + uint32(length)
}

// fold folds the carries of a one's-complement sum into 16 bits. A packet
// whose checksum verifies folds to 0xffff.
func fold(sum uint32) uint16 {
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// checksum returns the value to store in the checksum field of vrrp, whose
// field is zero, in the given form (0 over a packet whose field verifies).
func checksum(vrrp []byte, src, dst netip.Addr, form ChecksumForm) uint16 {
	sum := wordSum(vrrp, 0)
	if form == ChecksumPseudoHeader {
		sum = pseudoHeaderSum(src, dst, len(vrrp), sum)
	}
	return ^fold(sum)
}

// CheckTTL reports whether ttl, the TTL or hop limit an advert arrived with,
// proves it came from the local link (RFC 5798 section 7.1).
func CheckTTL(ttl int) error {
	if ttl != TTL {
		return DropTTL
	}
	return nil
}

// CheckTTLRange reports whether ttl lies in min..max, the range a unicast
// instance accepts from peers behind routers (keepalived's min_ttl and
// max_ttl per peer): each router on the way takes one off the 255 sent.
func CheckTTLRange(ttl, min, max int) error {
	if ttl < min || ttl > max {
		return DropTTL
	}
	return nil
}
