package arp

import (
	"net"
	"os"
	"sync"
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

	mu sync.Mutex // the instances of an interface share its announcer
	// sa, frame, n and errno are the arguments and results of send, the
	// call given to the poller, made once: a closure made at each frame
	// escapes to the heap with what it holds, and a Master probes every
	// second.
	sa    unix.RawSockaddrLinklayer
	frame []byte
	n     uintptr
	errno unix.Errno
	send  func(fd uintptr) bool
}

func newRawSendConn(c *packet.Conn, ifi *net.Interface) (net.PacketConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &rawSendConn{Conn: c, rc: rc, ifindex: ifi.Index}
	s.send = func(fd uintptr) bool {
		s.n, _, s.errno = unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&s.frame[0])), uintptr(len(s.frame)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&s.sa)), unix.SizeofSockaddrLinklayer)
		return s.errno != unix.EAGAIN && s.errno != unix.EINTR
	}
	return s, nil
}

// WriteTo sends the Ethernet frame b (its header included, packet.Raw) to
// addr, a *packet.Addr.
func (c *rawSendConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	pa, ok := addr.(*packet.Addr)
	if !ok || len(pa.HardwareAddr) > 8 || len(b) == 0 {
		return c.Conn.WriteTo(b, addr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sa = unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(unix.ETH_P_ARP), Ifindex: int32(c.ifindex), Halen: uint8(len(pa.HardwareAddr))}
	copy(c.sa.Addr[:], pa.HardwareAddr)
	c.frame = b
	err := c.rc.Write(c.send)
	c.frame = nil // not kept past the call
	if err != nil {
		return 0, err
	}
	if c.errno != 0 {
		return 0, &net.OpError{Op: "write", Net: "packet", Addr: addr, Err: os.NewSyscallError("sendto", c.errno)}
	}
	return int(c.n), nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
