package daemon

import (
	"fmt"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
)

// Forty Masters on one socket advertise at three instants an interval
// (sixteen at most each), not forty; every group still advertises every
// interval, none later than the interval, and their Backups stay Backups.
func TestMastersOfOneSocketAdvertiseTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const groups = 40
		lan := &fakeLAN{}
		start := func(addr string, prio uint8) *node {
			cfg := &config.Config{}
			for i := range groups {
				in := testInstance(prio)
				if i > 0 {
					in.Name, in.VRID = fmt.Sprintf("g%d", i), uint8(i)
					in.VIPs = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 32)}
				}
				cfg.Instances = append(cfg.Instances, in)
			}
			h := newFakeHost(lan, addr)
			return startConfig(t, h, h.env(), cfg)
		}
		n1 := start("198.51.100.11", 150)
		n2 := start("198.51.100.12", 100)
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
		times := lan.sentAt[netip.MustParseAddr("198.51.100.11")]
		lan.mu.Unlock()
		instants := map[time.Duration]int{}
		for _, at := range times {
			instants[at.Sub(from)%time.Second]++
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
		for i := range groups {
			vip := testVIP
			if i > 0 {
				vip = netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 32)
			}
			if !n1.host.holds(vip) || n2.host.holds(vip) {
				t.Fatalf("group %d: n1 holds %v, n2 holds %v", i, n1.host.holds(vip), n2.host.holds(vip))
			}
		}
	})
}
