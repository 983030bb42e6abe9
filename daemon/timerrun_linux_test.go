package daemon

import (
	"net/netip"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/internal/ktimer"
	"github.com/vipd/vipd/vrrp"
)

// slowLinks is a fake host whose netlink add of one VIP takes a while, as
// a loaded kernel's can.
type slowLinks struct {
	*fakeHost
	slow  netip.Prefix
	delay time.Duration

	mu      sync.Mutex
	started time.Time // when the slow add began; zero: not yet
}

func (s *slowLinks) AddVIP(ifname string, vip netip.Prefix, label string) error {
	if vip == s.slow {
		s.mu.Lock()
		s.started = time.Now()
		s.mu.Unlock()
		time.Sleep(s.delay)
	}
	return s.fakeHost.AddVIP(ifname, vip, label)
}

func (s *slowLinks) slowStart() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// An election runs on the kernel timers' goroutine when its timer expires
// (onTimer), and hands the timers on before anything slow: one group's
// takeover whose netlink add blocks holds up no other group's adverts. In
// real time, on the daemon's own timers.
func TestSlowTakeoverHoldsUpNoOtherGroup(t *testing.T) {
	g, err := ktimer.NewGroup()
	if err != nil {
		t.Skipf("no kernel timers: %v", err)
	}
	t.Cleanup(func() { g.Close() }) // after the daemon's stop, which uses them
	lan := &fakeLAN{recordSends: true}
	h := newFakeHost(lan, "198.51.100.11")
	slowVIP := netip.MustParsePrefix("203.0.113.52/32")
	links := &slowLinks{fakeHost: h, slow: slowVIP, delay: 600 * time.Millisecond}
	env := h.env()
	env.Links = links
	env.NewTimer = func(fire func(func())) (Timer, error) { return g.New(fire) }
	fast := testInstance(254)
	fast.AdvertInterval = 50 * time.Millisecond
	// Its Master_Down_Interval, 3 s, ends long after fast is steady.
	slow := testInstance(254)
	slow.Name, slow.VRID, slow.VIPs = "slow", 52, []netip.Prefix{slowVIP}
	startConfig(t, h, env, &config.Config{Instances: []config.Instance{fast, slow}})

	deadline := time.Now().Add(10 * time.Second)
	for links.slowStart().IsZero() || time.Since(links.slowStart()) < links.delay+200*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatal("the slow group did not take over")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !h.holds(slowVIP) {
		t.Fatal("the slow group's VIP was not added")
	}
	from := links.slowStart()
	lan.mu.Lock()
	sent := append([]time.Time(nil), lan.sentAt[51]...)
	lan.mu.Unlock()
	var during []time.Time
	for _, at := range sent {
		if at.After(from.Add(-100*time.Millisecond)) && at.Before(from.Add(links.delay)) {
			during = append(during, at)
		}
	}
	// 14 adverts of 50 ms in the 700 ms; a held-up group sends 2 or 3.
	if len(during) < 7 {
		t.Errorf("the other group sent %d adverts at 50 ms while the slow one's add took %v: held up", len(during), links.delay)
	}
	for i := 1; i < len(during); i++ {
		if gap := during[i].Sub(during[i-1]); gap > 300*time.Millisecond {
			t.Errorf("the other group's adverts %v apart at 50 ms while the slow one's add blocked", gap)
		}
	}
}

// A steady Master on the kernel timers runs each advert's wake-up on the
// timers' goroutine: no goroutine started for it, no waiter handed on,
// nothing allocated.
func TestSteadyMasterWakesOnTheTimersGoroutine(t *testing.T) {
	g, err := ktimer.NewGroup()
	if err != nil {
		t.Skipf("no kernel timers: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	lan := &fakeLAN{} // alone: the fake LAN copies nothing
	h := newFakeHost(lan, "198.51.100.11")
	env := h.env()
	env.NewTimer = func(fire func(func())) (Timer, error) { return g.New(fire) }
	ic := testInstance(150)
	ic.AdvertInterval = 10 * time.Millisecond
	ic.GARP.Interval = 50 * time.Millisecond
	n := startWithEnv(t, h, env, ic)
	deadline := time.Now().Add(10 * time.Second)
	for n.state() != vrrp.StateMaster || h.announced(testVIP.Addr()) < ic.GARP.Repeat {
		if time.Now().After(deadline) {
			t.Fatalf("not a settled Master: state %v", n.state())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	sample := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	var before, after runtime.MemStats
	metrics.Read(sample)
	startedBefore := sample[0].Value.Uint64()
	runtime.ReadMemStats(&before)
	sent := lan.sentBy(51)
	time.Sleep(2 * time.Second)
	runtime.ReadMemStats(&after)
	metrics.Read(sample)
	adverts := lan.sentBy(51) - sent
	if adverts < 100 {
		t.Fatalf("%d adverts in 2 s at 10 ms", adverts)
	}
	// A few allow for the test's and the runtime's own.
	if n := sample[0].Value.Uint64() - startedBefore; n >= uint64(adverts/20) {
		t.Errorf("%d goroutines started over %d adverts, want none", n, adverts)
	}
	if n := after.Mallocs - before.Mallocs; n >= uint64(adverts/20) {
		t.Errorf("%d allocations over %d adverts, want none", n, adverts)
	}
}
