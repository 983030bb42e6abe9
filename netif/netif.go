package netif

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netns"
)

var (
	// ErrNoLink reports that the named link does not exist.
	ErrNoLink = errors.New("netif: no such link")
	// ErrNoAddress reports that a link has no usable IPv4 address (from
	// PrimaryIPv4), no IPv6 link-local address (from LinkLocal), or not
	// the address asked about (from VIPState).
	ErrNoAddress = errors.New("netif: no IPv4 address")
	// ErrDADFailed reports an IPv6 address that the kernel found in use by
	// another host on the link (state dadfailed): it is configured but
	// neither sends nor receives.
	ErrDADFailed = errors.New("netif: duplicate address detection failed")
	// ErrUnsupported is returned by New on operating systems without netlink.
	ErrUnsupported = errors.New("netif: not supported on this operating system")
	// ErrNotOurs reports an address equal to a VIP that vipd did not add
	// (an administrator's own, say): RemoveVIP leaves it in place.
	ErrNotOurs = errors.New("netif: address not added by vipd")
)

// noAddressError says which address is missing where; it matches
// ErrNoAddress.
type noAddressError struct{ what, ifname string }

func (e *noAddressError) Error() string        { return "netif: no " + e.what + " on " + e.ifname }
func (e *noAddressError) Is(target error) bool { return target == ErrNoAddress }

// A ForeignAddressError names an address that RemoveVIP kept because it is
// not vipd's. It matches ErrNotOurs with errors.Is.
type ForeignAddressError struct {
	Interface string
	Prefix    netip.Prefix
	// Label is the address's label; "" when it has none (the kernel's
	// default, the interface name) or is IPv6.
	Label string
	// Want is vipd's label on this interface; "" when the name leaves no
	// room for it.
	Want string
}

func (e *ForeignAddressError) Error() string {
	return fmt.Sprintf("netif: %v on %s %s: not removing an address vipd did not add", e.Prefix, e.Interface, e.Why())
}

// Why says what tells the address from vipd's, e.g. `has label
// "eth0:admin", not vipd's "eth0:vip"`.
func (e *ForeignAddressError) Why() string {
	if e.Prefix.Addr().Is6() {
		return "lacks the flags vipd gives its IPv6 addresses (nodad, preferred_lft 0): not known to be vipd's"
	}
	label := "no label"
	if e.Label != "" {
		label = fmt.Sprintf("label %q", e.Label)
	}
	if e.Want != "" {
		return fmt.Sprintf("has %s, not vipd's %q", label, e.Want)
	}
	return fmt.Sprintf("has %s, and the interface name leaves no room for vipd's label (nor does IPv6 have labels): not known to be vipd's", label)
}

func (e *ForeignAddressError) Unwrap() error { return ErrNotOurs }

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
	// AddrChanged: an address already reported changed its State, such as
	// an IPv6 address leaving the tentative state or failing duplicate
	// address detection. Lifetime updates are not reported.
	AddrChanged
	// LinkUp: the link became up (admin up with carrier), or was first seen up.
	LinkUp
	// LinkDown: the link lost carrier or was set down, or was first seen down.
	LinkDown
	// LinkGone: the link was deleted (or left the namespace).
	LinkGone
	numEventKinds
)

var eventKindNames = [numEventKinds]string{"invalid", "addr-added", "addr-removed", "addr-changed", "link-up", "link-down", "link-gone"}

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
	// Prefix is the address for AddrAdded, AddrRemoved and AddrChanged.
	Prefix netip.Prefix
	// State is the address's state for AddrAdded and AddrChanged (IPv4
	// addresses are always AddrReady); zero otherwise.
	State AddrState
	// At is when the message was received.
	At time.Time
}

// AddrState is the duplicate address detection state of an address (RFC
// 4862 section 5.4). IPv4 addresses are always AddrReady.
type AddrState uint8

// Address states; the zero value is invalid so a forgotten field shows.
const (
	addrStateInvalid AddrState = iota
	// AddrReady: usable, as a source too.
	AddrReady
	// AddrTentative: duplicate address detection is running (or waits for
	// carrier); the kernel neither sends from the address nor accepts
	// packets to it.
	AddrTentative
	// AddrDADFailed: another host on the link has the address; it stays
	// configured but unusable until removed.
	AddrDADFailed
	numAddrStates
)

var addrStateNames = [numAddrStates]string{"invalid", "ready", "tentative", "dadfailed"}

func (s AddrState) String() string {
	if s >= numAddrStates {
		return addrStateNames[addrStateInvalid]
	}
	return addrStateNames[s]
}

// An Option configures New.
type Option func(*options)

type options struct {
	ns    netns.NsHandle
	hasNS bool
	vips  []netip.Prefix
	owned []OwnedAddr
	// strict: WithOwned was given, so an unlabelled address is vipd's only
	// when listed or added by this Manager.
	strict bool
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

// An OwnedAddr is an address vipd is known to have added, such as one a
// daemon recorded in its held file.
type OwnedAddr struct {
	Interface string
	Prefix    netip.Prefix
}

// WithOwned lists addresses known to be vipd's, for interfaces whose names
// leave no room for the "<ifname>:vip" label, where an address's label
// cannot tell. (IPv6 addresses have no labels; there an address is vipd's
// when it carries vipd's flags, nodad with a preferred lifetime of 0, when
// this Manager added it, or when it is listed here.) Without it RemoveVIP
// takes an unlabelled address there for vipd's: a daemon must not keep a
// VIP it may have added, or two hosts hold it. With it (even an empty
// list), only the listed addresses and those this Manager added count,
// which is what `vipd cleanup` wants. Addresses with vipd's label always
// count, and addresses with any other label never do.
func WithOwned(addrs ...OwnedAddr) Option {
	return func(o *options) {
		o.strict = true
		o.owned = append(o.owned, addrs...)
	}
}
