package daemon

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/vrrp"
)

// Status is a snapshot of one instance.
type Status struct {
	Name        string
	Interface   string
	VRID        uint8
	VIPs        []netip.Prefix
	Base        uint8 // configured priority
	Drained     bool
	DrainNote   string
	State       vrrp.State
	Since       time.Time
	Priority    uint8
	Primary     netip.Addr
	Held        bool
	Master      vrrp.MasterInfo
	LastChange  vrrp.Transition
	Transitions uint64
	Sent        uint64
	Received    uint64
	GARPSent    uint64
	Drops       map[string]uint64
	// AdvertInterval is ours; LastSent when we last advertised.
	AdvertInterval time.Duration
	LastSent       time.Time
	Trackers       []TrackerStatus
	// Warnings are anomalies in words, for status.
	Warnings []string
	// Conflicts counts ARP claims of our VIPs by other MACs while Master;
	// LastConflict is the latest.
	Conflicts    uint64
	LastConflict arp.Claim
}

// TrackerStatus is one health tracker's state.
type TrackerStatus struct {
	Name, Type    string
	Healthy       bool
	Detail, Cause string
	Since         time.Time
	Weight        int
	Contribution  int
	LastCheck     time.Time
	LastDuration  time.Duration
	Checks        uint64
	Failures      uint64
}

// warningWindow is how long a conflict or collision stays in status.
const warningWindow = 10 * time.Minute

// status is called from other goroutines: it reads only what the mutex or
// atomics guard.
func (in *instance) status() Status {
	in.mu.Lock()
	st := Status{
		Name:       in.id.name,
		Interface:  in.id.ifname,
		VRID:       in.id.vrid,
		VIPs:       in.vipsPub,
		Base:       in.base,
		Drained:    in.drainedPub,
		DrainNote:  in.drainNotePub,
		Primary:    in.primary,
		Held:       in.held,
		LastChange: in.last,
		State:      in.state,
		Since:      in.since,
		Priority:   in.priority,
		Master:     in.master,
	}
	st.LastConflict = in.conflict
	st.AdvertInterval, st.LastSent = in.intervalPub, in.lastSent
	for _, t := range in.trackersPub {
		ts := t.Status()
		st.Trackers = append(st.Trackers, TrackerStatus{
			Name: ts.Name, Type: ts.Type.String(), Healthy: ts.Healthy, Detail: ts.Detail, Cause: ts.Cause,
			Since: ts.Since, Weight: ts.Weight, Contribution: ts.Contribution, LastCheck: ts.LastCheck,
			LastDuration: ts.LastDuration, Checks: ts.Checks, Failures: ts.Failures,
		})
	}
	now := in.env.Now()
	if c := in.conflict; c.MAC != nil && now.Sub(c.At) < warningWindow {
		st.Warnings = append(st.Warnings, fmt.Sprintf("a second host claims %v from %v (last seen %v ago); this Master keeps announcing its own MAC",
			c.IP, c.MAC, now.Sub(c.At).Round(time.Second)))
	}
	if in.collision != "" && now.Sub(in.collisionAt) < warningWindow {
		st.Warnings = append(st.Warnings, in.collision)
	}
	if in.drainedPub && in.state == vrrp.StateMaster {
		st.Warnings = append(st.Warnings, "drained, but no other host took over: holding the address, because an address with no owner is worse")
	}
	in.mu.Unlock()
	st.Transitions = in.counters.transitions.Load()
	st.Sent = in.counters.advertsSent.Load()
	st.Received = in.counters.advertsReceived.Load()
	st.GARPSent = in.counters.garpSent.Load()
	st.Conflicts = in.counters.conflicts.Load()
	st.Drops = map[string]uint64{}
	for _, r := range vrrp.DropReasons() {
		if n := in.counters.drops[r].Load(); n > 0 {
			st.Drops[r.String()] = n
		}
	}
	return st
}
