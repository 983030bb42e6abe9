package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// frameSender writes whole Ethernet frames on the stranger's eth0 (an
// AF_PACKET socket opened in its namespace; protocol 0: it receives
// nothing).
type frameSender struct {
	fd   int
	addr unix.SockaddrLinklayer
}

func (l *Lab) strangerSender() (*frameSender, error) {
	s := &frameSender{fd: -1}
	err := inNetns(l.StrangerNetns(), func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		s.fd = fd
		s.addr = unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lab: stranger's sender: %w", err)
	}
	return s, nil
}

func (s *frameSender) send(frame []byte) error {
	a := s.addr
	copy(a.Addr[:], frame[0:6])
	return unix.Sendto(s.fd, frame, 0, &a)
}

func (s *frameSender) close() { _ = unix.Close(s.fd) }

// FloodStats is what a flood sent.
type FloodStats struct {
	Sent   int
	Errors int
	Took   time.Duration
	// ByName counts the frames of each kind (FloodFrames and "random").
	ByName map[string]int
}

// Flood sends FloodFrames, interleaved with random payloads, from the
// stranger to the VRRP group at rate frames a second for d, paced to the
// wall clock in millisecond batches. It needs Options.Stranger.
func (l *Lab) Flood(ctx context.Context, vip netip.Addr, vrid, rate int, d time.Duration) (FloodStats, error) {
	st := FloodStats{ByName: map[string]int{}}
	s, err := l.strangerSender()
	if err != nil {
		return st, err
	}
	defer s.close()
	frames := FloodFrames(StrangerAddr(), l.StrangerMAC(), vip, vrid)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x766c))
	total := int(float64(rate) * d.Seconds())
	start := time.Now()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for st.Sent < total {
		due := min(int(time.Since(start).Seconds()*float64(rate)), total)
		for ; st.Sent < due; st.Sent++ {
			// Every third frame random, the rest cycle through the defects.
			var f FloodFrame
			if st.Sent%3 == 2 {
				f = RandomFloodFrame(StrangerAddr(), l.StrangerMAC(), r)
			} else {
				f = frames[(st.Sent-st.Sent/3)%len(frames)]
			}
			st.ByName[f.Name]++
			if err := s.send(f.Frame); err != nil {
				st.Errors++ // ENOBUFS under load: counted, not fatal
			}
		}
		select {
		case <-ctx.Done():
			st.Took = time.Since(start)
			return st, ctx.Err()
		case <-t.C:
		}
	}
	st.Took = time.Since(start)
	return st, nil
}

// ClaimByARP makes the stranger claim ip with a gratuitous ARP pair, as a
// misconfigured host that starts up with the VIP would. It needs
// Options.Stranger.
func (l *Lab) ClaimByARP(ip netip.Addr) error {
	if !ip.Is4() {
		return fmt.Errorf("lab: claim %v: not IPv4", ip)
	}
	s, err := l.strangerSender()
	if err != nil {
		return err
	}
	defer s.close()
	for _, f := range GratuitousARP(l.StrangerMAC(), ip) {
		if err := s.send(f); err != nil {
			return fmt.Errorf("lab: stranger's ARP claim: %w", err)
		}
	}
	return nil
}
