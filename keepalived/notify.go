package keepalived

import (
	"fmt"
	"strings"
)

// notifyDef is one notify_* or notify line, of an instance or of the sync
// group it is in (kind "GROUP", name the group's).
type notifyDef struct {
	node *Node
	kind string // INSTANCE or GROUP
	name string
}

// notifyEvents maps keepalived's notify_* keywords to vipd's events.
var notifyEvents = map[string]string{"notify_master": "master", "notify_backup": "backup", "notify_fault": "fault", "notify_stop": "stop"}

// eventOrder is the order of [instance.notify]'s keys, with the state
// keepalived passes to the generic notify for each.
var eventOrder = []struct{ event, state string }{{"master", "MASTER"}, {"backup", "BACKUP"}, {"fault", "FAULT"}, {"stop", "STOP"}}

const notifyConvention = "keepalived ran notify_master, notify_backup, notify_fault and notify_stop with their own arguments only, as vipd runs these; its generic notify got four more, INSTANCE or GROUP, the name, the state and the priority, which are written out here for each state, so the script works unchanged. The priority is the configured one (keepalived passed the effective priority; a group's is 0). vipd adds VIPD_INSTANCE, VIPD_STATE, VIPD_PREVIOUS_STATE, VIPD_VIPS, VIPD_CAUSE and VIPD_REASON to the environment. Hooks run as user vipd, one at a time, each killed after timeout (default 10s); keepalived let them run."

// writeHooks builds [instance.notify] from the notify lines: one command
// per event, or, when keepalived ran several for it (notify_master and then
// notify), all of them in its order through /bin/sh.
func (c *converter) writeHooks(in *instance) {
	type cmd struct {
		argv []string
		from string
	}
	cmds := map[string][]cmd{}
	for _, d := range in.notifies {
		k := d.node
		if len(k.Args) == 0 {
			c.unconverted(k.Pos, "%s needs a script", k.Key)
			continue
		}
		argv, why, shell := scriptArgv(k.Args[0].Text)
		if why != "" {
			c.unconverted(k.Pos, "%s: %s", k.Key, why)
			continue
		}
		if shell != "" {
			c.warn(k.Pos, "%s: %s", k.Key, shell)
		}
		if len(k.Args) > 1 {
			c.note(k.Pos, "%s: user %s: vipd runs hooks as its own user, vipd; give that user what the script needs (vipd(8), SYSTEMD)", k.Key, joinWords(k.Args[1:]))
		}
		from := fmt.Sprintf("%s (%s)", k.Key, k.Pos)
		if ev, ok := notifyEvents[k.Key]; ok {
			cmds[ev] = append(cmds[ev], cmd{argv, from})
			continue
		}
		prio := fmt.Sprint(in.priority)
		if d.kind == "GROUP" {
			prio = "0"
		}
		for _, e := range eventOrder {
			if d.kind == "GROUP" && e.event == "stop" {
				continue // keepalived sends STOP to instances only
			}
			full := append(append([]string{}, argv...), d.kind, d.name, e.state, prio)
			cmds[e.event] = append(cmds[e.event], cmd{full, from})
		}
	}
	if len(cmds) == 0 {
		return
	}
	t := &table{header: "[instance.notify]", comment: []string{notifyConvention}}
	for _, e := range eventOrder {
		list := cmds[e.event]
		switch len(list) {
		case 0:
			continue
		case 1:
			t.set(e.event, tomlStrings(list[0].argv), "from "+list[0].from)
		default:
			var parts, from []string
			for _, x := range list {
				parts = append(parts, shellQuote(x.argv))
				from = append(from, x.from)
			}
			t.set(e.event, tomlStrings([]string{"/bin/sh", "-c", strings.Join(parts, "; ")}),
				"from "+strings.Join(from, ", ")+": vipd runs one command per event, so these run one after the other through /bin/sh, in keepalived's order.")
		}
	}
	in.notify = t
}

// shellQuote writes argv as one /bin/sh command, every word in single
// quotes, so that nothing in it is shell syntax.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
