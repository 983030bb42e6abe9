package daemon

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/netif"
)

// The election takes a stop first, then a failed socket, then the adverts
// (any other event reads those queued before it), then the rest as they
// came, its leader's latest state, its timer, a nudge last.
func TestMailboxOrder(t *testing.T) {
	mb := newMailbox(2, func(*received) {})
	p1, p2 := &received{}, &received{}
	mb.postNudge()
	mb.postOther(&netif.Event{Kind: netif.LinkUp})
	mb.postWakeQuick()
	mb.postPacket(p1)
	mb.postOther(&health.Status{Name: "api"})
	mb.postOther(func() {})
	mb.postPacket(p2)
	mb.postLeader(leaderState{prio: 7})
	mb.postLeader(leaderState{prio: 9}) // replaces the one not yet read
	mb.postOther(&arp.Claim{})
	mb.postFailed()
	mb.postStop()
	var got []eventKind
	var packets []*received
	for ev := mb.next(allKinds, false); ev.kind != evNone; ev = mb.next(allKinds, false) {
		got = append(got, ev.kind)
		if ev.kind == evPacket {
			packets = append(packets, ev.packet)
		}
		if ev.kind == evLeader && ev.leader.prio != 9 {
			t.Errorf("leader state %d, want the latest, 9", ev.leader.prio)
		}
	}
	want := []eventKind{evStop, evFailed, evPacket, evPacket, evLink, evTracker, evCmd, evClaim, evLeader, evWake, evNudge}
	if !equalKinds(got, want) {
		t.Errorf("taken %v, want %v", got, want)
	}
	if len(packets) != 2 || packets[0] != p1 || packets[1] != p2 {
		t.Error("adverts out of order")
	}
	if !mb.running {
		t.Error("the goroutine gave the election up without letGo")
	}
}

func equalKinds(a, b []eventKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A phase waiting for some kinds leaves the others queued.
func TestMailboxTakesOnlyWhatIsWanted(t *testing.T) {
	mb := newMailbox(2, func(*received) {})
	mb.postOther(func() {})
	mb.postOther(&netif.Event{Kind: netif.LinkDown})
	mb.postPacket(&received{})
	if ev := mb.next(kindSet(evLink), false); ev.kind != evLink {
		t.Fatalf("took %v, want the link event", ev.kind)
	}
	if ev := mb.next(kindSet(evLink, evWake), false); ev.kind != evNone {
		t.Fatalf("took %v with no link event or wake-up queued", ev.kind)
	}
	if ev := mb.next(allKinds, false); ev.kind != evPacket {
		t.Fatalf("took %v, want the advert", ev.kind)
	}
	if ev := mb.next(allKinds, false); ev.kind != evCmd {
		t.Fatalf("took %v, want the command", ev.kind)
	}
}

// The queues a flood could fill are bounded; a full one refuses, and the
// caller keeps (and counts) what was refused.
func TestMailboxBounds(t *testing.T) {
	mb := newMailbox(2, func(*received) {})
	for i := range maxQueuedPackets {
		if !mb.postPacket(&received{}) {
			t.Fatalf("advert %d refused", i)
		}
	}
	if mb.postPacket(&received{}) {
		t.Error("an advert beyond the queue's room taken")
	}
	for range 2 {
		if ok, _ := mb.postOther(&arp.Claim{}); !ok {
			t.Fatal("a claim within the room refused")
		}
	}
	if ok, closed := mb.postOther(&arp.Claim{}); ok || closed || !mb.claimsFull() {
		t.Error("a third claim taken with room for two")
	}
	mb.next(kindSet(evClaim), false)
	if mb.claimsFull() {
		t.Error("no room after a claim was taken")
	}
	for range maxQueuedCmds {
		mb.postOther(func() {})
	}
	if ok, closed := mb.postOther(func() {}); ok || closed {
		t.Error("a command beyond the queue's room taken")
	}
}

// Once the election is detached, the first post of a burst starts one
// goroutine, which takes what is queued and lets the election go; a closed
// mailbox refuses posts and hands its adverts back.
func TestMailboxStartsOneGoroutinePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var freed, starts, handled atomic.Int32
		mb := newMailbox(2, func(*received) { freed.Add(1) })
		drive := func() {
			starts.Add(1)
			for ev := mb.next(allKinds, true); ev.kind != evNone; ev = mb.next(allKinds, true) {
				handled.Add(1)
			}
		}
		// Posted while the starting goroutine owns the election: queued.
		mb.postWakeQuick()
		mb.postPacket(&received{})
		synctest.Wait()
		if starts.Load() != 0 {
			t.Fatal("a goroutine started before the election was detached")
		}
		mb.detach(drive)
		drive() // the starting goroutine's last round, then it lets go
		mb.postNudge()
		synctest.Wait()
		mb.postOther(func() {})
		synctest.Wait()
		if starts.Load() != 3 || handled.Load() != 4 {
			t.Errorf("%d rounds handled %d events, want 3 and 4", starts.Load(), handled.Load())
		}
		mb.mu.Lock()
		mb.running = true // a goroutine is busy: posts queue
		mb.mu.Unlock()
		mb.postPacket(&received{})
		mb.close()
		if freed.Load() != 1 {
			t.Errorf("%d queued adverts handed back at close, want 1", freed.Load())
		}
		if ok, closed := mb.postOther(func() {}); mb.postPacket(&received{}) || ok || !closed {
			t.Error("a closed mailbox took a post")
		}
	})
}

// An advert handed to an idle election by another's read of the set-aside
// queue starts no goroutine: the reader takes the election and runs it
// (runElections); a busy election just queues it.
func TestMailboxPostIdleClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var starts atomic.Int32
		mb := newMailbox(2, func(*received) {})
		if ok, claimed := mb.postIdle(&received{}); !ok || claimed {
			t.Fatalf("before the election detached: ok %v, claimed %v; want queued for its own goroutine", ok, claimed)
		}
		mb.detach(func() { starts.Add(1) })
		mb.next(allKinds, true) // the queued advert
		mb.next(allKinds, true) // nothing: let go
		ok, claimed := mb.postIdle(&received{})
		synctest.Wait()
		if !ok || !claimed || starts.Load() != 0 {
			t.Fatalf("idle: ok %v, claimed %v, %d goroutines started; want taken by the caller, none started", ok, claimed, starts.Load())
		}
		if ok, claimed := mb.postIdle(&received{}); !ok || claimed {
			t.Errorf("taken already: ok %v, claimed %v; want queued", ok, claimed)
		}
	})
}

// A timer's expiry claims an idle election with nothing else queued: the
// timer's caller runs it and lets it go; anything posted meanwhile keeps
// it owned, for its own goroutine. With something queued already, the
// expiry starts that goroutine instead.
func TestMailboxPostWakeQuickClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var starts atomic.Int32
		mb := newMailbox(2, func(*received) {})
		mb.detach(func() { starts.Add(1) })
		mb.next(allKinds, true) // idle
		if !mb.postWakeQuick() {
			t.Fatal("idle election not claimed")
		}
		if ev := mb.next(kindSet(evWake), false); ev.kind != evWake {
			t.Fatalf("took %v, want the wake", ev.kind)
		}
		if mb.letGo() {
			t.Fatal("nothing queued, yet kept")
		}
		if !mb.postWakeQuick() {
			t.Fatal("let go, yet not claimed again")
		}
		mb.next(kindSet(evWake), false)
		mb.postPacket(&received{}) // while the caller runs it: queued, no goroutine
		synctest.Wait()
		if starts.Load() != 0 || !mb.letGo() {
			t.Fatalf("%d goroutines started, advert not kept for one", starts.Load())
		}
		mb.next(allKinds, true) // the advert
		mb.next(allKinds, true) // idle again
		mb.postOther(func() {})
		synctest.Wait()
		mb.mu.Lock()
		mb.running = false // as if that goroutine had not yet taken it
		mb.mu.Unlock()
		if mb.postWakeQuick() {
			t.Error("claimed with a command queued")
		}
		synctest.Wait()
		if starts.Load() != 2 {
			t.Errorf("%d goroutines started, want 2", starts.Load())
		}
	})
}

// The signal a waiting phase waits on is made by its first wait, under the
// posts' lock: a post before then only queues, one after the look that
// found nothing wakes the waiter.
func TestMailboxWaitIsSignalled(t *testing.T) {
	mb := newMailbox(8, func(*received) {})
	mb.postOther(&netif.Event{Kind: netif.LinkUp})
	if mb.signal != nil {
		t.Error("a signal made before anything waited")
	}
	if ev, sig := mb.nextOrWait(kindSet(evLink)); ev.kind != evLink || sig != nil {
		t.Fatalf("got %v (signal %v), want the link event queued before", ev.kind, sig)
	}
	ev, sig := mb.nextOrWait(kindSet(evLink))
	if ev.kind != evNone || sig == nil {
		t.Fatalf("got %v (signal %v), want nothing and a signal to wait on", ev.kind, sig)
	}
	mb.postOther(&netif.Event{Kind: netif.LinkDown})
	select {
	case <-sig:
	default:
		t.Fatal("a post after the look was not signalled")
	}
	if ev, _ := mb.nextOrWait(kindSet(evLink)); ev.kind != evLink || ev.link.Kind != netif.LinkDown {
		t.Fatalf("got %v, want the link down posted", ev.kind)
	}
}
