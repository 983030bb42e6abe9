package keepalived

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// vipOptions are the options of a virtual_ipaddress entry that take a
// value, as in ip address add.
var vipOptions = map[string]bool{"dev": true, "label": true, "brd": true, "broadcast": true, "scope": true, "peer": true, "preferred_lft": true, "track_group": true}

// vipFlags are the options without a value.
var vipFlags = map[string]bool{"home": true, "-nodad": true, "nodad": true, "mngtmpaddr": true, "noprefixroute": true, "autojoin": true, "no_track": true, "use_vmac": true}

// vipEntry is one address of virtual_ipaddress with its options.
type vipEntry struct {
	addr Word
	opts map[string]Word
	flag []string
}

// vipEntries splits a virtual_ipaddress block into entries, one a line or
// several on one line.
func (c *converter) vipEntries(n *Node) []vipEntry {
	var out []vipEntry
	ws := flatWords(n)
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		switch {
		case vipOptions[w.Text] && len(out) > 0:
			if i+1 < len(ws) {
				out[len(out)-1].opts[w.Text] = ws[i+1]
				i++
			} else {
				c.unconverted(w.Pos, "virtual_ipaddress: %s needs a value", w.Text)
			}
		case vipFlags[w.Text] && len(out) > 0:
			out[len(out)-1].flag = append(out[len(out)-1].flag, w.Text)
		case isAddr(w.Text):
			out = append(out, vipEntry{addr: w, opts: map[string]Word{}})
		default:
			c.unconverted(w.Pos, "virtual_ipaddress: %q is neither an address nor an option the converter knows", w.Text)
		}
	}
	return out
}

func isAddr(s string) bool {
	a, _, _ := strings.Cut(s, "/")
	_, err := netip.ParseAddr(a)
	return err == nil
}

// vips converts virtual_ipaddress; the first address sets the instance's
// family. It returns the VIPs as vipd writes them.
func (c *converter) vips(in *instance, n *Node) (vips, comments []string) {
	in.vipsPos = n.Pos
	var out []string
	var notes []string
	for _, e := range c.vipEntries(n) {
		at, text := e.addr.Pos, e.addr.Text
		s, bits, hasBits := strings.Cut(text, "/")
		a, _ := netip.ParseAddr(s)
		var prefix netip.Prefix
		if hasBits {
			p, err := netip.ParsePrefix(text)
			if err != nil {
				c.unconverted(at, "virtual_ipaddress %s: /%s is not a prefix length", text, bits)
				continue
			}
			prefix = p
		}
		if msg := vipProblem(a); msg != "" {
			c.unconverted(at, "virtual_ipaddress %s: %s", text, msg)
			continue
		}
		if a.Zone() != "" {
			c.unconverted(at, "virtual_ipaddress %s: a VIP has no zone", text)
			continue
		}
		if dev, ok := e.opts["dev"]; ok && dev.Text != in.iface {
			c.unconverted(at, "virtual_ipaddress %s dev %s: vipd holds an instance's VIPs on its interface, %s; put it in an instance on %s (with follow = %q to keep it with this one)", text, dev.Text, in.iface, dev.Text, in.name)
			continue
		}
		if _, ok := e.opts["peer"]; ok {
			c.unconverted(at, "virtual_ipaddress %s peer: vipd adds no point-to-point addresses", text)
			continue
		}
		if len(in.vips) > 0 && a.Is6() != in.ipv6 {
			c.unconverted(at, "virtual_ipaddress %s: an instance holds one address family (RFC 5798 section 5.2.9), and %s is %s; put it in an instance of its own with follow = %q", text, in.vips[0], family(in.ipv6), in.name)
			continue
		}
		if slices.Contains(in.vips, a) {
			c.note(at, "virtual_ipaddress %s is listed twice; converted once", text)
			continue
		}
		if prefix.IsValid() && prefix.Bits() != a.BitLen() {
			notes = append(notes, fmt.Sprintf("NOTE: %s became %s: vipd adds each VIP as a host address (/%d). keepalived's /%d also made the kernel add a connected route for %s while the VIP was up, if the interface has no other address in that subnet; vipd relies on the interface's own address for that route.", text, a, a.BitLen(), prefix.Bits(), prefix.Masked()))
			c.note(at, "virtual_ipaddress %s is converted to the host address %s: keepalived's /%d also brought a connected route for %s; vipd relies on the interface's own address in that subnet for it", text, a, prefix.Bits(), prefix.Masked())
		}
		if l, ok := e.opts["label"]; ok {
			notes = append(notes, fmt.Sprintf("NOTE: label %s of %s dropped: vipd labels the addresses it adds %s:vip itself.", l.Text, a, in.iface))
			c.note(l.Pos, "virtual_ipaddress %s label %s: dropped; vipd labels its addresses INTERFACE:vip", text, l.Text)
		}
		if sc, ok := e.opts["scope"]; ok && sc.Text != "global" {
			c.warn(sc.Pos, "virtual_ipaddress %s scope %s: vipd adds VIPs with global scope", text, sc.Text)
		}
		for _, k := range []string{"brd", "broadcast", "preferred_lft", "track_group"} {
			if w, ok := e.opts[k]; ok {
				c.note(w.Pos, "virtual_ipaddress %s %s %s: dropped; vipd adds each VIP as a host address", text, k, w.Text)
			}
		}
		for _, f := range e.flag {
			switch f {
			case "use_vmac":
				c.warn(at, "virtual_ipaddress %s use_vmac: vipd uses no virtual MAC", text)
			case "no_track":
				c.warn(at, "virtual_ipaddress %s no_track: vipd has no such mode; it holds the address as every other VIP", text)
			case "-nodad", "nodad":
				// vipd adds IPv6 VIPs without duplicate address detection anyway.
			default:
				c.note(at, "virtual_ipaddress %s %s: dropped; vipd adds each VIP as a host address", text, f)
			}
		}
		if len(in.vips) == 0 {
			in.ipv6 = a.Is6()
		}
		in.vips = append(in.vips, a)
		out = append(out, a.String())
	}
	return out, append([]string{fmt.Sprintf("virtual_ipaddress (%s)", n.Pos)}, notes...)
}

// vipProblem says why an address cannot be a vipd VIP, or "".
func vipProblem(a netip.Addr) string {
	switch {
	case a.Is4In6():
		return "an IPv4-mapped IPv6 address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsLoopback():
		return "a loopback address"
	case a.Is4() && a.As4() == [4]byte{255, 255, 255, 255}:
		return "the broadcast address"
	case a.Is6() && a.IsLinkLocalUnicast():
		return "an IPv6 link-local address: vipd holds no link-local VIPs (clients off the link cannot reach them, and the adverts' link-local source must not move)"
	}
	return ""
}

func family(ipv6 bool) string {
	if ipv6 {
		return "IPv6"
	}
	return "IPv4"
}

// unicastPeers converts unicast_peer and the advert source.
func (c *converter) unicastPeers(in *instance, peers, src *Node) {
	var source netip.Addr
	if src != nil && len(src.Args) > 0 {
		a, err := netip.ParseAddr(src.Args[0].Text)
		switch {
		case err != nil:
			c.unconverted(src.Pos, "%s: %q is not an address", src.Key, src.Args[0].Text)
		case a.Is6() != in.ipv6:
			c.unconverted(src.Pos, "%s %s is %s, but the instance's VIPs are %s", src.Key, a, family(a.Is6()), family(in.ipv6))
		case slices.Contains(in.vips, a.WithZone("")):
			c.unconverted(src.Pos, "%s %s is one of the VIPs; it must be this host's own address", src.Key, a)
		case a.Is6() && !a.IsLinkLocalUnicast() && peers == nil:
			c.unconverted(src.Pos, "%s %s: multicast IPv6 adverts are sent from the interface's link-local address (RFC 5798 section 5.1.2.1); vipd does so", src.Key, a)
		default:
			source = a
			in.main.set("unicast_source", tomlString(a.WithZone("").String()), fmt.Sprintf("%s (%s)", src.Key, src.Pos))
		}
	}
	if peers == nil {
		return
	}
	var list []string
	minTTL, maxTTL := 255, 0
	ttlSet := false
	ws := flatWords(peers)
	seen := map[netip.Addr]bool{}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if (w.Text == "min_ttl" || w.Text == "max_ttl") && i+1 < len(ws) {
			v, err := integer(ws[i+1], 0, 255)
			i++
			if err != nil {
				c.unconverted(w.Pos, "unicast_peer %s: %v", w.Text, err)
				continue
			}
			ttlSet = true
			if w.Text == "min_ttl" {
				minTTL = min(minTTL, max(v, 1))
			} else {
				maxTTL = max(maxTTL, max(v, 1))
			}
			continue
		}
		a, err := netip.ParseAddr(w.Text)
		switch {
		case err != nil:
			c.unconverted(w.Pos, "unicast_peer: %q is not an address", w.Text)
		case a.Is6() != in.ipv6:
			c.unconverted(w.Pos, "unicast_peer %s is %s, but the instance's VIPs are %s", a, family(a.Is6()), family(in.ipv6))
		case a.Zone() != "" && a.Zone() != in.iface:
			c.unconverted(w.Pos, "unicast_peer %s: the zone is not the instance's interface %s", a, in.iface)
		case slices.Contains(in.vips, a.WithZone("")):
			c.unconverted(w.Pos, "unicast_peer %s is one of the VIPs", a)
		case a.WithZone("") == source.WithZone(""):
			c.note(w.Pos, "unicast_peer %s is unicast_src_ip, this host itself; dropped", a)
		case seen[a.WithZone("")]:
			c.note(w.Pos, "unicast_peer %s is listed twice; converted once", a)
		default:
			seen[a.WithZone("")] = true
			list = append(list, a.WithZone("").String())
		}
	}
	if len(list) == 0 {
		c.unconverted(peers.Pos, "unicast_peer lists no usable peer: the instance is converted to multicast")
		return
	}
	in.unicast = true
	in.main.set("unicast_peers", tomlStrings(list), fmt.Sprintf("unicast_peer (%s): adverts go to these hosts, and only theirs are accepted.", peers.Pos))
	if ttlSet {
		if maxTTL == 0 {
			maxTTL = 255
		}
		if minTTL > maxTTL {
			minTTL = maxTTL
		}
		in.main.set("unicast_min_ttl", tomlInt(minTTL), "min_ttl/max_ttl of unicast_peer: vipd takes one range for all peers, the widest given.")
		in.main.set("unicast_max_ttl", tomlInt(maxTTL))
	}
}
