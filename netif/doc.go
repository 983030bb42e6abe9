// Package netif is vipd's window onto the kernel's addresses and links
// (rtnetlink): it adds the virtual IP that the Master of a VRRP virtual
// router owns (RFC 5798 section 6.4.3) and removes it again, and it reports
// address and link changes.
//
// It works as a reconciler. AddVIP and RemoveVIP are idempotent ("ensure
// present", "ensure absent"): an address that already exists, or is already
// gone, is success. Watch reports every change, including the ones vipd made
// itself, and lists the current state again whenever it has to re-subscribe,
// so a consumer that acts on events converges even after missing some.
//
// All netlink work happens in one network namespace, chosen when the Manager
// is created. The package builds on every OS; outside Linux, New fails with
// ErrUnsupported.
package netif
