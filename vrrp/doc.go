// Package vrrp implements the Virtual Router Redundancy Protocol version 3
// (RFC 5798) as pure logic: the advertisement codec (section 5), over IPv4
// and IPv6 and with the IPv4 checksum of RFC 9568 too, and the election
// state machine (section 6).
//
// Nothing here opens a socket or reads the real clock. A Machine takes events
// (an advertisement received, a timer fired, a priority or link change, a
// shutdown) and returns Actions (send an advertisement, take or release the
// virtual addresses, arm or stop a timer, report a transition with its
// cause). The daemon executes the actions; tests drive the machine with a
// fake clock and a simulated network, so minutes of protocol time run in
// microseconds and every transition is deterministic.
package vrrp
