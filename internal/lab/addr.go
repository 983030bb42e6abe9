package lab

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// The lab's address plan. Only 198.51.100.0/24 (TEST-NET-2, RFC 5737) is used,
// and only inside namespaces the lab made.
const (
	// MaxNodes keeps node addresses (.11 upwards) below the client's .99.
	MaxNodes = 88
	// ClientHost is the client's host number in the LAN.
	ClientHost = 99
	// StrangerHost is the host number of the lab's stranger (Options.Stranger),
	// below the VIP and the nodes.
	StrangerHost = 9
	// VRID is the virtual router the lab's groups use (issue 4).
	VRID = 51
)

// ErrNotRoot is returned by New when the process lacks root, which network
// namespaces, veths and raw sockets need.
var ErrNotRoot = errors.New("lab: needs root (network namespaces, veth pairs and raw sockets); run with sudo")

// LANPrefix is the lab LAN, 198.51.100.0/24.
func LANPrefix() netip.Prefix { return netip.MustParsePrefix("198.51.100.0/24") }

// DefaultVIP is the virtual address the lab's groups share.
func DefaultVIP() netip.Prefix { return netip.MustParsePrefix("198.51.100.10/32") }

// ClientAddr is the client's eth0 address, 198.51.100.99.
func ClientAddr() netip.Addr { return hostAddr(ClientHost) }

// StrangerAddr is the stranger's eth0 address, 198.51.100.9.
func StrangerAddr() netip.Addr { return hostAddr(StrangerHost) }

func nodeAddr(i int) netip.Addr { return hostAddr(byte(10 + i)) }

func hostAddr(h byte) netip.Addr {
	a := LANPrefix().Addr().As4()
	a[3] = h
	return netip.AddrFrom4(a)
}

// labMAC is a locally administered address ending in the host byte; "vl" in
// the middle makes lab frames easy to spot in a capture.
func labMAC(h byte) net.HardwareAddr { return net.HardwareAddr{0x02, 'v', 'l', 0, 0, h} }

// NodeName is the label of node i (1-based): n1, n2, ...
func NodeName(i int) string { return fmt.Sprintf("n%d", i) }
