package daemon

import (
	"net/netip"
	"testing"

	"github.com/vipd/vipd/vrrp"
)

// The adverts kept between wake-ups are rebuilt when anything they say
// changes: priority, source, configuration; and each destination's carries
// its own checksum.
func TestAdvertFramesFollowWhatTheyAreBuiltFrom(t *testing.T) {
	src := netip.MustParseAddr("192.0.2.11")
	peers := []netip.Addr{netip.MustParseAddr("192.0.2.12"), netip.MustParseAddr("192.0.2.13")}
	ic := testInstance(150)
	ic.UnicastPeers = peers
	cfg := &ic

	var f advertFrames
	if f.holds(cfg, src, 150) {
		t.Fatal("empty frames hold an advert")
	}
	f.build(cfg, src, 150)
	if len(f.frames) != 2 || len(f.dsts) != 2 {
		t.Fatalf("%d frames for %d destinations, want one for each of 2 peers", len(f.frames), len(f.dsts))
	}
	for i, dst := range f.dsts {
		if f.errs[i] != nil {
			t.Fatalf("advert to %v: %v", dst, f.errs[i])
		}
		var adv vrrp.Advertisement
		if err := adv.Decode(f.frames[i], src, dst); err != nil {
			t.Fatalf("advert to %v does not decode with its own pseudo-header: %v", dst, err)
		}
		if adv.Priority != 150 || adv.VRID != ic.VRID || len(adv.Addresses) != 1 || adv.Addresses[0] != testVIP.Addr() {
			t.Fatalf("advert to %v: %+v", dst, adv)
		}
	}
	if !f.holds(cfg, src, 150) {
		t.Fatal("frames do not hold what they were just built from")
	}
	same := *cfg // a reload makes a new configuration, even an equal one
	for _, c := range []struct {
		name string
		held bool
	}{
		{"priority", f.holds(cfg, src, 140)},
		{"source", f.holds(cfg, netip.MustParseAddr("192.0.2.21"), 150)},
		{"configuration", f.holds(&same, src, 150)},
	} {
		if c.held {
			t.Errorf("frames still hold after the %s changed", c.name)
		}
	}

	// Fewer destinations: the extra frame goes; the kept one is rebuilt.
	one := ic
	one.UnicastPeers = peers[1:]
	f.build(&one, src, 140)
	if len(f.frames) != 1 || f.dsts[0] != peers[1] {
		t.Fatalf("after a reload to one peer: %d frames to %v", len(f.frames), f.dsts)
	}
	var adv vrrp.Advertisement
	if err := adv.Decode(f.frames[0], src, peers[1]); err != nil || adv.Priority != 140 {
		t.Fatalf("rebuilt advert: priority %d, %v", adv.Priority, err)
	}

	// A refused build keeps its reason, which each send then reports.
	bad := ic
	bad.UnicastPeers = []netip.Addr{netip.MustParseAddr("2001:db8::2")}
	f.build(&bad, src, 150)
	if f.errs[0] == nil {
		t.Fatal("an IPv4 advert to an IPv6 peer was built")
	}
}
