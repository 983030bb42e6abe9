package arp

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mdarp "github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"golang.org/x/net/bpf"
)

var (
	ourMAC   = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}
	theirMAC = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x02}
	testVIP  = netip.MustParseAddr("198.51.100.10")
	ourIfi   = &net.Interface{Index: 2, Name: "eth0", HardwareAddr: ourMAC}
)

// fakeConn records writes and serves reads from a channel. Of deadlines it
// honours only those already past, which is how Run stops a read.
type fakeConn struct {
	net.PacketConn // nil: methods the code under test must not use panic

	mu       sync.Mutex
	writes   []fakeWrite
	writeErr error
	deadline time.Time
	wake     chan struct{}
	reads    chan fakeRead
	closed   bool
}

type fakeWrite struct {
	b    []byte
	addr net.Addr
}

type fakeRead struct {
	b   []byte
	err error
}

func newFakeConn() *fakeConn {
	return &fakeConn{wake: make(chan struct{}), reads: make(chan fakeRead, 16)}
}

func (c *fakeConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, fakeWrite{b: bytes.Clone(b), addr: addr})
	if c.writeErr != nil {
		return 0, c.writeErr
	}
	return len(b), nil
}

func (c *fakeConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		past := !c.deadline.IsZero() && !time.Now().Before(c.deadline)
		wake := c.wake
		c.mu.Unlock()
		if past {
			return 0, nil, os.ErrDeadlineExceeded
		}
		select {
		case r := <-c.reads:
			if r.err != nil {
				return 0, nil, r.err
			}
			return copy(b, r.b), &packet.Addr{HardwareAddr: theirMAC}, nil
		case <-wake: // the deadline changed
		}
	}
}

func (c *fakeConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	close(c.wake)
	c.wake = make(chan struct{})
	return nil
}

func (c *fakeConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAnnounceFrames(t *testing.T) {
	conn := newFakeConn()
	a := New(ourIfi, conn)
	if err := a.Announce(testVIP); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	// Written out byte by byte, independently of the libraries.
	const pad = "000000000000000000000000000000000000" // to the 60-byte minimum frame
	want := []fakeWrite{
		{
			b: mustHex(t, `ffffffffffff 02005e100001 0806
				0001 0800 06 04 0001
				02005e100001 c633640a
				ffffffffffff c633640a`+pad),
			addr: &packet.Addr{HardwareAddr: ethernet.Broadcast},
		},
		{
			b: mustHex(t, `ffffffffffff 02005e100001 0806
				0001 0800 06 04 0002
				02005e100001 c633640a
				02005e100001 c633640a`+pad),
			addr: &packet.Addr{HardwareAddr: ethernet.Broadcast},
		},
	}
	if diff := cmp.Diff(want, conn.writes, cmp.AllowUnexported(fakeWrite{})); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

// TestAnnounceRoundTrip decodes what Announce sends with the libraries.
func TestAnnounceRoundTrip(t *testing.T) {
	conn := newFakeConn()
	// A v4-mapped VIP is announced as IPv4.
	if err := New(ourIfi, conn).Announce(netip.MustParseAddr("::ffff:198.51.100.10")); err != nil {
		t.Fatalf("Announce: %v", err)
	}
	if len(conn.writes) != 2 {
		t.Fatalf("%d frames, want 2", len(conn.writes))
	}
	for i, op := range []Operation{OperationRequest, OperationReply} {
		var f ethernet.Frame
		if err := f.UnmarshalBinary(conn.writes[i].b); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(f.Destination, ethernet.Broadcast) || !bytes.Equal(f.Source, ourMAC) || f.EtherType != ethernet.EtherTypeARP {
			t.Errorf("frame %d: dst %v src %v type %v", i, f.Destination, f.Source, f.EtherType)
		}
		var got mdarp.Packet
		if err := got.UnmarshalBinary(f.Payload); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		target := ethernet.Broadcast
		if op == OperationReply {
			target = ourMAC
		}
		want := mdarp.Packet{
			HardwareType: 1, ProtocolType: 0x0800, HardwareAddrLength: 6, IPLength: 4,
			Operation:          op,
			SenderHardwareAddr: ourMAC, SenderIP: testVIP,
			TargetHardwareAddr: target, TargetIP: testVIP,
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
			t.Errorf("packet %d (-want +got):\n%s", i, diff)
		}
		// And the decoded frame encodes to the same bytes.
		b, err := f.MarshalBinary()
		if err != nil || !bytes.Equal(b, conn.writes[i].b) {
			t.Errorf("frame %d does not round-trip: %v", i, err)
		}
	}
}

func TestAnnounceErrors(t *testing.T) {
	conn := newFakeConn()
	a := New(ourIfi, conn)
	for _, ip := range []netip.Addr{{}, netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("0.0.0.0")} {
		if err := a.Announce(ip); !errors.Is(err, ErrNotIPv4) {
			t.Errorf("Announce(%v) = %v, want ErrNotIPv4", ip, err)
		}
	}
	if err := New(&net.Interface{Name: "tun0"}, conn).Announce(testVIP); !errors.Is(err, ErrNotEthernet) {
		t.Errorf("Announce without a MAC = %v, want ErrNotEthernet", err)
	}
	if len(conn.writes) != 0 {
		t.Errorf("invalid announcements wrote %d frames", len(conn.writes))
	}

	// A failed write does not stop the other one.
	conn.writeErr = errors.New("no buffer space")
	err := a.Announce(testVIP)
	if err == nil || !strings.Contains(err.Error(), "no buffer space") {
		t.Errorf("Announce with failing writes = %v", err)
	}
	if len(conn.writes) != 2 {
		t.Errorf("%d writes attempted, want 2", len(conn.writes))
	}

	if err := a.Close(); err != nil || !conn.closed {
		t.Errorf("Close = %v, closed %v", err, conn.closed)
	}
}

// claimFrame builds an ARP frame from theirMAC, changed by edit.
func claimFrame(t testing.TB, op Operation, sender netip.Addr, edit func(*ethernet.Frame, *mdarp.Packet)) []byte {
	t.Helper()
	p, err := mdarp.NewPacket(op, theirMAC, sender, ethernet.Broadcast, testVIP)
	if err != nil {
		t.Fatal(err)
	}
	f := &ethernet.Frame{Destination: ethernet.Broadcast, Source: theirMAC, EtherType: ethernet.EtherTypeARP}
	if edit != nil {
		edit(f, p)
	}
	if f.Payload, err = p.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClaimGratuitous(t *testing.T) {
	other := netip.MustParseAddr("198.51.100.2")
	for _, tc := range []struct {
		c    Claim
		want bool
	}{
		{Claim{IP: testVIP, Target: testVIP, Op: OperationRequest}, true},
		{Claim{IP: testVIP, Target: testVIP, Op: OperationReply}, true},
		{Claim{IP: testVIP, Target: other, Op: OperationReply}, false}, // an answer to other's question
		{Claim{IP: testVIP, Target: other, Op: OperationRequest}, false},
	} {
		if got := tc.c.Gratuitous(); got != tc.want {
			t.Errorf("%+v: Gratuitous() = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestParseClaim(t *testing.T) {
	other := netip.MustParseAddr("198.51.100.2")
	valid := claimFrame(t, OperationRequest, testVIP, nil)
	tests := []struct {
		name    string
		b       []byte
		set     []netip.Addr // nil: every address
		want    Claim
		ok      bool
		wantErr bool
	}{
		{name: "gratuitous request", b: valid, want: Claim{IP: testVIP, MAC: theirMAC, Op: OperationRequest, Target: testVIP}, ok: true},
		{
			name: "reply",
			b:    claimFrame(t, OperationReply, testVIP, nil),
			want: Claim{IP: testVIP, MAC: theirMAC, Op: OperationReply, Target: testVIP}, ok: true,
		},
		{
			name: "ordinary request from another address",
			b:    claimFrame(t, OperationRequest, other, nil),
			want: Claim{IP: other, MAC: theirMAC, Op: OperationRequest, Target: testVIP}, ok: true,
		},
		{
			name: "sender in the set",
			b:    claimFrame(t, OperationReply, testVIP, nil),
			set:  []netip.Addr{other, testVIP},
			want: Claim{IP: testVIP, MAC: theirMAC, Op: OperationReply, Target: testVIP}, ok: true,
		},
		{
			name: "sender not in the set",
			b:    claimFrame(t, OperationRequest, other, nil),
			set:  []netip.Addr{testVIP},
		},
		{name: "empty set", b: valid, set: []netip.Addr{}},
		{
			// The kernel moves VLAN tags out of the frame before a packet
			// socket sees it: a tag in the frame is not ARP.
			name: "VLAN tag in the frame",
			b:    claimFrame(t, OperationRequest, testVIP, func(f *ethernet.Frame, _ *mdarp.Packet) { f.VLAN = &ethernet.VLAN{ID: 10} }),
		},
		{
			name: "IEEE 802 hardware type",
			b:    claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.HardwareType = 6 }),
			want: Claim{IP: testVIP, MAC: theirMAC, Op: OperationRequest, Target: testVIP}, ok: true,
		},
		{
			name: "our own sender MAC",
			b:    claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.SenderHardwareAddr = ourMAC }),
		},
		{
			name: "our own Ethernet source",
			b:    claimFrame(t, OperationRequest, testVIP, func(f *ethernet.Frame, _ *mdarp.Packet) { f.Source = ourMAC }),
		},
		{
			name: "probe from 0.0.0.0",
			b:    claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.SenderIP = netip.IPv4Unspecified() }),
		},
		{
			name: "RARP operation",
			b:    claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.Operation = 3 }),
		},
		{
			name: "not ARP",
			b:    claimFrame(t, OperationRequest, testVIP, func(f *ethernet.Frame, _ *mdarp.Packet) { f.EtherType = ethernet.EtherTypeIPv4 }),
		},
		{name: "short Ethernet header", b: valid[:13], wantErr: true},
		{name: "short ARP packet", b: valid[:14+20], wantErr: true},
		{name: "empty", b: nil, wantErr: true},
		{
			name:    "IPv6 protocol type",
			b:       claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.ProtocolType = 0x86dd }),
			wantErr: true,
		},
		{
			name:    "token ring hardware type",
			b:       claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.HardwareType = 4 }),
			wantErr: true,
		},
		{name: "8-byte hardware addresses", b: withByte(valid, 14+4, 8), wantErr: true},
		{name: "16-byte protocol addresses", b: withByte(valid, 14+5, 16), wantErr: true},
		{name: "zero-length protocol addresses", b: withByte(valid, 14+5, 0), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set *addrSet
			if tt.set != nil {
				var err error
				if set, err = newAddrSet(tt.set); err != nil {
					t.Fatal(err)
				}
			}
			got, ok, err := parseClaim(tt.b, ourMAC, set)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
				t.Errorf("claim (-want +got):\n%s", diff)
			}
		})
	}
}

func withByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

// referenceClaim is how parseClaim decoded frames with the libraries
// before it decoded them in place: the fuzz test holds the two together.
func referenceClaim(b []byte, own net.HardwareAddr) (c Claim, ok bool, err error) {
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		return Claim{}, false, err
	}
	if f.EtherType != ethernet.EtherTypeARP {
		return Claim{}, false, nil
	}
	var p mdarp.Packet
	if err := p.UnmarshalBinary(f.Payload); err != nil {
		return Claim{}, false, err
	}
	if (p.HardwareType != hardwareEthernet && p.HardwareType != hardwareIEEE802) ||
		p.ProtocolType != uint16(ethernet.EtherTypeIPv4) || p.HardwareAddrLength != 6 || p.IPLength != 4 {
		return Claim{}, false, errNotEthernetIPv4
	}
	if p.Operation != OperationRequest && p.Operation != OperationReply {
		return Claim{}, false, nil
	}
	if bytes.Equal(p.SenderHardwareAddr, own) || bytes.Equal(f.Source, own) {
		return Claim{}, false, nil
	}
	if !p.SenderIP.Is4() || p.SenderIP.IsUnspecified() {
		return Claim{}, false, nil
	}
	return Claim{IP: p.SenderIP, MAC: p.SenderHardwareAddr, Op: p.Operation, Target: p.TargetIP}, true, nil
}

func FuzzParseClaim(f *testing.F) {
	f.Add(claimFrame(f, OperationRequest, testVIP, nil))
	f.Add(claimFrame(f, OperationReply, netip.MustParseAddr("198.51.100.2"), nil))
	f.Add(withByte(claimFrame(f, OperationRequest, testVIP, nil), 14+4, 255))
	f.Add(withByte(claimFrame(f, OperationRequest, testVIP, nil), 14+5, 255))
	f.Add(claimFrame(f, OperationRequest, testVIP, nil)[:14+28])
	f.Add(claimFrame(f, OperationRequest, testVIP, nil)[:14+27])
	f.Add([]byte{})
	set, err := newAddrSet([]netip.Addr{testVIP})
	if err != nil {
		f.Fatal(err)
	}
	vm, err := bpf.NewVM(claimFilter(ourMAC, set.sorted))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok, err := parseClaim(b, ourMAC, nil)
		if err != nil && ok {
			t.Fatal("ok with an error")
		}
		if ok && (!c.IP.Is4() || c.IP.IsUnspecified() || len(c.MAC) != 6 || bytes.Equal(c.MAC, ourMAC)) {
			t.Fatalf("bad claim %+v", c)
		}
		// A frame with a VLAN tag the libraries decode; a packet socket
		// never sees one.
		if len(b) < 14 || !bytes.Equal(b[12:14], []byte{0x81, 0x00}) && !bytes.Equal(b[12:14], []byte{0x88, 0xa8}) {
			rc, rok, rerr := referenceClaim(b, ourMAC)
			if (rerr != nil) != (err != nil) || rok != ok {
				t.Fatalf("parseClaim = ok %v, %v; the libraries say ok %v, %v", ok, err, rok, rerr)
			}
			if diff := cmp.Diff(rc, c, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
				t.Fatalf("claim differs from the libraries' (-libraries +parseClaim):\n%s", diff)
			}
		}

		// The kernel filter passes every claim of the set, and nothing
		// that user space would find malformed.
		c, ok, err = parseClaim(b, ourMAC, set)
		pass, verr := vm.Run(b)
		if verr != nil {
			t.Fatalf("filter: %v", verr)
		}
		if ok && pass == 0 {
			t.Fatalf("filter drops the claim %+v", c)
		}
		if pass > 0 && err != nil {
			t.Fatalf("filter passes a malformed frame (%v)", err)
		}
	})
}

func TestMonitorRun(t *testing.T) {
	conn := newFakeConn()
	m := NewMonitor(ourIfi, conn)
	other := netip.MustParseAddr("198.51.100.2")
	own := func(_ *ethernet.Frame, p *mdarp.Packet) { p.SenderHardwareAddr = ourMAC }
	for _, b := range [][]byte{
		{1, 2, 3}, // malformed
		claimFrame(t, OperationRequest, testVIP, own),                // ours: ignored
		claimFrame(t, OperationRequest, testVIP, nil),                // reported
		withByte(claimFrame(t, OperationReply, testVIP, nil), 18, 8), // malformed
		claimFrame(t, OperationReply, other, nil),                    // reported
	} {
		conn.reads <- fakeRead{b: b}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []Claim
	err := m.Run(ctx, func(c Claim) {
		if c.At.IsZero() {
			t.Error("claim without time")
		}
		got = append(got, c)
		if len(got) == 2 {
			cancel() // Run must stop although no more frames come
		}
	})
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	want := []Claim{
		{IP: testVIP, MAC: theirMAC, Op: OperationRequest, Target: testVIP},
		{IP: other, MAC: theirMAC, Op: OperationReply, Target: testVIP},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Claim{}, "At"), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if n := m.Malformed(); n != 2 {
		t.Errorf("Malformed = %d, want 2", n)
	}
}

func TestMonitorRunStops(t *testing.T) {
	// Already cancelled: Run returns without reading.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewMonitor(ourIfi, newFakeConn()).Run(ctx, func(Claim) { t.Error("claim") }); err != nil {
		t.Errorf("Run with a cancelled context = %v", err)
	}

	// A read error that is not the deadline ends Run with that error.
	conn := newFakeConn()
	boom := errors.New("socket gone")
	conn.reads <- fakeRead{err: boom}
	if err := NewMonitor(ourIfi, conn).Run(context.Background(), func(Claim) {}); !errors.Is(err, boom) {
		t.Errorf("Run = %v, want %v", err, boom)
	}
}
