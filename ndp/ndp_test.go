package ndp

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
	"github.com/mdlayher/ethernet"
	mdndp "github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"github.com/vipd/vipd/arp"
	"golang.org/x/net/bpf"
)

var (
	ourMAC   = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}
	theirMAC = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x02}
	testVIP  = netip.MustParseAddr("2001:db8::10")
	ourLL    = netip.MustParseAddr("fe80::1")
	theirLL  = netip.MustParseAddr("fe80::2")
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

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The expected frames were made with scapy, an independent encoder.
func TestAnnounceAndProbeFrames(t *testing.T) {
	tests := []struct {
		name   string
		router bool
		send   func(*Announcer) error
		want   fakeWrite
	}{
		{
			name: "unsolicited advertisement",
			send: func(a *Announcer) error { return a.Announce(testVIP) },
			want: fakeWrite{
				b: mustHex(t, `333300000001 02005e100001 86dd
					60000000 0020 3a ff fe800000000000000000000000000001 ff020000000000000000000000000001
					88 00 ca43 20000000 20010db8000000000000000000000010 02 01 02005e100001`),
				addr: &packet.Addr{HardwareAddr: net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}},
			},
		},
		{
			name:   "unsolicited advertisement of a router",
			router: true,
			send:   func(a *Announcer) error { return a.Announce(testVIP.WithZone("eth0")) },
			want: fakeWrite{
				b: mustHex(t, `333300000001 02005e100001 86dd
					60000000 0020 3a ff fe800000000000000000000000000001 ff020000000000000000000000000001
					88 00 4a43 a0000000 20010db8000000000000000000000010 02 01 02005e100001`),
				addr: &packet.Addr{HardwareAddr: net.HardwareAddr{0x33, 0x33, 0, 0, 0, 1}},
			},
		},
		{
			name: "probe to the solicited-node group",
			send: func(a *Announcer) error { return a.Probe(testVIP, ourLL) },
			want: fakeWrite{
				b: mustHex(t, `3333ff000010 02005e100001 86dd
					60000000 0020 3a ff fe800000000000000000000000000001 ff0200000000000000000001ff000010
					87 00 ed32 00000000 20010db8000000000000000000000010 01 01 02005e100001`),
				addr: &packet.Addr{HardwareAddr: net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 0x10}},
			},
		},
		{
			name: "probe from the source when from is IPv4",
			send: func(a *Announcer) error { return a.Probe(testVIP, netip.MustParseAddr("198.51.100.1")) },
			want: fakeWrite{
				b: mustHex(t, `3333ff000010 02005e100001 86dd
					60000000 0020 3a ff fe800000000000000000000000000001 ff0200000000000000000001ff000010
					87 00 ed32 00000000 20010db8000000000000000000000010 01 01 02005e100001`),
				addr: &packet.Addr{HardwareAddr: net.HardwareAddr{0x33, 0x33, 0xff, 0, 0, 0x10}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := newFakeConn()
			if err := tt.send(New(ourIfi, conn, ourLL.WithZone("eth0"), tt.router)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]fakeWrite{tt.want}, conn.writes, cmp.AllowUnexported(fakeWrite{})); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAnnounceRoundTrip decodes what Announce sends with the libraries.
func TestAnnounceRoundTrip(t *testing.T) {
	conn := newFakeConn()
	if err := New(ourIfi, conn, ourLL, false).Announce(testVIP); err != nil {
		t.Fatal(err)
	}
	var f ethernet.Frame
	if err := f.UnmarshalBinary(conn.writes[0].b); err != nil {
		t.Fatal(err)
	}
	if f.EtherType != ethernet.EtherTypeIPv6 || !bytes.Equal(f.Source, ourMAC) {
		t.Errorf("frame type %v source %v", f.EtherType, f.Source)
	}
	if got := icmpChecksum(f.Payload[ipv6HeaderLen:], ourLL, allNodes); got != 0 {
		t.Errorf("checksum does not verify: %#x", got)
	}
	m, err := mdndp.ParseMessage(f.Payload[ipv6HeaderLen:])
	if err != nil {
		t.Fatal(err)
	}
	want := &mdndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: testVIP,
		Options:       []mdndp.Option{&mdndp.LinkLayerAddress{Direction: mdndp.Target, Addr: ourMAC}},
	}
	if diff := cmp.Diff(want, m, cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("advertisement (-want +got):\n%s", diff)
	}
}

func TestAnnounceErrors(t *testing.T) {
	conn := newFakeConn()
	a := New(ourIfi, conn, ourLL, false)
	for _, ip := range []netip.Addr{{}, netip.MustParseAddr("198.51.100.10"), netip.MustParseAddr("::ffff:198.51.100.10"),
		netip.IPv6Unspecified(), netip.IPv6Loopback(), allNodes} {
		if err := a.Announce(ip); !errors.Is(err, ErrNotIPv6) {
			t.Errorf("Announce(%v) = %v, want ErrNotIPv6", ip, err)
		}
		if err := a.Probe(ip, ourLL); !errors.Is(err, ErrNotIPv6) {
			t.Errorf("Probe(%v) = %v, want ErrNotIPv6", ip, err)
		}
	}
	if err := New(&net.Interface{Name: "tun0"}, conn, ourLL, false).Announce(testVIP); !errors.Is(err, ErrNotEthernet) {
		t.Errorf("Announce without a MAC = %v, want ErrNotEthernet", err)
	}
	if err := New(ourIfi, conn, netip.Addr{}, false).Announce(testVIP); !errors.Is(err, ErrNoLinkLocal) {
		t.Errorf("Announce without a source = %v, want ErrNoLinkLocal", err)
	}
	if len(conn.writes) != 0 {
		t.Errorf("invalid announcements wrote %d frames", len(conn.writes))
	}
	conn.writeErr = errors.New("no buffer space")
	if err := a.Announce(testVIP); err == nil || !strings.Contains(err.Error(), "no buffer space") {
		t.Errorf("Announce with a failing write = %v", err)
	}
	if err := a.Close(); err != nil || !conn.closed {
		t.Errorf("Close = %v, closed %v", err, conn.closed)
	}
}

// ndpFrame builds an NDP frame from theirMAC, then changes it with edit
// (after the checksum was computed).
func ndpFrame(t testing.TB, m mdndp.Message, src, dst netip.Addr, edit func(f *ethernet.Frame, ip []byte)) []byte {
	t.Helper()
	b, err := frame(theirMAC, src, dst, m)
	if err != nil {
		t.Fatal(err)
	}
	if edit == nil {
		return b
	}
	var f ethernet.Frame
	if err := f.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	edit(&f, f.Payload)
	b, err = f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func unsolicitedNA(mac net.HardwareAddr) *mdndp.NeighborAdvertisement {
	return &mdndp.NeighborAdvertisement{Override: true, TargetAddress: testVIP,
		Options: []mdndp.Option{&mdndp.LinkLayerAddress{Direction: mdndp.Target, Addr: mac}}}
}

func TestParseClaim(t *testing.T) {
	snm, _ := mdndp.SolicitedNodeMulticast(testVIP)
	otherMAC := net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x00, 0x03}
	valid := ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil)
	tests := []struct {
		name    string
		b       []byte
		want    arp.Claim
		ok      bool
		wantErr bool
	}{
		{
			name: "unsolicited advertisement",
			b:    valid,
			want: arp.Claim{IP: testVIP, MAC: theirMAC, Op: arp.OperationReply, Target: testVIP}, ok: true,
		},
		{
			name: "solicited advertisement answering us",
			b: ndpFrame(t, &mdndp.NeighborAdvertisement{Solicited: true, Override: true, TargetAddress: testVIP,
				Options: []mdndp.Option{&mdndp.LinkLayerAddress{Direction: mdndp.Target, Addr: theirMAC}}}, testVIP, ourLL, nil),
			want: arp.Claim{IP: testVIP, MAC: theirMAC, Op: arp.OperationReply, Target: ourLL}, ok: true,
		},
		{
			name: "advertisement without option: the frame's source",
			b:    ndpFrame(t, &mdndp.NeighborAdvertisement{Override: true, TargetAddress: testVIP}, theirLL, allNodes, nil),
			want: arp.Claim{IP: testVIP, MAC: theirMAC, Op: arp.OperationReply, Target: testVIP}, ok: true,
		},
		{
			name: "advertisement for another MAC (a proxy)",
			b:    ndpFrame(t, unsolicitedNA(otherMAC), theirLL, allNodes, nil),
			want: arp.Claim{IP: testVIP, MAC: otherMAC, Op: arp.OperationReply, Target: testVIP}, ok: true,
		},
		{
			name: "solicitation from the VIP",
			b: ndpFrame(t, &mdndp.NeighborSolicitation{TargetAddress: ourLL,
				Options: []mdndp.Option{&mdndp.LinkLayerAddress{Direction: mdndp.Source, Addr: theirMAC}}}, testVIP, snm, nil),
			want: arp.Claim{IP: testVIP, MAC: theirMAC, Op: arp.OperationRequest, Target: ourLL}, ok: true,
		},
		{
			name: "duplicate address detection",
			b:    ndpFrame(t, &mdndp.NeighborSolicitation{TargetAddress: testVIP}, netip.IPv6Unspecified(), snm, nil),
		},
		{
			name: "our own Ethernet source",
			b:    ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, func(f *ethernet.Frame, _ []byte) { f.Source = ourMAC }),
		},
		{
			name: "our own MAC in the option",
			b:    ndpFrame(t, unsolicitedNA(ourMAC), theirLL, allNodes, nil),
		},
		{
			name: "forwarded: hop limit 254",
			b:    withByte(valid, 14+7, 254),
		},
		{
			name: "multicast target",
			b:    ndpFrame(t, &mdndp.NeighborAdvertisement{TargetAddress: allNodes}, theirLL, allNodes, nil),
		},
		{
			name: "router solicitation",
			b:    ndpFrame(t, &mdndp.RouterSolicitation{}, theirLL, netip.MustParseAddr("ff02::2"), nil),
		},
		{
			name: "not IPv6",
			b:    ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, func(f *ethernet.Frame, _ []byte) { f.EtherType = ethernet.EtherTypeARP }),
		},
		{
			name: "extension header",
			b:    withByte(valid, 14+6, 0),
		},
		{name: "bad checksum", b: withByte(valid, 14+40+3, valid[14+40+3]^1), wantErr: true},
		{name: "code 1", b: withByte(valid, 14+40+1, 1), wantErr: true},
		{name: "truncated", b: valid[:14+40+20], wantErr: true},
		{name: "short IPv6 header", b: valid[:14+39], wantErr: true},
		{name: "IPv4 version", b: withByte(valid, 14, 0x45), wantErr: true},
		{name: "short Ethernet header", b: valid[:13], wantErr: true},
		{
			name: "payload length beyond the frame",
			b:    withByte(valid, 14+4, 1), wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := parseClaim(tt.b, ourMAC)
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

// An unsolicited advertisement is a gratuitous claim, an answer is not.
func TestClaimGratuitous(t *testing.T) {
	unsolicited, _, _ := parseClaim(ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil), ourMAC)
	answer, _, _ := parseClaim(ndpFrame(t, &mdndp.NeighborAdvertisement{Solicited: true, TargetAddress: testVIP}, testVIP, ourLL, nil), ourMAC)
	if !unsolicited.Gratuitous() || answer.Gratuitous() {
		t.Errorf("Gratuitous: unsolicited %v, answer %v; want true, false", unsolicited.Gratuitous(), answer.Gratuitous())
	}
}

func withByte(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

func FuzzParseClaim(f *testing.F) {
	f.Add(ndpFrame(f, unsolicitedNA(theirMAC), theirLL, allNodes, nil))
	f.Add(ndpFrame(f, &mdndp.NeighborSolicitation{TargetAddress: testVIP}, theirLL, allNodes, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok, err := parseClaim(b, ourMAC)
		if err != nil && ok {
			t.Fatal("ok with an error")
		}
		if ok && (!c.IP.Is6() || c.IP.IsUnspecified() || len(c.MAC) != 6 || bytes.Equal(c.MAC, ourMAC)) {
			t.Fatalf("bad claim %+v", c)
		}
	})
}

func TestFilter(t *testing.T) {
	vm, err := bpf.NewVM(ndpFilter)
	if err != nil {
		t.Fatal(err)
	}
	snm, _ := mdndp.SolicitedNodeMulticast(testVIP)
	na := ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil)
	for _, tt := range []struct {
		name string
		b    []byte
		pass bool
	}{
		{"advertisement", na, true},
		{"solicitation", ndpFrame(t, &mdndp.NeighborSolicitation{TargetAddress: testVIP}, theirLL, snm, nil), true},
		{"router solicitation", ndpFrame(t, &mdndp.RouterSolicitation{}, theirLL, allNodes, nil), false},
		{"redirect", withByte(na, 14+40, 137), false},
		{"echo request", withByte(na, 14+40, 128), false},
		{"VRRP", withByte(na, 14+6, 112), false},
		{"ARP", withByte(na, 12, 0x08), false},
	} {
		n, err := vm.Run(tt.b)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if (n > 0) != tt.pass || (tt.pass && n < len(tt.b)) {
			t.Errorf("%s: filter keeps %d of %d bytes, want pass %v", tt.name, n, len(tt.b), tt.pass)
		}
	}
}

func TestMonitorRun(t *testing.T) {
	conn := newFakeConn()
	m := NewMonitor(ourIfi, conn)
	for _, b := range [][]byte{
		{1, 2, 3}, // malformed
		ndpFrame(t, unsolicitedNA(ourMAC), theirLL, allNodes, nil), // ours: ignored
		ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil),
		withByte(ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil), 14+40+2, 0), // bad checksum
		ndpFrame(t, &mdndp.NeighborAdvertisement{Solicited: true, TargetAddress: testVIP}, testVIP, ourLL, nil),
		ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil),
	} {
		conn.reads <- fakeRead{b: b}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []arp.Claim
	err := m.Run(ctx, func(c arp.Claim) {
		if c.At.IsZero() {
			t.Error("claim without time")
		}
		got = append(got, c)
		if len(got) == 3 {
			cancel() // Run must stop although no more frames come
		}
	})
	if err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	want := []arp.Claim{
		{IP: testVIP, MAC: theirMAC, Op: arp.OperationReply, Target: testVIP},
		{IP: testVIP, MAC: theirMAC, Op: arp.OperationReply, Target: ourLL},
		{IP: testVIP, MAC: theirMAC, Op: arp.OperationReply, Target: testVIP},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(arp.Claim{}, "At"), cmpopts.EquateComparable(netip.Addr{})); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if n := m.Malformed(); n != 2 {
		t.Errorf("Malformed = %d, want 2", n)
	}

	// A read error that is not the deadline ends Run with that error.
	conn = newFakeConn()
	boom := errors.New("socket gone")
	conn.reads <- fakeRead{err: boom}
	if err := NewMonitor(ourIfi, conn).Run(context.Background(), func(arp.Claim) {}); !errors.Is(err, boom) {
		t.Errorf("Run = %v, want %v", err, boom)
	}
}

// The claim filter (SetAddresses) passes what can be a claim of a VIP by
// another host, and nothing else: not a host asking for a VIP (a client,
// the Master's own probe for a second owner), not a DAD probe, not our
// own frames, not other addresses.
func TestClaimFilter(t *testing.T) {
	other := netip.MustParseAddr("2001:db8::99")
	second := netip.MustParseAddr("2001:db8::11")
	prog := claimFilter(ourMAC, []netip.Addr{testVIP, second})
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	snm, _ := mdndp.SolicitedNodeMulticast(testVIP)
	na := ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil)
	naSecond := ndpFrame(t, &mdndp.NeighborAdvertisement{Override: true, TargetAddress: second}, theirLL, allNodes, nil)
	for _, tt := range []struct {
		name string
		b    []byte
		pass bool
	}{
		{"unsolicited advertisement of a VIP", na, true},
		{"advertisement of the second VIP", naSecond, true},
		{"solicited advertisement of a VIP", ndpFrame(t, &mdndp.NeighborAdvertisement{Solicited: true, Override: true, TargetAddress: testVIP}, testVIP, ourLL, nil), true},
		{"solicitation from a VIP", ndpFrame(t, &mdndp.NeighborSolicitation{TargetAddress: theirLL}, testVIP, theirLL, nil), true},
		{"advertisement of another address", ndpFrame(t, &mdndp.NeighborAdvertisement{Override: true, TargetAddress: other}, theirLL, allNodes, nil), false},
		{"a probe for the VIP", ndpFrame(t, &mdndp.NeighborSolicitation{TargetAddress: testVIP}, theirLL, snm, nil), false},
		{"DAD probe for the VIP", ndpFrame(t, &mdndp.NeighborSolicitation{TargetAddress: testVIP}, netip.IPv6Unspecified(), snm, nil), false},
		{"our own advertisement", ndpFrame(t, unsolicitedNA(ourMAC), theirLL, allNodes, func(f *ethernet.Frame, _ []byte) { f.Source = ourMAC }), false},
		{"router solicitation", ndpFrame(t, &mdndp.RouterSolicitation{}, testVIP, allNodes, nil), false},
		{"VRRP", withByte(na, 14+6, 112), false},
		{"ARP", withByte(na, 12, 0x08), false},
		{"cut short", na[:14+40+12], false},
	} {
		n, err := vm.Run(tt.b)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if (n > 0) != tt.pass || (tt.pass && n < len(tt.b)) {
			t.Errorf("%s: filter keeps %d of %d bytes, want pass %v", tt.name, n, len(tt.b), tt.pass)
		}
	}
	if vm, err := bpf.NewVM(claimFilter(ourMAC, nil)); err != nil {
		t.Fatal(err)
	} else if n, _ := vm.Run(na); n != 0 {
		t.Error("the filter of no VIPs passed a frame")
	}
	many := make([]netip.Addr, MaxFilterAddresses)
	for i := range many {
		b := testVIP.As16()
		b[13], b[14], b[15] = byte(i>>16), byte(i>>8), byte(i)
		many[i] = netip.AddrFrom16(b)
	}
	if raw, err := bpf.Assemble(claimFilter(ourMAC, many)); err != nil || len(raw) > bpfMaxInstructions {
		t.Errorf("the filter of %d VIPs: %d instructions, %v", len(many), len(raw), err)
	}
}

// SetAddresses attaches the claim filter, once per set, and refuses an
// address that is not IPv6 without changing anything.
func TestMonitorSetAddresses(t *testing.T) {
	conn := &filterFakeConn{fakeConn: newFakeConn()}
	m := NewMonitor(ourIfi, conn)
	if err := m.SetAddresses([]netip.Addr{testVIP, testVIP}); err != nil || len(conn.filters) != 1 {
		t.Fatalf("SetAddresses: %v, %d filters attached", err, len(conn.filters))
	}
	if err := m.SetAddresses([]netip.Addr{testVIP}); err != nil || len(conn.filters) != 1 {
		t.Errorf("the same set again: %v, %d filters attached, want no new one", err, len(conn.filters))
	}
	if err := m.SetAddresses([]netip.Addr{testVIP, netip.MustParseAddr("192.0.2.1")}); err == nil || len(conn.filters) != 1 {
		t.Errorf("an IPv4 address: %v, %d filters attached; want an error and none", err, len(conn.filters))
	}
	vm, err := bpf.NewVM(rawToInstructions(t, conn.filters[0]))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := vm.Run(ndpFrame(t, unsolicitedNA(theirMAC), theirLL, allNodes, nil)); n == 0 {
		t.Error("the attached filter drops a claim of the VIP")
	}
}

type filterFakeConn struct {
	*fakeConn
	filters [][]bpf.RawInstruction
}

func (c *filterFakeConn) SetBPF(raw []bpf.RawInstruction) error {
	c.filters = append(c.filters, raw)
	return nil
}

func rawToInstructions(t *testing.T, raw []bpf.RawInstruction) []bpf.Instruction {
	t.Helper()
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the attached filter does not disassemble")
	}
	return prog
}
