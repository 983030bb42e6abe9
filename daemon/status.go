package daemon

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/vipd/vipd/announce"
	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/health"
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
	Version        uint8 // the VRRP version we send
	LastSent       time.Time
	Trackers       []TrackerStatus
	// Warnings are anomalies in words, for status.
	Warnings []string
	// Conflicts counts ARP claims of our VIPs by other MACs while Master;
	// LastConflict is the latest.
	Conflicts    uint64
	LastConflict arp.Claim
	// StandingDown: Master, holding the VIPs, but not announcing them
	// because another host announces them and no advert comes from it.
	StandingDown bool
	// Handover is the last planned move (drain, stop) and its measured gap.
	Handover HandoverReport
	// PeerChecksums is the checksum form each peer's adverts use: rfc5798
	// (the IPv4 pseudo-header) or rfc9568 (none).
	PeerChecksums map[netip.Addr]string
	// Waiting says what the instance waits for before it can join its
	// group (the interface, its address, a tentative link-local address).
	Waiting string
	// Announce is how the VIPs are announced (arp, bgp, bgp-anycast);
	// Routes the host routes announced over BGP now.
	Announce string
	Routes   []netip.Prefix
	// VIPLink is the interface the VIPs are added to: the instance's, or
	// lo in the BGP modes.
	VIPLink string
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

// published is what other goroutines may read of an instance, under pubMu:
// the run goroutine writes it as things change.
type published struct {
	vips      []netip.Prefix
	base      uint8
	interval  time.Duration
	version   uint8
	drained   bool
	drainNote string
	primary   netip.Addr
	held      bool
	last      vrrp.Transition
	state     vrrp.State
	since     time.Time
	priority  uint8
	master    vrrp.MasterInfo
	lastSent  time.Time
	trackers  []*health.Tracker
	conflict  *announce.Claim // the last claim of a VIP by another host; nil before one
	standDown bool            // holding the VIPs without announcing them
	handover  *HandoverReport // the last planned move; nil before one
	checksums []peerForm      // each peer's checksum form, or peerFormV2
	waiting   string          // what the instance waits for before it can start
}

// handoverToFill is the report of the planned move under way, made at the
// first one: most groups never hand over. pubMu is held.
func (p *published) handoverToFill() *HandoverReport {
	if p.handover == nil {
		p.handover = new(HandoverReport)
	}
	return p.handover
}

// lastHandover is the last planned move's report, zero before one; pubMu
// is held.
func (p *published) lastHandover() HandoverReport {
	if p.handover == nil {
		return HandoverReport{}
	}
	return *p.handover
}

// warningWindow is how long a conflict or collision stays in status.
const warningWindow = 10 * time.Minute

// publish copies the machine's state for status.
func (in *instance) publish() {
	if in.m == nil {
		return
	}
	state, since := in.m.State()
	down := false
	if in.policy != nil {
		down, _ = in.policy.StandingDown()
	}
	prio := in.m.Priority()
	in.pubMu.Lock()
	changed := in.pub.state != state || in.pub.priority != prio
	in.pub.state, in.pub.since = state, since
	in.pub.priority = prio
	in.pub.master = in.m.Master()
	in.pub.standDown = down
	in.pubMu.Unlock()
	if changed && in.hooks.followed != nil {
		in.hooks.followed(in.id.name)
	}
}

// heldVIPs is the link and the VIPs the instance holds now (none when it
// does not): what the held file needs, without building a whole Status for
// every instance at every change.
func (in *instance) heldVIPs() (link string, vips []netip.Prefix) {
	in.pubMu.Lock()
	held, vips := in.pub.held, in.pub.vips
	in.pubMu.Unlock()
	if !held {
		return "", nil
	}
	return in.holder.ifname, vips
}

// status is called from other goroutines: it reads only what the mutexes or
// atomics guard.
func (in *instance) status() Status {
	in.pubMu.Lock()
	p := in.pub
	handover := p.lastHandover() // p.handover is shared: copied under the lock
	var checksums map[netip.Addr]string
	for _, pf := range p.checksums {
		if checksums == nil {
			checksums = make(map[netip.Addr]string, len(p.checksums))
		}
		checksums[pf.addr] = pf.form
	}
	in.pubMu.Unlock()
	st := Status{
		Name:           in.id.name,
		Interface:      in.id.ifname,
		VRID:           in.id.vrid,
		VIPs:           p.vips,
		Base:           p.base,
		Drained:        p.drained,
		DrainNote:      p.drainNote,
		Primary:        p.primary,
		Held:           p.held,
		LastChange:     p.last,
		State:          p.state,
		Since:          p.since,
		Priority:       p.priority,
		Master:         p.master,
		AdvertInterval: p.interval,
		Version:        p.version,
		LastSent:       p.lastSent,
		StandingDown:   p.standDown && p.state == vrrp.StateMaster,
		Handover:       handover,
		Waiting:        p.waiting,
		Announce:       in.announceMode,
		VIPLink:        in.holder.ifname,
	}
	if in.routes != nil {
		st.Routes = in.routes.routes()
		slices.SortFunc(st.Routes, netip.Prefix.Compare)
	}
	st.PeerChecksums = checksums
	if c := p.conflict; c != nil && c.MAC != "" {
		mac, _ := net.ParseMAC(c.MAC)
		st.LastConflict = arp.Claim{IP: c.Addr, MAC: mac, At: c.At}
	}
	for _, t := range p.trackers {
		ts := t.Status()
		st.Trackers = append(st.Trackers, TrackerStatus{
			Name: ts.Name, Type: ts.Type.String(), Healthy: ts.Healthy, Detail: ts.Detail, Cause: ts.Cause,
			Since: ts.Since, Weight: ts.Weight, Contribution: ts.Contribution, LastCheck: ts.LastCheck,
			LastDuration: ts.LastDuration, Checks: ts.Checks, Failures: ts.Failures,
		})
	}
	now := in.env.Now()
	if c := p.conflict; c != nil && c.MAC != "" && now.Sub(c.At) < warningWindow {
		if st.StandingDown {
			st.Warnings = append(st.Warnings, fmt.Sprintf("a second host claims %v from %v (last seen %v ago) and no advert comes from it: a VRRP partition? This Master holds the address but has stopped announcing it, so that clients are not moved back and forth",
				c.Addr, c.MAC, now.Sub(c.At).Round(time.Second)))
		} else {
			st.Warnings = append(st.Warnings, fmt.Sprintf("a second host claims %v from %v (last seen %v ago); this Master keeps announcing its own MAC",
				c.Addr, c.MAC, now.Sub(c.At).Round(time.Second)))
		}
	}
	in.dropMu.Lock()
	if in.collision != "" && now.Sub(in.collisionAt) < warningWindow {
		st.Warnings = append(st.Warnings, in.collision)
	}
	in.dropMu.Unlock()
	if p.drained && p.state == vrrp.StateMaster {
		st.Warnings = append(st.Warnings, "drained, but no other host took over: holding the address, because an address with no owner is worse")
	}
	st.Transitions = in.counters.transitions.Load()
	st.Sent = in.counters.advertsSent.Load()
	st.Received = in.counters.advertsReceived.Load()
	st.GARPSent = in.counters.garpSent.Load()
	st.Conflicts = in.counters.conflicts.Load()
	st.Drops = map[string]uint64{}
	for _, r := range vrrp.DropReasons() {
		if n := in.counters.dropped(r.Index()); n > 0 {
			st.Drops[r.String()] = n
		}
	}
	return st
}
