package lab

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/ipv6"
)

// sendAdverts6 sends n VRRPv3 adverts of VRID 51 over IPv6 from node i's
// link-local address to ff02::12.
func sendAdverts6(t *testing.T, l *Lab, i, n int) {
	t.Helper()
	err := inNetns(l.NodeNetns(i), func() error {
		c, err := net.ListenPacket("ip6:112", l.NodeLinkLocal(i).String()+"%eth0")
		if err != nil {
			return err
		}
		defer c.Close()
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		p := ipv6.NewPacketConn(c)
		if err := p.SetMulticastInterface(ifi); err != nil {
			return err
		}
		if err := p.SetMulticastHopLimit(255); err != nil {
			return err
		}
		if err := p.SetChecksum(true, 6); err != nil {
			return err
		}
		vip := DefaultVIP6().Addr().As16()
		msg := append([]byte{0x31, VRID, 150, 1, 0, 100, 0, 0}, vip[:]...)
		for range n {
			if _, err := p.WriteTo(msg, nil, &net.IPAddr{IP: vrrpGroup6(), Zone: "eth0"}); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("send from n%d: %v", i, err)
	}
}

func TestIPv6Topology(t *testing.T) {
	l := newTestLab(t, Options{Nodes: 2, IPv6: true})
	for i := 1; i <= 2; i++ {
		if got, want := l.NodeAddr6(i), netip.MustParseAddr("2001:db8::1"+string(rune('0'+i))); got != want {
			t.Errorf("n%d IPv6 address %v, want %v", i, got, want)
		}
		ll := l.NodeLinkLocal(i)
		if !ll.IsLinkLocalUnicast() {
			t.Fatalf("n%d link-local %v", i, ll)
		}
		if tent, err := l.NodeLinkLocalTentative(i); err != nil || tent {
			t.Errorf("n%d link-local tentative=%v (%v) without DAD", i, tent, err)
		}
		if got := l.NodeByAddr(ll); got != i {
			t.Errorf("NodeByAddr(%v) = %d, want %d", ll, got, i)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	vip := DefaultVIP6()
	m, err := l.Watch(ctx, vip.Addr(), VRID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if out, err := l.NodeCommand(ctx, 2, "ip", "-6", "addr", "add", vip.String(), "dev", "eth0", "nodad").CombinedOutput(); err != nil {
		t.Fatalf("add VIP: %v: %s", err, out)
	}
	p, err := l.StartProber(ctx, vip.Addr(), 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	sendAdverts6(t, l, 1, 3)
	s, err := m.Wait(ctx, 10*time.Millisecond, func(s State) bool {
		return s.OnlyHolder() == 2 && s.NeighNode == 2 && s.Advertiser == 1 && p.AnsweredSince(time.Time{}) > 0
	})
	if err != nil {
		t.Fatalf("monitor state %+v, %d answers: %v", s, p.AnsweredSince(time.Time{}), err)
	}
	if s.AdvertPriority != 150 {
		t.Errorf("advert priority %d, want 150", s.AdvertPriority)
	}
	// The IPv4 side is untouched: the prober still reaches a node's IPv4.
	p4, err := l.StartProber(ctx, l.NodeAddr(1), 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p4.Stop()
	for p4.AnsweredSince(time.Time{}) == 0 {
		if ctx.Err() != nil {
			t.Fatal("no IPv4 answer from n1")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIPv6FilterRules(t *testing.T) {
	l := newTestLab(t, Options{Nodes: 2, IPv6: true})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	f, err := l.NewFilter(ctx)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	if err := f.DropIPv6Adverts(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.SetTTLFrom(ctx, 1, 252); err != nil {
		t.Fatal(err)
	}
	m, err := l.Watch(ctx, DefaultVIP6().Addr(), VRID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sendAdverts6(t, l, 1, 5)
	time.Sleep(200 * time.Millisecond)
	if s := m.State(); s.Advertiser != 0 {
		t.Errorf("an IPv6 advert from n%d passed the filter", s.Advertiser)
	}
	n, err := f.Dropped(ctx)
	if err != nil || n < 5 {
		t.Errorf("filter counted %d packets (%v), want at least 5", n, err)
	}
	if err := f.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	sendAdverts6(t, l, 1, 3)
	if _, err := m.Wait(ctx, 10*time.Millisecond, func(s State) bool { return s.Advertiser == 1 }); err != nil {
		t.Fatalf("no advert after Heal: %v", err)
	}
	if _, err := f.output(ctx, "list", "table", "bridge", f.Table()); err != nil {
		t.Fatal(err)
	}
}

func TestIPv6DADKeepsLinkLocalsTentative(t *testing.T) {
	l := newTestLab(t, Options{Nodes: 2, IPv6: true, DAD: 2})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	w, err := l.WatchLinkLocals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := time.Now()
	for i := 1; i <= 2; i++ {
		tent, err := l.NodeLinkLocalTentative(i)
		if err != nil || !tent {
			t.Errorf("n%d link-local tentative=%v (%v) right after New with DAD", i, tent, err)
		}
		if _, ok := w.Ready(i); ok {
			t.Errorf("n%d reported ready while tentative", i)
		}
	}
	for i := 1; i <= 2; i++ {
		for {
			if at, ok := w.Ready(i); ok {
				t.Logf("n%d link-local usable %v after New returned", i, at.Sub(start).Round(time.Millisecond))
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("n%d link-local never left the tentative state", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if tent, err := l.NodeLinkLocalTentative(i); err != nil || tent {
			t.Errorf("n%d tentative=%v (%v) after the watch saw it ready", i, tent, err)
		}
	}
}
