package daemon

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

// An idle election holds no goroutine, and so no stack, even after a burst
// of work grew the stack of the goroutine that ran it: a goroutine that
// waited for the next event would keep 4 KiB at least (the collector halves
// a stack only while under a quarter of it is used, counting 800 bytes of
// headroom) and a waiter per channel of its select. With 255 groups on a
// host, that is over 1 MiB.
func TestIdleInstanceHoldsNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const groups = 64
		cfg := &config.Config{}
		for i := range groups {
			ic := testInstance(150)
			ic.Name, ic.VRID = fmt.Sprintf("g%d", i), uint8(i+1)
			ic.VIPs = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 32)}
			cfg.Instances = append(cfg.Instances, ic)
		}
		stacks := func() uint64 {
			for range 6 { // each collection halves a stack at most once
				runtime.GC()
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return ms.StackInuse
		}
		h := newFakeHost(&fakeLAN{}, "198.51.100.11")
		aloneG := runtime.NumGoroutine()
		n := startConfig(t, h, h.env(), cfg)
		time.Sleep(30 * time.Second) // Masters, past the takeover's announcements
		synctest.Wait()
		// The daemon's own (its link watcher, the fake host's), not one
		// a group.
		if g := runtime.NumGoroutine() - aloneG; g > 16 {
			t.Errorf("%d goroutines more for %d idle groups", g, groups)
		}
		// Before: the runtime keeps up to 64 ended goroutines a processor
		// for the next ones, each with its first 2 KiB of stack.
		before := stacks()
		// A burst grows the stack that runs each election to 32 KiB, as a
		// start-up's netlink and filter work does.
		for _, r := range n.d.snapshot() {
			if st, _ := r.in.m.State(); st != vrrp.StateMaster {
				t.Fatalf("%s is %v, want master", r.in.id.name, st)
			}
			if err := r.in.do(t.Context(), func() { deepStack(24) }); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		grown := stacks()
		if per := (int64(grown) - int64(before)) / groups; per > 1<<10 {
			t.Errorf("an idle election holds %d bytes more of stack after a burst (%d before, %d after, %d groups), want none",
				per, before, grown, groups)
		}
	})
}

// deepStack uses about depth KiB of stack.
//
//go:noinline
func deepStack(depth int) byte {
	var buf [1024]byte
	buf[depth%len(buf)] = byte(depth)
	if depth == 0 {
		return buf[0]
	}
	return deepStack(depth-1) + buf[depth%len(buf)]
}
