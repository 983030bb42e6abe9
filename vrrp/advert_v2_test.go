package vrrp

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func v2Advert(prio uint8) Advertisement {
	return Advertisement{Version: Version2, VRID: 51, Priority: prio, Interval: time.Second, Addresses: vips(), Checksum: ChecksumNoPseudoHeader}
}

func TestAdvertV2KnownBytes(t *testing.T) {
	pass, err := PasswordAuth("secret12")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		auth Auth
		want string // checksum computed independently (RFC 1071 over the packet alone)
	}{
		{"no authentication", Auth{}, "213364010001508cc633640a0000000000000000"},
		{"simple text", pass, "213364010101e20dc633640a7365637265743132"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := v2Advert(100)
			a.Auth = tt.auth
			// The destination must not matter: no pseudo-header.
			for _, dst := range []netip.Addr{GroupIPv4, mustAddr("198.51.100.12")} {
				b, err := a.Append(nil, src4, dst)
				if err != nil {
					t.Fatal(err)
				}
				if got := hex.EncodeToString(b); got != tt.want {
					t.Errorf("to %v: encoded %s, want %s", dst, got, tt.want)
				}
				var got Advertisement
				if err := got.Decode(b, src4, dst); err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if diff := cmp.Diff(a, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
					t.Errorf("round trip (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestAppendV2Refuses(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Advertisement)
		src  netip.Addr
		dst  netip.Addr
	}{
		{"sub-second interval", func(a *Advertisement) { a.Interval = 1500 * time.Millisecond }, src4, GroupIPv4},
		{"interval over 255s", func(a *Advertisement) { a.Interval = 256 * time.Second }, src4, GroupIPv4},
		{"zero interval", func(a *Advertisement) { a.Interval = 0 }, src4, GroupIPv4},
		{"ipv6", func(a *Advertisement) { a.Addresses = []netip.Addr{mustAddr("2001:db8::10")} }, src6, GroupIPv6},
		{"no address", func(a *Advertisement) { a.Addresses = nil }, src4, GroupIPv4},
		{"unknown version", func(a *Advertisement) { a.Version = 4 }, src4, GroupIPv4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := v2Advert(100)
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

func TestDecodeV2Drops(t *testing.T) {
	a := v2Advert(100)
	good, err := a.Append(nil, src4, GroupIPv4)
	if err != nil {
		t.Fatal(err)
	}
	// withSum recomputes the v2 checksum after a change.
	withSum := func(f func(b []byte) []byte) []byte {
		b := f(append([]byte(nil), good...))
		b[6], b[7] = 0, 0
		c := ^fold(wordSum(b, 0))
		b[6], b[7] = byte(c>>8), byte(c)
		return b
	}
	tests := []struct {
		name     string
		b        []byte
		src, dst netip.Addr
		want     DropReason
	}{
		{"no authentication data", withSum(func(b []byte) []byte { return b[:12] }), src4, GroupIPv4, DropLength},
		{"trailing byte", withSum(func(b []byte) []byte { return append(b, 0) }), src4, GroupIPv4, DropLength},
		{"bad checksum", func() []byte { b := append([]byte(nil), good...); b[7] ^= 1; return b }(), src4, GroupIPv4, DropChecksum},
		{"zero interval", withSum(func(b []byte) []byte { b[5] = 0; return b }), src4, GroupIPv4, DropInterval},
		{"over ipv6", good, src6, GroupIPv6, DropVersion},
		{"no address", withSum(func(b []byte) []byte { b[3] = 0; return append(b[:8], b[12:]...) }), src4, GroupIPv4, DropLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Advertisement
			if err := a.Decode(tt.b, tt.src, tt.dst); !errors.Is(err, tt.want) {
				t.Errorf("Decode = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeV2PseudoHeaderChecksumIsBad(t *testing.T) {
	// A VRRPv2 packet whose checksum includes the IPv4 pseudo-header, as a
	// VRRPv3 one's does, does not verify: RFC 3768 sums the packet alone.
	b, err := hex.DecodeString("213364010001508cc633640a0000000000000000")
	if err != nil {
		t.Fatal(err)
	}
	b[6], b[7] = 0, 0
	c := checksum(b, src4, GroupIPv4, ChecksumPseudoHeader)
	b[6], b[7] = byte(c>>8), byte(c)
	var a Advertisement
	if err := a.Decode(b, src4, GroupIPv4); !errors.Is(err, DropChecksum) {
		t.Errorf("Decode = %v, want %v", err, DropChecksum)
	}
}

func TestPasswordAuth(t *testing.T) {
	a, err := PasswordAuth("abc")
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != AuthPass || a.Data != [8]byte{'a', 'b', 'c'} {
		t.Errorf("PasswordAuth(abc) = %+v, want type 1 and the password zero-padded", a)
	}
	for _, bad := range []string{"", "123456789"} {
		if _, err := PasswordAuth(bad); err == nil {
			t.Errorf("PasswordAuth(%q) accepted", bad)
		}
	}
}

func BenchmarkDecodeV2(b *testing.B) {
	a := v2Advert(100)
	pkt, err := a.Append(nil, src4, GroupIPv4)
	if err != nil {
		b.Fatal(err)
	}
	var got Advertisement
	got.Addresses = make([]netip.Addr, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		if err := got.Decode(pkt, src4, GroupIPv4); err != nil {
			b.Fatal(err)
		}
	}
}
