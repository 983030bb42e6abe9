package lab

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// The lab's IPv6 plan (Options.IPv6): 2001:db8::/64 (RFC 3849) beside the
// IPv4 LAN, each host's address ending in the digits of its IPv4 host
// number (198.51.100.11 is 2001:db8::11), so captures read alike. Every
// eth0 also has its kernel-made link-local address (EUI-64 of the lab MAC).

// LANPrefix6 is the lab's IPv6 LAN, 2001:db8::/64.
func LANPrefix6() netip.Prefix { return netip.MustParsePrefix("2001:db8::/64") }

// DefaultVIP6 is the IPv6 virtual address, 2001:db8::10/128.
func DefaultVIP6() netip.Prefix { return netip.MustParsePrefix("2001:db8::10/128") }

// ClientAddr6 is the client's IPv6 address, 2001:db8::99.
func ClientAddr6() netip.Addr { return hostAddr6(ClientHost) }

// StrangerAddr6 is the stranger's IPv6 address, 2001:db8::9.
func StrangerAddr6() netip.Addr { return hostAddr6(StrangerHost) }

func hostAddr6(h byte) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("2001:db8::%d", h))
}

// DualStackGroupConfig is DefaultGroupConfig with an IPv6 follower: the
// IPv4 VIP 198.51.100.10 leads, 2001:db8::10 follows it on the same VRID
// (another family, so another virtual router).
func DualStackGroupConfig(nodes int, interval time.Duration) GroupConfig {
	g := DefaultGroupConfig(nodes, interval)
	g.VIP6 = DefaultVIP6()
	return g
}

// IPv6GroupConfig is DefaultGroupConfig for an IPv6-only group: VIP
// 2001:db8::10/128.
func IPv6GroupConfig(nodes int, interval time.Duration) GroupConfig {
	g := DefaultGroupConfig(nodes, interval)
	g.VIP = DefaultVIP6()
	return g
}

// validVIP checks one VIP prefix of the group: a single address, never
// link-local (vipd refuses one; it would not be reachable off the link).
func validVIP(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return fmt.Errorf("vip %v: want an address", p)
	case p.Bits() != p.Addr().BitLen():
		return fmt.Errorf("vip %v: want a single address (/32 or /128)", p)
	case p.Addr().Is6() && p.Addr().IsLinkLocalUnicast():
		return fmt.Errorf("vip %v: link-local", p)
	case p.Addr().Zone() != "":
		return fmt.Errorf("vip %v: has a zone", p)
	}
	return nil
}

// followerName is the IPv6 follower instance of a dual-stack vipd config;
// the leader is "lab".
const followerName = "lab6"

// vipdFollower appends the IPv6 follower instance of a dual-stack group.
func vipdFollower(b *bytes.Buffer, g GroupConfig, repeat int, spacing fmt.Stringer) {
	fmt.Fprintf(b, "\n[[instance]]\nname = %q\ninterface = \"eth0\"\nvrid = %d\nfollow = \"lab\"\n", followerName, g.VRID)
	fmt.Fprintf(b, "advert_interval = %q\nvips = [%q]\n\n", g.Interval.String(), g.VIP6.String())
	vipdGARP(b, g, repeat, spacing)
}

// keepalivedFollower appends the IPv6 instance of a dual-stack keepalived
// config and the sync group that binds it to the IPv4 one, keepalived's
// counterpart of vipd's follow.
func keepalivedFollower(b *bytes.Buffer, node int, g GroupConfig) {
	fmt.Fprintf(b, "\nvrrp_instance lab6 {\n    state BACKUP\n    interface eth0\n")
	fmt.Fprintf(b, "    virtual_router_id %d\n    priority %d\n", g.VRID, g.Priority(node))
	fmt.Fprintf(b, "    advert_int %s\n", strconv.FormatFloat(g.Interval.Seconds(), 'f', -1, 64))
	if g.NoPreempt {
		fmt.Fprintf(b, "    nopreempt\n")
	}
	fmt.Fprintf(b, "    virtual_ipaddress {\n        %s dev eth0\n    }\n}\n", g.VIP6)
	fmt.Fprintf(b, "\nvrrp_sync_group lab_pair {\n    group {\n        lab\n        lab6\n    }\n}\n")
}

// IPv6Label is the bench column of kind over IPv6, e.g. "vipd ipv6".
func IPv6Label(kind DaemonKind) string { return kind.String() + " ipv6" }
