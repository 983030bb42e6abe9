package vrrp

import (
	"net/netip"
	"time"
)

// ActionKind says what an Action asks the driver to do.
type ActionKind uint8

// Actions, executed by the driver in the order they are returned.
const (
	_ ActionKind = iota // invalid zero value
	// ActSendAdvert: send an advert with Priority (0 when releasing).
	ActSendAdvert
	// ActTakeAddresses: add the virtual addresses and announce them
	// (gratuitous ARP burst).
	ActTakeAddresses
	// ActReleaseAddresses: remove the virtual addresses (idempotent). Peer,
	// when set, is a higher Master we yield to: it takes them itself within
	// its grace, so the driver may keep them until it announces them.
	ActReleaseAddresses
	// ActAnnounce: announce the held addresses again (a new burst).
	ActAnnounce
	// ActArmTimer: (re)arm Timer to fire After from now.
	ActArmTimer
	// ActStopTimer: stop Timer.
	ActStopTimer
	// ActTransition: the state changed; Transition says how and why.
	ActTransition
	// ActAddressMismatch: an advert from Peer, the Master we follow or an
	// address owner, lists other addresses than ours. It was accepted for
	// the election (a rolling change of the VIP list); the driver warns
	// with the advert's addresses. Reported at most once per
	// Master_Down_Interval per peer, and for at most mismatchSlots peers
	// per Master_Down_Interval.
	ActAddressMismatch
	// ActDownTimerMismatch: Peer became Master after the Master we followed
	// had been silent for more than 3 advert intervals but less than our
	// Master_Down_Interval: it seems to wait fewer adverts than our
	// MasterDownAdverts. Detail says so in words; the driver warns.
	ActDownTimerMismatch
	// ActForeignMaster: a follower that is Master heard Peer advertise as
	// Master on its VRID; it keeps following its leader and the driver
	// warns. Reported at most once per Master_Down_Interval.
	ActForeignMaster
)

func (k ActionKind) String() string {
	switch k {
	case ActSendAdvert:
		return "send_advert"
	case ActTakeAddresses:
		return "take_addresses"
	case ActReleaseAddresses:
		return "release_addresses"
	case ActAnnounce:
		return "announce"
	case ActArmTimer:
		return "arm_timer"
	case ActStopTimer:
		return "stop_timer"
	case ActTransition:
		return "transition"
	case ActAddressMismatch:
		return "address_mismatch"
	case ActDownTimerMismatch:
		return "down_timer_mismatch"
	case ActForeignMaster:
		return "foreign_master"
	}
	return "invalid_action"
}

// An Action is one thing the driver must do. Only the fields its Kind
// names are set.
type Action struct {
	Kind       ActionKind
	Priority   uint8
	Timer      Timer
	After      time.Duration
	Transition Transition
	Peer       netip.Addr // the advert's source (mismatch actions, a yield)
	Detail     string     // the warning in words, for ActDownTimerMismatch
}

// A Transition is a change of state with its cause in an operator's words.
type Transition struct {
	At       time.Time
	From, To State
	Reason   Reason
	Cause    string
}

// MasterInfo is what the last accepted advert said about the Master.
type MasterInfo struct {
	Addr     netip.Addr
	Priority uint8
	Interval time.Duration
	At       time.Time
}
