// Package health runs vipd's health trackers, the [[instance.track]] tables
// of the configuration: probes that raise or lower the priority a VRRP
// router advertises (RFC 5798 section 5.2.4), or demand Fault, so the
// virtual IP moves only when the Master is less healthy than a peer, not
// whenever one probe is slow.
//
// A Checker runs one probe of one of four kinds: an HTTP GET (native Go, no
// process per check), a command run from an argv list without a shell in its
// own process group, a drain file whose existence means failing, and another
// interface that must be up. A Tracker runs a Checker every interval and
// applies hysteresis: fall consecutive failures make it failing, rise
// consecutive successes healthy again. Effective combines the trackers'
// states with the configured priority into the priority to advertise and,
// for a failing weight-0 tracker, the cause of a Fault.
//
// A Tracker starts healthy. A restarting daemon must not demote a Master,
// or give up the VIP, before a tracker has failed fall times in a row: that
// is the evidence vipd asks of a running daemon too, and asking less at
// start-up would move the VIP on every upgrade whose first probe was slow.
// The cost is that a positive weight counts from the start; negative weights
// (a penalty while failing) never raise a priority without evidence.
package health
