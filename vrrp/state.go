package vrrp

// A State is a state of the election (RFC 5798 section 6.4), plus Fault,
// which keepalived operators know: the link is down or a health check
// demands that this router must not own the addresses.
type State uint8

// States; the zero value is invalid so a forgotten initialisation shows.
const (
	stateInvalid State = iota
	StateInitialize
	StateBackup
	StateMaster
	StateFault
	numStates
)

var stateNames = [numStates]string{"INVALID", "INITIALIZE", "BACKUP", "MASTER", "FAULT"}

// States lists the valid states, for callers that pre-create metrics.
func States() []State { return []State{StateInitialize, StateBackup, StateMaster, StateFault} }

func (s State) String() string {
	if s >= numStates {
		return stateNames[stateInvalid]
	}
	return stateNames[s]
}

// A Timer names one of the machine's timers. The driver keeps one real timer
// per name and reports its expiry with Machine.TimerFired.
type Timer uint8

// Timers (RFC 5798 section 6.2).
const (
	timerInvalid Timer = iota
	// TimerAdvert is the Adver_Timer: a Master sends its next advert.
	TimerAdvert
	// TimerMasterDown is the Master_Down_Timer: a Backup declares the
	// Master dead.
	TimerMasterDown
	// TimerTakeover ends a new Master's short wait before it takes the
	// addresses (Config.TakeoverGrace).
	TimerTakeover
	numTimers
)

func (t Timer) String() string {
	switch t {
	case TimerAdvert:
		return "adver_timer"
	case TimerMasterDown:
		return "master_down_timer"
	case TimerTakeover:
		return "takeover_timer"
	}
	return "invalid_timer"
}

// A Reason classifies a transition for metrics and scripts; the Cause text
// of a Transition says the same in words.
type Reason uint8

// Transition reasons.
const (
	reasonInvalid      Reason = iota
	ReasonStartup             // the machine started
	ReasonMasterDown          // no advert from the Master for Master_Down_Interval
	ReasonMasterLeft          // the Master sent priority 0
	ReasonPreempt             // we have a higher priority than the Master
	ReasonHigherMaster        // a Master with a higher priority (or equal and higher address)
	ReasonFrozen              // our timers fired late and another Master took over meanwhile
	ReasonLinkDown            // the interface went down
	ReasonLinkUp              // the interface came back
	ReasonFault               // a health check demands Fault
	ReasonFaultCleared        // the health check passes again
	ReasonShutdown            // the daemon stops
	ReasonResigned            // an operator drained this router
	ReasonResumed             // a new daemon process took over the state of the old one
	ReasonLinkFlap            // the link came back before any peer can have timed out
	ReasonLeader              // a follower's leader became Master, or stopped being Master
	numReasons
)

var reasonNames = [numReasons]string{
	"invalid", "startup", "master_down", "master_left", "preempt", "higher_master",
	"frozen", "link_down", "link_up", "fault", "fault_cleared", "shutdown", "resigned", "resumed",
	"link_returned", "leader",
}

func (r Reason) String() string {
	if r >= numReasons {
		return reasonNames[reasonInvalid]
	}
	return reasonNames[r]
}
