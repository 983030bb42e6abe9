package arp

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"
)

// kernelConn is a fakeConn with a kernel filter: deliver runs the attached
// program on a frame when it is queued, as the kernel does.
type kernelConn struct {
	*fakeConn

	fmu       sync.Mutex
	raw       []bpf.RawInstruction
	vm        *bpf.VM
	attached  int
	attachErr error
	onAttach  func() // called inside SetBPF, before the new filter takes effect
}

func newKernelConn() *kernelConn { return &kernelConn{fakeConn: newFakeConn()} }

func (c *kernelConn) SetBPF(raw []bpf.RawInstruction) error {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if c.onAttach != nil {
		c.onAttach()
	}
	if c.attachErr != nil {
		return c.attachErr
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		return errors.New("undecodable instruction")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		return err
	}
	c.raw, c.vm = raw, vm
	c.attached++
	return nil
}

// deliver queues b if the filter passes it, and reports whether it did.
func (c *kernelConn) deliver(t testing.TB, b []byte) bool {
	t.Helper()
	c.fmu.Lock()
	vm := c.vm
	c.fmu.Unlock()
	if vm != nil {
		n, err := vm.Run(b)
		if err != nil {
			t.Fatalf("filter: %v", err)
		}
		if n == 0 {
			return false
		}
		b = b[:min(n, len(b))]
	}
	c.reads <- fakeRead{b: b}
	return true
}

func (c *kernelConn) state() (raw []bpf.RawInstruction, attached int) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	return c.raw, c.attached
}

func assemble(t *testing.T, prog []bpf.Instruction) []bpf.RawInstruction {
	t.Helper()
	raw, err := bpf.Assemble(prog)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// runMonitor runs m until the test ends and returns its claims.
func runMonitor(t *testing.T, m *Monitor) <-chan Claim {
	t.Helper()
	claims := make(chan Claim, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- m.Run(ctx, func(c Claim) { claims <- c }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return claims
}

// claimWait bounds the wait for a claim; it is a deadline, not a measurement.
const claimWait = 10 * time.Second

// nextClaim returns the next claim, failing after claimWait.
func nextClaim(t *testing.T, claims <-chan Claim) Claim {
	t.Helper()
	select {
	case c := <-claims:
		return c
	case <-time.After(claimWait):
		t.Fatal("no claim")
		return Claim{}
	}
}

func TestMonitorSetAddresses(t *testing.T) {
	other := netip.MustParseAddr("198.51.100.2")
	conn := newKernelConn()
	m := NewMonitor(ourIfi, conn)
	// Queued before any filter: the kernel passed it, user space must not.
	conn.deliver(t, claimFrame(t, OperationRequest, other, nil))

	if err := m.SetAddresses([]netip.Addr{testVIP}); err != nil {
		t.Fatalf("SetAddresses: %v", err)
	}
	prog, attached := conn.state()
	if diff := cmp.Diff(assemble(t, claimFilter(ourMAC, []netip.Addr{testVIP})), prog); diff != "" || attached != 1 {
		t.Errorf("attached %d times; filter (-want +got):\n%s", attached, diff)
	}
	// The same set, written otherwise: nothing to attach.
	if err := m.SetAddresses([]netip.Addr{netip.MustParseAddr("::ffff:198.51.100.10"), testVIP}); err != nil {
		t.Errorf("SetAddresses of the same set: %v", err)
	}
	// Bad input and a failing kernel change nothing.
	for _, bad := range [][]netip.Addr{{other, netip.MustParseAddr("2001:db8::10")}, {{}}, {netip.IPv4Unspecified()}} {
		if err := m.SetAddresses(bad); !errors.Is(err, ErrNotIPv4) {
			t.Errorf("SetAddresses(%v) = %v, want ErrNotIPv4", bad, err)
		}
	}
	boom := errors.New("no memory for the filter")
	conn.fmu.Lock()
	conn.attachErr = boom
	conn.fmu.Unlock()
	if err := m.SetAddresses([]netip.Addr{other}); !errors.Is(err, boom) {
		t.Errorf("SetAddresses with a failing kernel = %v, want %v", err, boom)
	}
	if _, attached := conn.state(); attached != 1 {
		t.Errorf("attached %d times, want 1", attached)
	}

	if conn.deliver(t, claimFrame(t, OperationRequest, other, nil)) {
		t.Error("the kernel filter passed a claim of another address")
	}
	if !conn.deliver(t, claimFrame(t, OperationReply, testVIP, nil)) {
		t.Error("the kernel filter dropped a claim of the VIP")
	}
	claims := runMonitor(t, m)
	if c := nextClaim(t, claims); c.IP != testVIP || c.Op != OperationReply {
		t.Errorf("claim %+v, want the VIP's reply", c)
	}
	if n := m.Received(); n != 2 {
		t.Errorf("Received = %d, want 2 (the frame queued before the filter, and the claim)", n)
	}
}

// Frames queued under the previous filter are checked against the new set.
func TestMonitorSetAddressesQueued(t *testing.T) {
	a, b := netip.MustParseAddr("198.51.100.20"), netip.MustParseAddr("198.51.100.21")
	conn := newKernelConn()
	m := NewMonitor(ourIfi, conn)
	mustSet(t, m, a)
	conn.deliver(t, claimFrame(t, OperationRequest, a, nil)) // queued, then a goes
	mustSet(t, m, b)
	if conn.deliver(t, claimFrame(t, OperationRequest, a, nil)) {
		t.Error("the new filter passed the old address")
	}
	conn.deliver(t, claimFrame(t, OperationRequest, b, nil))
	claims := runMonitor(t, m)
	if c := nextClaim(t, claims); c.IP != b {
		t.Errorf("first claim of %v, want %v", c.IP, b)
	}
	if n := m.Received(); n != 2 {
		t.Errorf("Received = %d, want 2", n)
	}
}

// While the filter changes, Run reports the old and the new addresses: a
// claim the new filter passes is not dropped for Run's old set.
func TestMonitorSetAddressesUnionWhileAttaching(t *testing.T) {
	a, b := netip.MustParseAddr("198.51.100.20"), netip.MustParseAddr("198.51.100.21")
	conn := newKernelConn()
	m := NewMonitor(ourIfi, conn)
	mustSet(t, m, a)
	var during *addrSet
	conn.onAttach = func() { during = m.want.Load() }
	mustSet(t, m, b)
	if !during.contains(a) || !during.contains(b) {
		t.Errorf("while attaching Run reports %v, want %v and %v", during.sorted, a, b)
	}
	if got := m.want.Load(); got.contains(a) || !got.contains(b) {
		t.Errorf("after attaching Run reports %v, want %v", got.sorted, b)
	}
}

func TestMonitorSetAddressesEmpty(t *testing.T) {
	conn := newKernelConn()
	m := NewMonitor(ourIfi, conn)
	conn.deliver(t, claimFrame(t, OperationRequest, testVIP, nil)) // before the filter
	mustSet(t, m)
	if prog, _ := conn.state(); len(prog) != 1 {
		t.Errorf("filter for no address has %d instructions: %v", len(prog), prog)
	}
	if conn.deliver(t, claimFrame(t, OperationRequest, testVIP, nil)) {
		t.Error("the filter for no address passed a claim")
	}
	conn.reads <- fakeRead{err: errors.New("end")}
	err := m.Run(context.Background(), func(c Claim) { t.Errorf("claim %+v with no address set", c) })
	if err == nil || m.Received() != 1 {
		t.Errorf("Run = %v, Received %d; want the end and 1", err, m.Received())
	}
}

// A connection without a kernel filter is filtered in user space.
func TestMonitorSetAddressesWithoutKernelFilter(t *testing.T) {
	other := netip.MustParseAddr("198.51.100.2")
	conn := newFakeConn()
	m := NewMonitor(ourIfi, conn)
	mustSet(t, m, testVIP)
	conn.reads <- fakeRead{b: claimFrame(t, OperationRequest, other, nil)}
	conn.reads <- fakeRead{b: claimFrame(t, OperationRequest, testVIP, nil)}
	if c := nextClaim(t, runMonitor(t, m)); c.IP != testVIP {
		t.Errorf("claim of %v, want %v", c.IP, testVIP)
	}
}

// Beyond what the kernel compares it passes every other host's ARP and
// Run selects.
func TestMonitorSetAddressesTooMany(t *testing.T) {
	vips := addrs(netip.MustParseAddr("198.18.0.1"), MaxFilterAddresses+1)
	last := vips[len(vips)-1]
	conn := newKernelConn()
	m := NewMonitor(ourIfi, conn)
	mustSet(t, m, vips...)
	prog, _ := conn.state()
	if diff := cmp.Diff(assemble(t, claimFilter(ourMAC, nil)), prog); diff != "" {
		t.Errorf("filter (-want +got):\n%s", diff)
	}
	if !conn.deliver(t, claimFrame(t, OperationRequest, testVIP, nil)) {
		t.Fatal("the fallback filter dropped another host's ARP")
	}
	conn.deliver(t, claimFrame(t, OperationRequest, last, nil))
	if c := nextClaim(t, runMonitor(t, m)); c.IP != last {
		t.Errorf("claim of %v, want %v", c.IP, last)
	}
}

// SetAddresses may run while Run does (run with -race).
func TestMonitorSetAddressesWhileRunning(t *testing.T) {
	a, b, never := netip.MustParseAddr("198.51.100.20"), netip.MustParseAddr("198.51.100.21"), netip.MustParseAddr("198.51.100.22")
	conn := newKernelConn()
	m := NewMonitor(ourIfi, conn)
	claims := runMonitor(t, m)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			if err := m.SetAddresses([]netip.Addr{[]netip.Addr{a, b}[i%2]}); err != nil {
				t.Errorf("SetAddresses: %v", err)
				return
			}
		}
	})
	wg.Go(func() {
		for i := range 200 {
			conn.deliver(t, claimFrame(t, OperationRequest, []netip.Addr{a, b, never}[i%3], nil))
		}
	})
	wg.Wait()
	mustSet(t, m, never)
	conn.deliver(t, claimFrame(t, OperationRequest, never, nil))
	for {
		c := nextClaim(t, claims)
		if c.IP == never {
			break // the last frame: every earlier one has been read
		}
		if c.IP != a && c.IP != b {
			t.Errorf("claim of %v, never set", c.IP)
		}
	}
}

func mustSet(t *testing.T, m *Monitor, vips ...netip.Addr) {
	t.Helper()
	if vips == nil {
		vips = []netip.Addr{}
	}
	if err := m.SetAddresses(vips); err != nil {
		t.Fatalf("SetAddresses(%v): %v", vips, err)
	}
}

func BenchmarkParseClaim(b *testing.B) {
	set, err := newAddrSet(addrs(netip.MustParseAddr("198.51.100.100"), 16))
	if err != nil {
		b.Fatal(err)
	}
	claimOf := set.sorted[15]
	for _, f := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"claim", claimFrame(b, OperationReply, claimOf, nil), true},
		{"unrelated", claimFrame(b, OperationRequest, netip.MustParseAddr("203.0.113.200"), nil), false},
	} {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok, err := parseClaim(f.b, ourMAC, set); ok != f.ok || err != nil {
					b.Fatalf("ok %v, %v", ok, err)
				}
			}
		})
	}
}
