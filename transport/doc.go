// Package transport carries VRRP advertisements on one network interface:
// a raw IPv4 socket for IP protocol 112 (RFC 5798 section 5.1.1), bound to
// the interface, joined to 224.0.0.18 there only (or sending to unicast
// peers), with TTL 255 and no loopback of its own packets. Each received
// packet comes with the TTL, destination and interface the receiver must
// check.
package transport
