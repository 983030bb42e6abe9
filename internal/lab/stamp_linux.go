package lab

import (
	"encoding/binary"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel receive timestamps (SO_TIMESTAMPNS) date a packet when it reached
// the socket, not when a busy machine got round to running the reader, so a
// stalled lab does not stretch the outages and advert times it measures.
// They are wall-clock times; time.Time.Sub compares them with time.Now()
// values by wall clock, which is steady over a trial.

// enableStamps turns on SO_TIMESTAMPNS; without it reads fall back to
// time.Now().
func enableStamps(c *net.IPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
}

// readStamped reads one packet's payload (after the IPv4 header, as
// ReadFrom would return it; ReadMsgIP keeps the header) and its kernel
// receive time.
func readStamped(c *net.IPConn, b, oob []byte) (int, *net.IPAddr, time.Time, error) {
	n, oobn, _, from, err := c.ReadMsgIP(b, oob)
	now := time.Now()
	if err != nil {
		return 0, nil, now, err
	}
	if n >= 20 && b[0]>>4 == 4 {
		if hl := int(b[0]&0x0f) * 4; hl >= 20 && hl <= n {
			n = copy(b, b[hl:n])
		}
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return n, from, now, nil
	}
	for _, m := range msgs {
		// struct timespec on 64-bit Linux: two native-endian int64s.
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return n, from, time.Unix(sec, nsec), nil
		}
	}
	return n, from, now, nil
}
