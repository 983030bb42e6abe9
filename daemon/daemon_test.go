package daemon

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

var testVIP = netip.MustParsePrefix("198.51.100.10/32")

func testInstance(prio uint8) config.Instance {
	return config.Instance{
		Name: "k8s-api", Interface: "eth0", VRID: 51, Priority: prio,
		AdvertInterval: time.Second, VIPs: []netip.Prefix{testVIP}, Preempt: true,
		GARP: config.GARP{Repeat: 5, Interval: time.Second, Probe: time.Second}, SplitBrainRecovery: true,
	}
}

// node is one daemon on a fake host.
type node struct {
	host   *fakeHost
	d      *Daemon
	cancel context.CancelFunc
	done   chan error
}

func startNode(t *testing.T, lan *fakeLAN, addr string, ic config.Instance) *node {
	t.Helper()
	h := newFakeHost(lan, addr)
	return startOn(t, h, ic)
}

func startOn(t *testing.T, h *fakeHost, ic config.Instance) *node {
	t.Helper()
	return startWithEnv(t, h, h.env(), ic)
}

func startWithEnv(t *testing.T, h *fakeHost, env Env, ic config.Instance) *node {
	t.Helper()
	return startConfig(t, h, env, &config.Config{Instances: []config.Instance{ic}})
}

// startConfig runs a daemon of cfg on h until the test ends.
func startConfig(t *testing.T, h *fakeHost, env Env, cfg *config.Config) *node {
	t.Helper()
	d, err := New(cfg, testLogger(), env, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{host: h, d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- d.Run(ctx) }()
	t.Cleanup(func() { n.stop(t) })
	return n
}

func (n *node) stop(t *testing.T) {
	n.cancel()
	if err := <-n.done; err != nil {
		t.Errorf("Run: %v", err)
	}
	n.done <- nil // later stops return at once
}

func (n *node) state() vrrp.State { return n.d.Snapshot()[0].State }

func skewOf(prio int) time.Duration { return time.Duration(256-prio) * time.Second / 256 }

func TestElectionFailoverAndGracefulStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		n3 := startNode(t, lan, "198.51.100.13", testInstance(50))

		// n1 wins after its Master_Down_Interval, 3s + Skew_Time(150).
		time.Sleep(3*time.Second + skewOf(150) - time.Millisecond)
		synctest.Wait()
		if n1.host.holds(testVIP) {
			t.Fatal("n1 took the VIP before Master_Down_Interval")
		}
		time.Sleep(2*time.Millisecond + takeoverGrace(time.Second))
		synctest.Wait()
		if !n1.host.holds(testVIP) || n2.host.holds(testVIP) || n3.host.holds(testVIP) {
			t.Fatalf("after election: holds n1=%v n2=%v n3=%v", n1.host.holds(testVIP), n2.host.holds(testVIP), n3.host.holds(testVIP))
		}
		if got := []vrrp.State{n1.state(), n2.state(), n3.state()}; got[0] != vrrp.StateMaster || got[1] != vrrp.StateBackup || got[2] != vrrp.StateBackup {
			t.Fatalf("states %v", got)
		}
		if got := n1.host.announced(testVIP.Addr()); got != 1 {
			t.Errorf("%d gratuitous ARPs right after takeover, want 1", got)
		}
		// The burst: repeat=5 at 1s, then nothing more (refresh off).
		time.Sleep(10 * time.Second)
		if got := n1.host.announced(testVIP.Addr()); got != 5 {
			t.Errorf("%d gratuitous ARPs after the burst, want 5", got)
		}

		// Graceful stop: priority 0, so n2 takes over after its Skew_Time;
		// n1 keeps the VIP until then (make-before-break).
		n1.cancel()
		time.Sleep(skewOf(100) - time.Millisecond)
		synctest.Wait()
		if n2.host.holds(testVIP) {
			t.Fatal("n2 took over before Skew_Time")
		}
		if !n1.host.holds(testVIP) {
			t.Fatal("n1 released the VIP before a successor took over")
		}
		time.Sleep(2*time.Millisecond + takeoverGrace(time.Second))
		synctest.Wait()
		if !n2.host.holds(testVIP) || n3.host.holds(testVIP) {
			t.Fatalf("after graceful stop: n2=%v n3=%v", n2.host.holds(testVIP), n3.host.holds(testVIP))
		}
		n1.stop(t)
		if n1.host.holds(testVIP) {
			t.Fatal("n1 kept the VIP after stopping")
		}
		if r := n1.d.Snapshot(); len(r) > 0 && r[0].Handover.Late {
			t.Errorf("the handover found no successor: %+v", r[0].Handover)
		}
		st := n2.d.Snapshot()[0]
		if st.LastChange.Reason != vrrp.ReasonMasterLeft {
			t.Errorf("n2's cause %q (%v)", st.LastChange.Cause, st.LastChange.Reason)
		}
	})
}

func TestCutMasterAndLinkFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(10 * time.Second)
		n1.host.setCarrier(false)
		synctest.Wait()
		if n1.state() != vrrp.StateFault || n1.host.holds(testVIP) {
			t.Fatalf("n1 after link down: %v, holds=%v", n1.state(), n1.host.holds(testVIP))
		}
		if c := n1.d.Snapshot()[0].LastChange.Cause; c != "interface eth0 down" {
			t.Errorf("cause %q", c)
		}
		time.Sleep(4 * time.Second)
		if !n2.host.holds(testVIP) {
			t.Fatal("n2 did not take over")
		}
		if c := n2.d.Snapshot()[0].LastChange.Cause; c != "no advert from 198.51.100.11 for 3.61s" {
			t.Errorf("cause %q", c)
		}
		// Link back: n1 is Backup, then preempts (150 > 100).
		n1.host.setCarrier(true)
		synctest.Wait()
		if n1.state() != vrrp.StateBackup {
			t.Fatalf("n1 after link up: %v", n1.state())
		}
		time.Sleep(5 * time.Second)
		if !n1.host.holds(testVIP) || n2.host.holds(testVIP) {
			t.Fatalf("after preemption: n1=%v n2=%v", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
	})
}

func TestVIPRestoredWhenDeleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		time.Sleep(5 * time.Second)
		before := n1.host.announced(testVIP.Addr())
		n1.host.deleteVIPBehindOurBack(testVIP)
		synctest.Wait()
		if !n1.host.holds(testVIP) {
			t.Fatal("deleted VIP not restored")
		}
		if n1.host.announced(testVIP.Addr()) <= before {
			t.Error("restored VIP not announced")
		}
		if n1.state() != vrrp.StateMaster {
			t.Errorf("state %v", n1.state())
		}
	})
}

func TestLeftOverVIPRemovedAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.12")
		h.vips[testVIP] = true // a crashed run left it
		master := startNode(t, lan, "198.51.100.11", testInstance(150))
		time.Sleep(10 * time.Second)
		startOn(t, h, testInstance(100))
		synctest.Wait()
		if h.holds(testVIP) {
			t.Fatal("left-over VIP not removed at start")
		}
		if !master.host.holds(testVIP) {
			t.Fatal("master lost the VIP")
		}
	})
}

func TestWaitsForInterface(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		h.exists = false
		n := startOn(t, h, testInstance(150))
		time.Sleep(10 * time.Second)
		if h.holds(testVIP) || n.state() != vrrp.StateInitialize {
			t.Fatalf("acted without an interface: %v", n.state())
		}
		select {
		case <-n.d.Ready():
			t.Fatal("ready without an interface")
		default:
		}
		h.mu.Lock()
		h.exists = true
		h.mu.Unlock()
		time.Sleep(6 * time.Second)
		if !h.holds(testVIP) {
			t.Fatalf("did not start once the interface appeared: %v", n.state())
		}
		<-n.d.Ready()
	})
}

// An instance still waiting for its interface stops with the daemon, at
// once: the stop reaches it through its mailbox, which wakes the wait (its
// look for the interface again, every waitRetry, would find it only up to
// a second later). Real time, not a bubble: a stop that never arrived
// would keep the bubble's goroutines, and the test, running.
func TestStopWhileWaitingForInterface(t *testing.T) {
	h := newFakeHost(&fakeLAN{}, "198.51.100.11")
	h.exists = false
	d, err := New(&config.Config{Instances: []config.Instance{testInstance(150)}}, testLogger(), h.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	// Waiting: its goroutine has made the signal it waits on.
	mb := d.snapshot()[0].in.mb
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mb.mu.Lock()
		waiting := mb.signal != nil
		mb.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(end) {
			t.Fatal("never waited for its interface")
		}
	}
	time.Sleep(50 * time.Millisecond) // well inside its wait
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitRetry / 2):
		t.Fatalf("still waiting for its interface %v after the stop", waitRetry/2)
	}
}

// An instance asked to stop before it joined its group never joins (no
// socket, nothing to take and hand over at once), and one a reload adds
// while the daemon stops is not started at all: Run, which may be waiting
// for the others already, does not wait for it.
func TestStoppedBeforeJoiningNeverJoins(t *testing.T) {
	h := newFakeHost(&fakeLAN{}, "198.51.100.11")
	cfg := &config.Config{Instances: []config.Instance{testInstance(150), testInstance(100)}}
	cfg.Instances[1].Name, cfg.Instances[1].VRID = "other", 52
	d, err := New(cfg, testLogger(), h.env(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, second := d.instances[0].in, d.instances[1]
	first.cancel()
	ended := make(chan error, 1)
	first.run(func(err error) { ended <- err }) // returns once it has stopped
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("end: %v", err)
		}
	default:
		t.Fatal("run returned before the instance ended")
	}
	d.mu.Lock()
	d.stopping = true
	d.startLocked(second)
	d.mu.Unlock()
	select {
	case <-second.in.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("an instance started while the daemon stops did not end")
	}
	if n := len(h.sockets()); n != 0 {
		t.Errorf("%d VRRP sockets opened by instances stopped before joining", n)
	}
	waited := make(chan struct{})
	go func() { d.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the daemon waits for an instance it never started")
	}
}

func TestMalformedAdvertsCountedAndDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		time.Sleep(5 * time.Second)
		attacker := netip.MustParseAddr("198.51.100.66")
		good, _ := (&vrrp.Advertisement{VRID: 51, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, attacker, vrrp.GroupIPv4)
		bad := append([]byte(nil), good...)
		bad[7] ^= 0xff
		other, _ := (&vrrp.Advertisement{VRID: 51, Priority: 200, Interval: time.Second, Addresses: []netip.Addr{netip.MustParseAddr("198.51.100.77")}}).Append(nil, attacker, vrrp.GroupIPv4)
		for i := 0; i < 1000; i++ {
			lan.inject(bad, attacker, vrrp.GroupIPv4, 255)      // checksum
			lan.inject(good, attacker, vrrp.GroupIPv4, 64)      // TTL: off the link
			lan.inject(good[:5], attacker, vrrp.GroupIPv4, 255) // too short
			lan.inject(other, attacker, vrrp.GroupIPv4, 255)    // VRID collision
			synctest.Wait()
		}
		time.Sleep(5 * time.Second)
		st := n1.d.Snapshot()[0]
		if st.State != vrrp.StateMaster || !n1.host.holds(testVIP) {
			t.Fatalf("lost mastership to garbage: %v", st.State)
		}
		for reason, want := range map[string]uint64{"checksum": 1000, "ttl": 1000, "too_short": 1000, "address_list": 1000} {
			if st.Drops[reason] != want {
				t.Errorf("drops[%s] = %d, want %d", reason, st.Drops[reason], want)
			}
		}
	})
}

func TestSecondOwnerDetected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(10 * time.Second)
		foreign := net.HardwareAddr{0x52, 0x54, 0, 0xaa, 0xbb, 0xcc}
		// A backup ignores claims: it does not own the address.
		n2.host.claims <- arp.Claim{IP: testVIP.Addr(), MAC: foreign, Op: arp.OperationReply}
		// Another host answers ARP for our VIP: the master reports it and
		// announces again at once.
		before := n1.host.announced(testVIP.Addr())
		n1.host.claims <- arp.Claim{IP: testVIP.Addr(), MAC: foreign, Op: arp.OperationReply}
		time.Sleep(conflictGrace + time.Millisecond)
		synctest.Wait()
		st := n1.d.Snapshot()[0]
		if st.Conflicts != 1 || st.LastConflict.MAC.String() != foreign.String() {
			t.Errorf("conflicts %d, last %v", st.Conflicts, st.LastConflict.MAC)
		}
		if n1.host.announced(testVIP.Addr()) != before+1 {
			t.Errorf("no announcement in answer to the claim")
		}
		// Claims for other addresses are none of our business.
		n1.host.claims <- arp.Claim{IP: netip.MustParseAddr("198.51.100.99"), MAC: foreign, Op: arp.OperationRequest}
		time.Sleep(conflictGrace + time.Millisecond)
		synctest.Wait()
		if got := n1.d.Snapshot()[0].Conflicts; got != 1 {
			t.Errorf("conflicts %d after an unrelated claim", got)
		}
		if got := n2.d.Snapshot()[0].Conflicts; got != 0 {
			t.Errorf("backup counted %d conflicts", got)
		}
		if n1.state() != vrrp.StateMaster {
			t.Errorf("master lost its state: %v", n1.state())
		}
	})
}

func TestClaimOfAPreemptingPeerIsNoConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		time.Sleep(10 * time.Second)
		// A higher-priority peer takes over: its gratuitous ARP may be read
		// before its advert.
		peer := netip.MustParseAddr("198.51.100.20")
		n1.host.claims <- arp.Claim{IP: testVIP.Addr(), MAC: net.HardwareAddr{2, 0, 0, 0, 0, 20}, Op: arp.OperationReply}
		synctest.Wait()
		lan.advertise(peer, 200)
		time.Sleep(time.Second)
		synctest.Wait()
		st := n1.d.Snapshot()[0]
		if st.State != vrrp.StateBackup {
			t.Fatalf("state %v, want BACKUP", st.State)
		}
		if st.Conflicts != 0 {
			t.Errorf("the new Master's announcement was taken for a second owner (%d)", st.Conflicts)
		}
	})
}

func testLogger() *slog.Logger {
	if os.Getenv("VIPD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}
