package arp

import (
	"fmt"
	"net"
	"net/netip"
	"testing"

	mdarp "github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"golang.org/x/net/bpf"
)

// filterVM runs the filter as the kernel gets it: assembled, then read
// back from the raw instructions.
func filterVM(t testing.TB, own net.HardwareAddr, vips []netip.Addr) *bpf.VM {
	t.Helper()
	raw, err := bpf.Assemble(claimFilter(own, vips))
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	if len(raw) > bpfMaxInstructions {
		t.Fatalf("%d instructions, over the kernel's %d", len(raw), bpfMaxInstructions)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("Disassemble: not all instructions decoded")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	return vm
}

// addrs returns n addresses counting up from first.
func addrs(first netip.Addr, n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = first
		first = first.Next()
	}
	return out
}

func TestClaimFilter(t *testing.T) {
	ourPrimary := netip.MustParseAddr("198.51.100.1")
	client := netip.MustParseAddr("198.51.100.50")
	unrelated := netip.MustParseAddr("192.0.2.9")
	vips := []netip.Addr{netip.MustParseAddr("198.51.100.9"), testVIP, netip.MustParseAddr("198.51.100.11")}

	target := func(ip netip.Addr) func(*ethernet.Frame, *mdarp.Packet) {
		return func(_ *ethernet.Frame, p *mdarp.Packet) { p.TargetIP = ip }
	}
	frames := map[string][]byte{
		"gratuitous request": claimFrame(t, OperationRequest, testVIP, nil),
		"gratuitous reply":   claimFrame(t, OperationReply, testVIP, nil),
		// A second owner answering our probe.
		"answer to our probe": claimFrame(t, OperationReply, testVIP, target(ourPrimary)),
		"IEEE 802 hardware":   claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.HardwareType = 6 }),
		// Not claims: the kernel answers questions about the VIP.
		"client asking for the VIP": claimFrame(t, OperationRequest, client, nil),
		"probe for the VIP":         claimFrame(t, OperationRequest, netip.IPv4Unspecified(), nil),
		"unrelated request":         claimFrame(t, OperationRequest, client, target(unrelated)),
		"unrelated reply":           claimFrame(t, OperationReply, unrelated, target(client)),
		"our own sender MAC": claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) {
			p.SenderHardwareAddr = ourMAC
		}),
		// Same first four bytes as ours: the last two decide.
		"a MAC like ours": claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) {
			p.SenderHardwareAddr = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x01, 0x01}
		}),
		"not ARP":         claimFrame(t, OperationRequest, testVIP, func(f *ethernet.Frame, _ *mdarp.Packet) { f.EtherType = ethernet.EtherTypeIPv4 }),
		"VLAN tag":        claimFrame(t, OperationRequest, testVIP, func(f *ethernet.Frame, _ *mdarp.Packet) { f.VLAN = &ethernet.VLAN{ID: 10} }),
		"token ring":      claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.HardwareType = 4 }),
		"IPv6 protocol":   claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.ProtocolType = 0x86dd }),
		"8-byte MACs":     withByte(claimFrame(t, OperationRequest, testVIP, nil), 14+4, 8),
		"16-byte IPs":     withByte(claimFrame(t, OperationRequest, testVIP, nil), 14+5, 16),
		"unpadded, whole": claimFrame(t, OperationRequest, testVIP, nil)[:14+28],
		"one byte short":  claimFrame(t, OperationRequest, testVIP, nil)[:14+27],
		"empty":           {},
	}
	passVIPs := []string{"gratuitous request", "gratuitous reply", "answer to our probe", "IEEE 802 hardware", "a MAC like ours", "unpadded, whole"}
	// With no set the filter passes every other host's ARP.
	passAll := append([]string{"client asking for the VIP", "probe for the VIP", "unrelated request", "unrelated reply"}, passVIPs...)

	for _, tc := range []struct {
		name string
		vips []netip.Addr
		pass []string
	}{
		{"the VIPs", vips, passVIPs},
		{"the VIP alone", []netip.Addr{testVIP}, passVIPs},
		{"the VIP last of 255", append(addrs(netip.MustParseAddr("203.0.113.1"), 254), testVIP), passVIPs},
		// The most addresses need more than a /24: 198.18.0.0/15 is
		// reserved for benchmarks (RFC 2544) and is nobody's.
		{"the VIP first of the most", append([]netip.Addr{testVIP}, addrs(netip.MustParseAddr("198.18.0.1"), MaxFilterAddresses-1)...), passVIPs},
		{"other VIPs", []netip.Addr{netip.MustParseAddr("198.51.100.12")}, nil},
		{"no VIPs", []netip.Addr{}, nil},
		{"every address", nil, passAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := filterVM(t, ourMAC, tc.vips)
			want := make(map[string]bool)
			for _, name := range tc.pass {
				want[name] = true
			}
			for name, b := range frames {
				n, err := vm.Run(b)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got := n > 0; got != want[name] {
					t.Errorf("%s: passed %v, want %v", name, got, want[name])
				}
				if n > 0 && n < len(b) {
					t.Errorf("%s: filter keeps %d of %d bytes", name, n, len(b))
				}
			}
		})
	}
}

// Without a MAC of our own the filter compares none.
func TestClaimFilterWithoutOwnMAC(t *testing.T) {
	vm := filterVM(t, nil, []netip.Addr{testVIP})
	for _, mac := range []net.HardwareAddr{ourMAC, theirMAC, {0, 0, 0, 0, 0, 0}} {
		b := claimFrame(t, OperationRequest, testVIP, func(_ *ethernet.Frame, p *mdarp.Packet) { p.SenderHardwareAddr = mac })
		if n, err := vm.Run(b); err != nil || n == 0 {
			t.Errorf("sender MAC %v: Run = %d, %v; want the frame passed", mac, n, err)
		}
	}
}

func TestClaimFilterSize(t *testing.T) {
	for _, n := range []int{0, 1, 255, MaxFilterAddresses} {
		vips := addrs(netip.MustParseAddr("198.18.0.1"), n)
		got := len(claimFilter(ourMAC, vips))
		want := headerLen + 2*n + 1
		if n == 0 {
			want = 1
		}
		if got != want || got > bpfMaxInstructions {
			t.Errorf("%d addresses: %d instructions, want %d (at most %d)", n, got, want, bpfMaxInstructions)
		}
	}
	if got := len(claimHeader(ourMAC)); got != headerLen {
		t.Errorf("header is %d instructions, headerLen says %d", got, headerLen)
	}
	// One more address would not fit.
	if headerLen+2*(MaxFilterAddresses+1)+1 <= bpfMaxInstructions {
		t.Errorf("MaxFilterAddresses %d is not the most that fit", MaxFilterAddresses)
	}
}

func BenchmarkClaimFilter(b *testing.B) {
	unrelated := claimFrame(b, OperationRequest, netip.MustParseAddr("203.0.113.200"), nil)
	claim := claimFrame(b, OperationRequest, testVIP, nil)
	for _, n := range []int{1, 16, 255} {
		// testVIP last: a claim runs every comparison, as an unrelated
		// frame does.
		vips := append(addrs(netip.MustParseAddr("198.51.100.100"), n-1), testVIP)
		vm := filterVM(b, ourMAC, vips)
		for _, f := range []struct {
			name string
			b    []byte
			pass bool
		}{{"unrelated", unrelated, false}, {"claim", claim, true}} {
			b.Run(fmt.Sprintf("%s/%d", f.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if n, _ := vm.Run(f.b); (n > 0) != f.pass {
						b.Fatal("wrong verdict")
					}
				}
			})
		}
	}
}
