package transport

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// ipv4Conn is the real Conn over a raw IPv4 socket.
type ipv4Conn struct {
	ifi    *net.Interface
	raw    net.PacketConn
	rc     syscall.RawConn
	pc     *ipv4.PacketConn
	source netip.Addr
	cm     ipv4.ControlMessage
	send   rawSender
	// rbuf holds one datagram with its IP header; ReadFrom has one
	// caller at a time (the interface's reader), and so has Receive, with
	// batch.
	rbuf      []byte
	batch     *rawBatch
	receiving receiveCall
	// unicast: no group to join (the quiet socket's too); quiet: the
	// quiet socket and the patterns of the filters.
	unicast bool
	quiet   quietFilters
}

// maxDatagram bounds what ReadFrom reads: an advert with 255 IPv4
// addresses and the largest IP header is far below it; a longer datagram
// is cut and fails to decode.
const maxDatagram = 2048

// receiveBatch is how many datagrams Receive takes from the socket with one
// system call: adverts of many groups on one link arrive together.
const receiveBatch = 8

var _ Conn = (*ipv4Conn)(nil)

// tosInternetControl is the IP precedence routers give to control traffic
// (keepalived and FRR send VRRP with TOS 0xc0).
const tosInternetControl = 0xc0

// Listen opens the VRRP socket of ifi for the family of opts.Source: raw
// IPv4 for an IPv4 source, raw IPv6 for an IPv6 one. It needs CAP_NET_RAW.
func Listen(ifi *net.Interface, opts Options) (Conn, error) {
	if opts.Source.Is6() && !opts.Source.Is4In6() {
		return listen6(ifi, opts)
	}
	if !opts.Source.Is4() {
		return nil, fmt.Errorf("transport: source %v is neither an IPv4 nor an IPv6 address", opts.Source)
	}
	lc := net.ListenConfig{Control: boundToDevice(ifi, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, "IP_MULTICAST_ALL")}
	raw, err := lc.ListenPacket(context.Background(), "ip4:112", "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("transport: raw socket for VRRP on %s: %w", ifi.Name, err)
	}
	rc, err := raw.(syscall.Conn).SyscallConn()
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: raw socket for VRRP on %s: %w", ifi.Name, err)
	}
	c := &ipv4Conn{ifi: ifi, raw: raw, rc: rc, pc: ipv4.NewPacketConn(raw), source: opts.Source,
		rbuf: make([]byte, maxDatagram), batch: newRawBatch(receiveBatch, maxDatagram), unicast: opts.Unicast}
	c.cm = ipv4.ControlMessage{Src: net.IP(opts.Source.AsSlice()), IfIndex: ifi.Index}
	c.send.oob = c.cm.Marshal()
	if err := c.setup(opts); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: VRRP socket on %s: %w", ifi.Name, err)
	}
	c.quiet = quietFilters{fam: quiet4, rc: rc}
	if c.quiet.sock, err = openQuiet(quiet4, ifi, c.unicast); err != nil {
		raw.Close()
		return nil, err
	}
	return c, nil
}

// boundToDevice is the socket's set-up before it is bound: only packets
// that arrived on ifi (several instances on several interfaces must not see
// each other), and with the family's MULTICAST_ALL option (level, opt) off,
// since without it the kernel delivers groups joined by any socket on the
// host to every raw socket.
func boundToDevice(ifi *net.Interface, level, opt int, optName string) func(string, string, syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifi.Name); serr != nil {
				serr = fmt.Errorf("SO_BINDTODEVICE %s: %w", ifi.Name, serr)
				return
			}
			if serr = unix.SetsockoptInt(int(fd), level, opt, 0); serr != nil {
				serr = fmt.Errorf("%s: %w", optName, serr)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

func (c *ipv4Conn) setup(opts Options) error {
	// The TTL of a send-side control message is ignored: set it on the
	// socket for both kinds of destination.
	if err := c.pc.SetMulticastTTL(255); err != nil {
		return fmt.Errorf("multicast TTL: %w", err)
	}
	if err := c.pc.SetTTL(255); err != nil {
		return fmt.Errorf("TTL: %w", err)
	}
	if err := c.pc.SetTOS(tosInternetControl); err != nil {
		return fmt.Errorf("TOS: %w", err)
	}
	if err := c.pc.SetMulticastLoopback(false); err != nil {
		return fmt.Errorf("multicast loopback: %w", err)
	}
	if err := c.pc.SetMulticastInterface(c.ifi); err != nil {
		return fmt.Errorf("multicast interface: %w", err)
	}
	if opts.Unicast {
		return nil
	}
	if err := c.pc.JoinGroup(c.ifi, &net.IPAddr{IP: net.IPv4(224, 0, 0, 18)}); err != nil {
		return fmt.Errorf("join 224.0.0.18: %w", err)
	}
	return nil
}

// ReadFrom reads one datagram with read(2): a raw IPv4 socket returns it
// with its IP header, which has the source, the destination and the TTL,
// and SO_BINDTODEVICE fixes the interface. recvmsg through x/net would
// also ask the kernel for the socket's protocol on every packet, and
// allocate.
func (c *ipv4Conn) ReadFrom(b []byte) (int, PacketInfo, error) {
	for {
		var n int
		var rerr error
		if err := c.rc.Read(func(fd uintptr) bool {
			n, rerr = rawRead(fd, c.rbuf)
			return rerr != unix.EAGAIN && rerr != unix.EINTR
		}); err != nil {
			return 0, PacketInfo{}, err
		}
		if rerr != nil {
			return 0, PacketInfo{}, rerr
		}
		payload, info, ok := parseIPv4(c.rbuf[:n])
		if !ok {
			continue // no IPv4 header to trust the TTL or addresses of
		}
		info.IfIndex = c.ifi.Index
		return copy(b, payload), info, nil
	}
}

// Receive reads datagrams until the socket fails or its read deadline
// passes, handing each VRRP payload to fn (valid only during the call); it
// also returns nil after a full batch, so that a flood of datagrams cannot
// keep the caller from seeing that it should stop (the next call reads
// before it waits, so nothing is left behind).
// It stays inside one wait of the poller: a batch shorter than
// receiveBatch left the socket empty, and a datagram arriving after it is
// a new edge for the poller, so no read is spent only to hear EAGAIN (one
// system call in two at one advert per interval). ReadFrom, which returns
// to its caller between datagrams, cannot skip that read: the poller's
// readiness is reset at each new wait.
func (c *ipv4Conn) Receive(fn func(payload []byte, info PacketInfo)) error {
	if c.receiving.read == nil {
		c.receiving.read = func(fd uintptr) bool { return c.receiveReady(fd) }
	}
	return c.receiving.run(c.rc, fn)
}

// receiveReady reads what the socket fd holds, for Receive; false: wait
// for the poller.
func (c *ipv4Conn) receiveReady(fd uintptr) bool {
	n, errno := c.batch.recv(fd)
	switch errno {
	case 0:
	case unix.EAGAIN:
		return false
	default:
		c.receiving.err = os.NewSyscallError("recvmmsg", errno)
		return true
	}
	for i := range n {
		if payload, info, ok := parseIPv4(c.batch.datagram(i)); ok {
			info.IfIndex = c.ifi.Index
			c.receiving.fn(payload, info)
		}
	}
	// Short: the socket is empty; full: back to the caller.
	return n == len(c.batch.hdrs)
}

// parseIPv4 splits a datagram into its payload and what its IPv4 header
// says of it.
func parseIPv4(d []byte) ([]byte, PacketInfo, bool) {
	if len(d) < ipv4.HeaderLen || d[0]>>4 != 4 {
		return nil, PacketInfo{}, false
	}
	ihl := int(d[0]&0x0f) * 4
	total := int(d[2])<<8 | int(d[3])
	if ihl < ipv4.HeaderLen || ihl > len(d) {
		return nil, PacketInfo{}, false
	}
	if total >= ihl && total < len(d) {
		d = d[:total] // link-layer padding
	}
	info := PacketInfo{
		Src: netip.AddrFrom4([4]byte(d[12:16])),
		Dst: netip.AddrFrom4([4]byte(d[16:20])),
		TTL: int(d[8]),
	}
	return d[ihl:], info, true
}

func (c *ipv4Conn) WriteTo(b []byte, dst netip.Addr) error {
	if !dst.Is4() {
		return fmt.Errorf("transport: %v is not an IPv4 destination", dst)
	}
	return c.send.sendTo(c.rc, b, dst)
}

func (c *ipv4Conn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

func (c *ipv4Conn) Close() error {
	if c.quiet.sock != nil {
		unix.Close(c.quiet.sock.fd)
	}
	return c.pc.Close()
}
