package transport

import (
	"net/netip"
	"testing"
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
