package daemon

import (
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// patternsSet is how many patterns the fake kernel holds for c.
func (c *fakeConn) patternsSet() int {
	c.lan.mu.Lock()
	defer c.lan.mu.Unlock()
	return len(c.patterns)
}

// connOf is the fake socket a node listens on.
func (l *fakeLAN) connOf(addr string) *fakeConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		if c.src == netip.MustParseAddr(addr) {
			return c
		}
	}
	return nil
}

// cutMasterExpectTakeover cuts the link of n1, the Master at 198.51.100.11,
// and checks that n2, a Backup at priority 100 with 1 s adverts, takes
// over Master_Down_Interval after n1's last advert: not before, not later.
func cutMasterExpectTakeover(t *testing.T, lan *fakeLAN, n1, n2 *node) {
	t.Helper()
	n1.host.setCarrier(false)
	lan.mu.Lock()
	lastAdvert := lan.lastFrom[netip.MustParseAddr("198.51.100.11")]
	lan.mu.Unlock()
	mdi := 3*time.Second + skewOf(100)
	time.Sleep(time.Until(lastAdvert.Add(mdi)) - time.Millisecond)
	synctest.Wait()
	if n2.host.holds(testVIP) {
		t.Fatal("n2 took over before Master_Down_Interval after the last advert")
	}
	time.Sleep(2*time.Millisecond + takeoverGrace(time.Second))
	synctest.Wait()
	if !n2.host.holds(testVIP) {
		t.Fatalf("n2 did not take over Master_Down_Interval after the last advert: %v", n2.state())
	}
}

// A steady Backup reads none of its Master's adverts when they come (the
// kernel sets them aside); it reads them when its timer fires, and they
// push the Master_Down_Timer back from their arrival as if each had been
// read at once: no takeover while the Master speaks, and after a cut the
// takeover comes Master_Down_Interval after the last advert, not later.
func TestSteadyAdvertsSetAsideTimedByArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		c2 := lan.connOf("198.51.100.12")
		n2.d.StatusReport()
		read0, rx0 := c2.readNow.Load(), n2.d.Snapshot()[0].Received
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if n1.state() != vrrp.StateMaster || n2.state() != vrrp.StateBackup || n2.host.holds(testVIP) {
			t.Fatalf("after 30 s steady: n1 %v, n2 %v (holds %v)", n1.state(), n2.state(), n2.host.holds(testVIP))
		}
		if read := c2.readNow.Load() - read0; read != 0 {
			t.Errorf("the steady Backup read %d adverts when they came, want none", read)
		}
		// A status report reads what waits first: all 30 counted, the
		// Master last seen within the interval; and asking the loops (the
		// watchdog does every few seconds) leaves the pattern in place.
		n2.d.StatusReport()
		st := n2.d.Snapshot()[0]
		if rx := st.Received - rx0; rx != 30 {
			t.Errorf("%d adverts received over 30 s, want 30", rx)
		}
		if age := time.Since(st.Master.At); age > time.Second {
			t.Errorf("status: Master last seen %v ago, with an advert every second", age)
		}
		steady := c2.patternsSet() == 1
		if !steady {
			t.Error("the pattern was cleared by a status report")
		}

		cutMasterExpectTakeover(t, lan, n1, n2)
		if c := n2.d.Snapshot()[0].LastChange.Cause; c != "no advert from 198.51.100.11 for 3.61s" {
			t.Errorf("cause %q", c)
		}
	})
}

// A steady Master's priority 0 is another advert: read at once, after
// those set aside before it, and the Backup takes over after Skew_Time.
func TestPriorityZeroReadAtOnceWhileSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(20*time.Second + 300*time.Millisecond)
		synctest.Wait()
		if n2.state() != vrrp.StateBackup || lan.connOf("198.51.100.12").patterns == nil {
			t.Fatalf("n2 %v, not steady", n2.state())
		}
		n1.cancel()
		time.Sleep(skewOf(100) - time.Millisecond)
		synctest.Wait()
		if n2.host.holds(testVIP) {
			t.Fatal("n2 took over before Skew_Time")
		}
		time.Sleep(2*time.Millisecond + takeoverGrace(time.Second))
		synctest.Wait()
		if !n2.host.holds(testVIP) {
			t.Fatalf("n2 did not take over Skew_Time after the priority 0: %v", n2.state())
		}
		n1.stop(t)
		if st := n2.d.Snapshot()[0]; st.LastChange.Reason != vrrp.ReasonMasterLeft {
			t.Errorf("n2's cause %q (%v)", st.LastChange.Cause, st.LastChange.Reason)
		}
	})
}

// A router that preempts the steady Master is read at once; the Backup
// follows it and, when it is cut, takes over from the old Master's
// successor in order: n1 (150) resumes, not n2 (100).
func TestNewMasterReadAtOnceWhileSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(15 * time.Second)
		n3 := startNode(t, lan, "198.51.100.13", testInstance(200))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n3.state() != vrrp.StateMaster || n1.state() != vrrp.StateBackup || n2.state() != vrrp.StateBackup {
			t.Fatalf("after n3 joined: n1 %v n2 %v n3 %v", n1.state(), n2.state(), n3.state())
		}
		if m := n2.d.Snapshot()[0].Master.Addr; m != netip.MustParseAddr("198.51.100.13") {
			t.Errorf("n2 follows %v, want n3", m)
		}
		n3.host.setCarrier(false)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if !n1.host.holds(testVIP) || n2.host.holds(testVIP) {
			t.Fatalf("after n3's cut: n1 holds %v, n2 holds %v", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
	})
}

// With room in the kernel for one pattern, the second group's adverts are
// read when they come, and both groups are timed right.
func TestQuietRoomForOnePattern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true, quietRoom: 1}
		second := netip.MustParsePrefix("203.0.113.1/32")
		start := func(addr string, prio uint8) *node {
			a, b := testInstance(prio), testInstance(prio)
			b.Name, b.VRID, b.VIPs = "second", 52, []netip.Prefix{second}
			h := newFakeHost(lan, addr)
			return startConfig(t, h, h.env(), &config.Config{Instances: []config.Instance{a, b}})
		}
		n1 := start("198.51.100.11", 150)
		n2 := start("198.51.100.12", 100)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		c2 := lan.connOf("198.51.100.12")
		set := c2.patternsSet()
		if set != 1 {
			t.Errorf("%d patterns set with room for 1", set)
		}
		// The group the kernel refused knows it: it times its wake-ups as
		// a group whose adverts are read when they come.
		quiet := 0
		for _, r := range n2.d.snapshot() {
			var set bool
			if err := r.in.do(t.Context(), func() { set = r.in.quietSet }); err != nil {
				t.Fatal(err)
			}
			if set {
				quiet++
			}
		}
		if quiet != 1 {
			t.Errorf("%d groups believe their adverts are set aside, with room for 1", quiet)
		}
		if n2.host.holds(testVIP) || n2.host.holds(second) || !n1.host.holds(testVIP) || !n1.host.holds(second) {
			t.Fatal("the VIPs moved while the Master spoke")
		}
		n1.host.setCarrier(false)
		time.Sleep(3*time.Second + skewOf(100) + time.Second)
		synctest.Wait()
		if !n2.host.holds(testVIP) || !n2.host.holds(second) {
			t.Fatalf("after the cut: n2 holds %v and %v", n2.host.holds(testVIP), n2.host.holds(second))
		}
	})
}

// IPv6 adverts are set aside as IPv4's are, up to the two addresses a
// pattern holds over IPv6: a group with three is read at once, and does
// not keep the other groups of its interface from being set aside.
func TestQuietIPv6UpToWhatAPatternHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		start := func(addr string, prio uint8) *node {
			one, three := testInstance(prio), testInstance(prio)
			one.Name, one.VIPs = "one", []netip.Prefix{testVIP6}
			three.Name, three.VRID = "three", 52
			three.VIPs = []netip.Prefix{netip.MustParsePrefix("2001:db8::21/128"), netip.MustParsePrefix("2001:db8::22/128"), netip.MustParsePrefix("2001:db8::23/128")}
			h := newFakeHost(lan, addr)
			return startConfig(t, h, h.env(), &config.Config{Instances: []config.Instance{one, three}})
		}
		n1 := start("198.51.100.11", 150)
		n2 := start("198.51.100.12", 100)
		time.Sleep(30 * time.Second)
		synctest.Wait()
		ll, _, err := n2.host.LinkLocal(testInstance(100).Interface)
		if err != nil {
			t.Fatal(err)
		}
		c2 := lan.connOf(ll.String())
		if c2 == nil {
			t.Fatalf("n2 has no IPv6 socket from %v", ll)
		}
		if set := c2.patternsSet(); set != 1 {
			t.Errorf("%d IPv6 patterns set, want 1: the one-address group's", set)
		}
		for _, st := range n2.d.Snapshot() {
			if st.State != vrrp.StateBackup {
				t.Errorf("n2's %s is %v", st.Name, st.State)
			}
		}
		if !n1.host.holds(testVIP6) || n2.host.holds(testVIP6) {
			t.Error("the VIP moved while the Master spoke")
		}
	})
}

// Forty groups that turn steady together, and take over together after a
// cut, change their socket's filters a few times, not once each (every
// change compiles programs holding all of the socket's patterns: the
// square of the groups at 255); each still ends up set, then cleared.
func TestQuietChangesOfManyGroupsApplyTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const groups = 40
		lan := &fakeLAN{quiet: true}
		n1 := startGroups(t, lan, "198.51.100.11", groups, 150)
		startGroups(t, lan, "198.51.100.12", groups, 100)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		c2 := lan.connOf("198.51.100.12")
		set := c2.patternsSet()
		if set != groups {
			t.Fatalf("%d of %d groups set aside while steady", set, groups)
		}
		if n := c2.filterChanges.Load(); n > groups/4 {
			t.Errorf("turning steady changed the filters %d times for %d groups", n, groups)
		}
		before := c2.filterChanges.Load()
		t.Logf("turning steady: %d changes of the filters", before)
		n1.host.setCarrier(false)
		time.Sleep(3*time.Second + skewOf(100) + time.Second)
		synctest.Wait()
		set = c2.patternsSet()
		if set != 0 {
			t.Errorf("%d patterns left after all groups took over", set)
		}
		if n := c2.filterChanges.Load() - before; n > groups/4 {
			t.Errorf("the takeover changed the filters %d times for %d groups", n, groups)
		}
	})
}

// A pattern whose clearing waited for the filters' next change (another
// group had just changed them) may have set adverts aside that nobody
// reads until the instance's next event; the change nudges the instance so
// that it reads them at once.
func TestDeferredClearNudgesItsInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{quiet: true}
		conn := lan.listenConn(netip.MustParseAddr("198.51.100.12"), new(atomic.Bool), false)
		s := quietSocketOn(conn)
		pool := s.pool
		host := newFakeHost(lan, "198.51.100.12")
		mk := func(vrid uint8) *instance {
			in := newInstance(new(instance), &config.Instance{Name: fmt.Sprint(vrid), Interface: "eth0", VRID: vrid, Priority: 100, AdvertInterval: time.Second, VIPs: []netip.Prefix{testVIP}},
				pools{sockets: pool, announcers: newAnnouncerPool(Env{})}, "", slog.New(slog.DiscardHandler), &Env{Now: time.Now, Links: host}, &instanceHooks{})
			s.subs[vrid].Store(in)
			return in
		}
		a, b := mk(1), mk(2)
		pat := func(vrid uint8) *transport.QuietPattern {
			return &transport.QuietPattern{Src: netip.MustParseAddr("198.51.100.11"), Payload: []byte{0x31, vrid, 100, 1, 0, 100, 0, 0}}
		}
		if !s.setQuiet(1, pat(1)) {
			t.Fatal("pattern 1 refused")
		}
		time.Sleep(quietApplySettle) // the first change waits that long
		synctest.Wait()
		if n := conn.(quietFakeConn).patternsSet(); n != 1 {
			t.Fatalf("%d patterns in the kernel after the first change, want 1", n)
		}
		s.setQuiet(2, pat(2)) // within 50 ms: waits
		s.setQuiet(1, nil)    // so does this clear
		if nudged(a) || nudged(b) {
			t.Fatal("nudged before the change was applied")
		}
		time.Sleep(quietApplyEvery)
		synctest.Wait()
		if !nudged(a) {
			t.Error("the instance whose pattern went was not nudged")
		}
		if nudged(b) {
			t.Error("the instance whose pattern was set was nudged")
		}
		n := conn.(quietFakeConn).patternsSet()
		if n != 1 {
			t.Errorf("%d patterns in the kernel after the change, want 1", n)
		}
		s.closeQuiet()
	})
}

// quietSocketOn is a shared socket on conn, with its set-aside patterns,
// outside any daemon.
func quietSocketOn(conn transport.Conn) *vrrpSocket {
	pool := newSocketPool(Env{Now: time.Now}, slog.New(slog.DiscardHandler))
	return &vrrpSocket{pool: pool, conn: conn, quiet: newQuietAdverts(conn), closing: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{})}
}

// slowKernel is a quieter whose filter changes take as long as the test
// says: a change of 255 patterns takes the kernel 5 to 25 ms.
type slowKernel struct {
	quietFakeConn
	entered, release chan struct{}
}

func (k slowKernel) SetQuiet(ps []transport.QuietPattern) (int, error) {
	k.entered <- struct{}{}
	<-k.release
	return k.quietFakeConn.SetQuiet(ps)
}

// While the kernel changes a socket's filters, its groups still read what
// was set aside for them: every takeover of a cut reads first, and a
// change made on one group's loop under the lock of the reads held them
// all for as long as the kernel took. A pattern being set meanwhile stays
// pending: its adverts are read once it is in place.
func TestFilterChangeHoldsUpNoRead(t *testing.T) {
	lan := &fakeLAN{quiet: true}
	k := slowKernel{
		quietFakeConn: lan.listenConn(netip.MustParseAddr("198.51.100.12"), new(atomic.Bool), false).(quietFakeConn),
		entered:       make(chan struct{}), release: make(chan struct{}),
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(k.release)
		}
	}
	defer release()
	s := quietSocketOn(k)
	pat := &transport.QuietPattern{Src: netip.MustParseAddr("198.51.100.11"), Payload: []byte{0x31, 7, 100, 1, 0, 100, 0, 0}}
	go s.setQuiet(7, pat)
	<-k.entered // the kernel is at work
	read := make(chan struct{})
	go func() { s.drainQuiet(); close(read) }()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		t.Fatal("reading what was set aside waited for the kernel's change of the filters")
	}
	if !s.maybePending(7) {
		t.Error("a pattern going into the kernel is not pending: its adverts would wait unread")
	}
	release()
	deadline := time.Now().Add(5 * time.Second)
	for k.patternsSet() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the pattern never reached the kernel")
		}
		time.Sleep(time.Millisecond)
	}
	s.drainQuiet()
	if !s.maybePending(7) {
		t.Error("a pattern in the kernel stopped being pending at a read")
	}
	s.closeQuiet()
}

// nudged: in, never started, has a nudge waiting in its mailbox.
func nudged(in *instance) bool {
	in.mb.mu.Lock()
	defer in.mb.mu.Unlock()
	return in.mb.nudge
}

// The filters' first change after a cut waits for the takeovers of the
// groups whose Master_Down_Timers expired with the first group's: each
// change compiles programs holding every pattern of the socket (some 20
// ms of CPU at 255 groups), and made at once it ran ahead of their
// adverts and their VIPs on the processor they share (the lab's
// 255-group cut: the first group's VIP on time, the fifteen others of its
// instant 24 ms late).
func TestTakeoverFilterChangeWaitsForTheTakeoversOfItsInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const groups = 2 * advertsPerWake // two instants of the interval, full
		lan := &fakeLAN{quiet: true}
		n1 := startGroups(t, lan, "198.51.100.11", groups, 150)
		n2 := startGroups(t, lan, "198.51.100.12", groups, 100)
		time.Sleep(20 * time.Second)
		synctest.Wait()
		held := func() int {
			n := 0
			for _, ic := range manyGroups(groups, 100).Instances {
				if n2.host.holds(ic.VIPs[0]) {
					n++
				}
			}
			return n
		}
		var mu sync.Mutex
		var heldAtChange []int
		c2 := lan.connOf("198.51.100.12")
		lan.mu.Lock()
		c2.onChange = func() {
			h := held()
			mu.Lock()
			heldAtChange = append(heldAtChange, h)
			mu.Unlock()
		}
		lan.mu.Unlock()
		n1.host.setCarrier(false)
		time.Sleep(3*time.Second + skewOf(100) + time.Second)
		synctest.Wait()
		if n := held(); n != groups {
			t.Fatalf("n2 holds %d of %d VIPs after the cut", n, groups)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(heldAtChange) == 0 {
			t.Fatal("the takeover changed no filter")
		}
		// The Masters advertised at two instants of advertsPerWake groups
		// each, so as many expire together.
		if heldAtChange[0] < advertsPerWake {
			t.Errorf("the first change of the filters came when n2 held %d VIPs, before the %d groups of the first instant had taken over (changes: %v)",
				heldAtChange[0], advertsPerWake, heldAtChange)
		}
	})
}
