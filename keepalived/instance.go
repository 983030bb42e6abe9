package keepalived

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vipd/vipd/config"
)

// instance is one converted vrrp_instance.
type instance struct {
	pos    Pos
	kaName string
	name   string
	main   *table
	tracks []*table
	garp   *table
	notify *table
	// notifies are the notify_* and notify scripts, of the instance and
	// then of its sync group, in the order keepalived runs them.
	notifies []notifyDef
	iface    string
	vrid     int
	ipv6     bool
	version  int
	priority int
	vips     []netip.Addr
	vipsPos  Pos
	unicast  bool
	inGroup  bool
	trackPos []Pos  // of the track_* blocks, for sync groups
	dropped  bool   // not converted at all
	why      string // why it was dropped
}

// instanceInfo are vrrp_instance keywords that need no counterpart: a note.
var instanceInfo = map[string]string{
	"native_ipv6":             "deprecated in keepalived too: the VIPs decide the family",
	"debug":                   "use log_level in [global]",
	"smtp_alert":              "vipd sends no mail; use a notify hook",
	"skip_check_adv_addr":     "vipd checks no advertised address list against its own",
	"check_unicast_src":       "vipd always drops unicast adverts from hosts that are not unicast peers",
	"unicast_fault_no_peer":   "a vipd instance with unicast_peers never falls back to multicast",
	"lower_prio_no_advert":    "vipd's split_brain_recovery settles two Masters itself",
	"higher_prio_send_advert": "vipd's split_brain_recovery settles two Masters itself",
	"garp_lower_prio_delay":   "vipd's split_brain_recovery re-announces after two Masters",
	"garp_lower_prio_repeat":  "vipd's split_brain_recovery re-announces after two Masters",
	"garp_extra_if":           "vipd announces on the instance's interface only",
	"kernel_rx_buf_size":      "vipd sizes its sockets itself",
	"linkbeat_use_polling":    "vipd follows links through netlink",
	"notify_priority_changes": "vipd has no notify FIFO",
	"timer_expired_backup":    "vipd's split_brain_recovery settles two Masters itself",
	"promote_secondaries":     "vipd adds each VIP as a host address (/32, /128), which no other address depends on",
	"old_unicast_checksum":    "vipd accepts both VRRPv3 checksum forms",
	"accept":                  "vipd always accepts traffic to its VIPs",
}

// vrrpInstance converts one vrrp_instance.
func (c *converter) vrrpInstance(n *Node) {
	if len(n.Args) == 0 {
		c.unconverted(n.Pos, "vrrp_instance without a name")
		return
	}
	in := &instance{pos: n.Pos, kaName: n.Args[0].Text}
	c.insts = append(c.insts, in)
	if c.byName[in.kaName] != nil {
		in.dropped = true
		c.unconverted(n.Pos, "vrrp_instance %s is defined twice", in.kaName)
		return
	}
	c.byName[in.kaName] = in
	in.name = vipdName(in.kaName, c.names)
	in.main = &table{header: "[[instance]]", comment: []string{fmt.Sprintf("vrrp_instance %s (%s)", in.kaName, n.Pos)}}
	var nameNote []string
	if in.name != in.kaName {
		nameNote = []string{fmt.Sprintf("NOTE: vipd names allow A-Z, a-z, 0-9, '_', '.', '-' and 32 characters: %q became %q.", in.kaName, in.name)}
		c.note(n.Pos, "vrrp_instance %q is named %q in vipd", in.kaName, in.name)
	}
	in.main.set("name", tomlString(in.name), nameNote...)

	var (
		state, prio, advert, version, preemptDelay, src, downTimer *Node
		nopreempt, auth, vipBlock, peers, checksumV2               *Node
		garp                                                       garpSettings
		tracks                                                     []*Node
	)
	for _, k := range n.Block {
		switch k.Key {
		case "state":
			state = k
		case "interface":
			if len(k.Args) > 0 {
				in.iface = k.Args[0].Text
			}
		case "virtual_router_id":
			if len(k.Args) > 0 {
				v, err := integer(k.Args[0], 1, 255)
				if err != nil {
					c.unconverted(k.Pos, "virtual_router_id: %v", err)
				}
				in.vrid = v
			}
		case "priority":
			prio = k
		case "advert_int":
			advert = k
		case "version":
			version = k
		case "nopreempt", "no_preempt":
			nopreempt = k
		case "preempt":
			// keepalived's default, kept for backwards compatibility.
		case "preempt_delay":
			preemptDelay = k
		case "unicast_src_ip", "mcast_src_ip":
			src = k
		case "unicast_peer":
			peers = k
		case "authentication":
			auth = k
		case "virtual_ipaddress":
			vipBlock = k
		case "down_timer_adverts":
			downTimer = k
		case "v3_checksum_as_v2":
			checksumV2 = k
		case "track_interface", "track_script", "track_file", "track_process", "track_bfd":
			tracks = append(tracks, k)
			in.trackPos = append(in.trackPos, k.Pos)
		case "notify_master", "notify_backup", "notify_fault", "notify_stop", "notify":
			in.notifies = append(in.notifies, notifyDef{node: k, kind: "INSTANCE", name: in.kaName})
		case "garp_master_delay", "garp_master_repeat", "garp_master_refresh", "garp_master_refresh_repeat":
			garp.read(c, k, k.Key)
		default:
			c.instanceKeyword(in, k)
		}
	}

	if in.iface == "" {
		c.drop(in, n.Pos, "no interface: vipd needs the interface that carries the VIPs (keepalived allows leaving it out with unicast peers and a dev on every VIP)")
		return
	}
	if in.vrid == 0 {
		c.drop(in, n.Pos, "no valid virtual_router_id")
		return
	}
	if vipBlock == nil {
		c.drop(in, n.Pos, "no virtual_ipaddress: a vipd instance holds at least one VIP")
		return
	}
	vips, vipComments := c.vips(in, vipBlock)
	if len(vips) == 0 {
		c.drop(in, vipBlock.Pos, "none of its virtual_ipaddress entries could be converted")
		return
	}
	if msg := ifnameProblem(in.iface); msg != "" {
		c.drop(in, n.Pos, msg)
		return
	}
	in.main.set("interface", tomlString(in.iface))
	in.main.set("vrid", tomlInt(in.vrid))

	c.instanceState(in, state, prio)
	c.instanceVersion(in, version)
	c.advertInterval(in, advert)
	in.main.set("vips", tomlStrings(vips), vipComments...)

	if nopreempt != nil {
		cm := []string{"nopreempt: a Backup never takes over from a live Master, whatever their priorities."}
		if state != nil && len(state.Args) > 0 && strings.EqualFold(state.Args[0].Text, "MASTER") {
			cm = append(cm, "NOTE: keepalived ignores nopreempt with state MASTER (it takes over at start); vipd starts as Backup, so here nopreempt always holds.")
			c.note(nopreempt.Pos, "nopreempt with state MASTER: keepalived preempts at start all the same; vipd does not")
		}
		in.main.set("preempt", "false", cm...)
		if preemptDelay != nil {
			c.note(preemptDelay.Pos, "preempt_delay is meaningless with nopreempt; dropped")
		}
	} else if preemptDelay != nil && len(preemptDelay.Args) > 0 {
		d, err := seconds(preemptDelay.Args[0])
		switch {
		case err != nil:
			c.unconverted(preemptDelay.Pos, "preempt_delay: %v", err)
		case d > time.Hour:
			c.unconverted(preemptDelay.Pos, "preempt_delay %s: vipd allows at most 1h", config.FormatDuration(d))
		default:
			in.main.set("preempt", "true")
			in.main.set("preempt_delay", tomlString(config.FormatDuration(d.Round(time.Millisecond))),
				"NOTE: keepalived delays a preemption at start or on hearing a lower-priority Master; vipd waits until this host has outranked the Master for this long, continuously, at any time.")
		}
	}

	c.unicastPeers(in, peers, src)
	c.authentication(in, auth)
	c.addressOwner(in)

	if downTimer != nil && len(downTimer.Args) > 0 {
		if v, err := integer(downTimer.Args[0], 3, 10); err == nil {
			in.main.set("master_down_adverts", tomlInt(v), "down_timer_adverts "+downTimer.Args[0].Text)
		} else {
			c.unconverted(downTimer.Pos, "down_timer_adverts: %v (vipd's master_down_adverts takes 3..10)", err)
		}
	}
	if checksumV2 != nil {
		if on, err := boolArg(checksumV2); err != nil {
			c.unconverted(checksumV2.Pos, "v3_checksum_as_v2: %v", err)
		} else if on && !in.ipv6 && in.version == 3 {
			in.main.set("checksum", tomlString("rfc9568"), "v3_checksum_as_v2: the VRRPv3 checksum without the IPv4 pseudo-header")
		}
	}
	c.defaults.garp.over(garp).apply(c, in, n.Pos)
	for _, t := range tracks {
		c.track(in, t)
	}
}

// drop records that an instance cannot be converted.
func (c *converter) drop(in *instance, at Pos, why string) {
	in.dropped, in.why = true, why
	c.unconverted(at, "vrrp_instance %s: %s", in.kaName, why)
}

// instanceKeyword handles the vrrp_instance keywords that set nothing.
func (c *converter) instanceKeyword(in *instance, k *Node) {
	what := strings.TrimSpace(k.Key + " " + joinWords(k.Args))
	switch k.Key {
	case "virtual_ipaddress_excluded":
		c.unconverted(k.Pos, "virtual_ipaddress_excluded: vipd advertises every VIP it holds; list them in another instance, or in vips (which changes the adverts the keepalived peers check)")
	case "virtual_routes", "virtual_rules":
		c.unconverted(k.Pos, "%s: vipd adds no routes or rules with the VIPs; add them with a notify hook, or from the host's network configuration", k.Key)
	case "no_virtual_ipaddress":
		c.unconverted(k.Pos, "no_virtual_ipaddress: a vipd instance holds at least one VIP")
	case "auth_hmac":
		c.unconverted(k.Pos, "auth_hmac: keepalived's HMAC extension is not supported by vipd")
	case "mcast_dst_ip":
		c.unconverted(k.Pos, "mcast_dst_ip: vipd sends adverts to the standard VRRP group (224.0.0.18, ff02::12) only")
	case "vrf":
		c.unconverted(k.Pos, "vrf: vipd does not run instances in a VRF")
	case "use_ipvlan":
		c.unconverted(k.Pos, "use_ipvlan: vipd adds the VIPs to the instance's interface and creates no ipvlan")
	case "use_vmac", "use_vmac_addr", "vmac_xmit_base":
		c.warn(k.Pos, "%s: vipd uses no virtual MAC: the VIPs answer with the interface's own MAC, and every move is announced with gratuitous ARP (IPv6: Neighbor Advertisements)", k.Key)
	case "no_accept":
		c.warn(k.Pos, "no_accept: vipd always accepts traffic addressed to its VIPs")
	case "strict_mode":
		c.warn(k.Pos, "strict_mode: vipd has no strict mode")
	case "dont_track_primary":
		c.warn(k.Pos, "dont_track_primary: vipd puts an instance in Fault while its interface is down; it cannot ignore that")
	case "track_src_ip":
		c.warn(k.Pos, "track_src_ip: vipd sends from unicast_source and does not watch it")
	case "unicast_ttl":
		c.warn(k.Pos, "unicast_ttl: vipd always sends with TTL 255 (peers behind routers: unicast_min_ttl)")
	case "notify_master_rx_lower_pri":
		c.unconverted(k.Pos, "notify_master_rx_lower_pri: vipd has no hook for a lower-priority advert; its split_brain_recovery re-announces the VIPs itself")
	case "notify_deleted":
		c.warn(k.Pos, "notify_deleted: vipd runs the stop hook when a reload removes an instance")
	case "sync_group_tracking_weight":
		c.note(k.Pos, "sync_group_tracking_weight: see the vrrp_sync_group")
	default:
		if why, ok := instanceInfo[k.Key]; ok {
			c.note(k.Pos, "%s: %s", k.Key, why)
			return
		}
		c.unconverted(k.Pos, "%s: not a vrrp_instance keyword the converter knows", what)
	}
}

// instanceState converts state and priority. keepalived's state is a start
// hint; without a priority, state MASTER makes keepalived the address owner
// (priority 255), which vipd never is.
func (c *converter) instanceState(in *instance, state, prio *Node) {
	master := false
	if state != nil && len(state.Args) > 0 {
		s := strings.ToUpper(state.Args[0].Text)
		switch s {
		case "MASTER", "BACKUP":
			master = s == "MASTER"
			in.main.commentNext(fmt.Sprintf("state %s (%s): only a start hint in keepalived; vipd starts every instance as Backup and the election (priority, then the higher address) decides who is Master.", s, state.Pos))
		default:
			c.warn(state.Pos, "state %s: keepalived knows MASTER and BACKUP; dropped", state.Args[0].Text)
		}
	}
	in.priority = 100
	ownerWhy := ""
	switch {
	case prio != nil && len(prio.Args) > 0:
		p, err := integer(prio.Args[0], 1, 255)
		if err != nil {
			c.unconverted(prio.Pos, "priority: %v; vipd's default, 100, is used", err)
			break
		}
		in.priority = p
		if p == 255 {
			ownerWhy = "priority 255"
		}
	case master:
		in.priority = 255
		ownerWhy = "state MASTER without a priority (keepalived then gives it 255, the address owner's)"
	}
	if ownerWhy == "" {
		in.main.set("priority", tomlInt(in.priority))
		return
	}
	at := in.pos
	if prio != nil {
		at = prio.Pos
	} else if state != nil {
		at = state.Pos
	}
	in.priority = 254
	in.main.set("priority", tomlInt(254), fmt.Sprintf(
		"NOTE: %s: vipd adds its VIPs and never owns them, so it refuses 255; 254 is the highest it takes. While this node still runs keepalived, the vipd nodes must accept its priority-255 adverts: give them address_owner = this node's address (vipd import-keepalived --address-owner ADDR), or list it in their unicast_peers.", ownerWhy))
	c.note(at, "%s: converted to priority 254 (vipd refuses 255); while this node still runs keepalived, the vipd nodes need address_owner = its address", ownerWhy)
}

// instanceVersion sets the VRRP version: keepalived's default is global_defs
// vrrp_version, itself 2 by default; IPv6 is always 3.
func (c *converter) instanceVersion(in *instance, version *Node) {
	v, from := c.defaults.version, "keepalived's default vrrp_version"
	if c.defaults.versionPos.File != "" {
		from = "vrrp_version in global_defs (" + c.defaults.versionPos.String() + ")"
	}
	if version != nil && len(version.Args) > 0 {
		n, err := integer(version.Args[0], 2, 3)
		if err != nil {
			c.unconverted(version.Pos, "version: %v", err)
		} else {
			v, from = n, "version "+version.Args[0].Text
		}
	}
	if in.ipv6 && v == 2 {
		if version != nil {
			c.note(version.Pos, "version 2 on an IPv6 instance: keepalived runs VRRPv3 for IPv6, as vipd does")
		}
		v, from = 3, "IPv6 (keepalived runs VRRPv3 for IPv6 whatever vrrp_version says)"
	}
	in.version = v
	in.main.set("version", tomlInt(v), "VRRP version "+tomlInt(v)+": "+from+".")
	if v == 2 {
		in.main.set("accept_versions", "[2, 3]", "Adverts of both versions are accepted, so that the group can later move to VRRPv3 one node at a time, with one reload per node, without two Masters.")
	}
}

// advertInterval converts advert_int, seconds: VRRPv2 carries whole seconds
// (1..255), VRRPv3 centiseconds (10ms..40.95s); keepalived rounds to those.
func (c *converter) advertInterval(in *instance, advert *Node) {
	d := time.Second
	if advert != nil && len(advert.Args) > 0 {
		v, err := seconds(advert.Args[0])
		if err != nil {
			c.unconverted(advert.Pos, "advert_int: %v; vipd's default 1s is used", err)
		} else {
			d = v
		}
	}
	unit, lo, hi := 10*time.Millisecond, 10*time.Millisecond, 4095*10*time.Millisecond
	if in.version == 2 {
		unit, lo, hi = time.Second, time.Second, 255*time.Second
	}
	r := min(max(d.Round(unit), lo), hi)
	var cm []string
	if r != d && advert != nil {
		msg := fmt.Sprintf("advert_int %s is not a whole number of %s in VRRPv%d: keepalived uses %s, and so does this file", advert.Args[0].Text, map[int]string{2: "seconds", 3: "centiseconds"}[in.version], in.version, config.FormatDuration(r))
		c.warn(advert.Pos, "%s", msg)
		cm = append(cm, "WARNING: "+msg+".")
	}
	in.main.set("advert_interval", tomlString(config.FormatDuration(r)), cm...)
}

// authentication converts VRRPv2 simple-text authentication.
func (c *converter) authentication(in *instance, auth *Node) {
	if auth == nil {
		return
	}
	typ, pass := "", ""
	var passPos Pos
	for _, k := range auth.Block {
		if len(k.Args) == 0 {
			continue
		}
		switch k.Key {
		case "auth_type":
			typ = strings.ToUpper(k.Args[0].Text)
		case "auth_pass":
			pass, passPos = k.Args[0].Text, k.Pos
		}
	}
	switch {
	case typ == "AH":
		c.unconverted(auth.Pos, "authentication AH: IPsec AH authentication is not supported by vipd (RFC 3768 removed it from VRRPv2)")
	case typ != "PASS":
		c.unconverted(auth.Pos, "authentication: auth_type %q is neither PASS nor AH", typ)
	case in.version != 2:
		c.note(auth.Pos, "authentication with VRRPv3: keepalived ignores it (VRRPv3 has none), and so does this file")
	case pass == "":
		c.unconverted(auth.Pos, "authentication PASS without auth_pass")
	default:
		cm := []string{fmt.Sprintf("authentication PASS (%s): VRRPv2 simple-text authentication (RFC 2338); it keeps out misconfigured routers, not attackers.", auth.Pos)}
		if !utf8.ValidString(pass) {
			c.unconverted(passPos, "auth_pass is not valid UTF-8, which a TOML string cannot hold")
			return
		}
		if len(pass) > 8 {
			pass = pass[:8]
			if !utf8.ValidString(pass) {
				c.unconverted(passPos, "auth_pass: keepalived uses its first 8 bytes, which end inside a character; a TOML string cannot hold them")
				return
			}
			cm = append(cm, "NOTE: keepalived uses only the first 8 characters of auth_pass; so does this file.")
			c.note(passPos, "auth_pass is longer than 8 bytes: keepalived uses the first 8, and so does the converted auth_pass")
		}
		in.main.set("auth_pass", tomlString(pass), cm...)
	}
}

// addressOwner writes address_owner from --address-owner, or suggests it for
// a multicast instance.
func (c *converter) addressOwner(in *instance) {
	for _, a := range c.opts.AddressOwners {
		if a.Is6() != in.ipv6 {
			continue
		}
		if src, ok := in.main.get("unicast_source"); ok && src == tomlString(a.String()) || slices.Contains(in.vips, a) {
			// The owner's own config: it needs no address_owner.
			c.note(in.pos, "vrrp_instance %s: --address-owner %s is this node itself (its unicast_src_ip or a VIP); no address_owner written", in.kaName, a)
			return
		}
		in.main.set("address_owner", tomlString(a.String()), "The keepalived address owner (priority 255) whose adverts this instance accepts while it still runs.")
		return
	}
	if !in.unicast {
		in.main.suggest("address_owner", tomlString(map[bool]string{false: "192.0.2.1", true: "2001:db8::1"}[in.ipv6]),
			"If a node of this group still runs keepalived as address owner (state MASTER without a priority, or priority 255), vipd ignores its priority-255 adverts unless address_owner names it: set its address here (or convert with --address-owner ADDR).")
	}
}

// ifnameProblem applies the kernel's rules for interface names, as vipd
// check does.
func ifnameProblem(s string) string {
	switch {
	case len(s) > 15:
		return fmt.Sprintf("interface %q is longer than 15 characters, the Linux limit", s)
	case s == "." || s == "..", strings.ContainsAny(s, "/: \t\n\v\f\r"):
		return fmt.Sprintf("interface %q is not a valid interface name", s)
	}
	return ""
}
