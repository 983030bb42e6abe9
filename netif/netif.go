package netif

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netns"
)

var (
	// ErrNoLink reports that the named link does not exist.
	ErrNoLink = errors.New("netif: no such link")
	// ErrNoAddress reports that a link has no usable IPv4 address.
	ErrNoAddress = errors.New("netif: no IPv4 address")
	// ErrUnsupported is returned by New on operating systems without netlink.
	ErrUnsupported = errors.New("netif: not supported on this operating system")
)

// maxLabelLen is the longest IPv4 address label the kernel accepts
// (IFNAMSIZ-1); longer labels fail with ERANGE.
const maxLabelLen = 15

// vipLabelSuffix marks our addresses in `ip addr` output and lets a later
// cleanup recognise them.
const vipLabelSuffix = ":vip"

// vipLabel returns the label AddVIP gives a VIP on ifname when no label is
// asked for: "<ifname>:vip", or "" (no label) when that would not fit.
func vipLabel(ifname string) string {
	l := ifname + vipLabelSuffix
	if len(l) > maxLabelLen {
		return ""
	}
	return l
}

// A LinkInfo is a snapshot of one link.
type LinkInfo struct {
	Name         string
	Index        int
	HardwareAddr net.HardwareAddr
	// Up is true when the link is administratively up and has carrier
	// (operational state up, or unknown for drivers that do not report it).
	Up bool
	// IPv4 lists the link's IPv4 addresses in kernel order (the primary
	// address first), without the VIPs this Manager knows of and without
	// addresses carrying the VIP label.
	IPv4 []netip.Prefix
}

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds; the zero value is invalid so a forgotten field shows.
const (
	eventInvalid EventKind = iota
	// AddrAdded: an address appeared (or is listed again after a
	// re-subscription).
	AddrAdded
	// AddrRemoved: an address disappeared.
	AddrRemoved
	// LinkUp: the link became up (admin up with carrier), or was first seen up.
	LinkUp
	// LinkDown: the link lost carrier or was set down, or was first seen down.
	LinkDown
	// LinkGone: the link was deleted (or left the namespace).
	LinkGone
	numEventKinds
)

var eventKindNames = [numEventKinds]string{"invalid", "addr-added", "addr-removed", "link-up", "link-down", "link-gone"}

func (k EventKind) String() string {
	if k >= numEventKinds {
		return eventKindNames[eventInvalid]
	}
	return eventKindNames[k]
}

// An Event is one change seen by Watch.
type Event struct {
	Kind EventKind
	// Link is the link's name; it may be empty for an address event whose
	// link could not be named.
	Link  string
	Index int
	// Up is the link state for LinkUp and LinkDown; false otherwise.
	Up bool
	// Prefix is the address for AddrAdded and AddrRemoved.
	Prefix netip.Prefix
	// At is when the message was received.
	At time.Time
}

// An Option configures New.
type Option func(*options)

type options struct {
	ns    netns.NsHandle
	hasNS bool
	vips  []netip.Prefix
}

// WithNamespace binds the Manager to the network namespace ns instead of the
// process's own. New duplicates the handle, so the caller may close ns once
// New returns. Working in another namespace needs CAP_SYS_ADMIN (setns);
// the default needs only CAP_NET_ADMIN.
func WithNamespace(ns netns.NsHandle) Option {
	return func(o *options) { o.ns, o.hasNS = ns, true }
}

// WithVIPs tells the Manager which addresses are VIPs before it adds or
// removes any, so that Link and PrimaryIPv4 leave them out even when a
// previous run left them behind.
func WithVIPs(vips ...netip.Prefix) Option {
	return func(o *options) { o.vips = append(o.vips, vips...) }
}
