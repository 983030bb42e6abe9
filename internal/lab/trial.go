package lab

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mode is a fault injected into the master.
type Mode int

const (
	_ Mode = iota // invalid zero value
	// Cut sets the master's bridge port down: the node vanishes from the LAN.
	Cut
	// Kill sends SIGKILL to the master's daemon: its VIP stays behind and its
	// kernel keeps answering for it.
	Kill
	// Graceful sends SIGTERM to the master's daemon (a priority 0 release).
	Graceful
)

// Modes are all fault modes in issue 4's order.
func Modes() []Mode { return []Mode{Cut, Kill, Graceful} }

func (m Mode) String() string {
	switch m {
	case Cut:
		return "cut"
	case Kill:
		return "kill"
	case Graceful:
		return "graceful"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses "cut", "kill" or "graceful".
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if strings.EqualFold(strings.TrimSpace(s), m.String()) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mode %q (want cut, kill or graceful)", s)
}

// MasterDownInterval is RFC 5798 §6.1: 3 × Master_Adver_Interval + Skew_Time.
func MasterDownInterval(prio int, interval time.Duration) time.Duration {
	return 3*interval + SkewTime(prio, interval)
}

// SkewTime is RFC 5798 §6.1: ((256 − Priority) × Master_Adver_Interval) / 256.
func SkewTime(prio int, interval time.Duration) time.Duration {
	return time.Duration(int64(256-prio) * int64(interval) / 256)
}

// TheoreticalBound is the earliest a backup of priority prio may take over
// after the fault: for cut and kill the rest of its Master_Down_Interval,
// which started at the master's last advert (sinceAdvert before the fault);
// for graceful its Skew_Time after the priority 0 advert.
func TheoreticalBound(mode Mode, prio int, interval, sinceAdvert time.Duration) time.Duration {
	if mode == Graceful {
		return SkewTime(prio, interval)
	}
	return max(0, MasterDownInterval(prio, interval)-sinceAdvert)
}

// TrialResult is what one fault trial measured. Durations are milliseconds
// (float64) so the JSON reads as it is; a negative value means "not seen".
type TrialResult struct {
	Daemon     string  `json:"daemon"`
	Mode       string  `json:"mode"`
	IntervalMS float64 `json:"interval_ms"`
	Trial      int     `json:"trial"`
	OldMaster  int     `json:"old_master"`
	NewMaster  int     `json:"new_master"`
	// NewPriority is the new master's priority (it sets the bound).
	NewPriority int `json:"new_priority"`

	// FaultCallMS is how long injecting the fault took; every "fault →"
	// time below starts when that call returned.
	FaultCallMS float64 `json:"fault_call_ms"`
	// OutageMS is the longest gap between answered probes (client view).
	OutageMS float64 `json:"outage_ms"`
	// TakeoverMS: fault → the new owner has the VIP (netlink event).
	TakeoverMS float64 `json:"takeover_ms"`
	// DuplicateMS: time two or more nodes held the VIP between the fault and
	// the start of the restore. For kill it runs until the lab removes the
	// left-over address (the killed daemon never will).
	DuplicateMS float64 `json:"duplicate_ms"`
	// SinceAdvertMS: fault − the old master's last advert seen by the client.
	SinceAdvertMS float64 `json:"since_advert_ms"`
	// BoundMS is the theoretical VRRPv3 bound; ExcessMS = OutageMS − BoundMS
	// and TakeoverExcessMS = TakeoverMS − BoundMS.
	BoundMS          float64 `json:"bound_ms"`
	ExcessMS         float64 `json:"excess_ms"`
	TakeoverExcessMS float64 `json:"takeover_excess_ms"`
	// NeighMS: fault → the client's entry for the VIP points at the new
	// master; NeighAfterTakeoverMS = NeighMS − TakeoverMS.
	NeighMS              float64 `json:"neigh_ms"`
	NeighAfterTakeoverMS float64 `json:"neigh_after_takeover_ms"`
	// ReleaseMS (graceful): fault → the old master's priority 0 advert.
	ReleaseMS float64 `json:"release_ms,omitempty"`
	// ExitCode (graceful) is the old master's exit status after SIGTERM.
	ExitCode *int `json:"exit_code,omitempty"`
	// SecondOwnerReported (kill): the new master logged a line matching the
	// duplicate-owner pattern after the fault.
	SecondOwnerReported *bool `json:"second_owner_reported,omitempty"`
	// RestoreDuplicateMS: overlap while the group returned to its first
	// master (preemption), for information.
	RestoreDuplicateMS float64 `json:"restore_duplicate_ms"`
	// ProbeStallMS is the longest pause between two probes *sent*: well
	// above 1 ms it means the machine stalled the lab, and OutageMS may
	// include that stall.
	ProbeStallMS   float64 `json:"probe_stall_ms"`
	ProbesSent     uint64  `json:"probes_sent"`
	ProbesAnswered int     `json:"probes_answered"`
	Error          string  `json:"error,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
