package transport

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// ipv4Conn is the real Conn over a raw IPv4 socket.
type ipv4Conn struct {
	ifi    *net.Interface
	raw    net.PacketConn
	pc     *ipv4.PacketConn
	source netip.Addr
	cm     ipv4.ControlMessage
}

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
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			// Only packets that arrived on this interface; several
			// instances on several interfaces must not see each other.
			if serr = unix.SetsockoptString(int(fd), unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifi.Name); serr != nil {
				serr = fmt.Errorf("SO_BINDTODEVICE %s: %w", ifi.Name, serr)
				return
			}
			// Without this the kernel delivers groups joined by any
			// socket on the host to every raw socket.
			if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0); serr != nil {
				serr = fmt.Errorf("IP_MULTICAST_ALL: %w", serr)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	raw, err := lc.ListenPacket(context.Background(), "ip4:112", "0.0.0.0")
	if err != nil {
		return nil, fmt.Errorf("transport: raw socket for VRRP on %s: %w", ifi.Name, err)
	}
	c := &ipv4Conn{ifi: ifi, raw: raw, pc: ipv4.NewPacketConn(raw), source: opts.Source}
	c.cm = ipv4.ControlMessage{Src: net.IP(opts.Source.AsSlice()), IfIndex: ifi.Index}
	if err := c.setup(opts); err != nil {
		raw.Close()
		return nil, fmt.Errorf("transport: VRRP socket on %s: %w", ifi.Name, err)
	}
	return c, nil
}

func (c *ipv4Conn) setup(opts Options) error {
	if err := c.pc.SetControlMessage(ipv4.FlagTTL|ipv4.FlagDst|ipv4.FlagInterface|ipv4.FlagSrc, true); err != nil {
		return fmt.Errorf("control messages: %w", err)
	}
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

func (c *ipv4Conn) ReadFrom(b []byte) (int, PacketInfo, error) {
	for {
		n, cm, src, err := c.pc.ReadFrom(b)
		if err != nil {
			return 0, PacketInfo{}, err
		}
		if cm == nil {
			continue // cannot check TTL or destination: never trust it
		}
		var info PacketInfo
		info.TTL = cm.TTL
		info.IfIndex = cm.IfIndex
		info.Dst, _ = netip.AddrFromSlice(cm.Dst)
		info.Dst = info.Dst.Unmap()
		if ipa, ok := src.(*net.IPAddr); ok {
			info.Src, _ = netip.AddrFromSlice(ipa.IP)
			info.Src = info.Src.Unmap()
		}
		return n, info, nil
	}
}

func (c *ipv4Conn) WriteTo(b []byte, dst netip.Addr) error {
	_, err := c.pc.WriteTo(b, &c.cm, &net.IPAddr{IP: dst.AsSlice()})
	return err
}

func (c *ipv4Conn) SetReadDeadline(t time.Time) error { return c.pc.SetReadDeadline(t) }

func (c *ipv4Conn) Close() error { return c.pc.Close() }
