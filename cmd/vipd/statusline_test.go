package main

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/vrrp"
)

// A burst of transitions rewrites the line a few times, not once each, and
// the last rewrite comes after the last transition.
func TestStatusLineRewritesOnceForABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		l := newStatusLine()
		var state, shown atomic.Int64
		var writes int
		go l.run(ctx, statusLineEvery, func() { writes++; shown.Store(state.Load()) })
		for i := 1; i <= 255; i++ {
			state.Store(int64(i))
			l.mark()
			time.Sleep(time.Millisecond)
		}
		time.Sleep(2 * statusLineEvery)
		synctest.Wait()
		if shown.Load() != 255 {
			t.Errorf("the line shows state %d, want the last, 255", shown.Load())
		}
		if writes > 5 {
			t.Errorf("%d rewrites for a burst of 255 transitions over 255 ms", writes)
		}
		cancel()
	})
}

func TestSummarizeListsFewInstancesAndCountsMany(t *testing.T) {
	since := time.Date(2026, 12, 2, 12, 0, 1, 0, time.Local)
	vip := netip.MustParsePrefix("198.51.100.10/32")
	few := []daemon.Status{
		{Name: "k8s-api", State: vrrp.StateMaster, Held: true, VIPs: []netip.Prefix{vip}, Since: since},
		{Name: "ingress", State: vrrp.StateBackup, VIPs: []netip.Prefix{vip}, Since: since, Drained: true},
	}
	if got, want := summarize(few), "k8s-api MASTER 198.51.100.10 since 12:00:01; ingress BACKUP since 12:00:01 (drained)"; got != want {
		t.Errorf("summarize = %q, want %q", got, want)
	}
	var many []daemon.Status
	for i := range 255 {
		st := daemon.Status{Name: "g", State: vrrp.StateBackup, VIPs: []netip.Prefix{vip}}
		if i%5 != 0 {
			st.State, st.Held = vrrp.StateMaster, true
		}
		many = append(many, st)
	}
	many[3].Drained = true
	if got, want := summarize(many), "255 instances: 51 BACKUP, 204 MASTER; 204 hold 204 VIPs; 1 drained"; got != want {
		t.Errorf("summarize = %q, want %q", got, want)
	}
}
