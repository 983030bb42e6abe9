package lab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// StartProber probes target from the routed lab's client namespace, as
// Lab.StartProber does on the L2 lab, so BGP failovers are measured with
// the same 1 ms echo probes as ARP ones. The caller stops it; the routed
// lab's Close ends the namespace and so the socket too.
func (l *RoutedLab) StartProber(ctx context.Context, target netip.Addr, period time.Duration) (*Prober, error) {
	if period <= 0 {
		return nil, fmt.Errorf("lab: probe period %v", period)
	}
	if l.client == nil {
		return nil, errors.New("lab: closed")
	}
	network, laddr, request, reply := "ip4:icmp", "0.0.0.0", byte(icmpEchoRequest), byte(icmpEchoReply)
	if target.Is6() {
		network, laddr, request, reply = "ip6:ipv6-icmp", "::", icmp6EchoRequest, icmp6EchoReply
	}
	pc, err := listenIn(l.client.ns, network, laddr)
	if err != nil {
		return nil, fmt.Errorf("lab: prober socket: %w", err)
	}
	c := pc.(*net.IPConn)
	enableStamps(c)
	var id [2]byte
	_, _ = rand.Read(id[:])
	ctx, cancel := context.WithCancel(ctx)
	p := &Prober{
		// Prober.Stop untracks itself from its lab; the routed lab keeps no
		// watchers, so it gets a registry of its own that nothing reads.
		lab:  &Lab{watchers: map[any]func(){}},
		conn: c, target: &net.IPAddr{IP: target.AsSlice()}, id: binary.BigEndian.Uint16(id[:]),
		period: period, request: request, reply: reply, cancel: cancel, answers: make([]Answer, 0, 16384),
	}
	p.wg.Go(func() { p.receive() })
	p.wg.Go(func() { p.send(ctx) })
	p.wg.Go(func() {
		<-ctx.Done()
		p.conn.Close()
	})
	return p, nil
}
