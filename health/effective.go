package health

import "strings"

// Priority bounds for a router that does not own the address (RFC 5798
// section 5.2.4): 0 is reserved for a Master giving up, 255 for the owner.
const (
	minPriority = 1
	maxPriority = 254
)

// Effective combines a configured priority with the trackers' states: the
// priority to advertise is clamp(base + contributions, 1, 254), so trackers
// can rank healthy routers but never signal resignation (0) or ownership
// (255). fault is non-empty, naming each failing weight-0 tracker and why
// ("tracker apiserver failing: GET ...: timeout after 1s"), while the
// instance must be in Fault.
//
// Contributions are computed from Weight and Healthy, not taken from the
// Status, so a Status assembled by hand cannot disagree with Effective.
func Effective(base uint8, sts []Status) (prio uint8, fault string) {
	p := int(base)
	var faults []string
	for _, s := range sts {
		p += contribution(s.Weight, s.Healthy)
		if s.Weight == 0 && !s.Healthy {
			f := "tracker " + s.Name + " failing"
			if s.Cause != "" {
				f += ": " + s.Cause
			}
			faults = append(faults, f)
		}
	}
	return uint8(min(max(p, minPriority), maxPriority)), strings.Join(faults, "; ")
}
