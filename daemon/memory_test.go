package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

// maxHeapPerGroup bounds the live heap a steady group costs the daemon:
// its configuration, its instance, logger, address holder, pre-built
// frames, its share of the filters. About 5.0 KiB on 2026-12-06 (7.6 that
// morning, when each group had a context of its own, a copy of its
// configuration, a hook runner, closures to report to the daemon, and
// channels, tracker set and drop counters it had no use for yet); README,
// "Memory, per group".
const maxHeapPerGroup = 7 << 10

// A host's memory grows by a bounded amount a group: the live heap of a
// daemon of 144 groups against one of 16, both steady Masters.
func TestHeapPerGroupIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 160 groups")
	}
	small := steadyHeap(t, 16)
	large := steadyHeap(t, 144)
	per := (int64(large) - int64(small)) / 128
	t.Logf("live heap: %d B with 16 groups, %d B with 144: %d B a group", small, large, per)
	if per > maxHeapPerGroup {
		t.Errorf("%d B of live heap a group, want at most %d", per, maxHeapPerGroup)
	}
}

// steadyHeap runs a daemon of n one-VIP groups alone on a fake LAN until
// every group is a steady Master, and returns the live heap then (the
// daemon still running: its configuration included).
func steadyHeap(t *testing.T, n int) uint64 {
	t.Helper()
	cfg := &config.Config{}
	for i := range n {
		ic := testInstance(150)
		ic.Name = fmt.Sprintf("g%d", i+1)
		ic.VRID = uint8(i + 1)
		ic.AdvertInterval = 100 * time.Millisecond
		ic.GARP = config.GARP{Repeat: 1, Interval: 100 * time.Millisecond, Probe: time.Second}
		ic.VIPs = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 32)}
		cfg.Instances = append(cfg.Instances, ic)
	}
	h := newFakeHost(&fakeLAN{}, "198.51.100.11")
	d, err := New(cfg, testLogger(), h.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		masters := 0
		for _, st := range d.Snapshot() {
			if st.State == vrrp.StateMaster {
				masters++
			}
		}
		if masters == n {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d of %d groups Master after 30 s", masters, n)
		}
	}
	time.Sleep(2 * time.Second) // past the takeovers' announcements
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
