package ndp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Dial opens a send-only packet socket on ifi and returns an Announcer for
// it, sending from ifi's IPv6 link-local address (the first one the kernel
// lists) with the Router flag set when the host forwards IPv6 on ifi. Both
// are read now, in the calling thread's network namespace: dial again
// after they change. It needs CAP_NET_RAW.
func Dial(ifi *net.Interface) (*Announcer, error) {
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%w: %s", ErrNotEthernet, ifi.Name)
	}
	src, err := linkLocal(ifi)
	if err != nil {
		return nil, err
	}
	router, err := forwarding(ifi.Name)
	if err != nil {
		return nil, err
	}
	// Protocol 0: the socket is bound for sending and receives nothing.
	c, err := packet.Listen(ifi, packet.Raw, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("ndp: opening packet socket on %s: %w", ifi.Name, err)
	}
	return New(ifi, c, src, router), nil
}

// ListenMonitor opens a packet socket receiving the Neighbor Solicitations
// and Advertisements on ifi and returns a Monitor for it. A BPF filter
// keeps every other frame in the kernel. It needs CAP_NET_RAW.
func ListenMonitor(ifi *net.Interface) (*Monitor, error) {
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%w: %s", ErrNotEthernet, ifi.Name)
	}
	filter, err := bpf.Assemble(ndpFilter)
	if err != nil {
		return nil, fmt.Errorf("ndp: assembling filter: %w", err)
	}
	c, err := packet.Listen(ifi, packet.Raw, unix.ETH_P_IPV6, &packet.Config{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("ndp: opening packet socket on %s: %w", ifi.Name, err)
	}
	return NewMonitor(ifi, c), nil
}

// linkLocal returns ifi's first IPv6 link-local address, without zone.
func linkLocal(ifi *net.Interface) (netip.Addr, error) {
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("ndp: addresses of %s: %w", ifi.Name, err)
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if ok && ip.Is6() && !ip.Is4In6() && ip.IsLinkLocalUnicast() {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%w: %s", ErrNoLinkLocal, ifi.Name)
}

// forwarding reports whether the host routes IPv6 on ifname, which is what
// the Router flag of an advertisement says (RFC 4861 section 4.4).
func forwarding(ifname string) (bool, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + ifname + "/forwarding")
	if errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("%w: %s has no IPv6 configuration (IPv6 disabled?)", ErrNoLinkLocal, ifname)
	}
	if err != nil {
		return false, fmt.Errorf("ndp: reading the forwarding setting of %s: %w", ifname, err)
	}
	return strings.TrimSpace(string(b)) != "0", nil
}

// transient reports a read error after which the socket still works: the
// kernel reports ENETDOWN once when the link goes down.
func transient(err error) bool {
	return errors.Is(err, unix.ENETDOWN)
}
