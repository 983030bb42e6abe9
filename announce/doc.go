// Package announce decides when a Master speaks for its virtual addresses:
// the announcement burst after a takeover (gratuitous ARP, RFC 5227 section
// 3; unsolicited Neighbor Advertisements once IPv6 joins), the periodic
// refresh, the probe for a second owner, and what to do when another host
// claims an address.
//
// It is pure, like vrrp.Machine: events in (took over, released, claim
// seen, timer due), actions out (announce, probe, report a conflict). The
// driver carries the actions out through an announcer (ARP today) and arms
// one timer for Next. How an address is announced is the announcer's
// business; when is this package's.
package announce
