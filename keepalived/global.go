package keepalived

import (
	"strings"
)

// globalInfo are global_defs keywords that only concern keepalived's own
// process, mail or LVS: nothing a VIP depends on, so a note, not a failure.
var globalInfo = map[string]string{
	"notification_email":            "vipd sends no mail; use a notify hook or the metrics (vipd_instance_state) for alerts",
	"notification_email_from":       "vipd sends no mail; use a notify hook or the metrics for alerts",
	"smtp_server":                   "vipd sends no mail",
	"smtp_connect_timeout":          "vipd sends no mail",
	"smtp_helo_name":                "vipd sends no mail",
	"smtp_alert":                    "vipd sends no mail",
	"smtp_alert_vrrp":               "vipd sends no mail",
	"smtp_alert_checker":            "vipd sends no mail",
	"email_faults":                  "vipd sends no mail",
	"enable_script_security":        "vipd runs trackers and hooks as its own user, vipd, never as root (vipd(8), SYSTEMD)",
	"script_user":                   "vipd runs trackers and hooks as its own user, vipd (vipd(8), SYSTEMD); give that user what the scripts need",
	"vrrp_skip_check_adv_addr":      "vipd checks no advertised address list against its own",
	"vrrp_check_unicast_src":        "vipd always drops unicast adverts from hosts that are not unicast peers",
	"vrrp_iptables":                 "vipd adds no firewall rules",
	"vrrp_ipsets":                   "vipd adds no firewall rules",
	"vrrp_nftables":                 "vipd adds no firewall rules",
	"vrrp_lower_prio_no_advert":     "vipd's split_brain_recovery settles two Masters itself",
	"vrrp_higher_prio_send_advert":  "vipd's split_brain_recovery settles two Masters itself",
	"vrrp_priority":                 "process niceness: leave it to the systemd unit (Nice=)",
	"checker_priority":              "keepalived's LVS checker process; not vipd's",
	"bfd_priority":                  "keepalived's BFD process; not vipd's",
	"checker_no_swap":               "keepalived's LVS checker process; not vipd's",
	"checker_rt_priority":           "keepalived's LVS checker process; not vipd's",
	"bfd_no_swap":                   "keepalived's BFD process; not vipd's",
	"bfd_rt_priority":               "keepalived's BFD process; not vipd's",
	"vrrp_rlimit_rtime":             "vipd sets no RLIMIT_RTTIME",
	"max_auto_priority":             "see realtime_priority in vipd.toml(5)",
	"dynamic_interfaces":            "vipd waits for an instance's interface to appear",
	"vrrp_netlink_cmd_rcv_bufs":     "vipd sizes its netlink sockets itself",
	"vrrp_netlink_monitor_rcv_bufs": "vipd sizes its netlink sockets itself",
	"vrrp_rx_bufs_policy":           "vipd sizes its sockets itself",
	"vrrp_rx_bufs_multiplier":       "vipd sizes its sockets itself",
	"vrrp_startup_delay":            "vipd starts every instance as Backup and waits a Master_Down_Interval before it claims anything",
	"lvs_id":                        "belongs to LVS",
	"lvs_flush":                     "belongs to LVS",
	"lvs_flush_onstop":              "belongs to LVS",
	"lvs_timeouts":                  "belongs to LVS",
	"lvs_sync_daemon":               "belongs to LVS",
	"checker_process_name":          "keepalived's process names",
	"vrrp_process_name":             "keepalived's process names",
	"bfd_process_name":              "keepalived's process names",
	"process_names":                 "keepalived's process names",
	"process_name":                  "keepalived's process names",
	"no_email_faults":               "vipd sends no mail",
	"vrrp_garp_lower_prio_delay":    "vipd's split_brain_recovery re-announces after two Masters",
	"vrrp_garp_lower_prio_repeat":   "vipd's split_brain_recovery re-announces after two Masters",
	"vrrp_garp_extra_if":            "vipd announces on the instance's interface only",
	"vrrp_gna_interval":             "vipd paces unsolicited Neighbor Advertisements as its gratuitous ARPs, by [instance.garp] interval",
	"default_interface":             "every vipd instance names its interface",
	"instance":                      "keepalived's instance name (for its PID files)",
	"use_pid_dir":                   "keepalived's PID files",
	"script_security":               "vipd runs trackers and hooks as its own user, vipd",
}

// globalDefs converts global_defs into [global] and the instances'
// defaults.
func (c *converter) globalDefs(n *Node) {
	if c.global == nil {
		c.global = &table{header: "[global]"}
	}
	g := c.global
	g.comment = append(g.comment, "global_defs ("+n.Pos.String()+")")
	for _, k := range n.Block {
		arg := func() (Word, bool) {
			if len(k.Args) == 0 {
				c.unconverted(k.Pos, "%s needs a value", k.Key)
				return Word{}, false
			}
			return k.Args[0], true
		}
		switch k.Key {
		case "router_id":
			if w, ok := arg(); ok {
				g.set("node_name", tomlString(w.Text), "router_id "+w.Text+": how status and logs name this host")
			}
		case "vrrp_version":
			if w, ok := arg(); ok {
				v, err := integer(w, 2, 3)
				if err != nil {
					c.unconverted(k.Pos, "vrrp_version: %v", err)
					continue
				}
				c.defaults.version, c.defaults.versionPos = v, k.Pos
			}
		case "vrrp_rt_priority":
			if w, ok := arg(); ok {
				if v, err := integer(w, 1, 99); err == nil {
					g.set("realtime_priority", tomlInt(v), "vrrp_rt_priority "+w.Text)
				} else {
					c.unconverted(k.Pos, "vrrp_rt_priority: %v", err)
				}
			}
		case "vrrp_no_swap":
			g.set("lock_memory", "true", "vrrp_no_swap")
		case "vrrp_garp_master_delay", "vrrp_garp_master_repeat", "vrrp_garp_master_refresh",
			"vrrp_garp_master_refresh_repeat", "vrrp_garp_interval", "vrrp_min_garp":
			c.defaults.garp.read(c, k, strings.TrimPrefix(k.Key, "vrrp_"))
		case "vrrp_strict":
			c.warn(k.Pos, "vrrp_strict: vipd has no strict mode; it accepts traffic to its VIPs (keepalived's accept) whatever its priority")
		case "vrrp_mcast_group4", "vrrp_mcast_group6":
			c.unconverted(k.Pos, "%s: vipd sends adverts to the standard VRRP group (224.0.0.18, ff02::12) only", k.Key)
		case "notify_fifo", "notify_fifo_script", "vrrp_notify_fifo", "vrrp_notify_fifo_script":
			c.unconverted(k.Pos, "%s: vipd has no notify FIFO; use [instance.notify] hooks, which get the state in VIPD_STATE", k.Key)
		case "vrrp_v3_checksum_as_v2":
			c.warn(k.Pos, "vrrp_v3_checksum_as_v2: set checksum = \"rfc9568\" on each IPv4 instance that should send that form; vipd accepts both")
		default:
			if why, ok := globalInfo[k.Key]; ok {
				c.note(k.Pos, "%s: %s", k.Key, why)
			} else {
				c.warn(k.Pos, "%s: a global_defs keyword vipd has no equivalent for; dropped", k.Key)
			}
		}
	}
}
