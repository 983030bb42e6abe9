package lab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"
)

// ICMP echo (RFC 792).
const (
	icmpEchoReply   = 0
	icmpEchoRequest = 8
	probeLen        = 16 // 8-byte header + 8-byte payload: as light as a probe gets
	// ICMPv6 echo (RFC 4443 §4); the kernel computes ICMPv6 checksums.
	icmp6EchoRequest = 128
	icmp6EchoReply   = 129
)

// Prober sends an ICMP echo request to a target from the client namespace
// every period and timestamps the answers. Whichever node holds the VIP
// answers from its kernel, so no responder is needed.
type Prober struct {
	lab    *Lab
	conn   *net.IPConn
	target *net.IPAddr
	id     uint16
	period time.Duration
	// request and reply are the echo types of the target's family.
	request, reply byte

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	sent    uint64
	sentAt  [1 << 16]time.Time // by 16-bit sequence number
	sentSeq [1 << 16]uint64
	answers []Answer
	sends   []Answer // only Sent is set: shows when the prober itself stalled
	lastErr error
}

// StartProber starts probing target from the client namespace. It runs
// until Stop or the end of ctx.
func (l *Lab) StartProber(ctx context.Context, target netip.Addr, period time.Duration) (*Prober, error) {
	if period <= 0 {
		return nil, fmt.Errorf("lab: probe period %v", period)
	}
	network, laddr, request, reply := "ip4:icmp", "0.0.0.0", byte(icmpEchoRequest), byte(icmpEchoReply)
	if target.Is6() {
		if !l.ipv6.on {
			return nil, errNoIPv6
		}
		network, laddr, request, reply = "ip6:ipv6-icmp", "::", icmp6EchoRequest, icmp6EchoReply
	}
	pc, err := listenIn(l.ClientNetns(), network, laddr)
	if err != nil {
		return nil, fmt.Errorf("lab: prober socket: %w", err)
	}
	c := pc.(*net.IPConn)
	enableStamps(c)
	var id [2]byte
	_, _ = rand.Read(id[:])
	ctx, cancel := context.WithCancel(ctx)
	p := &Prober{
		conn: c, target: &net.IPAddr{IP: target.AsSlice()}, id: binary.BigEndian.Uint16(id[:]),
		period: period, request: request, reply: reply, cancel: cancel, answers: make([]Answer, 0, 16384),
	}
	if !l.track(p, p.stop) {
		cancel()
		c.Close()
		return nil, errors.New("lab: closed")
	}
	p.lab = l
	p.wg.Go(func() { p.receive() })
	p.wg.Go(func() { p.send(ctx) })
	// Closing the socket ends receive once the context ends.
	p.wg.Go(func() {
		<-ctx.Done()
		p.conn.Close()
	})
	return p, nil
}

// Stop ends probing and waits for the prober's goroutines; the answers stay
// readable. It is idempotent; the lab's Close calls it too.
func (p *Prober) Stop() {
	p.stop()
	p.lab.untrack(p)
}

func (p *Prober) stop() {
	p.cancel()
	p.wg.Wait()
}

func (p *Prober) send(ctx context.Context) {
	t := time.NewTicker(p.period)
	defer t.Stop()
	pkt := make([]byte, probeLen)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		seq := p.sent
		p.sent++
		s16 := uint16(seq)
		p.sentSeq[s16] = seq
		now := time.Now()
		p.sentAt[s16] = now
		p.sends = append(p.sends, Answer{Seq: seq, Sent: now, Recv: now})
		p.mu.Unlock()
		pkt[0], pkt[1] = p.request, 0
		binary.BigEndian.PutUint16(pkt[2:], 0)
		binary.BigEndian.PutUint16(pkt[4:], p.id)
		binary.BigEndian.PutUint16(pkt[6:], s16)
		binary.BigEndian.PutUint64(pkt[8:], uint64(now.UnixNano()))
		if p.request == icmpEchoRequest {
			binary.BigEndian.PutUint16(pkt[2:], inetChecksum(pkt))
		}
		if _, err := p.conn.WriteTo(pkt, p.target); err != nil {
			p.mu.Lock()
			p.lastErr = err // e.g. EHOSTUNREACH while the neighbour entry fails
			p.mu.Unlock()
		}
	}
}

func (p *Prober) receive() {
	buf, oob := make([]byte, 1500), make([]byte, 128)
	for {
		n, _, at, err := readStamped(p.conn, buf, oob)
		if err != nil {
			return // socket closed by Stop
		}
		// Raw reads come without the IP header.
		b := buf[:n]
		if len(b) < 8 || b[0] != p.reply || binary.BigEndian.Uint16(b[4:]) != p.id {
			continue
		}
		s16 := binary.BigEndian.Uint16(b[6:])
		p.mu.Lock()
		p.answers = append(p.answers, Answer{Seq: p.sentSeq[s16], Sent: p.sentAt[s16], Recv: at})
		p.mu.Unlock()
	}
}

func inetChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// Period is the probe interval.
func (p *Prober) Period() time.Duration { return p.period }

// Sent is the number of probes sent so far.
func (p *Prober) Sent() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// Answers returns the answers received in [from, to] (zero to: until now).
func (p *Prober) Answers(from, to time.Time) []Answer {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.answers), func(k int) bool { return !p.answers[k].Recv.Before(from) })
	var out []Answer
	for _, a := range p.answers[i:] {
		if !to.IsZero() && a.Recv.After(to) {
			break
		}
		out = append(out, a)
	}
	return out
}

// LongestGap is the longest silence between consecutive answers received in
// [from, to]: the outage the client saw, to within one probe period.
func (p *Prober) LongestGap(from, to time.Time) Gap {
	p.mu.Lock()
	defer p.mu.Unlock()
	return longestGap(p.answers, from, to)
}

// LongestSendGap is the longest time in [from, to] between two probes
// sent: when it is much longer than the period, the lab itself was stalled
// (a busy machine), and a gap in the answers may be the lab's, not the VIP's.
func (p *Prober) LongestSendGap(from, to time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return longestGap(p.sends, from, to).Len
}

// LastAnswer is when the last answer arrived (zero if none).
func (p *Prober) LastAnswer() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.answers) == 0 {
		return time.Time{}
	}
	return p.answers[len(p.answers)-1].Recv
}

// AnsweredSince counts answers received at or after t.
func (p *Prober) AnsweredSince(t time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := sort.Search(len(p.answers), func(k int) bool { return !p.answers[k].Recv.Before(t) })
	return len(p.answers) - i
}

// Flowing reports whether answers have arrived without a gap longer than
// maxGap for the whole of the last span, and the last one within maxGap.
func (p *Prober) Flowing(span, maxGap time.Duration) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.answers) == 0 || now.Sub(p.answers[len(p.answers)-1].Recv) > maxGap {
		return false
	}
	from := now.Add(-span)
	i := sort.Search(len(p.answers), func(k int) bool { return !p.answers[k].Recv.Before(from) })
	if i == len(p.answers) || p.answers[i].Recv.Sub(from) > maxGap {
		return false // not answered for the whole span yet
	}
	return longestGap(p.answers, from, now).Len <= maxGap
}

// Lost counts the probes sent in [from, to] that were never answered, and
// how many were sent. Leave a probe's round trip between to and now, or
// the last ones count as lost.
func (p *Prober) Lost(from, to time.Time) (lost, sent int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	answered := make(map[uint64]struct{}, len(p.answers))
	for _, a := range p.answers {
		answered[a.Seq] = struct{}{}
	}
	i := sort.Search(len(p.sends), func(k int) bool { return !p.sends[k].Sent.Before(from) })
	for _, s := range p.sends[i:] {
		if s.Sent.After(to) {
			break
		}
		sent++
		if _, ok := answered[s.Seq]; !ok {
			lost++
		}
	}
	return lost, sent
}
