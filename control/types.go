package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"
)

// State is an instance's VRRP state as scripts see it.
type State string

// States, as vrrp.State.String spells them.
const (
	StateInitialize State = "INITIALIZE"
	StateBackup     State = "BACKUP"
	StateMaster     State = "MASTER"
	StateFault      State = "FAULT"
)

// DaemonInfo identifies the running daemon, which after an upgrade may be
// another binary than the one on disk. The server adds it to every status
// answer (see WithDaemonInfo).
type DaemonInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// StartedAt is when this binary started running: a re-exec upgrade
	// keeps the PID and starts the clock again.
	StartedAt time.Time `json:"started_at,omitzero"`
	// Host is the host's pressure and CPU steal now.
	Host *HostStat `json:"host,omitempty"`
	// BGPPeers are the BGP speaker's peers (the BGP modes).
	BGPPeers []BGPPeer `json:"bgp_peers,omitempty"`
	// InterfaceDrops counts, per interface and reason, the adverts no
	// instance claimed: a VRID not configured there, a packet too short
	// to name one.
	InterfaceDrops map[string]map[string]uint64 `json:"interface_drops,omitempty"`
}

// BGPPeer is one BGP session of the daemon.
type BGPPeer struct {
	Address      netip.Addr `json:"address"`
	ASN          uint32     `json:"asn"`
	State        string     `json:"state"`
	Up           bool       `json:"up"`
	Since        time.Time  `json:"since,omitzero"`
	PrefixesSent int        `json:"prefixes_sent"`
	LastError    string     `json:"last_error,omitempty"`
	// Failures counts the attempts that failed since the session was last
	// up; RetryAt is when a peer paused after one is tried again.
	Failures int       `json:"failed_attempts,omitempty"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// InstanceStatus is a snapshot of one virtual router on this host.
type InstanceStatus struct {
	Name      string `json:"name"`
	Interface string `json:"interface"`
	VRID      uint8  `json:"vrid"`
	// Version is the VRRP version this host sends, 3 or 2.
	Version int `json:"version,omitempty"`
	// LocalAddress is the source address of our adverts, which lets a
	// reader tell whether the Master is this host.
	LocalAddress netip.Addr `json:"local_address,omitzero"`
	State        State      `json:"state"`
	Since        time.Time  `json:"since,omitzero"` // when State was entered
	Priority     Priority   `json:"priority"`
	Drained      bool       `json:"drained"`
	DrainNote    string     `json:"drain_note,omitempty"` // who drained it and why, when known
	// Master is the Master as last seen on the wire; this host's own
	// values while it is Master; zero when none has been heard.
	Master   Master         `json:"master,omitzero"`
	VIPs     []netip.Prefix `json:"vips"`
	VIPsHeld bool           `json:"vips_held"` // configured on the interface now
	// Transitions counts state changes since the daemon started.
	Transitions    uint64      `json:"transitions"`
	LastTransition *Transition `json:"last_transition,omitempty"`
	Trackers       []Tracker   `json:"trackers"`
	Counters       Counters    `json:"counters"`
	// Warnings are anomalies worth a person's attention, in words, e.g.
	// "a second host answers ARP for 192.0.2.10 from 52:54:00:aa:bb:cc".
	Warnings []string `json:"warnings"`
	// PeerChecksums is the checksum form each peer's adverts use: rfc5798
	// (with the IPv4 pseudo-header, keepalived's and FRR's default) or
	// rfc9568 (without, as Cisco and Juniper send); vrrpv2 for a peer
	// whose adverts are VRRPv2 (RFC 3768), whose checksum has one form.
	PeerChecksums map[string]string `json:"peer_checksums,omitempty"`
	// Waiting says what the instance waits for before it joins its group:
	// the interface, its address, an IPv6 link-local address still in
	// duplicate address detection.
	Waiting string `json:"waiting,omitempty"`
	// Announce is how the VIPs are made reachable: "arp" (also NDP), "bgp"
	// (the Master announces host routes) or "bgp-anycast" (every healthy
	// host does); Routes lists the routes announced now.
	Announce string         `json:"announce,omitempty"`
	Routes   []netip.Prefix `json:"routes,omitempty"`
}

// Priority explains the priority this host advertises.
type Priority struct {
	Base      int            `json:"base"`      // from the configuration
	Effective int            `json:"effective"` // advertised now
	Parts     []PriorityPart `json:"parts"`     // what moved it from Base
}

// PriorityPart is one tracker's share of the effective priority.
type PriorityPart struct {
	Tracker      string `json:"tracker"`
	Healthy      bool   `json:"healthy"`
	Contribution int    `json:"contribution"` // added to Base, e.g. -20
	Detail       string `json:"detail,omitempty"`
}

// Master is what the Master's adverts say.
type Master struct {
	Address        netip.Addr `json:"address,omitzero"`
	Priority       int        `json:"priority"`
	AdvertInterval Duration   `json:"advert_interval"`
	LastSeen       time.Time  `json:"last_seen,omitzero"`
}

// Tracker is a health check and its latest result.
type Tracker struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // http, exec, file or interface
	Healthy bool      `json:"healthy"`
	Detail  string    `json:"detail,omitempty"` // the last check's outcome in words
	Cause   string    `json:"cause,omitempty"`  // the outcome that made the last healthy<->failing change
	Since   time.Time `json:"since,omitzero"`   // when Healthy last changed
	// Weight is added to the priority while healthy when positive, while
	// failing when negative; 0 means failing demands Fault.
	Weight       int       `json:"weight"`
	LastCheck    time.Time `json:"last_check,omitzero"`
	LastDuration Duration  `json:"last_duration"`
	Checks       uint64    `json:"checks"`
	Failures     uint64    `json:"failures"` // failed checks, not changes
}

// Counters count packets since the daemon started.
type Counters struct {
	AdvertsSent     uint64            `json:"adverts_sent"`
	AdvertsReceived uint64            `json:"adverts_received"`
	GARPSent        uint64            `json:"garp_sent"`
	Drops           map[string]uint64 `json:"drops"` // by reason, e.g. "ttl"
}

// Transition is one change of state and why it happened.
type Transition struct {
	At       time.Time `json:"at"`
	Instance string    `json:"instance,omitempty"` // empty inside InstanceStatus
	From     State     `json:"from"`
	To       State     `json:"to"`
	Reason   string    `json:"reason"` // a fixed word for scripts, e.g. "master_down"
	Cause    string    `json:"cause"`  // the same in words, e.g. "no advert from 198.51.100.12 for 3.61s"
	// TimerLate is how late the timer that made the change fired (a busy
	// or frozen host): zero when an advert or an event made it.
	TimerLate Duration `json:"timer_late,omitempty"`
	// Host is how starved the host was when it happened.
	Host *HostStat `json:"host,omitempty"`
}

// HostStat answers "was the host starved?": the kernel's pressure stall
// information (the share of the last 10 s in which some, or all, tasks
// waited for CPU, IO or memory) and the CPU time stolen by the hypervisor
// and spent waiting for IO over the last Span (vmstat's st and wa).
type HostStat struct {
	PSI       bool     `json:"psi"` // false: the kernel has no PSI
	CPUSome   float64  `json:"psi_cpu_some"`
	IOSome    float64  `json:"psi_io_some"`
	IOFull    float64  `json:"psi_io_full"`
	MemSome   float64  `json:"psi_memory_some"`
	MemFull   float64  `json:"psi_memory_full"`
	StealPct  float64  `json:"steal_pct"`
	IOWaitPct float64  `json:"iowait_pct"`
	Span      Duration `json:"span,omitempty"`
}

func (h HostStat) String() string {
	s := "psi not available"
	if h.PSI {
		s = fmt.Sprintf("psi cpu %.1f%%, io %.1f/%.1f%%, memory %.1f/%.1f%%", h.CPUSome, h.IOSome, h.IOFull, h.MemSome, h.MemFull)
	}
	if h.Span > 0 {
		s += fmt.Sprintf("; steal %.1f%%, iowait %.1f%% over %v", h.StealPct, h.IOWaitPct, time.Duration(h.Span).Round(time.Millisecond))
	}
	return s
}

// DrainRequest asks instances to give up their addresses.
type DrainRequest struct {
	// Instance names one instance; empty means every instance (the CLI's
	// "all").
	Instance string `json:"instance,omitempty"`
	// Wait asks the daemon to answer only once another host has taken
	// over, or Timeout has passed.
	Wait    bool     `json:"wait,omitempty"`
	Timeout Duration `json:"timeout,omitzero"`
	// Note is kept with the drain and shown in status: why, or a ticket.
	Note string `json:"note,omitempty"`
	// By names who asked, as the kernel reports the client (uid, user
	// name, pid). The server sets it; whatever a client sends is replaced.
	By string `json:"by,omitempty"`
}

// DrainResult says where each affected instance ended up.
type DrainResult struct {
	Instances []DrainedInstance `json:"instances"`
	// Warning is set when draining left something undesirable, e.g. "no
	// other host took over k8s-api within 30s: 192.0.2.10 is unreachable".
	Warning string `json:"warning,omitempty"`
}

// DrainedInstance is one instance's outcome of a drain or undrain.
type DrainedInstance struct {
	Name        string     `json:"name"`
	State       State      `json:"state"`
	TakenOverBy netip.Addr `json:"taken_over_by,omitzero"`
	Message     string     `json:"message,omitempty"`
	// Handover is the measured make-before-break gap (drain --wait).
	Handover *Handover `json:"handover,omitempty"`
}

// Handover is how a planned move went: the old Master sends priority 0,
// keeps its addresses until the successor's first advert (and its
// announcement) arrive, then removes them.
type Handover struct {
	PriorityZeroAt time.Time  `json:"priority_zero_at"`
	SuccessorAt    time.Time  `json:"successor_heard_at,omitzero"`
	Successor      netip.Addr `json:"successor,omitzero"`
	SuccessorMAC   string     `json:"successor_mac,omitempty"`
	RemovedAt      time.Time  `json:"removed_at,omitzero"`
	// Late: no successor was heard within the bound; the addresses were
	// removed anyway.
	Late bool `json:"late,omitempty"`
}

// ReloadResult is the outcome of a reload.
type ReloadResult struct {
	OK bool `json:"ok"`
	// Problems lists what is wrong with a refused file, as FILE:LINE: msg.
	Problems []string `json:"problems"`
	// Changes says what the reload changed, one line each, e.g.
	// "k8s-api: priority 100 -> 120".
	Changes []string `json:"changes"`
}

// Duration is a time.Duration that scripts can read both ways: in JSON it
// is {"text":"3.61s","ms":3610}. Decoding also accepts a bare string
// ("30s") or a number of milliseconds, which is what people type by hand.
type Duration time.Duration

type durationJSON struct {
	Text string  `json:"text"`
	MS   float64 `json:"ms"`
}

// String rounds like vipd's log messages: 3.61s, 12.346ms.
func (d Duration) String() string {
	return roundDuration(time.Duration(d)).String()
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) {
	// Microseconds are the finest a person or script cares about; the
	// rounding keeps 3610 from printing as 3610.0000000000005.
	ms := math.Round(float64(d)/float64(time.Microsecond)) / 1000
	return json.Marshal(durationJSON{Text: d.String(), MS: ms})
}

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		*d = 0
		return nil
	case string:
		return d.parse(v)
	case float64:
		return d.fromMS(v)
	case map[string]any:
		// ms is exact where text was rounded.
		if ms, ok := v["ms"].(float64); ok {
			return d.fromMS(ms)
		}
		if text, ok := v["text"].(string); ok {
			return d.parse(text)
		}
	}
	return fmt.Errorf("duration %s: want a string like \"30s\", milliseconds, or {\"ms\":...}", b)
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func (d *Duration) fromMS(ms float64) error {
	ns := ms * float64(time.Millisecond)
	if math.IsNaN(ns) || math.Abs(ns) >= math.MaxInt64 {
		return errors.New("duration out of range")
	}
	*d = Duration(math.Round(ns))
	return nil
}

// roundDuration keeps three or so significant digits, as vrrp's causes do.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
