package transport

import (
	"context"
	"fmt"
	"net"
	"net/netip"
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

// groupIPv6 is the VRRP group for IPv6 (RFC 5798 section 5.1.2.2).
var groupIPv6 = net.ParseIP("ff02::12")

// ipv6Conn is the real Conn over a raw IPv6 socket.
type ipv6Conn struct {
	ifi  *net.Interface
	pc   *ipv6.PacketConn
	rc   syscall.RawConn
	cm   ipv6.ControlMessage
	send rawSender
}

var (
	_ Conn        = (*ipv6Conn)(nil)
	_ DropCounter = (*ipv6Conn)(nil)
)

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
	c := &ipv6Conn{ifi: ifi, pc: ipv6.NewPacketConn(raw), rc: rc}
	// The source goes in IPV6_PKTINFO of every send; without a zone, the
	// interface index says which link a link-local source (or group) is on.
	c.cm = ipv6.ControlMessage{Src: net.IP(opts.Source.WithZone("").AsSlice()), IfIndex: ifi.Index}
	c.send.oob = c.cm.Marshal()
	if err := c.setup(opts); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: VRRP socket on %s: %w", ifi.Name, err)
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
		// a non-blocking recvmsg drops it and reports EAGAIN, on which the
		// runtime waits for the next one. KernelDrops counts it.
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
// checksum or a full receive buffer.
func (c *ipv6Conn) KernelDrops() (uint64, error) {
	sc, err := c.pc.PacketConn.(syscall.Conn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var info [unix.SK_MEMINFO_VARS]uint32
	var serr error
	err = sc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(info))
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, soMeminfo,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			serr = errno
		}
	})
	if err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, fmt.Errorf("transport: SO_MEMINFO: %w", serr)
	}
	return uint64(info[unix.SK_MEMINFO_DROPS]), nil
}

func (c *ipv6Conn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

func (c *ipv6Conn) Close() error { return c.pc.Close() }
