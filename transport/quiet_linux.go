package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// quietSocket is the second raw socket of a Conn: its filter keeps only
// the adverts of the patterns, which the main socket's filter drops. It is
// not the poller's: an advert queued there must wake nobody.
type quietSocket struct {
	fd    int
	batch *rawBatch // with each datagram's arrival time in its control messages
	since time.Time // when the queue was last emptied
	// capacity is the receive buffer the kernel granted.
	capacity int
	// mayRefuse: the kernel checks each datagram's checksum as it hands
	// it over (IPv6, rawv6_recvmsg) and may end a batch at one it refuses
	// with others behind it. An IPv4 raw socket hands over whatever is
	// queued, so there a short batch is an empty queue.
	mayRefuse bool
}

// oobLen holds one SCM_TIMESTAMPNS control message.
var oobLen = unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))

var (
	_ Quieter = (*ipv4Conn)(nil)
	_ Quieter = (*ipv6Conn)(nil)
)

// quietFilters are what a Conn sets adverts aside with: the main socket,
// the quiet one, and the patterns their filters hold.
type quietFilters struct {
	fam     quietFamily
	rc      syscall.RawConn // the main socket
	sock    *quietSocket
	applied []QuietPattern
	// appliedMain and appliedQuiet are the programs of applied, kept for
	// the next change to fall back on (nil: not built yet).
	appliedMain, appliedQuiet []bpf.RawInstruction
}

// SetQuiet implements Quieter.
func (c *ipv4Conn) SetQuiet(patterns []QuietPattern) (int, error) { return c.quiet.set(patterns) }

// SetQuiet implements Quieter.
func (c *ipv6Conn) SetQuiet(patterns []QuietPattern) (int, error) { return c.quiet.set(patterns) }

func (f *quietFilters) set(patterns []QuietPattern) (int, error) {
	for _, p := range patterns {
		if !f.fam.quietable(p) {
			return 0, fmt.Errorf("transport: %v with %d bytes cannot be set aside", p.Src, len(p.Payload))
		}
	}
	n := min(len(patterns), f.sock.capacity/quietBytesPerPattern)
	// And no more than one classic BPF program holds (BPF_MAXINSNS).
	n = len(f.fam.quietFit(patterns[:n]))
	for {
		err := f.apply(patterns[:n])
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

// apply installs the filters for ps: first the quiet socket keeps the
// adverts of ps and of the patterns it kept so far, then the main socket
// drops those of ps, then the quiet socket keeps only those of ps: an
// advert may be queued twice meanwhile, never in neither. A failure leaves
// the filters as they were. A change that only removes patterns (groups
// that turned Master) or only adds them (groups turning steady) skips the
// step that would attach the quiet program it already has: each attach
// checks and compiles a program of every pattern of the socket in the
// kernel, and bursts of such changes are what a cut or a start-up makes.
func (f *quietFilters) apply(ps []QuietPattern) error {
	union := slices.Clone(f.applied)
	var kept []QuietPattern // in both
	// stays: which applied patterns ps asks for again; any other is
	// removed. Marked by index, not counted: ps may give one twice.
	stays := make([]bool, len(f.applied))
	for _, p := range ps {
		if i := slices.IndexFunc(f.applied, p.equal); i >= 0 {
			kept = append(kept, p)
			stays[i] = true
		} else {
			union = append(union, p)
		}
	}
	if len(f.fam.quietFit(union)) < len(union) {
		// Old and new together do not fit one program: remove, then add.
		if err := f.apply(kept); err != nil {
			return err
		}
		return f.apply(ps)
	}
	if f.appliedMain == nil {
		f.appliedMain, f.appliedQuiet = assemble(f.fam.mainProgram(f.applied)), assemble(f.fam.quietOnly(f.applied))
	}
	quietUnion := f.appliedQuiet // keeps union when nothing is added
	if len(union) > len(f.applied) {
		quietUnion = assemble(f.fam.quietOnly(union))
		if err := f.sock.setFilter(quietUnion); err != nil {
			return err
		}
	}
	mainNew := assemble(f.fam.mainProgram(ps))
	if err := attachFilter(f.rc, mainNew); err != nil {
		f.sock.setFilter(f.appliedQuiet)
		return err
	}
	quietNew := quietUnion // keeps ps when nothing is removed
	if slices.Contains(stays, false) {
		quietNew = assemble(f.fam.quietOnly(ps))
		if err := f.sock.setFilter(quietNew); err != nil {
			attachFilter(f.rc, f.appliedMain)
			f.sock.setFilter(f.appliedQuiet)
			return err
		}
	}
	f.applied = slices.Clone(ps)
	f.appliedMain, f.appliedQuiet = mainNew, quietNew
	return nil
}

// assemble assembles a program mainProgram or quietOnly built (always valid).
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

// openQuiet opens the quiet socket of ifi for the family: bound to the
// interface like the main one, keeping nothing until SetQuiet says what,
// with arrival times, and non-blocking, read with raw system calls outside
// the poller. Listen opens it with the main one, in the same network
// namespace. An IPv6 one has the kernel check the checksum as the main one
// does, and gives each datagram's source, destination and hop limit.
func openQuiet(fam quietFamily, ifi *net.Interface, unicast bool) (*quietSocket, error) {
	domain := unix.AF_INET
	if fam == quiet6 {
		domain = unix.AF_INET6
	}
	fd, err := unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, protoVRRP)
	if err != nil {
		return nil, fmt.Errorf("transport: quiet socket for VRRP on %s: %w", ifi.Name, err)
	}
	fail := func(what string, err error) (*quietSocket, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("transport: quiet socket on %s: %s: %w", ifi.Name, what, err)
	}
	dropAll, _ := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: 0}})
	if err := setFilter(fd, dropAll); err != nil {
		return fail("SO_ATTACH_FILTER", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("SO_TIMESTAMPNS", err)
	}
	if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifi.Name); err != nil {
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
	var batch *rawBatch
	if fam == quiet6 {
		for _, o := range []struct {
			name     string
			opt, val int
		}{
			{"IPV6_MULTICAST_ALL", unix.IPV6_MULTICAST_ALL, 0},
			{"IPV6_CHECKSUM", unix.IPV6_CHECKSUM, vrrpChecksumOffset},
			{"IPV6_RECVPKTINFO", unix.IPV6_RECVPKTINFO, 1},
			{"IPV6_RECVHOPLIMIT", unix.IPV6_RECVHOPLIMIT, 1},
		} {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, o.opt, o.val); err != nil {
				return fail(o.name, err)
			}
		}
		if !unicast {
			mreq := &unix.IPv6Mreq{Interface: uint32(ifi.Index)}
			copy(mreq.Multiaddr[:], groupIPv6.To16())
			if err := unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, mreq); err != nil {
				return fail("join ff02::12", err)
			}
		}
		batch = newRawBatch(receiveBatch, maxDatagram6).withControl(controlRoom + oobLen).withNames6()
	} else {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MULTICAST_ALL, 0); err != nil {
			return fail("IP_MULTICAST_ALL", err)
		}
		if !unicast {
			mreq := &unix.IPMreqn{Multiaddr: [4]byte{224, 0, 0, 18}, Ifindex: int32(ifi.Index)}
			if err := unix.SetsockoptIPMreqn(fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
				return fail("join 224.0.0.18", err)
			}
		}
		batch = newRawBatch(receiveBatch, maxDatagram).withControl(oobLen)
	}
	// since starts now: a wall clock stepped before the first read must
	// not age what waits there.
	q := &quietSocket{fd: fd, batch: batch, since: time.Now(), capacity: granted, mayRefuse: fam == quiet6}
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
	return c.quiet.sock.read(func(q *quietSocket, i int, now time.Time) {
		payload, info, ok := parseIPv4(q.batch.datagram(i))
		if !ok {
			return
		}
		info.IfIndex = c.ifi.Index
		fn(payload, info, q.arrival(i, now))
	})
}

// ReadQuiet implements Quieter.
func (c *ipv6Conn) ReadQuiet(fn func(payload []byte, info PacketInfo, at time.Time)) error {
	return c.quiet.sock.read(func(q *quietSocket, i int, now time.Time) {
		if info, ok := packetInfo6(q.batch, i); ok {
			fn(q.batch.datagram(i), info, q.arrival(i, now))
		}
	})
}

// read hands each datagram waiting to each, its batch index and when the
// batch was read, until the queue is empty. A kernel that checks an IPv6
// checksum as it hands a datagram over ends a call at one that fails, with
// others behind it (see ipv6Conn.Receive), so there a short batch looks at
// the head of the queue before it stops; an IPv4 Backup's wake-up spares
// that system call.
func (q *quietSocket) read(each func(q *quietSocket, i int, now time.Time)) error {
	start := time.Now()
	defer func() { q.since = start }()
	for {
		n, errno := q.batch.recv(uintptr(q.fd))
		switch errno {
		case 0:
		case unix.EAGAIN:
			if q.mayRefuse && queued(uintptr(q.fd)) > 0 {
				continue // a refused checksum ended the call, not an empty queue
			}
			return nil
		default:
			return os.NewSyscallError("recvmmsg", errno)
		}
		now := time.Now()
		for i := range n {
			each(q, i, now)
		}
		if n < len(q.batch.hdrs) && (!q.mayRefuse || queued(uintptr(q.fd)) == 0) {
			return nil
		}
	}
}

// arrival is when datagram i of the batch read at now arrived, by its
// kernel time stamp (now without one).
func (q *quietSocket) arrival(i int, now time.Time) time.Time {
	oob, _ := q.batch.control(i)
	stamp, ok := timestampNS(oob)
	if !ok {
		return now
	}
	var span, wallSpan time.Duration
	if !q.since.IsZero() {
		span, wallSpan = now.Sub(q.since), now.Round(0).Sub(q.since.Round(0))
	}
	return now.Add(-arrivalAge(now.Round(0).Sub(stamp), span, wallSpan))
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
