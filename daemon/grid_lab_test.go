package daemon

import (
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

// manyGroups is a host's configuration of n groups on one interface at
// prio: testInstance's, then VRIDs 1.. with one VIP each (203.0.113.i).
func manyGroups(n int, prio uint8) *config.Config {
	cfg := &config.Config{}
	for i := range n {
		in := testInstance(prio)
		if i > 0 {
			in.Name, in.VRID = fmt.Sprintf("g%d", i), uint8(i)
			in.VIPs = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 32)}
		}
		cfg.Instances = append(cfg.Instances, in)
	}
	return cfg
}

// startGroups runs a daemon of manyGroups(n, prio) on a fake host at addr
// on lan until the test ends.
func startGroups(t *testing.T, lan *fakeLAN, addr string, n int, prio uint8) *node {
	t.Helper()
	h := newFakeHost(lan, addr)
	return startConfig(t, h, h.env(), manyGroups(n, prio))
}

// Forty Masters on one socket advertise at three instants an interval
// (sixteen at most each), not forty; every group still advertises every
// interval, none later than the interval, and their Backups stay Backups.
func TestMastersOfOneSocketAdvertiseTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const groups = 40
		lan := &fakeLAN{}
		n1 := startGroups(t, lan, "198.51.100.11", groups, 150)
		n2 := startGroups(t, lan, "198.51.100.12", groups, 100)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		lan.mu.Lock()
		lan.recordSends = true
		lan.mu.Unlock()
		from := time.Now()
		sent := map[uint8]int{}
		for i := 1; i < groups; i++ {
			sent[uint8(i)] = lan.sentBy(uint8(i))
		}
		sent[51] = lan.sentBy(51)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		lan.mu.Lock()
		byVRID := lan.sentAt
		lan.mu.Unlock()
		instants := map[time.Duration]int{}
		for vrid, times := range byVRID {
			for i, at := range times {
				instants[at.Sub(from)%time.Second]++
				if i > 0 && at.Sub(times[i-1]) > time.Second {
					t.Errorf("VRID %d: adverts %v apart at 1 s adverts", vrid, at.Sub(times[i-1]))
				}
			}
		}
		if len(instants) != 3 {
			t.Errorf("the Masters advertised at %d instants of the interval, want 3: %v", len(instants), instants)
		}
		for at, n := range instants {
			if n > 10*advertsPerWake {
				t.Errorf("%d adverts %v into the interval over 10 s: more than %d a wake-up", n, at, advertsPerWake)
			}
		}
		for vrid, before := range sent {
			if n := lan.sentBy(vrid) - before; n < 10 || n > 11 {
				t.Errorf("VRID %d: %d adverts in 10 s at 1 s adverts", vrid, n)
			}
		}
		for i, in := range manyGroups(groups, 150).Instances {
			vip := in.VIPs[0]
			if !n1.host.holds(vip) || n2.host.holds(vip) {
				t.Fatalf("group %d: n1 holds %v, n2 holds %v", i, n1.host.holds(vip), n2.host.holds(vip))
			}
		}
	})
}

// An interface with forty VIPs probes for a second owner about four times
// a second, not forty: each VIP every ten seconds. One with a single VIP
// probes it every second. Each is an RFC 5227 ARP Probe, from 0.0.0.0.
func TestProbesOfAnInterfaceAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, groups := range []int{1, 40} {
			lan := &fakeLAN{}
			h := newFakeHost(lan, "198.51.100.11")
			n := startConfig(t, h, h.env(), manyGroups(groups, 150))
			time.Sleep(10 * time.Second)
			synctest.Wait()
			n.host.mu.Lock()
			before := n.host.probes
			n.host.mu.Unlock()
			time.Sleep(30 * time.Second)
			synctest.Wait()
			n.host.mu.Lock()
			probes := n.host.probes - before
			n.host.mu.Unlock()
			perSecond := float64(probes) / 30
			want := float64(groups) / 10 // every 10 s
			if groups == 1 {
				want = 1
			}
			if perSecond < want*0.9 || perSecond > want*1.1 {
				t.Errorf("%d groups: %.1f probes a second, want %.1f", groups, perSecond, want)
			}
			n.host.mu.Lock()
			from := n.host.probeFrom
			n.host.mu.Unlock()
			if from != netip.IPv4Unspecified() {
				t.Errorf("%d groups: probed from %v, want 0.0.0.0 (RFC 5227's ARP Probe)", groups, from)
			}
			n.stop(t)
		}
	})
}

// garp.probe = 0s: the Master probes once at its takeover, for an owner
// left behind, and not again while nothing claims its VIP.
func TestNoRoutineProbesWithGARPProbeOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		cfg := manyGroups(1, 150)
		cfg.Instances[0].GARP.Probe = 0
		n := startConfig(t, h, h.env(), cfg)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if !n.host.holds(testVIP) {
			t.Fatal("n1 never took over")
		}
		n.host.mu.Lock()
		before := n.host.probes
		n.host.mu.Unlock()
		if before != 1 {
			t.Errorf("%d probes by the takeover, want 1", before)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		n.host.mu.Lock()
		after := n.host.probes
		n.host.mu.Unlock()
		if after != before {
			t.Errorf("%d probes in 30 s as Master with garp.probe 0s, want none", after-before)
		}
		n.stop(t)
	})
}

func TestProbeEveryOnGrowsPastFourVIPs(t *testing.T) {
	vip := func(i int) netip.Prefix { return netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 32) }
	cfgOf := func(n int) *config.Config {
		cfg := &config.Config{}
		for i := range n {
			in := testInstance(150)
			in.VIPs = []netip.Prefix{vip(i)}
			cfg.Instances = append(cfg.Instances, in)
		}
		return cfg
	}
	for _, tc := range []struct {
		vips int
		want time.Duration
	}{{1, time.Second}, {4, time.Second}, {5, 2 * time.Second}, {16, 4 * time.Second}, {64, 16 * time.Second}, {255, 64 * time.Second}} {
		cfg := cfgOf(tc.vips)
		if got := probeEveryOn(cfg, &cfg.Instances[0]); got != tc.want {
			t.Errorf("%d VIPs on the interface: a probe every %v, want %v", tc.vips, got, tc.want)
		}
	}
	// VIPs on another interface, or announced by BGP, do not count.
	cfg := cfgOf(4)
	elsewhere := testInstance(150)
	elsewhere.Interface = "eth1"
	elsewhere.VIPs = []netip.Prefix{vip(100), vip(101)}
	cfg.Instances = append(cfg.Instances, elsewhere)
	if got := probeEveryOn(cfg, &cfg.Instances[0]); got != time.Second {
		t.Errorf("4 VIPs here and 2 on eth1: a probe every %v, want 1s", got)
	}

	// garp.probe: a longer period is kept; zero turns routine probes off,
	// and those VIPs do not slow the others' probes.
	cfg = cfgOf(8)
	cfg.Instances[0].GARP.Probe = 10 * time.Second
	if got := probeEveryOn(cfg, &cfg.Instances[0]); got != 10*time.Second {
		t.Errorf("garp.probe 10s among 8 VIPs: a probe every %v, want 10s", got)
	}
	for i := range 4 {
		cfg.Instances[4+i].GARP.Probe = 0
	}
	if got := probeEveryOn(cfg, &cfg.Instances[1]); got != time.Second {
		t.Errorf("4 of 8 VIPs probed: a probe every %v, want 1s", got)
	}
	if got := probeEveryOn(cfg, &cfg.Instances[7]); got != 0 {
		t.Errorf("garp.probe 0s: a probe every %v, want none", got)
	}
	// Slow probers count at their own rate: 100 VIPs at 60 s and 4 at 1 s
	// send under 6 a second, so the fast ones slow to every 2 s, not 26.
	cfg = cfgOf(104)
	for i := 4; i < 104; i++ {
		cfg.Instances[i].GARP.Probe = time.Minute
	}
	if got := probeEveryOn(cfg, &cfg.Instances[0]); got != 2*time.Second {
		t.Errorf("4 VIPs at 1s beside 100 at 60s: a probe every %v, want 2s", got)
	}
	if got := probeEveryOn(cfg, &cfg.Instances[50]); got != time.Minute {
		t.Errorf("garp.probe 60s beside busier VIPs: a probe every %v, want 60s", got)
	}
}

// A Master whose advert timer the grid armed early (its first interval
// after the takeover) and whose interval a reload then shortens keeps
// advertising: the expiry, earlier than the machine's deadline by more
// than the new interval, is not taken for a stale one (found in review:
// the Master fell silent and its Backup took over).
func TestShorterIntervalByReloadKeepsTheMasterSpeaking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		slow := testInstance(150)
		slow.AdvertInterval = 3 * time.Second
		n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, slow)
		backup := testInstance(100)
		backup.AdvertInterval = 3 * time.Second
		n2 := startCfgNode(t, newFakeHost(lan, "198.51.100.12"), Options{}, backup)
		// Just after n1's takeover: its next advert is early on the grid.
		for n1.status("k8s-api").State != vrrp.StateMaster {
			time.Sleep(time.Millisecond)
		}
		fast := slow
		fast.AdvertInterval = time.Second
		n1.edit(fast)
		n1.reload(t)
		sent := lan.sentBy(51)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n := lan.sentBy(51) - sent; n < 29 {
			t.Errorf("%d adverts in 30 s after the reload to 1 s adverts", n)
		}
		if !n1.host.holds(testVIP) || n2.host.holds(testVIP) {
			t.Errorf("n1 holds %v, n2 holds %v: the VIP moved", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
	})
}
