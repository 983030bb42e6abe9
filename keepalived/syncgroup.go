package keepalived

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// syncGroup converts a vrrp_sync_group. keepalived keeps its members in one
// state; vipd's follow makes an instance Master exactly while its leader
// is. The first converted member leads, the others follow it; trackers of
// the group and of its members act for all in keepalived, so they move to
// the leader, the only one vipd lets have trackers.
func (c *converter) syncGroup(n *Node) {
	if len(n.Args) == 0 {
		c.unconverted(n.Pos, "vrrp_sync_group without a name")
		return
	}
	name := n.Args[0].Text
	var members []*instance
	var extra []*Node
	for _, k := range n.Block {
		switch k.Key {
		case "group":
			for _, w := range flatWords(k) {
				in := c.byName[w.Text]
				switch {
				case in == nil:
					c.unconverted(w.Pos, "vrrp_sync_group %s: no vrrp_instance %s", name, w.Text)
				case in.dropped:
					c.unconverted(w.Pos, "vrrp_sync_group %s: member %s is not converted (%s), so the group is converted without it", name, w.Text, in.why)
				case in.inGroup:
					c.unconverted(w.Pos, "vrrp_sync_group %s: %s is already in another sync group", name, w.Text)
				case slices.Contains(members, in):
				default:
					members = append(members, in)
				}
			}
		case "track_interface", "track_script", "track_file", "track_process", "track_bfd",
			"notify_master", "notify_backup", "notify_fault", "notify_stop", "notify":
			extra = append(extra, k)
		case "smtp_alert":
			c.note(k.Pos, "vrrp_sync_group %s: smtp_alert: vipd sends no mail", name)
		case "global_tracking", "sync_group_tracking_weight", "notify_priority_changes":
			c.note(k.Pos, "vrrp_sync_group %s: %s: not needed; the leader's trackers act for the whole group in vipd", name, k.Key)
		default:
			c.unconverted(k.Pos, "vrrp_sync_group %s: %s is not a keyword the converter knows", name, k.Key)
		}
	}
	if len(members) == 0 {
		c.unconverted(n.Pos, "vrrp_sync_group %s has no converted member", name)
		return
	}
	leader := members[0]
	for _, in := range members {
		in.inGroup = true
	}
	leader.main.comment = append(leader.main.comment, fmt.Sprintf("Leader of vrrp_sync_group %s (%s): the other members follow it.", name, n.Pos))
	for _, f := range members[1:] {
		var was []string
		for _, key := range []string{"priority", "preempt", "preempt_delay", "master_down_adverts"} {
			if v, ok := f.main.get(key); ok {
				was = append(was, key+" "+v)
			}
			f.main.del(key)
		}
		cm := fmt.Sprintf("vrrp_sync_group %s (%s): Master exactly while %q is, with its priority and preemption", name, n.Pos, leader.name)
		if len(was) > 0 {
			cm += fmt.Sprintf(" (its own, %s, are the leader's in vipd)", strings.Join(was, ", "))
		}
		f.main.set("follow", tomlString(leader.name), cm+".")
		for _, t := range f.tracks {
			c.moveTrack(leader, f, t)
		}
		f.tracks = nil
		if len(f.trackPos) > 0 {
			c.note(f.trackPos[0], "vrrp_instance %s: its trackers move to %s, the leader of sync group %s: in keepalived they act for the whole group, and a vipd follower has none", f.kaName, leader.name, name)
		}
	}
	for _, k := range extra {
		if strings.HasPrefix(k.Key, "track_") {
			c.track(leader, k)
			continue
		}
		leader.notifies = append(leader.notifies, notifyDef{node: k, kind: "GROUP", name: name})
	}
	for _, t := range leader.tracks {
		if w, _ := t.get("weight"); w != "0" && len(members) > 1 {
			c.warn(n.Pos, "vrrp_sync_group %s: tracker %s has weight %s: keepalived ignores non-zero weights in a sync group (unless sync_group_tracking_weight); vipd applies it to the leader %s", name, strings.Trim(must(t.get("name")), `"`), w, leader.name)
		}
	}
}

// moveTrack moves a follower's tracker to its leader, renamed if the
// leader has one of that name.
func (c *converter) moveTrack(leader, from *instance, t *table) {
	name := strings.Trim(must(t.get("name")), `"`)
	taken := map[string]bool{}
	for _, lt := range leader.tracks {
		taken[strings.Trim(must(lt.get("name")), `"`)] = true
	}
	if taken[name] {
		// The same vrrp_script on both is one tracker in keepalived too.
		for _, lt := range leader.tracks {
			if trackBody(lt) == trackBody(t) && strings.Trim(must(lt.get("name")), `"`) == name {
				return
			}
		}
	}
	t.set("name", tomlString(vipdName(name, taken)))
	t.comment = append(t.comment, "moved from "+from.name+", which follows this instance")
	leader.tracks = append(leader.tracks, t)
}

func must(s string, _ bool) string { return s }

// trackBody is what a tracker checks and how: its keys but the name.
func trackBody(t *table) string {
	var b strings.Builder
	for _, k := range t.keys {
		if k.key != "name" {
			fmt.Fprintf(&b, "%s=%s\n", k.key, k.val)
		}
	}
	return b.String()
}

// checkAcross drops what vipd refuses across instances: a second instance
// of the same virtual router (interface, VRID and family), a VIP of two
// instances.
func (c *converter) checkAcross() {
	type router struct {
		iface string
		vrid  int
		ipv6  bool
	}
	routers := map[router]*instance{}
	vips := map[netip.Addr]*instance{}
	for _, in := range c.insts {
		if in.dropped {
			continue
		}
		r := router{in.iface, in.vrid, in.ipv6}
		if first := routers[r]; first != nil {
			c.drop(in, in.pos, fmt.Sprintf("virtual_router_id %d on %s is already %s's (%s); vipd runs one %s virtual router per VRID and interface (keepalived allows a second with other unicast peers)", in.vrid, in.iface, first.kaName, first.pos, family(in.ipv6)))
			continue
		}
		routers[r] = in
		var kept []netip.Addr
		for _, a := range in.vips {
			if first := vips[a]; first != nil {
				c.unconverted(in.vipsPos, "vrrp_instance %s: VIP %s is already %s's; vipd holds a VIP in one instance", in.kaName, a, first.kaName)
				continue
			}
			vips[a] = in
			kept = append(kept, a)
		}
		if len(kept) == 0 {
			c.drop(in, in.vipsPos, "all its VIPs belong to other instances")
			continue
		}
		if len(kept) != len(in.vips) {
			in.vips = kept
			s := make([]string, len(kept))
			for i, a := range kept {
				s[i] = a.String()
			}
			in.main.set("vips", tomlStrings(s))
		}
	}
}
