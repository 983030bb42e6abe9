package lab

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"time"
)

// The background ARP load of issue 16: a flat LAN where other hosts ask
// for each other all the time. Its requests are broadcast, so they reach
// every node, but neither their sender nor their target is a VIP.

// arpLoadNet is where the load's hosts live: 192.0.2.0/24 (TEST-NET-1,
// RFC 5737), disjoint from the lab's LAN and its VIPs.
var arpLoadNet = netip.MustParsePrefix("192.0.2.0/24")

// unrelatedARP is the i-th request of the load: hosts .1 to .254 of
// arpLoadNet asking for their next neighbour, round and round.
func unrelatedARP(i int) (sender, target netip.Addr) {
	base := arpLoadNet.Addr().As4()
	s, t := base, base
	s[3] = byte(1 + i%254)
	t[3] = byte(1 + (i+1)%254)
	return netip.AddrFrom4(s), netip.AddrFrom4(t)
}

// ARPRequest is a broadcast ARP request (RFC 826) from mac/sender asking
// for target.
func ARPRequest(mac net.HardwareAddr, sender, target netip.Addr) []byte {
	f := make([]byte, 14+28)
	copy(f[0:6], broadcastMAC)
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:], etherTypeARP)
	a := f[14:]
	binary.BigEndian.PutUint16(a[0:], 1) // Ethernet
	binary.BigEndian.PutUint16(a[2:], etherTypeIPv4)
	a[4], a[5] = 6, 4
	binary.BigEndian.PutUint16(a[6:], 1) // request
	s, t := sender.As4(), target.As4()
	copy(a[8:14], mac)
	copy(a[14:18], s[:])
	// Target hardware address stays zero: that is what is asked.
	copy(a[24:28], t[:])
	return f
}

// ARPLoadStats is what an ARP load sent.
type ARPLoadStats struct {
	Sent, Errors int
	Took         time.Duration
}

// ARPLoad broadcasts unrelated ARP requests (unrelatedARP) from the
// stranger at rate frames a second until ctx ends, paced to the wall clock
// in millisecond batches. It needs Options.Stranger.
func (l *Lab) ARPLoad(ctx context.Context, rate int) (ARPLoadStats, error) {
	var st ARPLoadStats
	s, err := l.strangerSender()
	if err != nil {
		return st, err
	}
	defer s.close()
	// Prepared once: the load must cost the lab little, not the daemons.
	frames := make([][]byte, 254)
	for i := range frames {
		sender, target := unrelatedARP(i)
		frames[i] = ARPRequest(l.StrangerMAC(), sender, target)
	}
	start := time.Now()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		due := int(time.Since(start).Seconds() * float64(rate))
		for ; st.Sent < due; st.Sent++ {
			if err := s.send(frames[st.Sent%len(frames)]); err != nil {
				st.Errors++ // ENOBUFS under load: counted, not fatal
			}
		}
		select {
		case <-ctx.Done():
			st.Took = time.Since(start)
			return st, nil
		case <-t.C:
		}
	}
}
