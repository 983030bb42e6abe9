package lab

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

func TestUnrelatedARP(t *testing.T) {
	gs, err := ScaleGroups(DefaultGroupConfig(3, time.Second), MaxGroups)
	if err != nil {
		t.Fatal(err)
	}
	vips := map[netip.Addr]bool{}
	for _, g := range gs {
		vips[g.VIP.Addr()] = true
	}
	mac := labMAC(StrangerHost)
	for i := range 600 {
		s, tg := unrelatedARP(i)
		if vips[s] || vips[tg] || LANPrefix().Contains(s) || LANPrefix().Contains(tg) || s == tg {
			t.Fatalf("request %d: %v asks for %v: a VIP, the LAN, or itself", i, s, tg)
		}
		f := ARPRequest(mac, s, tg)
		if len(f) != 42 || binary.BigEndian.Uint16(f[12:]) != etherTypeARP || binary.BigEndian.Uint16(f[20:]) != 1 {
			t.Fatalf("request %d: not a 42-byte ARP request: % x", i, f)
		}
		if got := netip.AddrFrom4([4]byte(f[28:32])); got != s {
			t.Errorf("request %d: sender %v, want %v", i, got, s)
		}
		if got := netip.AddrFrom4([4]byte(f[38:42])); got != tg {
			t.Errorf("request %d: target %v, want %v", i, got, tg)
		}
		if string(f[0:6]) != string(broadcastMAC) || string(f[6:12]) != string(mac) || string(f[22:28]) != string(mac) {
			t.Errorf("request %d: addresses % x", i, f[:28])
		}
	}
}
