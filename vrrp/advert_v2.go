package vrrp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// VRRPv2 (RFC 3768) differs from VRRPv3 on the wire in three ways: the
// interval is whole seconds in one byte, where VRRPv3 has 12 bits of
// centiseconds, the checksum never covers a pseudo-header, and 8 bytes of
// authentication data follow the addresses, typed by the byte VRRPv3 made
// reserved. It is IPv4 only.
const (
	authDataLen = 8
	// MinAdvertIntervalV2 and MaxAdvertIntervalV2 bound VRRPv2's interval:
	// one byte of seconds (RFC 3768 section 5.3.7).
	MinAdvertIntervalV2 = time.Second
	MaxAdvertIntervalV2 = 255 * time.Second
)

// An AuthType is VRRPv2's Auth Type field (RFC 3768 section 5.3.6).
type AuthType uint8

const (
	// AuthNone is no authentication, the only type RFC 3768 keeps.
	AuthNone AuthType = 0
	// AuthPass is RFC 2338's simple text password: the password in clear
	// in every advert. It keeps a misconfigured router out of a group; it
	// stops no one who can read the link.
	AuthPass AuthType = 1
	// AuthAH is RFC 2338's IPsec AH, which vipd does not speak.
	AuthAH AuthType = 2
)

// MaxPasswordLen is the length of the Authentication Data field, which a
// simple text password fills, padded with zeros.
const MaxPasswordLen = authDataLen

// Auth is a VRRPv2 advert's authentication: its type and its 8 bytes of data.
type Auth struct {
	Type AuthType
	Data [authDataLen]byte
}

// PasswordAuth returns the simple text authentication for password, 1..8
// bytes, zero-padded as keepalived sends it.
func PasswordAuth(password string) (Auth, error) {
	if len(password) == 0 || len(password) > MaxPasswordLen {
		return Auth{}, fmt.Errorf("vrrp: a simple text password is 1..%d bytes, not %d", MaxPasswordLen, len(password))
	}
	a := Auth{Type: AuthPass}
	copy(a.Data[:], password)
	return a, nil
}

// appendV2 encodes a as a VRRPv2 advert (RFC 3768 section 5.3); a.Checksum
// does not apply, the checksum never covers a pseudo-header.
func (a *Advertisement) appendV2(b []byte, src netip.Addr) ([]byte, error) {
	switch {
	case !src.Is4():
		return b, fmt.Errorf("vrrp: VRRPv2 is IPv4 only, not %v", src)
	case len(a.Addresses) == 0 || len(a.Addresses) > 255:
		return b, fmt.Errorf("vrrp: %d addresses: an advertisement carries 1..255", len(a.Addresses))
	case a.Interval < MinAdvertIntervalV2 || a.Interval > MaxAdvertIntervalV2 || a.Interval%time.Second != 0:
		return b, fmt.Errorf("vrrp: VRRPv2 advert interval %v is not whole seconds between %v and %v", a.Interval, MinAdvertIntervalV2, MaxAdvertIntervalV2)
	}
	start := len(b)
	b = append(b,
		Version2<<4|TypeAdvertisement,
		a.VRID,
		a.Priority,
		uint8(len(a.Addresses)),
		uint8(a.Auth.Type),
		uint8(a.Interval/time.Second),
		0, 0, // checksum, filled in below
	)
	for _, ip := range a.Addresses {
		if !ip.Is4() {
			return b[:start], fmt.Errorf("vrrp: address %v is not IPv4", ip)
		}
		b = append(b, ip.AsSlice()...)
	}
	b = append(b, a.Auth.Data[:]...)
	binary.BigEndian.PutUint16(b[start+6:], ^fold(wordSum(b[start:], 0)))
	return b, nil
}

// decodeV2 is Decode for a packet whose version nibble is 2.
func (a *Advertisement) decodeV2(b []byte, src netip.Addr) error {
	if !src.Is4() {
		return DropVersion
	}
	count := int(b[3])
	if count == 0 || len(b) != headerLen+count*4+authDataLen {
		return DropLength
	}
	if fold(wordSum(b, 0)) != 0xffff {
		return DropChecksum
	}
	if b[5] == 0 {
		return DropInterval
	}
	a.Version = Version2
	a.VRID = b[1]
	a.Priority = b[2]
	a.Auth.Type = AuthType(b[4])
	a.Interval = time.Duration(b[5]) * time.Second
	a.Checksum = ChecksumNoPseudoHeader
	a.Addresses = a.Addresses[:0]
	off := headerLen
	for ; off < headerLen+count*4; off += 4 {
		a.Addresses = append(a.Addresses, netip.AddrFrom4([4]byte(b[off:off+4])))
	}
	copy(a.Auth.Data[:], b[off:])
	return nil
}
