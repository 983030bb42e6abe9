package transport

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// quietSocket is the second raw socket of an IPv4 Conn: its filter keeps
// only the adverts of the patterns, which the main socket's filter drops.
// It is not the poller's: an advert queued there must wake nobody.
type quietSocket struct {
	fd    int
	batch *rawBatch // with each datagram's arrival time in its control messages
	since time.Time // when the queue was last emptied
	// capacity is the receive buffer the kernel granted.
	capacity int
}

// oobLen holds one SCM_TIMESTAMPNS control message.
var oobLen = unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))

var _ Quieter = (*ipv4Conn)(nil)

// SetQuiet implements Quieter.
func (c *ipv4Conn) SetQuiet(patterns []QuietPattern) (int, error) {
	for _, p := range patterns {
		if !quietable(p) {
			return 0, fmt.Errorf("transport: %v with %d bytes cannot be set aside", p.Src, len(p.Payload))
		}
	}
	n := min(len(patterns), c.quiet.capacity/quietBytesPerPattern)
	// And no more than one classic BPF program holds (BPF_MAXINSNS).
	_, _, n = quietPrograms(patterns[:n])
	for {
		err := c.applyQuiet(patterns[:n])
		if err == nil {
			return n, nil
		}
		// The kernel charges a filter to the socket's option memory
		// (net.core.optmem_max): fewer patterns fit.
		if !errors.Is(err, unix.ENOMEM) || n == 0 {
			return 0, err
		}
		n = n * 7 / 8 // a few tries, not one per pattern

	}
}

// applyQuiet installs the filters for ps: first the quiet socket keeps the
// adverts of ps and of the patterns it kept so far, then the main socket
// drops those of ps, then the quiet socket keeps only those of ps: an
// advert may be queued twice meanwhile, never in neither. A failure leaves
// the filters as they were.
func (c *ipv4Conn) applyQuiet(ps []QuietPattern) error {
	union := slices.Clone(c.quietApplied)
	var kept []QuietPattern // in both
	for _, p := range ps {
		if slices.ContainsFunc(c.quietApplied, p.equal) {
			kept = append(kept, p)
		} else {
			union = append(union, p)
		}
	}
	_, quietUnion, used := quietPrograms(union)
	if used < len(union) {
		// Old and new together do not fit one program: remove, then add.
		if err := c.applyQuiet(kept); err != nil {
			return err
		}
		return c.applyQuiet(ps)
	}
	mainNew, quietNew, _ := quietPrograms(ps)
	mainOld, quietOld, _ := quietPrograms(c.quietApplied)
	if err := c.quiet.setFilter(assemble(quietUnion)); err != nil {
		return err
	}
	if err := attachFilter(c.rc, assemble(mainNew)); err != nil {
		c.quiet.setFilter(assemble(quietOld))
		return err
	}
	if err := c.quiet.setFilter(assemble(quietNew)); err != nil {
		attachFilter(c.rc, assemble(mainOld))
		c.quiet.setFilter(assemble(quietOld))
		return err
	}
	c.quietApplied = slices.Clone(ps)
	return nil
}

// assemble assembles a program quietPrograms built (always valid).
func assemble(prog []bpf.Instruction) []bpf.RawInstruction {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		panic("transport: quiet filter: " + err.Error())
	}
	return raw
}

func attachFilter(rc syscall.RawConn, prog []bpf.RawInstruction) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = setFilter(int(fd), prog) }); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("transport: SO_ATTACH_FILTER: %w", serr)
	}
	return nil
}

func setFilter(fd int, prog []bpf.RawInstruction) error {
	if len(prog) == 0 {
		return errors.New("empty filter")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog)
}

func (q *quietSocket) setFilter(prog []bpf.RawInstruction) error {
	if err := setFilter(q.fd, prog); err != nil {
		return fmt.Errorf("transport: quiet socket: SO_ATTACH_FILTER: %w", err)
	}
	return nil
}

// openQuiet opens the quiet socket: bound to the interface like the main
// one, keeping nothing until SetQuiet says what, with arrival times, and
// non-blocking, read with raw system calls outside the poller. Listen
// opens it with the main one, in the same network namespace.
func (c *ipv4Conn) openQuiet() (*quietSocket, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, protoVRRP)
	if err != nil {
		return nil, fmt.Errorf("transport: quiet socket for VRRP on %s: %w", c.ifi.Name, err)
	}
	fail := func(what string, err error) (*quietSocket, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("transport: quiet socket on %s: %s: %w", c.ifi.Name, what, err)
	}
	dropAll, _ := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0}})
	if err := setFilter(fd, dropAll); err != nil {
		return fail("SO_ATTACH_FILTER", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("SO_TIMESTAMPNS", err)
	}
	if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, c.ifi.Name); err != nil {
		return fail("SO_BINDTODEVICE", err)
	}
	// Past net.core.rmem_max with CAP_NET_ADMIN; without, up to it.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, quietBuffer) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, quietBuffer)
	}
	granted, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
	if err != nil {
		return fail("SO_RCVBUF", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0); err != nil {
		return fail("IP_MULTICAST_ALL", err)
	}
	if !c.unicast {
		mreq := &unix.IPMreqn{Multiaddr: [4]byte{224, 0, 0, 18}, Ifindex: int32(c.ifi.Index)}
		if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
			return fail("join 224.0.0.18", err)
		}
	}
	// since starts now: a wall clock stepped before the first read must
	// not age what waits there.
	q := &quietSocket{fd: fd, batch: newRawBatch(receiveBatch, maxDatagram).withControl(oobLen), since: time.Now(), capacity: granted}
	// Whatever arrived before the filter was set.
	for {
		if _, errno := q.batch.recv(uintptr(fd)); errno != 0 {
			break
		}
	}
	return q, nil
}

// quietBuffer is the receive buffer the quiet socket asks for, and
// quietBytesPerPattern what one pattern may need of it: the adverts of up
// to twelve intervals (Master_Down_Interval with master_down_adverts up to
// 10, and a late read) at up to 4 KiB each as the kernel counts them (a
// driver's receive buffer). No more patterns are set than the buffer the
// kernel granted holds: an advert dropped there for want of room would be
// the latest, and its Backup would take over.
const (
	quietBuffer          = 8 << 20
	quietBytesPerPattern = 12 * 4096
)

// ReadQuiet implements Quieter.
func (c *ipv4Conn) ReadQuiet(fn func(payload []byte, info PacketInfo, at time.Time)) error {
	q := c.quiet
	start := time.Now()
	defer func() { q.since = start }()
	for {
		n, errno := q.batch.recv(uintptr(q.fd))
		switch errno {
		case 0:
		case unix.EAGAIN:
			return nil
		default:
			return os.NewSyscallError("recvmmsg", errno)
		}
		now := time.Now()
		for i := range n {
			payload, info, ok := parseIPv4(q.batch.datagram(i))
			if !ok {
				continue
			}
			info.IfIndex = c.ifi.Index
			at := now
			oob, _ := q.batch.control(i)
			if stamp, ok := timestampNS(oob); ok {
				var span, wallSpan time.Duration
				if !q.since.IsZero() {
					span, wallSpan = now.Sub(q.since), now.Round(0).Sub(q.since.Round(0))
				}
				at = now.Add(-arrivalAge(now.Round(0).Sub(stamp), span, wallSpan))
			}
			fn(payload, info, at)
		}
		if n < len(q.batch.hdrs) {
			return nil
		}
	}
}

// timestampNS finds the SCM_TIMESTAMPNS control message in oob.
func timestampNS(oob []byte) (time.Time, bool) {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return time.Time{}, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[unix.CmsgLen(0)]))
			return time.Unix(ts.Sec, ts.Nsec), true
		}
		oob = oob[unix.CmsgSpace(l-unix.CmsgLen(0)):]
	}
	return time.Time{}, false
}
