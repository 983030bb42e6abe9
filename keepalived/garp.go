package keepalived

import (
	"fmt"
	"strings"
	"time"

	"github.com/vipd/vipd/config"
)

// garpSettings are keepalived's gratuitous ARP settings, from global_defs
// (vrrp_garp_*) or an instance (garp_*); nil is not set.
type garpSettings struct {
	delay, refresh, interval *time.Duration
	repeat, refreshRepeat    *int
	min                      bool // vrrp_min_garp: one GARP, no second burst
	from                     []string
}

// keepalived's defaults: garp_master_repeat 5, garp_master_delay 5s,
// vrrp_garp_interval 0 (a burst goes out at once).
const (
	kaGARPRepeat = 5
	kaGARPDelay  = 5 * time.Second
)

// vipd's limits on [instance.garp].
const (
	minGARPInterval = 10 * time.Millisecond
	maxGARPInterval = time.Minute
	maxGARPRepeat   = 100
)

// read takes one setting; key is without the vrrp_ prefix.
func (g *garpSettings) read(c *converter, k *Node, key string) {
	g.from = append(g.from, fmt.Sprintf("%s %s (%s)", k.Key, joinWords(k.Args), k.Pos))
	if key == "min_garp" {
		on, err := boolArg(k)
		if err != nil {
			c.unconverted(k.Pos, "%s: %v", k.Key, err)
		}
		g.min = on
		return
	}
	if len(k.Args) == 0 {
		c.unconverted(k.Pos, "%s needs a value", k.Key)
		return
	}
	switch key {
	case "garp_master_delay", "garp_master_refresh", "garp_interval":
		d, err := seconds(k.Args[0])
		if err != nil {
			c.unconverted(k.Pos, "%s: %v", k.Key, err)
			return
		}
		switch key {
		case "garp_master_delay":
			g.delay = &d
		case "garp_master_refresh":
			g.refresh = &d
		default:
			g.interval = &d
		}
	case "garp_master_repeat", "garp_master_refresh_repeat":
		n, err := integer(k.Args[0], 1, 255)
		if err != nil {
			c.unconverted(k.Pos, "%s: %v", k.Key, err)
			return
		}
		if key == "garp_master_repeat" {
			g.repeat = &n
		} else {
			g.refreshRepeat = &n
		}
	}
}

// over returns g with what o sets replacing it: an instance's settings
// over global_defs'.
func (g garpSettings) over(o garpSettings) garpSettings {
	if o.delay != nil {
		g.delay = o.delay
	}
	if o.refresh != nil {
		g.refresh = o.refresh
	}
	if o.interval != nil {
		g.interval = o.interval
	}
	if o.repeat != nil {
		g.repeat = o.repeat
	}
	if o.refreshRepeat != nil {
		g.refreshRepeat = o.refreshRepeat
	}
	g.min = g.min || o.min
	g.from = append(append([]string{}, g.from...), o.from...)
	return g
}

// apply writes [instance.garp]. keepalived sends a burst of repeat GARPs
// (interval apart) on becoming Master and a second burst delay later; vipd
// sends repeat announcements at one interval. The closest vipd settings
// send as many, spread evenly over the same span.
func (g garpSettings) apply(c *converter, in *instance, at Pos) {
	if len(g.from) == 0 {
		return
	}
	repeat, delay, gap := kaGARPRepeat, kaGARPDelay, time.Duration(0)
	if g.repeat != nil {
		repeat = *g.repeat
	}
	if g.delay != nil {
		delay = *g.delay
	}
	if g.interval != nil {
		gap = *g.interval
	}
	if g.min {
		repeat, delay = 1, 0
	}
	t := &table{header: "[instance.garp]", comment: []string{"from " + strings.Join(g.from, ", ")}}
	count, span := repeat, time.Duration(repeat-1)*gap
	if delay > 0 {
		count, span = 2*repeat, delay+time.Duration(repeat-1)*gap
	}
	if count > maxGARPRepeat {
		c.warn(at, "keepalived sends %d gratuitous ARPs after a takeover; vipd sends at most %d", count, maxGARPRepeat)
		count = maxGARPRepeat
	}
	why := fmt.Sprintf("NOTE: keepalived sends %d gratuitous ARP(s) at once on becoming Master", repeat)
	if gap > 0 {
		why = fmt.Sprintf("NOTE: keepalived sends %d gratuitous ARP(s) %s apart on becoming Master", repeat, config.FormatDuration(gap))
	}
	if delay > 0 {
		why += fmt.Sprintf(" and as many again %s later", config.FormatDuration(delay))
	}
	t.set("repeat", tomlInt(count), why+"; vipd sends its repeats evenly spaced, as many over the same span.")
	if count > 1 {
		iv := (span / time.Duration(count-1)).Round(time.Millisecond)
		iv = min(max(iv, minGARPInterval), maxGARPInterval)
		t.set("interval", tomlString(config.FormatDuration(iv)))
	}
	if g.refresh != nil && *g.refresh > 0 {
		r := *g.refresh
		if r < time.Second {
			c.warn(at, "garp_master_refresh %s: vipd refreshes at most once a second", config.FormatDuration(r))
			r = time.Second
		}
		t.set("refresh", tomlString(config.FormatDuration(r.Round(time.Millisecond))))
		if g.refreshRepeat != nil && *g.refreshRepeat > 1 {
			c.note(at, "garp_master_refresh_repeat %d: vipd sends one announcement per refresh", *g.refreshRepeat)
		}
	}
	in.garp = t
}
