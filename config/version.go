package config

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// version reads the VRRP version and what comes with it: VRRPv2's limits,
// its password, the versions accepted, and the address owner trusted. It
// runs after the VIPs, interval and unicast keys are read.
func (c *checker) version(r *rawInstance, in *Instance, key func(string) string) {
	in.Version = vrrp.Version
	if n, ok := c.integer(r.Version, key("version")); ok {
		if n != vrrp.Version && n != vrrp.Version2 {
			c.add(key("version"), "version %d is not 2 (RFC 3768, keepalived's default) or 3 (RFC 5798, vipd's default)", n)
		} else {
			in.Version = uint8(n)
		}
	}
	v2 := in.Version == vrrp.Version2
	if v2 {
		switch {
		case in.IPv6():
			c.add(key("version"), "version 2 is IPv4 only (RFC 3768); an IPv6 instance speaks VRRPv3 (version = 3)")
		case in.AdvertInterval%time.Second != 0 || in.AdvertInterval > vrrp.MaxAdvertIntervalV2:
			at := key("advert_interval")
			if !r.AdvertInterval.set {
				at = key("version")
			}
			c.add(at, "advert_interval %v: VRRPv2 carries whole seconds, 1s..255s (RFC 3768 section 5.3.7)", in.AdvertInterval)
		}
		if r.Checksum.set {
			c.add(key("checksum"), "checksum applies to VRRPv3 only: a VRRPv2 checksum never covers the pseudo-header (RFC 3768 section 5.3.8); leave it out")
		}
	}

	if list, ok := listOf[int64](c, r.AcceptVersions, key("accept_versions"), "integers", "an integer"); ok {
		for _, n := range list {
			if n != vrrp.Version && n != vrrp.Version2 {
				c.add(key("accept_versions"), "accept_versions: %d is not a VRRP version (2 or 3)", n)
				return
			}
		}
		switch {
		case !slices.Contains(list, int64(in.Version)):
			c.add(key("accept_versions"), "accept_versions %v leaves out version %d, the one this instance sends", list, in.Version)
		case slices.Contains(list, vrrp.Version2) && slices.Contains(list, vrrp.Version) && in.IPv6():
			c.add(key("accept_versions"), "accept_versions: VRRPv2 is IPv4 only; an IPv6 instance accepts version 3 alone")
		default:
			in.AcceptOtherVersion = slices.Contains(list, vrrp.Version2) && slices.Contains(list, vrrp.Version)
		}
	}

	if s, ok := c.str(r.AuthPass, key("auth_pass")); ok {
		switch {
		case !v2 && !in.AcceptOtherVersion:
			c.add(key("auth_pass"), "auth_pass applies to VRRPv2 adverts only: VRRPv3 removed authentication (RFC 5798 section 9); with version = 3 it checks the VRRPv2 adverts accept_versions = [2, 3] still takes")
		case s == "":
			c.add(key("auth_pass"), "auth_pass is empty: leave it out for no authentication")
		case len(s) > vrrp.MaxPasswordLen:
			c.add(key("auth_pass"), "auth_pass is %d bytes: VRRPv2's password field holds %d (keepalived uses the first %d: write %q)",
				len(s), vrrp.MaxPasswordLen, vrrp.MaxPasswordLen, s[:vrrp.MaxPasswordLen])
		default:
			in.AuthPass = s
		}
	}

	if s, ok := c.str(r.AddressOwner, key("address_owner")); ok && s != "" {
		a, msg := parseUnicast(s, in.Interface)
		if msg == "" && len(in.VIPs) > 0 && a.Is6() != in.IPv6() {
			msg = fmt.Sprintf("%s is %s, but the instance's VIPs are %s", a, familyName(a), familyName(in.VIPs[0].Addr()))
		}
		switch {
		case msg != "":
			c.add(key("address_owner"), "address_owner: %s", msg)
		case slices.ContainsFunc(in.VIPs, func(p netip.Prefix) bool { return p.Addr() == a }):
			c.add(key("address_owner"), "address_owner %s is one of the VIPs; name the owner's own address, the source of its adverts", a)
		case a == in.UnicastSource:
			c.add(key("address_owner"), "address_owner %s is unicast_source, this host itself", a)
		default:
			in.AddressOwner = a
		}
	}
}
