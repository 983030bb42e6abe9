package daemon

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// In bgp-anycast nothing is elected: every host whose trackers are healthy
// announces the VIPs and the routers spread the flows by ECMP. The
// instance keeps the VIPs on lo while it runs, announces their routes while
// healthy — no tracker of weight 0 failing, the effective priority at
// least anycast_min_priority, not drained — and withdraws them otherwise.
// Its state reads MASTER while announcing and FAULT while withdrawn.

// runAnycast is run for a bgp-anycast instance.
func (in *instance) runAnycast() error {
	if in.routes == nil {
		return fmt.Errorf("instance %q: bgp-anycast needs a [bgp] speaker", in.id.name)
	}
	in.holder.take()
	in.markReady()
	in.drainT = stoppedTimer()
	defer in.drainT.Stop()
	in.evaluateAnycast("started")
	// No election: nothing of the mailbox's but these, and the goroutine
	// stays (one per anycast instance).
	want := kindSet(evStop, evCmd, evTracker, evLink)
	for {
		// Nothing to do on a link event: the routers carry the VIPs.
		ev, signal := in.mb.nextOrWait(want)
		if ev.kind == evStop {
			in.stopAnycast()
			return nil
		}
		if in.whileWaiting(ev) || ev.kind == evLink {
			continue
		}
		select {
		case <-in.drainT.C:
			// Still unhealthy after the drain: the routers have moved the
			// flows to the other hosts; now the route goes.
			if in.anycastFault != "" {
				in.routes.withdraw(in.anycastFault)
			}
		case <-signal:
		}
	}
}

// evaluateAnycast announces or withdraws as the host's health says.
func (in *instance) evaluateAnycast(cause string) {
	prio, fault := in.health()
	if in.drained {
		fault = "drained by operator"
		if in.drainNote != "" {
			fault += ": " + in.drainNote
		}
	}
	if floor := in.cfg.BGP.AnycastMinPriority; fault == "" && floor > 0 && prio < floor {
		fault = fmt.Sprintf("priority %d below anycast_min_priority %d (%s)", prio, floor, cause)
	}
	want := vrrp.StateMaster
	if fault != "" {
		want = vrrp.StateFault
	}
	in.pubMu.Lock()
	from := in.pub.state
	in.pub.priority = prio
	in.pubMu.Unlock()
	in.anycastFault = fault
	switch {
	case want == vrrp.StateMaster:
		in.drainT.Stop()
		for _, v := range in.cfg.VIPs {
			if err := in.routes.Announce(v.Addr()); err != nil {
				in.log.Warn("announcing the route failed", "vip", v, "error", err)
			}
		}
	case len(in.routes.routes()) > 0 && !in.routes.draining() && in.cfg.BGP.GracefulShutdownTime > 0:
		// GRACEFUL_SHUTDOWN first: the routers move the flows to the
		// other hosts before the route goes (drainT).
		in.routes.shutdown()
		in.drainT.Reset(in.cfg.BGP.GracefulShutdownTime)
	case !in.routes.draining():
		in.routes.withdraw(fault)
	}
	if from == want {
		return
	}
	why := "healthy: announcing the routes (" + cause + ")"
	reason := vrrp.ReasonFaultCleared
	if want == vrrp.StateFault {
		why, reason = "withdrawn: "+fault, vrrp.ReasonFault
	}
	if from == vrrp.StateInitialize {
		reason = vrrp.ReasonStartup
	}
	in.anycastTransition(from, want, reason, why)
}

func (in *instance) anycastTransition(from, to vrrp.State, reason vrrp.Reason, cause string) {
	now := in.env.Now()
	in.pubMu.Lock()
	in.pub.state, in.pub.since = to, now
	in.pubMu.Unlock()
	in.transition(vrrp.Transition{At: now, From: from, To: to, Reason: reason, Cause: cause})
}

// stopAnycast leaves gracefully: GRACEFUL_SHUTDOWN for the drain time, so
// that the routers move the flows to the other hosts, then the withdraw,
// then the VIPs off lo.
func (in *instance) stopAnycast() {
	if in.detach {
		in.log.Info("detached: the next process takes over")
		return
	}
	if len(in.routes.routes()) > 0 {
		in.routes.shutdown()
		if d := in.cfg.BGP.GracefulShutdownTime; d > 0 {
			in.log.Info("draining the routes before their withdraw", "graceful_shutdown_time", d)
			t := time.NewTimer(d)
			<-t.C
		}
	}
	in.routes.withdraw("shutting down")
	in.holder.release()
	in.pubMu.Lock()
	from := in.pub.state
	in.pubMu.Unlock()
	in.anycastTransition(from, vrrp.StateInitialize, vrrp.ReasonShutdown, "shutting down")
}

// anycastVIPs applies a reload's address list (apply has given it to the
// holder): removed VIPs are withdrawn; new ones, while healthy, announced.
func (in *instance) anycastVIPs(old []netip.Prefix) {
	for _, v := range old {
		if !slices.Contains(in.cfg.VIPs, v) {
			in.routes.withdrawRoute(hostRoute(v.Addr()), "removed by a reload")
		}
	}
	in.evaluateAnycast("configuration reloaded")
}

// anycast: a bgp-anycast instance (set at creation, never changed).
func (in *instance) anycast() bool { return in.anycastMode }
