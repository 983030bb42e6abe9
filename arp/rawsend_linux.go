package arp

import (
	"net"
	"os"
	"syscall"
	"unsafe"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"
)

// rawSendConn is a packet socket whose frames go out with sendto(2) as a
// raw system call. An ordinary one tells the Go scheduler it may block,
// which wakes the runtime's monitor thread every time; a Master probes its
// VIPs every second, so that wake-up would cost more than the frame. The
// socket is non-blocking: the call cannot block.
type rawSendConn struct {
	*packet.Conn
	rc      syscall.RawConn
	ifindex int
}

func newRawSendConn(c *packet.Conn, ifi *net.Interface) (net.PacketConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &rawSendConn{Conn: c, rc: rc, ifindex: ifi.Index}, nil
}

// WriteTo sends the Ethernet frame b (its header included, packet.Raw) to
// addr, a *packet.Addr.
func (c *rawSendConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	pa, ok := addr.(*packet.Addr)
	if !ok || len(pa.HardwareAddr) > 8 || len(b) == 0 {
		return c.Conn.WriteTo(b, addr)
	}
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(unix.ETH_P_ARP), Ifindex: int32(c.ifindex), Halen: uint8(len(pa.HardwareAddr))}
	copy(sa.Addr[:], pa.HardwareAddr)
	var n uintptr
	var errno unix.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		n, _, errno = unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrLinklayer)
		return errno != unix.EAGAIN && errno != unix.EINTR
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, &net.OpError{Op: "write", Net: "packet", Addr: addr, Err: os.NewSyscallError("sendto", errno)}
	}
	return int(n), nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
