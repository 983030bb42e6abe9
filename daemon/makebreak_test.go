package daemon

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/vrrp"
)

// Issue 15: a graceful stop keeps the VIP until the successor has taken
// over, says nothing meanwhile, and reports the gap.
func TestGracefulStopIsMakeBeforeBreak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(20 * time.Second)
		garps := n1.host.announced(testVIP.Addr())
		stopAt := time.Now()
		n1.cancel()
		// Until n2's Skew_Time n1 alone holds the VIP.
		time.Sleep(skewOf(100) - time.Millisecond)
		synctest.Wait()
		if !n1.host.holds(testVIP) || n2.host.holds(testVIP) {
			t.Fatalf("before the successor's Skew_Time: n1 %v, n2 %v; want n1 only", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		if err := <-n1.done; err != nil {
			t.Fatal(err)
		}
		n1.done <- nil
		removed := time.Now()
		if n1.host.holds(testVIP) || !n2.host.holds(testVIP) {
			t.Fatalf("after the handover: n1 %v, n2 %v", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		if got := n1.host.announced(testVIP.Addr()); got != garps {
			t.Errorf("n1 announced %d times while handing over", got-garps)
		}
		r := n1.d.Snapshot()[0].Handover
		if r.Late || r.Successor.String() != "198.51.100.12" || r.PriorityZeroAt != stopAt {
			t.Errorf("report %+v", r)
		}
		// Both hold the VIP only from n2's takeover (its advert, then its
		// announcement a takeover grace later) to our removal.
		if both := r.RemovedAt.Sub(r.SuccessorAt); both <= 0 || both > takeoverGrace(time.Second)+time.Millisecond {
			t.Errorf("both held the VIP for %v (successor at %v, removed at %v)", both, r.SuccessorAt.Sub(stopAt), r.RemovedAt.Sub(stopAt))
		}
		if !r.RemovedAt.Equal(removed) {
			t.Errorf("removed at %v, the stop returned at %v", r.RemovedAt.Sub(stopAt), removed.Sub(stopAt))
		}
		if c := n1.d.Snapshot()[0].Conflicts; c != 0 {
			t.Errorf("the successor's announcement counted as %d conflicts", c)
		}
	})
}

// No successor: the address is kept for the bound, then removed, late.
func TestGracefulStopWithoutSuccessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		time.Sleep(10 * time.Second)
		stopAt := time.Now()
		n1.cancel()
		bound := handoverBound(time.Second)
		time.Sleep(bound - time.Millisecond)
		synctest.Wait()
		if !n1.host.holds(testVIP) {
			t.Fatal("released before the bound")
		}
		if err := <-n1.done; err != nil {
			t.Fatal(err)
		}
		n1.done <- nil
		if n1.host.holds(testVIP) {
			t.Fatal("kept after the stop")
		}
		r := n1.d.Snapshot()[0].Handover
		if !r.Late || r.RemovedAt.Sub(stopAt) != bound {
			t.Errorf("report %+v, want late, removed after %v", r, bound)
		}
	})
}

// Drain is a planned move too; drain --wait reports the gap.
func TestDrainIsMakeBeforeBreakAndReportsTheGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(20 * time.Second)
		res, err := n1.d.Drain(context.Background(), control.DrainRequest{Instance: "k8s-api", Wait: true, Timeout: control.Duration(10 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n1.host.holds(testVIP) || !n2.host.holds(testVIP) {
			t.Fatalf("after the drain: n1 %v, n2 %v", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		di := res.Instances[0]
		if di.TakenOverBy.String() != "198.51.100.12" || di.Handover == nil {
			t.Fatalf("drain result %+v", di)
		}
		h := di.Handover
		if h.SuccessorAt.Sub(h.PriorityZeroAt) != skewOf(100) || h.RemovedAt.Before(h.SuccessorAt) || h.Late {
			t.Errorf("gap %+v: successor %v after priority 0 (want Skew_Time %v), removed %v after it",
				h, h.SuccessorAt.Sub(h.PriorityZeroAt), skewOf(100), h.RemovedAt.Sub(h.SuccessorAt))
		}
		if n1.state() != vrrp.StateBackup {
			t.Errorf("n1 %v", n1.state())
		}
	})
}

// The successor's announcement can reach us before its advert (a loaded
// host reads its ARP socket first): the handover ends on the
// announcement, and the report still names the successor and when it was
// first heard.
func TestDrainReportsTheSuccessorHeardByItsAnnouncementFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{advertDelay: 5 * time.Millisecond}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(20 * time.Second)
		res, err := n1.d.Drain(context.Background(), control.DrainRequest{Instance: "k8s-api", Wait: true, Timeout: control.Duration(10 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if n1.host.holds(testVIP) || !n2.host.holds(testVIP) {
			t.Fatalf("after the drain: n1 %v, n2 %v", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		h := res.Instances[0].Handover
		if h == nil {
			t.Fatalf("drain result %+v", res.Instances[0])
		}
		if h.Late || h.Successor.String() != "198.51.100.12" || h.SuccessorAt.Before(h.PriorityZeroAt) || h.RemovedAt.Before(h.SuccessorAt) {
			t.Errorf("handover report %+v", h)
		}
		if both := h.RemovedAt.Sub(h.SuccessorAt); both > 10*time.Millisecond {
			t.Errorf("both held the VIP for %v: %+v", both, h)
		}
	})
}

// A preempted Master keeps the VIP until the preempting one, after its
// preempt grace, announces it: a preempt costs the clients nothing.
func TestPreemptedMasterKeepsTheVIPUntilTheNewMasterAnnounces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n2 := startNode(t, lan, "198.51.100.12", testInstance(100))
		time.Sleep(10 * time.Second)
		n1 := startNode(t, lan, "198.51.100.11", testInstance(150))
		for n1.state() != vrrp.StateMaster {
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		if !n2.host.holds(testVIP) || n1.host.holds(testVIP) {
			t.Fatalf("in the preempt grace: n1 %v, n2 %v; want n2 only", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		if n2.state() != vrrp.StateBackup {
			t.Fatalf("n2 %v in the preempt grace, want BACKUP", n2.state())
		}
		time.Sleep(preemptGrace(time.Second) + time.Millisecond)
		synctest.Wait()
		if n2.host.holds(testVIP) || !n1.host.holds(testVIP) {
			t.Fatalf("after the preempt grace: n1 %v, n2 %v; want n1 only", n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		if c := n2.d.Snapshot()[0].Conflicts; c != 0 {
			t.Errorf("n1's announcement counted as %d conflicts on n2", c)
		}
		if r := n2.d.Snapshot()[0].Handover; !r.PriorityZeroAt.IsZero() {
			t.Errorf("a preempt reported as a planned move: %+v", r)
		}
	})
}

// A Master that yields to a higher Master whose announcement it has
// already heard (a split brain healing: the other Master answered our
// probes all along, or announced before its advert arrived) has nothing to
// wait for: it releases at once, or both would answer for the VIP until
// the bound.
func TestYieldAfterTheWinnersClaimReleasesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(100))
		time.Sleep(10 * time.Second)
		peer := netip.MustParseAddr("198.51.100.20")
		n1.host.claims <- arp.Claim{IP: testVIP.Addr(), MAC: net.HardwareAddr{2, 0, 0, 0, 0, 20}, Op: arp.OperationReply, At: time.Now()}
		time.Sleep(100 * time.Millisecond)
		lan.advertise(peer, 200)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n1.state() != vrrp.StateBackup {
			t.Fatalf("state %v, want BACKUP", n1.state())
		}
		if n1.host.holds(testVIP) {
			t.Error("still holds the VIP after yielding to a Master whose claim it heard")
		}
	})
}

// A Master of less than a Master_Down_Interval (two Backups timing out at
// start-up) that is preempted releases at once: nobody relies on it yet,
// and a hand-over would put the VIP on two hosts for nothing.
func TestYoungMasterPreemptedReleasesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startNode(t, lan, "198.51.100.11", testInstance(100))
		for n1.state() != vrrp.StateMaster {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if !n1.host.holds(testVIP) {
			t.Fatal("the Master does not hold the VIP")
		}
		peer := netip.MustParseAddr("198.51.100.20")
		lan.advertise(peer, 200)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n1.state() != vrrp.StateBackup || n1.host.holds(testVIP) {
			t.Errorf("state %v, holds %v; want BACKUP without the VIP at once", n1.state(), n1.host.holds(testVIP))
		}
	})
}
