// Package ndp announces an IPv6 VIP with unsolicited Neighbor
// Advertisements and watches for another host claiming it: the IPv6
// counterpart of package arp.
//
// When a VRRP router becomes Master it sends an unsolicited Neighbor
// Advertisement for each virtual IPv6 address (RFC 5798 section 6.4.1,
// RFC 4861 section 7.2.6): to all nodes (ff02::1), Override set so
// neighbours replace the cached link-layer address, Solicited clear, with
// a Target Link-Layer Address option carrying the interface's MAC and hop
// limit 255, from the interface's link-local address. The Router flag is
// set only when the host forwards IPv6 on the interface: a neighbour
// receiving R clear for a router it knew drops it as a default router.
//
// A Monitor reads the Neighbor Advertisements and Solicitations of other
// hosts on the link and reports them as arp.Claim values, so the daemon
// handles a second owner of a VIP alike for both families. An Announcer's
// Probe sends a Neighbor Solicitation for a VIP to its solicited-node
// group, so a host that holds the VIP without ever announcing it answers
// and is seen.
//
// Both work on an AF_PACKET socket (github.com/mdlayher/packet) with the
// frames built here around messages from github.com/mdlayher/ndp, rather
// than on an ICMPv6 socket: sending needs no source address the kernel has
// finished checking, the frames are exactly what tests compare, and every
// received message comes with its Ethernet source, which an ICMPv6 socket
// does not give (an advertisement may lack the link-layer option). A
// packet socket sees what the interface accepts: frames to its MAC, to
// all nodes and to the groups the host joined (the solicited-node groups
// of the VIPs it holds). A BPF filter keeps all other IPv6 traffic in the
// kernel.
// Dial and ListenMonitor open the sockets and work on Linux only; New and
// NewMonitor take any net.PacketConn, which is what tests use.
package ndp
