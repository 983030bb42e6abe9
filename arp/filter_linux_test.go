package arp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	mdarp "github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"github.com/vipd/vipd/internal/nstest"
	"golang.org/x/sys/unix"
)

// watch runs a Monitor on the host, narrowed to vips, until the end of the
// test, and returns it with the claims it reports.
func (x host) watch(t *testing.T, vips ...netip.Addr) (*Monitor, <-chan Claim) {
	t.Helper()
	var m *Monitor
	if err := nstest.Do(x.ns, func() (err error) { m, err = ListenMonitor(x.ifi); return err }); err != nil {
		t.Fatalf("ListenMonitor: %v", err)
	}
	if err := m.SetAddresses(vips); err != nil {
		m.Close()
		t.Fatalf("SetAddresses: %v", err)
	}
	claims := make(chan Claim, 64)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- m.Run(ctx, func(c Claim) {
			select {
			case claims <- c:
			default:
				t.Errorf("claim %+v dropped: test not reading", c)
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
		m.Close()
	})
	return m, claims
}

// A tap is an unfiltered ARP socket on a host: it shows which frames have
// arrived, and so have been judged by every other socket's filter too.
type tap struct {
	conn *packet.Conn
	from chan struct{} // a token for each frame from the given MAC
}

// tap opens a tap on the host, counting frames from src if src is set.
func (x host) tap(t *testing.T, src net.HardwareAddr) *tap {
	t.Helper()
	var c *packet.Conn
	if err := nstest.Do(x.ns, func() (err error) { c, err = packet.Listen(x.ifi, packet.Raw, unix.ETH_P_ARP, nil); return err }); err != nil {
		t.Fatalf("tap: %v", err)
	}
	tp := &tap{conn: c, from: make(chan struct{}, 1024)}
	if src == nil {
		t.Cleanup(func() { c.Close() })
		return tp // nobody reads: Stats counts
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, readBuffer)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("tap: %v", err)
				}
				return
			}
			if n >= 12 && net.HardwareAddr(buf[6:12]).String() == src.String() {
				tp.from <- struct{}{}
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.SetReadDeadline(time.Unix(1, 0))
		<-done
		c.Close()
	})
	return tp
}

// wait waits until n more frames from the tap's source have arrived.
func (tp *tap) wait(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(patience)
	for i := range n {
		select {
		case <-tp.from:
		case <-timeout:
			t.Fatalf("the tap saw %d of %d frames", i, n)
		}
	}
}

// arpFrame builds an ARP frame from mac, to dst.
func arpFrame(t testing.TB, op Operation, mac net.HardwareAddr, sender netip.Addr, dst net.HardwareAddr, target netip.Addr) []byte {
	t.Helper()
	p, err := mdarp.NewPacket(op, mac, sender, dst, target)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&ethernet.Frame{Destination: dst, Source: mac, EtherType: ethernet.EtherTypeARP, Payload: pb}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (x host) send(t *testing.T, ann *Announcer, frames ...[]byte) {
	t.Helper()
	for _, f := range frames {
		if _, err := ann.conn.WriteTo(f, &packet.Addr{HardwareAddr: f[:6]}); err != nil {
			t.Fatalf("sending: %v", err)
		}
	}
}

// The kernel filter passes claims of the VIP (announcements, and a second
// owner's answer) and keeps every other ARP frame from user space.
func TestMonitorFilterOnTheWire(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, b := twoHosts(t)
	m, claims := b.watch(t, testVIP)
	tp := b.tap(t, a.ifi.HardwareAddr)
	ann := a.dial(t)
	macA := a.ifi.HardwareAddr

	a.send(t, ann,
		arpFrame(t, OperationRequest, macA, addrA.Addr(), ethernet.Broadcast, netip.MustParseAddr("198.51.100.77")), // unrelated
		arpFrame(t, OperationRequest, macA, addrA.Addr(), ethernet.Broadcast, testVIP),                              // a client asking
		arpFrame(t, OperationRequest, macA, netip.IPv4Unspecified(), ethernet.Broadcast, testVIP),                   // a probe
	)
	if err := ann.Announce(testVIP); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	// A second owner answering B's probe, to B alone.
	a.send(t, ann, arpFrame(t, OperationReply, macA, testVIP, b.ifi.HardwareAddr, addrB.Addr()))
	tp.wait(t, 6)

	for _, want := range []struct {
		op         Operation
		gratuitous bool
	}{{OperationRequest, true}, {OperationReply, true}, {OperationReply, false}} {
		c := waitClaim(t, claims, testVIP)
		if c.Op != want.op || c.Gratuitous() != want.gratuitous || c.MAC.String() != macA.String() {
			t.Errorf("claim %+v, want %v (gratuitous %v) from %v", c, want.op, want.gratuitous, macA)
		}
	}
	if n := m.Received(); n != 3 {
		t.Errorf("the monitor read %d frames, want the 3 claims", n)
	}
}

// SetAddresses changes what reaches user space while Run runs.
func TestMonitorSetAddressesOnTheWire(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	a, b := twoHosts(t)
	vip1, vip2 := testVIP, netip.MustParseAddr("198.51.100.11")
	m, claims := b.watch(t, vip1)
	tp := b.tap(t, a.ifi.HardwareAddr)
	ann := a.dial(t)
	announce := func(vips ...netip.Addr) {
		t.Helper()
		for _, v := range vips {
			if err := ann.Announce(v); err != nil {
				t.Fatalf("Announce(%v): %v", v, err)
			}
		}
		tp.wait(t, 2*len(vips))
	}
	expect := func(vip netip.Addr, received uint64) {
		t.Helper()
		for range 2 {
			if c := nextClaim(t, claims); c.IP != vip {
				t.Errorf("claim of %v, want %v", c.IP, vip)
			}
		}
		if n := m.Received(); n != received {
			t.Errorf("the monitor read %d frames, want %d", n, received)
		}
	}

	announce(vip2, vip1)
	expect(vip1, 2)
	mustSet(t, m, vip2)
	announce(vip1, vip2)
	expect(vip2, 4)
	mustSet(t, m)
	announce(vip1, vip2)
	mustSet(t, m, vip1, vip2)
	announce(vip1)
	expect(vip1, 6)
	select {
	case c := <-claims:
		t.Errorf("unexpected claim %+v", c)
	default:
	}
}

// Background ARP load: 2,000 unrelated requests a second for 3 seconds
// (the lab figure) reach an unfiltered socket and not the monitor.
func TestMonitorFilterUnderLoad(t *testing.T) {
	nstest.RequireRoot(t, "sudo go test ./arp")
	if testing.Short() {
		t.Skip("sends ARP for 3 seconds")
	}
	a, b := twoHosts(t)
	m, claims := b.watch(t, testVIP)
	control := b.tap(t, nil)
	ann := a.dial(t)

	const perTick, ticks = 20, 300 // every 10 ms
	frame := arpFrame(t, OperationRequest, net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x01, 0x00}, netip.MustParseAddr("198.51.100.100"), ethernet.Broadcast, testVIP)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for i := range ticks {
		<-tick.C
		for j := range perTick {
			// Hosts 198.51.100.100-199 at their own MACs; half ask for
			// the VIP, half for an address of 203.0.113.0/24.
			k := byte((i*perTick + j) % 100)
			frame[11], frame[offSenderMAC+5] = k, k
			frame[offSenderIP+3] = 100 + k
			if j%2 == 0 {
				copy(frame[offTargetIP:], []byte{203, 0, 113, k})
			} else {
				copy(frame[offTargetIP:], testVIP.AsSlice())
			}
			if _, err := ann.conn.WriteTo(frame, broadcastAddr()); err != nil {
				t.Fatalf("after %d frames: %v", sent, err)
			}
			sent++
		}
	}
	if err := ann.Announce(testVIP); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	for range 2 {
		waitClaim(t, claims, testVIP)
	}
	// Every frame reached B's sockets (reading the statistics resets
	// them, so they add up).
	var seen uint64
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		st, err := control.conn.Stats()
		if err != nil {
			t.Fatalf("control socket statistics: %v", err)
		}
		if seen += uint64(st.Packets); seen >= uint64(sent+2) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the control socket saw %d frames of the %d sent", seen, sent+2)
		}
	}
	if n := m.Received(); n != 2 {
		t.Errorf("under %d unrelated frames the monitor read %d, want the 2 claims", sent, n)
	}
}
