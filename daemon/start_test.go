package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/vrrp"
)

// gatedLinks holds every look for a link, once gated, until the gate
// closes, and counts the looks held at once.
type gatedLinks struct {
	*fakeHost
	gate         atomic.Pointer[chan struct{}]
	inside, most atomic.Int32
}

func (g *gatedLinks) Link(name string) (netif.LinkInfo, error) {
	if gate := g.gate.Load(); gate != nil {
		n := g.inside.Add(1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		<-*gate
		g.inside.Add(-1)
	}
	return g.fakeHost.Link(name)
}

// withProcs runs the test with GOMAXPROCS at n: the daemon starts its
// instances in that many lists.
func withProcs(t *testing.T, n int) {
	prev := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// The daemon starts its instances one after the other in as many lists as
// the runtime runs goroutines at once, not on a goroutine each: a start's
// goroutine record, and the stacks the runtime keeps on its free lists,
// would outlive it (about 2 KiB a group at rest at 255 groups). A slow
// netlink therefore holds at most that many starts at once.
func TestStartsRunInLists(t *testing.T) {
	withProcs(t, 2)
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHost(&fakeLAN{}, "198.51.100.11")
		g := &gatedLinks{fakeHost: h}
		env := h.env()
		env.Links = g
		cfg := &config.Config{}
		const groups = 8
		for i := range groups {
			ic := testInstance(150)
			ic.Name, ic.VRID = fmt.Sprintf("g%d", i+1), uint8(i+1)
			ic.VIPs = []netip.Prefix{netip.PrefixFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i + 1)}), 32)}
			cfg.Instances = append(cfg.Instances, ic)
		}
		d, err := New(cfg, testLogger(), env, Options{})
		if err != nil {
			t.Fatal(err)
		}
		gate := make(chan struct{})
		g.gate.Store(&gate) // New has looked already
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		synctest.Wait()
		if most := g.most.Load(); most != 2 {
			t.Errorf("%d starts looked for their link at once, want 2 (one a list)", most)
		}
		close(gate)
		time.Sleep(5 * time.Second)
		for _, st := range d.Snapshot() {
			if st.State != vrrp.StateMaster {
				t.Errorf("%s is %v after 5 s, want Master", st.Name, st.State)
			}
		}
		<-d.Ready()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// An instance that waits for its interface hands the rest of its list to
// a goroutine of their own: the groups after it start as if it were not
// there.
func TestStartWaitingForItsLinkLetsTheListGoOn(t *testing.T) {
	withProcs(t, 1)
	synctest.Test(t, func(t *testing.T) {
		h := newFakeHost(&fakeLAN{}, "198.51.100.11")
		waits, starts := testInstance(150), testInstance(150)
		waits.Name, waits.Interface, waits.VRID = "waits", "eth9", 52
		waits.VIPs = []netip.Prefix{netip.MustParsePrefix("203.0.113.52/32")}
		n := startConfig(t, h, h.env(), &config.Config{Instances: []config.Instance{waits, starts}})
		time.Sleep(5 * time.Second)
		if !h.holds(testVIP) {
			t.Error("the group after one waiting for its link never started")
		}
		for _, st := range n.d.Snapshot() {
			if st.Name == "waits" && st.State != vrrp.StateInitialize {
				t.Errorf("the group on a missing link is %v", st.State)
			}
		}
	})
}

// An instance asked to stop while it waits its turn in a list is not set
// up when its turn comes: no timer, no trackers to start and then wait
// for, with the rest of the list behind it.
func TestStoppedInItsListSetsNothingUp(t *testing.T) {
	h := newFakeHost(&fakeLAN{}, "198.51.100.11")
	env := h.env()
	var timers atomic.Int32
	env.NewTimer = func(fire func()) (Timer, error) {
		timers.Add(1)
		t := time.AfterFunc(time.Hour, fire)
		t.Stop()
		return goTimer{t}, nil
	}
	d, err := New(&config.Config{Instances: []config.Instance{testInstance(150)}}, testLogger(), env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := d.instances[0].in
	in.cancel()
	ended := make(chan error, 1)
	in.end = func(err error) { ended <- err }
	startInstances([]*instance{in}) // returns once it has stopped
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("end: %v", err)
		}
	default:
		t.Fatal("the list went on before the instance ended")
	}
	if n := timers.Load(); n != 0 {
		t.Errorf("%d timers made by an instance stopped before its turn", n)
	}
	if n := len(h.sockets()); n != 0 {
		t.Errorf("%d VRRP sockets opened by an instance stopped before its turn", n)
	}
}
