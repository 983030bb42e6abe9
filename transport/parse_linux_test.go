package transport

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestParseIPv4(t *testing.T) {
	header := func(ihl int, total int) []byte {
		h := make([]byte, ihl*4)
		h[0] = 4<<4 | byte(ihl)
		h[2], h[3] = byte(total>>8), byte(total)
		h[8] = 255
		copy(h[12:], []byte{198, 51, 100, 11})
		copy(h[16:], []byte{224, 0, 0, 18})
		return h
	}
	payload := []byte{0x31, 51, 100, 1}
	tests := []struct {
		name    string
		d       []byte
		ok      bool
		payload int
	}{
		{"plain", append(header(5, 24), payload...), true, 4},
		{"with an option", append(header(6, 28), payload...), true, 4},
		{"link-layer padding", append(append(header(5, 24), payload...), 0, 0, 0, 0), true, 4},
		{"short", header(5, 20)[:19], false, 0},
		{"IPv6", append([]byte{0x60}, make([]byte, 39)...), false, 0},
		{"header longer than the datagram", header(15, 60)[:40], false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, info, ok := parseIPv4(tt.d)
			if ok != tt.ok {
				t.Fatalf("ok %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if len(p) != tt.payload || p[0] != 0x31 {
				t.Errorf("payload % x", p)
			}
			if info.Src != netip.MustParseAddr("198.51.100.11") || info.Dst != netip.MustParseAddr("224.0.0.18") || info.TTL != 255 {
				t.Errorf("info %+v", info)
			}
		})
	}
}

// cmsg is one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := unix.Cmsghdr{Level: level, Type: typ}
	h.SetLen(unix.CmsgLen(len(data)))
	*(*unix.Cmsghdr)(unsafe.Pointer(&b[0])) = h
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestParseIPv6Control(t *testing.T) {
	dst := netip.MustParseAddr("ff02::12")
	hop := func(n uint32) []byte {
		return cmsg(unix.IPPROTO_IPV6, unix.IPV6_HOPLIMIT, binary.NativeEndian.AppendUint32(nil, n))
	}
	pktinfo := func(ifindex uint32) []byte {
		a := dst.As16()
		return cmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, binary.NativeEndian.AppendUint32(a[:], ifindex))
	}
	other := cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMP, make([]byte, 16))
	cat := func(parts ...[]byte) (b []byte) {
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	want := PacketInfo{Dst: dst, TTL: 254, IfIndex: 7}
	tests := []struct {
		name string
		oob  []byte
		ok   bool
	}{
		{"both", cat(hop(254), pktinfo(7)), true},
		{"other order, another message first", cat(other, pktinfo(7), hop(254)), true},
		{"no hop limit", pktinfo(7), false},
		{"no destination", hop(254), false},
		{"none", nil, false},
		{"cut in the second", cat(hop(254), pktinfo(7))[:unix.CmsgSpace(4)+unix.CmsgLen(8)], false},
		{"length past the end", func() []byte { b := cat(hop(254), pktinfo(7)); b[unix.CmsgSpace(4)] = 0xff; return b }(), false},
	}
	for _, tt := range tests {
		got, ok := parseIPv6Control(tt.oob)
		if ok != tt.ok || ok && got != want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tt.name, got, ok, want, tt.ok)
		}
	}
}
