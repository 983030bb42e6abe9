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

// An idle election's stack goes back to 4 KiB after a burst of work grew
// it: what stays on it while the loop waits (run's, loop's and the
// select's frames, and the runtime's 800 bytes of headroom) is under a
// quarter of 8 KiB, which is when the collector halves a stack. With 255
// groups on a host, 4 KiB more per idle group is 1 MiB.
func TestIdleInstanceStackShrinksBack(t *testing.T) {
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
		alone := stacks()
		n := startConfig(t, h, h.env(), cfg)
		time.Sleep(30 * time.Second) // Masters, past the takeover's announcements
		synctest.Wait()
		before := stacks()
		// A burst grows each election's stack to 32 KiB, as a start-up's
		// netlink and filter work does.
		for _, r := range n.d.snapshot() {
			if st, _ := r.in.m.State(); st != vrrp.StateMaster {
				t.Fatalf("%s is %v, want master", r.in.id.name, st)
			}
			r.in.cmds <- func() { deepStack(24) }
		}
		synctest.Wait()
		grown := stacks()
		// Each group's share: its election's stack, and the daemon's few
		// goroutines of its own shared out.
		want := int64(4 << 10)
		if raceDetector {
			want = 8 << 10 // its frames do not fit a quarter of 8 KiB
		}
		if per := (int64(grown) - int64(alone)) / groups; per > want+2<<10 {
			t.Errorf("an idle election holds %d bytes of stack after a burst, want its %d KiB (and a share of the daemon's own): %d without the daemon, %d idle, %d idle after the burst, %d groups",
				per, want>>10, alone, before, grown, groups)
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
