package arp

import (
	"errors"
	"fmt"
	"net"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

var _ filterConn = (*packet.Conn)(nil)

// Dial opens a send-only packet socket on ifi and returns an Announcer for
// it. It needs CAP_NET_RAW.
func Dial(ifi *net.Interface) (*Announcer, error) {
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%w: %s", ErrNotEthernet, ifi.Name)
	}
	// Protocol 0: the socket is bound for sending and receives nothing, so
	// it needs no reading.
	c, err := packet.Listen(ifi, packet.Raw, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("arp: opening packet socket on %s: %w", ifi.Name, err)
	}
	raw, err := newRawSendConn(c, ifi)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("arp: packet socket on %s: %w", ifi.Name, err)
	}
	return New(ifi, raw), nil
}

// ListenMonitor opens a packet socket receiving ARP on ifi and returns a
// Monitor for it. It needs CAP_NET_RAW. Its kernel filter passes other
// hosts' Ethernet/IPv4 ARP until SetAddresses narrows it to the VIPs.
func ListenMonitor(ifi *net.Interface) (*Monitor, error) {
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%w: %s", ErrNotEthernet, ifi.Name)
	}
	filter, err := bpf.Assemble(claimFilter(ifi.HardwareAddr, nil))
	if err != nil {
		return nil, fmt.Errorf("arp: assembling the ARP filter: %w", err)
	}
	// The filter goes on before bind, so no frame is queued unfiltered.
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_ARP, &packet.Config{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("arp: opening packet socket on %s: %w", ifi.Name, err)
	}
	return NewMonitor(ifi, c), nil
}

// transient reports a read error after which the socket still works: the
// kernel reports ENETDOWN once when the link goes down, and the socket
// receives again when it comes back.
func transient(err error) bool {
	return errors.Is(err, unix.ENETDOWN)
}
