package netif

import "testing"

func TestEventKindString(t *testing.T) {
	tests := []struct {
		k    EventKind
		want string
	}{
		{eventInvalid, "invalid"},
		{AddrAdded, "addr-added"},
		{AddrRemoved, "addr-removed"},
		{AddrChanged, "addr-changed"},
		{LinkUp, "link-up"},
		{LinkDown, "link-down"},
		{LinkGone, "link-gone"},
		{numEventKinds, "invalid"},
		{255, "invalid"},
	}
	for _, tt := range tests {
		if got := tt.k.String(); got != tt.want {
			t.Errorf("EventKind(%d).String() = %q, want %q", tt.k, got, tt.want)
		}
	}
}

func TestAddrStateString(t *testing.T) {
	for s, want := range map[AddrState]string{
		addrStateInvalid: "invalid", AddrReady: "ready", AddrTentative: "tentative",
		AddrDADFailed: "dadfailed", numAddrStates: "invalid", 200: "invalid",
	} {
		if got := s.String(); got != want {
			t.Errorf("AddrState(%d).String() = %q, want %q", s, got, want)
		}
	}
}

func TestVIPLabel(t *testing.T) {
	tests := []struct {
		ifname, want string
	}{
		{"eth0", "eth0:vip"},
		{"enp0s31f6", "enp0s31f6:vip"},
		{"ens1f0np0", "ens1f0np0:vip"},
		{"eno12345678", "eno12345678:vip"}, // exactly 15
		{"eno123456789", ""},               // 16 would be refused with ERANGE
		{"vip-long-name01", ""},
	}
	for _, tt := range tests {
		if got := vipLabel(tt.ifname); got != tt.want {
			t.Errorf("vipLabel(%q) = %q, want %q", tt.ifname, got, tt.want)
		}
	}
}
