package transport

import (
	"errors"
	"net/netip"
	"time"
)

// PacketInfo is what the IP header said about a received advert.
type PacketInfo struct {
	// Src and Dst are the packet's addresses. IPv6 addresses carry no
	// zone, link-local ones included: the socket serves one interface,
	// IfIndex.
	Src, Dst netip.Addr
	// TTL is the IPv4 TTL or the IPv6 hop limit.
	TTL     int
	IfIndex int
}

// Conn is the VRRP socket of one interface. The daemon uses this interface
// so tests can replace the socket.
type Conn interface {
	// ReadFrom reads the VRRP payload of one packet into b.
	ReadFrom(b []byte) (int, PacketInfo, error)
	// WriteTo sends the VRRP payload b from the configured source to dst
	// (the group or a unicast peer) with TTL 255.
	WriteTo(b []byte, dst netip.Addr) error
	// SetReadDeadline unblocks a pending ReadFrom at shutdown.
	SetReadDeadline(t time.Time) error
	Close() error
}

// A Receiver is a Conn that hands packets to a function as they arrive,
// until the socket fails or its read deadline passes (or, with nil, after
// a burst: call it again); the payload is valid only during the call. The IPv4 Conn implements it, with fewer
// system calls than a ReadFrom per packet.
type Receiver interface {
	Receive(fn func(payload []byte, info PacketInfo)) error
}

// Options configure a Conn.
type Options struct {
	// Source is the address adverts are sent from, and its family is the
	// socket's: the router's primary IPv4 address, or for IPv6 the
	// interface's link-local address (RFC 5798 section 5.1.2.1), which
	// must have left the tentative state before WriteTo can send (the
	// kernel refuses a tentative source). A zone is ignored. It enters the
	// checksum of every advert.
	Source netip.Addr
	// Unicast: do not join the multicast group; adverts go to peers.
	Unicast bool
}

// A DropCounter reports how many received packets the kernel discarded
// before ReadFrom could see them. The IPv6 Conn implements it: the kernel
// verifies the checksum there (IPV6_CHECKSUM) and silently drops packets
// that fail, so they never reach the codec's own check; the count includes
// drops for a full receive buffer.
type DropCounter interface {
	KernelDrops() (uint64, error)
}

// ErrUnsupported is returned where raw IP sockets are not implemented.
var ErrUnsupported = errors.New("transport: raw VRRP sockets are supported on Linux only")
