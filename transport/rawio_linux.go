package transport

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The I/O of the steady state (one advert in or out per interval) goes
// through raw system calls on non-blocking sockets. An ordinary one tells
// the Go scheduler it may block, and that wakes the runtime's monitor
// thread (sysmon) from its idle sleep every time; sysmon then polls for a
// few short sleeps before it sleeps again. At one advert a second those
// context switches cost several times the read itself. A non-blocking call
// cannot block, so there is nothing for the scheduler to do.

// rawRead reads one datagram from the non-blocking socket fd.
func rawRead(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// rawBatch receives up to len(bufs) datagrams with one recvmmsg(2). With
// withControl, each datagram also gets its control messages (oobs); with
// withNames6 its IPv6 source (names), which an IPv4 datagram has in its
// header.
type rawBatch struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	bufs  [][]byte
	oobs  [][]byte
	names []unix.RawSockaddrInet6
}

func newRawBatch(n, size int) *rawBatch {
	b := &rawBatch{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), bufs: make([][]byte, n)}
	for i := range b.hdrs {
		b.bufs[i] = make([]byte, size)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.hdrs[i].Hdr.Iov = &b.iovs[i]
		b.hdrs[i].Hdr.Iovlen = 1
	}
	return b
}

// withControl gives each datagram of b oobSize bytes of control messages.
func (b *rawBatch) withControl(oobSize int) *rawBatch {
	b.oobs = make([][]byte, len(b.hdrs))
	for i := range b.hdrs {
		b.oobs[i] = make([]byte, oobSize)
		b.hdrs[i].Hdr.Control = &b.oobs[i][0]
	}
	return b
}

// withNames6 gives each datagram of b room for its IPv6 source.
func (b *rawBatch) withNames6() *rawBatch {
	b.names = make([]unix.RawSockaddrInet6, len(b.hdrs))
	for i := range b.hdrs {
		b.hdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&b.names[i]))
	}
	return b
}

// recv fills the batch from the non-blocking socket fd; datagram i is
// bufs[i][:hdrs[i].Len].
func (b *rawBatch) recv(fd uintptr) (int, unix.Errno) {
	// The kernel writes back the lengths of the control messages and the
	// name it filled in: give each its whole room again.
	for i := range b.hdrs {
		h := &b.hdrs[i].Hdr
		h.Flags = 0
		if b.oobs != nil {
			h.SetControllen(len(b.oobs[i]))
		}
		if b.names != nil {
			h.Namelen = unix.SizeofSockaddrInet6
		}
	}
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.hdrs[0])), uintptr(len(b.hdrs)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return int(n), 0
		case unix.EINTR:
		default:
			return 0, errno
		}
	}
}

func (b *rawBatch) datagram(i int) []byte { return b.bufs[i][:b.hdrs[i].Len] }

// control returns datagram i's control messages, and false if the kernel
// cut them short (MSG_CTRUNC).
func (b *rawBatch) control(i int) ([]byte, bool) {
	h := &b.hdrs[i].Hdr
	return b.oobs[i][:h.Controllen], h.Flags&unix.MSG_CTRUNC == 0
}

// queued returns the length of the datagram at the head of the socket's
// receive queue, 0 when it is empty (SIOCINQ of a raw socket).
func queued(fd uintptr) int {
	var n int32
	if _, _, errno := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}

// receiveCall is a Receive in progress: the function given to the poller
// (made once: a closure made at each call escapes to the heap with what it
// holds, and a Backup calls Receive at every wake-up), the caller's fn and
// the error the reads ended with.
type receiveCall struct {
	read func(fd uintptr) bool
	fn   func(payload []byte, info PacketInfo)
	err  error
}

// run reads from rc with read until it is done, handing datagrams to fn.
func (r *receiveCall) run(rc syscall.RawConn, fn func(payload []byte, info PacketInfo)) error {
	r.fn, r.err = fn, nil
	err := rc.Read(r.read)
	rerr := r.err
	r.fn, r.err = nil, nil // keep nothing of the caller alive
	if err != nil {
		return err
	}
	return rerr
}

// rawSender sends datagrams with sendmsg(2) as a raw system call, with a
// control message prepared once (the source address and interface).
type rawSender struct {
	mu  sync.Mutex // instances on one interface share the socket
	oob []byte
	msg unix.Msghdr
	iov unix.Iovec
	sa4 unix.RawSockaddrInet4
	sa6 unix.RawSockaddrInet6
	// write and errno are the call given to the poller, made once: a
	// closure made at each send escapes to the heap with what it holds.
	write func(fd uintptr) bool
	errno unix.Errno
}

// sendTo sends b to dst on the non-blocking socket behind rc. A full send
// buffer (EAGAIN) waits for the poller like any write.
func (s *rawSender) sendTo(rc syscall.RawConn, b []byte, dst netip.Addr) error {
	if len(b) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msg = unix.Msghdr{Iov: &s.iov, Iovlen: 1}
	s.iov.Base = &b[0]
	s.iov.SetLen(len(b))
	if dst.Is4() {
		s.sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: dst.As4()}
		s.msg.Name, s.msg.Namelen = (*byte)(unsafe.Pointer(&s.sa4)), unix.SizeofSockaddrInet4
	} else {
		s.sa6 = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: dst.As16()}
		s.msg.Name, s.msg.Namelen = (*byte)(unsafe.Pointer(&s.sa6)), unix.SizeofSockaddrInet6
	}
	if len(s.oob) > 0 {
		s.msg.Control = &s.oob[0]
		s.msg.SetControllen(len(s.oob))
	}
	if s.write == nil {
		s.write = func(fd uintptr) bool {
			_, _, s.errno = unix.RawSyscall(unix.SYS_SENDMSG, fd, uintptr(unsafe.Pointer(&s.msg)), unix.MSG_DONTWAIT)
			return s.errno != unix.EAGAIN && s.errno != unix.EINTR
		}
	}
	s.errno = 0
	err := rc.Write(s.write)
	errno := s.errno
	s.iov.Base, s.msg.Control = nil, nil // keep nothing of b alive
	if err != nil {
		return err
	}
	if errno != 0 {
		return &net.OpError{Op: "write", Net: "ip", Addr: &net.IPAddr{IP: dst.AsSlice()}, Err: os.NewSyscallError("sendmsg", errno)}
	}
	return nil
}
