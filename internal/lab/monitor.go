package lab

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// EventKind says what a monitor Event records.
type EventKind int

const (
	_ EventKind = iota // invalid zero value
	// VIPAdded: the VIP appeared on a node (netlink RTM_NEWADDR in its namespace).
	VIPAdded
	// VIPRemoved: the VIP left a node.
	VIPRemoved
	// NeighChanged: the client's neighbour entry for the VIP now points at a
	// different hardware address (or none).
	NeighChanged
	// AdvertChanged: the first advert from a node, a priority change (0 is a
	// release), or adverts that resume after a silence.
	AdvertChanged
)

func (k EventKind) String() string {
	switch k {
	case VIPAdded:
		return "vip-added"
	case VIPRemoved:
		return "vip-removed"
	case NeighChanged:
		return "neigh-changed"
	case AdvertChanged:
		return "advert"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one observation, stamped when the lab received it.
type Event struct {
	At   time.Time
	Kind EventKind
	// Node is the node concerned (1-based), 0 when unknown (e.g. a MAC that
	// belongs to no node).
	Node int
	// Priority and Interval are the advert's fields (AdvertChanged).
	Priority int
	Interval time.Duration
	// MAC and State describe the client's neighbour entry (NeighChanged).
	MAC   net.HardwareAddr
	State string
}

// Describe renders the event for a timeline.
func (e Event) Describe() string {
	who := "unknown host"
	if e.Node > 0 {
		who = NodeName(e.Node)
	}
	switch e.Kind {
	case VIPAdded:
		return who + " now holds the VIP"
	case VIPRemoved:
		return who + " released the VIP"
	case NeighChanged:
		if len(e.MAC) == 0 {
			return "client has no neighbour entry for the VIP (" + e.State + ")"
		}
		return fmt.Sprintf("client's neighbour entry for the VIP -> %s (%s, %s)", e.MAC, who, e.State)
	case AdvertChanged:
		if e.Priority == 0 {
			return who + " advertises priority 0 (gives up mastership)"
		}
		return fmt.Sprintf("%s advertises as master, priority %d, interval %v", who, e.Priority, e.Interval)
	}
	return e.Kind.String()
}

// State is a snapshot of what a Monitor has seen.
type State struct {
	At time.Time
	// Holders are the nodes that have the VIP now, ascending.
	Holders []int
	// NeighNode is the node the client's entry for the VIP points at (0: none
	// or unknown); NeighMAC is the raw address.
	NeighNode int
	NeighMAC  net.HardwareAddr
	// Advertiser is the node whose priority>0 advert arrived last, 0 if none.
	Advertiser     int
	LastAdvert     time.Time
	AdvertPriority int
}

// Holds reports whether node i holds the VIP in s.
func (s State) Holds(i int) bool {
	for _, h := range s.Holders {
		if h == i {
			return true
		}
	}
	return false
}

// OnlyHolder is the single holder, or 0 when none or several hold the VIP.
func (s State) OnlyHolder() int {
	if len(s.Holders) == 1 {
		return s.Holders[0]
	}
	return 0
}
