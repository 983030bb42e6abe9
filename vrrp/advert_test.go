package vrrp

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	src4 = netip.MustParseAddr("198.51.100.11")
	src6 = netip.MustParseAddr("fe80::1")
)

func TestAdvertRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		src, dst netip.Addr
		adv      Advertisement
	}{
		{"ipv4 one address", src4, GroupIPv4, Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}},
		{"ipv4 unicast", src4, mustAddr("198.51.100.12"), Advertisement{VRID: 1, Priority: 254, Interval: 10 * time.Millisecond, Addresses: []netip.Addr{mustAddr("198.51.100.10"), mustAddr("198.51.100.20")}}},
		{"ipv4 priority 0, max interval", src4, GroupIPv4, Advertisement{VRID: 255, Priority: 0, Interval: MaxAdvertInterval, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}},
		{"ipv6", src6, GroupIPv6, Advertisement{VRID: 7, Priority: 200, Interval: 100 * time.Millisecond, Addresses: []netip.Addr{mustAddr("2001:db8::10")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.adv.Append(nil, tt.src, tt.dst)
			if err != nil {
				t.Fatal(err)
			}
			var got Advertisement
			if err := got.Decode(b, tt.src, tt.dst); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := tt.adv
			want.Version = Version // zero encodes as 3
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdvertKnownBytes(t *testing.T) {
	// VRID 51, priority 100, 1s, 198.51.100.10, from 198.51.100.11 to
	// 224.0.0.18; checksum computed independently (RFC 1071 sum over the
	// IPv4 pseudo-header and the packet).
	adv := Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}
	b, err := adv.Append(nil, src4, GroupIPv4)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hex.EncodeToString(b), "313364010064355bc633640a"; got != want {
		t.Errorf("encoded %s, want %s", got, want)
	}
}

func TestAppendRefuses(t *testing.T) {
	ok := Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}
	tests := []struct {
		name     string
		mod      func(*Advertisement)
		src, dst netip.Addr
	}{
		{"zero interval", func(a *Advertisement) { a.Interval = 0 }, src4, GroupIPv4},
		{"interval not centiseconds", func(a *Advertisement) { a.Interval = 15 * time.Millisecond }, src4, GroupIPv4},
		{"interval too long", func(a *Advertisement) { a.Interval = 41 * time.Second }, src4, GroupIPv4},
		{"mixed families", func(a *Advertisement) {}, src4, GroupIPv6},
		{"ipv6 address in ipv4 packet", func(a *Advertisement) { a.Addresses = []netip.Addr{mustAddr("2001:db8::1")} }, src4, GroupIPv4},
		{"no source", func(a *Advertisement) {}, netip.Addr{}, GroupIPv4},
		{"no address", func(a *Advertisement) { a.Addresses = nil }, src4, GroupIPv4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ok
			tt.mod(&a)
			b, err := a.Append([]byte{1, 2}, tt.src, tt.dst)
			if err == nil {
				t.Fatal("Append accepted a bad advertisement")
			}
			if len(b) != 2 {
				t.Errorf("Append left %d bytes behind on error", len(b)-2)
			}
		})
	}
}

func TestDecodeDrops(t *testing.T) {
	good, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}).Append(nil, src4, GroupIPv4)
	mod := func(f func(b []byte) []byte) []byte {
		b := append([]byte(nil), good...)
		return f(b)
	}
	tests := []struct {
		name     string
		b        []byte
		src, dst netip.Addr
		want     DropReason
	}{
		{"empty", nil, src4, GroupIPv4, DropTooShort},
		{"7 bytes", good[:7], src4, GroupIPv4, DropTooShort},
		{"version 1", mod(func(b []byte) []byte { b[0] = 0x11; return b }), src4, GroupIPv4, DropVersion},
		{"version 4", mod(func(b []byte) []byte { b[0] = 0x41; return b }), src4, GroupIPv4, DropVersion},
		{"type 2", mod(func(b []byte) []byte { b[0] = 0x32; return b }), src4, GroupIPv4, DropType},
		{"count too high", mod(func(b []byte) []byte { b[3] = 2; return b }), src4, GroupIPv4, DropLength},
		{"trailing byte", mod(func(b []byte) []byte { return append(b, 0) }), src4, GroupIPv4, DropLength},
		{"truncated address", good[:11], src4, GroupIPv4, DropLength},
		{"bad checksum", mod(func(b []byte) []byte { b[7] ^= 1; return b }), src4, GroupIPv4, DropChecksum},
		{"other destination (pseudo-header)", good, src4, mustAddr("198.51.100.12"), DropChecksum},
		{"zero interval", mustEncodeRaw(t, []byte{0x31, 51, 100, 1, 0x00, 0x00, 0, 0, 198, 51, 100, 10}, src4, GroupIPv4), src4, GroupIPv4, DropInterval},
		{"ipv4 source, ipv6 destination", good, src4, GroupIPv6, DropFamily},
		// RFC 5798 section 5.2.5: at least one address. Not a VRID collision.
		{"no address", mustEncodeRaw(t, []byte{0x31, 51, 100, 0, 0x00, 0x64, 0, 0}, src4, GroupIPv4), src4, GroupIPv4, DropLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Advertisement
			err := a.Decode(tt.b, tt.src, tt.dst)
			if !errors.Is(err, tt.want) {
				t.Errorf("Decode = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeIgnoresReservedBits(t *testing.T) {
	b := mustEncodeRaw(t, []byte{0x31, 51, 100, 1, 0xf0, 0x64, 0, 0, 198, 51, 100, 10}, src4, GroupIPv4)
	var a Advertisement
	if err := a.Decode(b, src4, GroupIPv4); err != nil {
		t.Fatal(err)
	}
	if a.Interval != time.Second {
		t.Errorf("interval %v, want 1s", a.Interval)
	}
}

// mustEncodeRaw fills in the checksum of a hand-written packet.
func mustEncodeRaw(t *testing.T, b []byte, src, dst netip.Addr) []byte {
	t.Helper()
	b = append([]byte(nil), b...)
	b[6], b[7] = 0, 0
	c := checksum(b, src, dst, ChecksumPseudoHeader)
	b[6], b[7] = byte(c>>8), byte(c)
	return b
}

func TestDropReasonNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range DropReasons() {
		if seen[r.String()] || r.String() == "invalid" {
			t.Errorf("reason %d has name %q", r, r)
		}
		seen[r.String()] = true
		if r.Error() == "" {
			t.Errorf("reason %v has no text", r)
		}
	}
	if DropReason(200).String() != "invalid" {
		t.Error("out-of-range reason not invalid")
	}
	// Counters by reason are arrays of NumDropReasons: every reason has a
	// place, and a value no reason has counts as invalid, never past the end.
	for _, r := range DropReasons() {
		if i := r.Index(); i != int(r) || i >= NumDropReasons {
			t.Errorf("reason %v at index %d of %d", r, i, NumDropReasons)
		}
	}
	if i := DropReason(200).Index(); i != int(dropInvalid) {
		t.Errorf("out-of-range reason at index %d, want invalid's", i)
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}).Append(nil, src4, GroupIPv4)
	f.Add(good, true)
	rfc9568, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}, Checksum: ChecksumNoPseudoHeader}).Append(nil, src4, GroupIPv4)
	f.Add(rfc9568, true)
	good6, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("2001:db8::10"), mustAddr("2001:db8::20")}}).Append(nil, src6, GroupIPv6)
	f.Add(good6, false)
	f.Add([]byte{0x31, 51, 0, 0, 0, 1, 0, 0}, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, v4 bool) {
		src, dst := src4, GroupIPv4
		if !v4 {
			src, dst = src6, GroupIPv6
		}
		var a Advertisement
		if err := a.Decode(b, src, dst); err != nil {
			var r DropReason
			if !errors.As(err, &r) {
				t.Fatalf("Decode returned %T, not a DropReason", err)
			}
			return
		}
		// What we accept we can encode, and encoding is stable.
		enc, err := a.Append(nil, src, dst)
		if err != nil {
			t.Fatalf("accepted %x but cannot encode it: %v", b, err)
		}
		var again Advertisement
		if err := again.Decode(enc, src, dst); err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", enc, err)
		}
		enc2, _ := again.Append(nil, src, dst)
		if string(enc) != string(enc2) {
			t.Fatalf("encoding not stable: %x then %x", enc, enc2)
		}
		// Only the reserved bits (and so the checksum) may differ from the
		// input.
		if len(enc) != len(b) || string(enc[:4]) != string(b[:4]) || enc[4]&0x0f != b[4]&0x0f ||
			enc[5] != b[5] || string(enc[8:]) != string(b[8:]) {
			t.Fatalf("re-encoding %x changed it to %x", b, enc)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	pkt, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}).Append(nil, src4, GroupIPv4)
	var a Advertisement
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Decode(pkt, src4, GroupIPv4); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeIPv6(b *testing.B) {
	pkt, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("2001:db8::10")}}).Append(nil, src6, GroupIPv6)
	var a Advertisement
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Decode(pkt, src6, GroupIPv6); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRFC9568 decodes the form that is tried second.
func BenchmarkDecodeRFC9568(b *testing.B) {
	pkt, _ := (&Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}, Checksum: ChecksumNoPseudoHeader}).Append(nil, src4, GroupIPv4)
	var a Advertisement
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Decode(pkt, src4, GroupIPv4); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	adv := Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = adv.Append(buf[:0], src4, GroupIPv4); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiveAdvert is the hot path of a Backup: decode an advert and
// reset the Master_Down_Timer.
func BenchmarkReceiveAdvert(b *testing.B) {
	clk := newFakeClock()
	m, err := NewMachine(testConfig(100, "198.51.100.11"), clk)
	if err != nil {
		b.Fatal(err)
	}
	out := m.Start(true, make([]Action, 0, 16))
	pkt, _ := advert(150, time.Second).Append(nil, mustAddr("198.51.100.12"), GroupIPv4)
	from := mustAddr("198.51.100.12")
	var a Advertisement
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Decode(pkt, from, GroupIPv4); err != nil {
			b.Fatal(err)
		}
		if out, err = m.ReceiveAdvert(from, TTL, &a, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
