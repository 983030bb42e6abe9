package transport

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// vrrpChecksumOffset is where the checksum sits in a VRRPv3 packet (RFC 5798
// section 5.2.8); with IPV6_CHECKSUM the kernel fills it in on send and
// verifies it on receive, pseudo-header included.
const vrrpChecksumOffset = 6

// maxDatagram6 bounds what Receive reads: an advert with 255 IPv6
// addresses (8 + 255×16 bytes) fits; a longer datagram is cut and fails
// to decode.
const maxDatagram6 = 4096

// groupIPv6 is the VRRP group for IPv6 (RFC 5798 section 5.1.2.2).
var groupIPv6 = net.ParseIP("ff02::12")

// ipv6Conn is the real Conn over a raw IPv6 socket.
type ipv6Conn struct {
	ifi  *net.Interface
	pc   *ipv6.PacketConn
	rc   syscall.RawConn
	cm   ipv6.ControlMessage
	send rawSender
	// batch and receiving are Receive's, which has one caller at a time
	// (the interface's reader).
	batch     *rawBatch
	receiving receiveCall
	quiet     quietFilters
}

var (
	_ Conn        = (*ipv6Conn)(nil)
	_ Receiver    = (*ipv6Conn)(nil)
	_ DropCounter = (*ipv6Conn)(nil)
)

// controlRoom holds the control messages Receive asks for: the hop limit
// (an int) and IPV6_PKTINFO (destination and interface), with room to
// spare for any the kernel adds.
var controlRoom = unix.CmsgSpace(4) + unix.CmsgSpace(unix.SizeofInet6Pktinfo) + 64

// listen6 opens the IPv6 VRRP socket of ifi.
func listen6(ifi *net.Interface, opts Options) (Conn, error) {
	if opts.Source.Is4In6() || opts.Source.IsUnspecified() || opts.Source.IsMulticast() {
		return nil, fmt.Errorf("transport: source %v is not a usable IPv6 address", opts.Source)
	}
	// As for IPv4: only the groups this socket joined.
	lc := net.ListenConfig{Control: boundToDevice(ifi, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_ALL, "IPV6_MULTICAST_ALL")}
	raw, err := lc.ListenPacket(context.Background(), "ip6:112", "::")
	if err != nil {
		return nil, fmt.Errorf("transport: raw socket for VRRP on %s: %w", ifi.Name, err)
	}
	rc, err := raw.(syscall.Conn).SyscallConn()
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: VRRP socket on %s: %w", ifi.Name, err)
	}
	c := &ipv6Conn{ifi: ifi, pc: ipv6.NewPacketConn(raw), rc: rc, batch: newRawBatch(receiveBatch, maxDatagram6).withControl(controlRoom).withNames6()}
	// The source goes in IPV6_PKTINFO of every send; without a zone, the
	// interface index says which link a link-local source (or group) is on.
	c.cm = ipv6.ControlMessage{Src: net.IP(opts.Source.WithZone("").AsSlice()), IfIndex: ifi.Index}
	c.send.oob = c.cm.Marshal()
	if err := c.setup(opts); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: VRRP socket on %s: %w", ifi.Name, err)
	}
	c.quiet = quietFilters{fam: quiet6, rc: rc}
	if c.quiet.sock, err = openQuiet(quiet6, ifi, opts.Unicast); err != nil {
		raw.Close()
		return nil, err
	}
	return c, nil
}

func (c *ipv6Conn) setup(opts Options) error {
	if err := c.pc.SetControlMessage(ipv6.FlagHopLimit|ipv6.FlagDst|ipv6.FlagInterface|ipv6.FlagSrc, true); err != nil {
		return fmt.Errorf("control messages: %w", err)
	}
	if err := c.pc.SetChecksum(true, vrrpChecksumOffset); err != nil {
		return fmt.Errorf("checksum offload: %w", err)
	}
	if err := c.pc.SetMulticastHopLimit(255); err != nil {
		return fmt.Errorf("multicast hop limit: %w", err)
	}
	if err := c.pc.SetHopLimit(255); err != nil {
		return fmt.Errorf("hop limit: %w", err)
	}
	if err := c.pc.SetTrafficClass(tosInternetControl); err != nil {
		return fmt.Errorf("traffic class: %w", err)
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
	if err := c.pc.JoinGroup(c.ifi, &net.IPAddr{IP: groupIPv6}); err != nil {
		return fmt.Errorf("join ff02::12: %w", err)
	}
	return nil
}

func (c *ipv6Conn) ReadFrom(b []byte) (int, PacketInfo, error) {
	for {
		// A packet whose checksum the kernel refuses never gets here:
		// a non-blocking recvmsg drops it and, on a kernel that checks it
		// at the read, reports EAGAIN, on which the runtime waits for the
		// next arrival even if good packets are queued behind it (Receive,
		// the daemon's read, does not). KernelDrops counts it.
		n, cm, src, err := c.pc.ReadFrom(b)
		if err != nil {
			return 0, PacketInfo{}, err
		}
		if cm == nil {
			continue // cannot check hop limit or destination: never trust it
		}
		var info PacketInfo
		info.TTL = cm.HopLimit
		info.IfIndex = cm.IfIndex
		info.Dst, _ = netip.AddrFromSlice(cm.Dst)
		if ipa, ok := src.(*net.IPAddr); ok {
			info.Src, _ = netip.AddrFromSlice(ipa.IP)
		}
		return n, info, nil
	}
}

// Receive is the IPv4 Conn's Receive for IPv6: recvmmsg(2) as a raw
// system call, the source from each datagram's address and the rest from
// its control messages, parsed in place. A datagram without them (or with
// them cut short) is dropped, as ReadFrom drops it: its hop limit and
// destination cannot be checked.
//
// A short batch does not always mean an empty socket here: a kernel that
// checks the checksum as it hands a datagram over (rawv6_recvmsg) ends the
// batch at one that fails, or the call with EAGAIN, with good datagrams
// still queued behind it, which no new edge of the poller would announce.
// So a short batch looks at the head of the queue (one ioctl) before it
// waits. (The ioctl gives the head datagram's length: an empty datagram
// behind a refused one still waits for the next arrival.)
func (c *ipv6Conn) Receive(fn func(payload []byte, info PacketInfo)) error {
	if c.receiving.read == nil {
		c.receiving.read = func(fd uintptr) bool { return c.receiveReady(fd) }
	}
	return c.receiving.run(c.rc, fn)
}

// receiveReady reads what the socket fd holds, for Receive; false: wait
// for the poller. It returns to the caller after a batch's worth of
// datagrams, received or refused, so that a flood cannot keep it from
// seeing that it should stop.
func (c *ipv6Conn) receiveReady(fd uintptr) bool {
	for taken := 0; taken < len(c.batch.hdrs); {
		n, errno := c.batch.recv(fd)
		switch errno {
		case 0:
		case unix.EAGAIN:
			if queued(fd) > 0 {
				taken++ // a refused checksum ended the call, not an empty queue
				continue
			}
			return false
		default:
			c.receiving.err = os.NewSyscallError("recvmmsg", errno)
			return true
		}
		for i := range n {
			if info, ok := c.packetInfo(i); ok {
				c.receiving.fn(c.batch.datagram(i), info)
			}
		}
		taken += n
		if n < len(c.batch.hdrs) && queued(fd) == 0 {
			return false
		}
	}
	return true // a batch's worth: back to the caller
}

// packetInfo is what datagram i of the batch said of itself.
func (c *ipv6Conn) packetInfo(i int) (PacketInfo, bool) { return packetInfo6(c.batch, i) }

// packetInfo6 is what datagram i of an IPv6 batch said of itself: the
// source from its address, the rest from its control messages.
func packetInfo6(b *rawBatch, i int) (PacketInfo, bool) {
	oob, whole := b.control(i)
	name := &b.names[i]
	if !whole || b.hdrs[i].Hdr.Namelen != unix.SizeofSockaddrInet6 || name.Family != unix.AF_INET6 {
		return PacketInfo{}, false
	}
	info, ok := parseIPv6Control(oob)
	if !ok {
		return PacketInfo{}, false
	}
	info.Src = netip.AddrFrom16(name.Addr)
	return info, true
}

// parseIPv6Control reads the hop limit (IPV6_HOPLIMIT) and the destination
// and interface (IPV6_PKTINFO) from a datagram's control messages without
// allocating; ok only if both are there.
func parseIPv6Control(oob []byte) (info PacketInfo, ok bool) {
	var hopLimit, pktinfo bool
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.CmsgLen(0) || l > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):l]
		if h.Level == unix.IPPROTO_IPV6 {
			switch {
			case h.Type == unix.IPV6_HOPLIMIT && len(data) >= 4:
				info.TTL = int(int32(binary.NativeEndian.Uint32(data)))
				hopLimit = true
			case h.Type == unix.IPV6_PKTINFO && len(data) >= unix.SizeofInet6Pktinfo:
				info.Dst = netip.AddrFrom16([16]byte(data[:16]))
				info.IfIndex = int(binary.NativeEndian.Uint32(data[16:20]))
				pktinfo = true
			}
		}
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next >= len(oob) {
			break
		}
		oob = oob[next:]
	}
	return info, hopLimit && pktinfo
}

func (c *ipv6Conn) WriteTo(b []byte, dst netip.Addr) error {
	if !dst.Is6() || dst.Is4In6() {
		return fmt.Errorf("transport: %v is not an IPv6 destination", dst)
	}
	// The kernel rewrites the checksum field whatever it holds.
	return c.send.sendTo(c.rc, b, dst.WithZone(""))
}

// soMeminfo is SO_MEMINFO (Linux 4.6) of the generic socket option numbers,
// which every architecture Go supports on Linux uses; x/sys lacks it.
const soMeminfo = 55

// KernelDrops returns the socket's drop counter (SK_MEMINFO_DROPS): the
// packets the kernel discarded after they reached the socket, for a bad
// checksum or a full receive buffer. The kernel checks the checksum of
// every datagram for each socket with a filter or a checksum offset before
// it runs the filter, so the quiet socket counts the same bad checksums
// again: only the main socket's counter is reported.
func (c *ipv6Conn) KernelDrops() (uint64, error) {
	var drops uint32
	var serr error
	if err := c.rc.Control(func(fd uintptr) { drops, serr = socketDrops(int(fd)) }); err != nil {
		return 0, err
	}
	return uint64(drops), serr
}

// socketDrops is fd's SK_MEMINFO_DROPS.
func socketDrops(fd int) (uint32, error) {
	var info [unix.SK_MEMINFO_VARS]uint32
	size := uint32(unsafe.Sizeof(info))
	_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, soMeminfo,
		uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return 0, fmt.Errorf("transport: SO_MEMINFO: %w", errno)
	}
	return info[unix.SK_MEMINFO_DROPS], nil
}

func (c *ipv6Conn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

func (c *ipv6Conn) Close() error {
	if c.quiet.sock != nil {
		unix.Close(c.quiet.sock.fd)
	}
	return c.pc.Close()
}
