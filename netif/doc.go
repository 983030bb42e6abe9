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
// IPv6 VIPs are added without duplicate address detection (IFA_F_NODAD:
// the election makes the Master the only owner, and the VIP must answer at
// once) and with a preferred lifetime of 0 and an infinite valid one: the
// address is deprecated, so the kernel never picks it as the source of the
// host's own connections while another global address exists (RFC 6724
// rule 3), yet accepts traffic to it. Those two marks are also how
// RemoveVIP recognises vipd's IPv6 addresses, which have no labels. The
// kernel's IFA_PROTO attribute would be a cleaner mark, but
// vishvananda/netlink v1.3.1 neither sets nor reports it. LinkLocal and
// the State of address events follow duplicate address detection, so the
// daemon can wait for its link-local source and spot a failed VIP.
//
// All netlink work happens in one network namespace, chosen when the Manager
// is created. The package builds on every OS; outside Linux, New fails with
// ErrUnsupported.
package netif
