package transport

import (
	"errors"
	"net/netip"
	"time"
)

// PacketInfo is what the IP header said about a received advert.
type PacketInfo struct {
	Src, Dst netip.Addr
	TTL      int
	IfIndex  int
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

// Options configure a Conn.
type Options struct {
	// Source is the address adverts are sent from (the router's primary
	// address); it enters the checksum of every advert.
	Source netip.Addr
	// Unicast: do not join the multicast group; adverts go to peers.
	Unicast bool
}

// ErrUnsupported is returned where raw IP sockets are not implemented.
var ErrUnsupported = errors.New("transport: raw VRRP sockets are supported on Linux only")
