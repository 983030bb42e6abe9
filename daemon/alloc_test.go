package daemon

import (
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// A steady Master wakes once an advert and sends it; nothing on that path
// allocates, or every advert would be garbage the collector wakes the
// process for (at 10 ms adverts, a collection every minute or two).
func TestSteadyMasterAllocatesNothingAnAdvert(t *testing.T) {
	for _, interval := range []time.Duration{time.Second, 100 * time.Millisecond, 10 * time.Millisecond} {
		t.Run(interval.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lan := &fakeLAN{} // alone: the fake LAN copies nothing
				ic := testInstance(150)
				ic.AdvertInterval = interval
				n := startNode(t, lan, "198.51.100.11", ic)
				time.Sleep(30 * time.Second) // past the takeover's GARPs and probes
				synctest.Wait()
				if n.state() != vrrp.StateMaster {
					t.Fatalf("state %v, want master", n.state())
				}
				adverts := max(200, int(20*time.Second/interval))
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				time.Sleep(time.Duration(adverts) * interval)
				synctest.Wait()
				runtime.ReadMemStats(&after)
				// A few allow for the test's and the runtime's own.
				if n := after.Mallocs - before.Mallocs; n >= uint64(adverts/20) {
					t.Errorf("%d allocations over %d adverts, want none", n, adverts)
				}
			})
		})
	}
}

// The room an election borrows for its actions comes back empty (the last
// actions' strings are not kept alive by the room) and is lent again
// rather than made anew, a burst keeps a bounded number; without a room,
// each run makes its own.
func TestActionRoomLendsEmptiedRoom(t *testing.T) {
	r := newActionRoom()
	b := r.get()
	b[0] = vrrp.Action{Kind: vrrp.ActSendAdvert, Detail: "left over"}
	r.put(b)
	if *b != ([actionsPerEvent]vrrp.Action{}) {
		t.Errorf("room given back holds %+v, want it emptied", b[0])
	}
	if n := testing.AllocsPerRun(100, func() { r.put(r.get()) }); n != 0 {
		t.Errorf("%v allocations a loan, want none", n)
	}
	var lent []*[actionsPerEvent]vrrp.Action
	for range 2 * maxFreeActionRooms {
		lent = append(lent, r.get())
	}
	for _, b := range lent {
		r.put(b)
	}
	if len(r.free) != maxFreeActionRooms {
		t.Errorf("%d rooms kept after a burst, want %d", len(r.free), maxFreeActionRooms)
	}
	var none *actionRoom
	if first, second := none.get(), none.get(); first == second {
		t.Error("no room: two runs share one")
	}
	none.put(b) // nothing to give back to
}
