// Package transport carries VRRP advertisements on one network interface:
// a raw IPv4 or IPv6 socket for IP protocol 112 (RFC 5798 sections 5.1.1
// and 5.1.2), bound to the interface, joined to 224.0.0.18 or ff02::12
// there only (or sending to unicast peers), with TTL or hop limit 255,
// traffic class 0xc0 and no loopback of its own packets. Each received
// packet comes with the TTL (hop limit), source, destination and interface
// the receiver must check.
//
// On IPv6 the kernel computes the checksum of every sent advert and
// verifies that of every received one (IPV6_CHECKSUM at offset 6, the
// pseudo-header included, RFC 5798 section 5.2.8). It overwrites whatever
// the checksum field holds, so the codec's own checksum may be sent as it
// is; packets failing the check are dropped by the kernel and counted
// (DropCounter).
package transport
