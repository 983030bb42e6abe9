// Package arp announces a VIP with gratuitous ARP and watches for another
// host claiming it.
//
// When a VRRP router becomes Master it broadcasts a gratuitous ARP for each
// virtual IPv4 address (RFC 5798 sections 6.4.1 and 6.4.2) so that hosts and
// switches move the address to it. vipd keeps the interface's own MAC
// rather than the virtual router MAC, as keepalived does by default, so the
// announcement is what moves the address. An Announcer sends it as both an
// ARP request and an ARP reply, because receivers differ in which one they
// honour. A Monitor reads every ARP packet on the link and reports the
// sender's IPv4 address and MAC, so the daemon can notice a second owner of
// a VIP.
//
// Frames are built with github.com/mdlayher/arp and ethernet and sent on an
// AF_PACKET socket (github.com/mdlayher/packet). Dial and ListenMonitor open
// those sockets and work on Linux only; New and NewMonitor take any
// net.PacketConn, which is what tests use.
package arp
