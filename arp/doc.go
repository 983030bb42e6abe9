// Package arp announces a VIP with gratuitous ARP and watches for another
// host claiming it.
//
// When a VRRP router becomes Master it broadcasts a gratuitous ARP for each
// virtual IPv4 address (RFC 5798 sections 6.4.1 and 6.4.2) so that hosts and
// switches move the address to it. vipd keeps the interface's own MAC
// rather than the virtual router MAC, as keepalived does by default, so the
// announcement is what moves the address. An Announcer sends it as both an
// ARP request and an ARP reply, because receivers differ in which one they
// honour. A Monitor reports other hosts' ARP packets that claim one of the
// interface's VIPs, with the sender's MAC, so the daemon can notice a
// second owner of a VIP.
//
// One Announcer and one Monitor serve every VRRP instance on an interface:
// both are safe for concurrent use, the Announcer keeps each VIP's frames
// ready (Prepare) so that a takeover writes and builds nothing, and the
// daemon hands each claim to the instance whose VIP it names.
//
// # What reaches user space
//
// A busy LAN carries thousands of ARP frames a second, and nearly all of
// them are none of our business. The Monitor's packet socket carries a
// classic BPF filter, rebuilt by SetAddresses when the VIPs change, that
// passes only Ethernet/IPv4 ARP frames whose sender IP is a VIP and whose
// sender MAC is not the interface's own. That is every claim the daemon
// acts on: a gratuitous ARP (a new owner, or the Master that succeeds us),
// and the answer of a second owner to our probe or to a client. Frames
// that merely target a VIP are questions (a client resolving it, RFC 5227
// probes from 0.0.0.0); the kernel answers them and they are dropped. With
// no VIP the filter passes nothing; before the first SetAddresses it passes
// every other host's ARP, as the Monitor did before it had a filter. Run
// checks each frame again in user space, for frames queued before a change
// of filter and for connections without one.
//
// Frames are built with github.com/mdlayher/arp and ethernet and sent on an
// AF_PACKET socket (github.com/mdlayher/packet). Dial and ListenMonitor open
// those sockets and work on Linux only; New and NewMonitor take any
// net.PacketConn, which is what tests use.
package arp
