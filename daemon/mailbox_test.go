package daemon

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/netif"
)

// The election takes a stop first, then the adverts (any other event reads
// those queued before it), then the rest as they came, its timer last.
func TestMailboxOrder(t *testing.T) {
	var freed int
	mb := newMailbox(2, func(*received) { freed++ })
	p1, p2 := &received{}, &received{}
	mb.postOther(&netif.Event{Kind: netif.LinkUp})
	mb.postWake()
	mb.postPacket(p1)
	mb.postOther(&health.Status{Name: "api"})
	mb.postPacket(p2)
	mb.postLeader(leaderState{prio: 7})
	mb.postLeader(leaderState{prio: 9}) // replaces the one not yet read
	mb.postStop()
	var got []eventKind
	for ev := mb.next(allKinds, false); ev.kind != evNone; ev = mb.next(allKinds, false) {
		got = append(got, ev.kind)
		if ev.kind == evPacket && len(got) == 2 && ev.packet != p1 {
			t.Error("adverts out of order")
		}
		if ev.kind == evLeader && ev.leader.prio != 9 {
			t.Errorf("leader state %d, want the latest, 9", ev.leader.prio)
		}
	}
	want := []eventKind{evStop, evPacket, evPacket, evLink, evTracker, evLeader, evWake}
	if !equalKinds(got, want) {
		t.Errorf("taken %v, want %v", got, want)
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
		if mb.claimsFull() || !mb.postOther(&arp.Claim{}) {
			t.Fatal("a claim within the room refused")
		}
	}
	if !mb.claimsFull() || mb.postOther(&arp.Claim{}) {
		t.Error("a third claim taken with room for two")
	}
	mb.next(kindSet(evClaim), false)
	if mb.claimsFull() {
		t.Error("no room after a claim was taken")
	}
}

// Once the election is detached, the first post of a burst starts one
// goroutine, which takes what is queued and lets the election go; a closed
// mailbox refuses posts and hands its adverts back.
func TestMailboxStartsOneGoroutinePerBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var freed, starts, handled atomic.Int32
		mb := newMailbox(2, func(*received) { freed.Add(1) })
		mb.detach(func() {
			starts.Add(1)
			for ev := mb.next(allKinds, true); ev.kind != evNone; ev = mb.next(allKinds, true) {
				handled.Add(1)
			}
		})
		if ev := mb.next(allKinds, true); ev.kind != evNone {
			t.Fatalf("took %v from an empty mailbox", ev.kind)
		}
		mb.postWake()
		mb.postPacket(&received{})
		synctest.Wait()
		mb.postNudge()
		synctest.Wait()
		if starts.Load() != 2 || handled.Load() != 3 {
			t.Errorf("%d goroutines handled %d events, want 2 and 3", starts.Load(), handled.Load())
		}
		mb.mu.Lock()
		mb.running = true // a goroutine is busy: posts queue
		mb.mu.Unlock()
		mb.postPacket(&received{})
		mb.close()
		if freed.Load() != 1 {
			t.Errorf("%d queued adverts handed back at close, want 1", freed.Load())
		}
		if mb.postPacket(&received{}) || mb.postOther(func() {}) {
			t.Error("a closed mailbox took a post")
		}
	})
}
