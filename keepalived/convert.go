package keepalived

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options adjust the conversion.
type Options struct {
	// AddressOwners are hosts (at most one per address family) whose
	// priority-255 adverts the converted instances accept: keepalived
	// routers that are address owners (state MASTER without a priority,
	// or priority 255) and keep running beside vipd for a while. Each is
	// written as address_owner into every instance of its family.
	AddressOwners []netip.Addr
}

// Result is a conversion: the vipd.toml and what the operator should know.
type Result struct {
	TOML []byte
	// Items, in the order of the keepalived.conf lines they concern.
	Items []Item
	// Instances is how many [[instance]] tables TOML has; with none it is
	// no usable config.
	Instances int
}

// Unconverted reports whether anything was not converted.
func (r *Result) Unconverted() bool {
	return slices.ContainsFunc(r.Items, func(i Item) bool { return i.Kind == Unconverted })
}

// converter holds one conversion's state.
type converter struct {
	opts     Options
	items    []Item
	global   *table
	defaults defaults
	scripts  map[string]*vrrpScript
	files    map[string]*Node // track_file blocks by name
	insts    []*instance
	byName   map[string]*instance // by keepalived name
	names    map[string]bool      // vipd names taken
}

// defaults are what global_defs sets for every instance.
type defaults struct {
	version    int
	versionPos Pos
	garp       garpSettings
}

// Convert converts a parsed keepalived.conf.
func Convert(cfg *Config, opts Options) *Result {
	c := &converter{
		opts:     opts,
		defaults: defaults{version: 2},
		scripts:  map[string]*vrrpScript{},
		files:    map[string]*Node{},
		byName:   map[string]*instance{},
		names:    map[string]bool{},
	}
	c.items = append(c.items, cfg.Skipped...)
	// Definitions first: an instance may use a vrrp_script defined after it,
	// and global_defs sets the instances' defaults wherever it is.
	for _, n := range cfg.Nodes {
		switch n.Key {
		case "global_defs":
			c.globalDefs(n)
		case "vrrp_script":
			c.vrrpScript(n)
		case "track_file", "vrrp_track_file":
			if len(n.Args) > 0 {
				c.files[n.Args[0].Text] = n
			}
		}
	}
	var groups []*Node
	for _, n := range cfg.Nodes {
		switch n.Key {
		case "global_defs", "vrrp_script", "track_file", "vrrp_track_file":
		case "vrrp_instance":
			c.vrrpInstance(n)
		case "vrrp_sync_group":
			groups = append(groups, n)
		default:
			c.topLevel(n)
		}
	}
	c.checkAcross()
	for _, g := range groups {
		c.syncGroup(g)
	}
	for _, in := range c.insts {
		if !in.dropped {
			c.writeHooks(in)
		}
	}
	for _, s := range c.scripts {
		if !s.used {
			c.note(s.node.Pos, "vrrp_script %s is tracked by no vrrp_instance: keepalived does not run it either", s.name)
		}
	}
	slices.SortStableFunc(c.items, func(a, b Item) int {
		if a.Pos.File != b.Pos.File {
			return fileOrder(cfg.Files, a.Pos.File) - fileOrder(cfg.Files, b.Pos.File)
		}
		return a.Pos.Line - b.Pos.Line
	})
	res := &Result{Items: c.items}
	res.TOML, res.Instances = c.render(cfg)
	return res
}

func fileOrder(files []string, f string) int {
	if i := slices.Index(files, f); i >= 0 {
		return i
	}
	return len(files)
}

// topLevel handles the blocks that are neither VRRP nor global_defs.
func (c *converter) topLevel(n *Node) {
	what := strings.TrimSpace(n.Key + " " + joinWords(n.Args))
	switch n.Key {
	case "virtual_server", "virtual_server_group", "real_server":
		c.unconverted(n.Pos, "%s: belongs to LVS (IPVS load balancing), not to vipd; keep keepalived's checker (keepalived --check) or another load balancer for it", what)
	case "static_ipaddress", "static_routes", "static_rules":
		c.unconverted(n.Pos, "%s: vipd does not add static addresses, routes or rules at start; configure them with the host's network configuration", n.Key)
	case "vrrp_track_process":
		c.note(n.Pos, "%s is used only through track_process, which is reported where an instance uses it", what)
	case "bfd_instance":
		c.note(n.Pos, "%s is used only through track_bfd, which is reported where an instance uses it", what)
	case "garp_group":
		c.warn(n.Pos, "garp_group (limits on gratuitous ARP rates per interface) has no vipd equivalent; vipd paces its own announcements with [instance.garp]")
	case "linkbeat_interfaces":
		c.note(n.Pos, "linkbeat_interfaces: vipd follows links through netlink")
	case "net_namespace", "net_namespace_ipvs", "instance", "use_pid_dir", "child_wait_time", "namespace_with_ipsets":
		c.warn(n.Pos, "%s: a keepalived process setting; vipd runs in the namespace it is started in (its systemd unit)", what)
	default:
		c.unconverted(n.Pos, "%s: not a keepalived keyword the converter knows at the top level", what)
	}
}

func (c *converter) add(kind Kind, at Pos, format string, args ...any) {
	c.items = append(c.items, Item{Pos: at, Kind: kind, Message: fmt.Sprintf(format, args...)})
}

func (c *converter) note(at Pos, format string, args ...any) { c.add(Note, at, format, args...) }
func (c *converter) warn(at Pos, format string, args ...any) { c.add(Warning, at, format, args...) }
func (c *converter) unconverted(at Pos, format string, args ...any) {
	c.add(Unconverted, at, format, args...)
}

// vipdName turns a keepalived name into one vipd accepts (letters, digits,
// '_', '.', '-', at most 32) and unique among those in taken.
func vipdName(s string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" {
		name = "unnamed"
	}
	if len(name) > 32 {
		name = name[:32]
	}
	base := name
	for i := 2; taken[name]; i++ {
		suffix := "-" + strconv.Itoa(i)
		name = base[:min(len(base), 32-len(suffix))] + suffix
	}
	taken[name] = true
	return name
}

// seconds reads a keepalived timer: seconds, possibly fractional.
func seconds(w Word) (time.Duration, error) {
	f, err := strconv.ParseFloat(w.Text, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e6 {
		return 0, fmt.Errorf("%q is not a number of seconds", w.Text)
	}
	return time.Duration(math.Round(f*1e6)) * time.Microsecond, nil
}

// integer reads a whole number in lo..hi.
func integer(w Word, lo, hi int) (int, error) {
	n, err := strconv.Atoi(w.Text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", w.Text)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is out of range %d..%d", n, lo, hi)
	}
	return n, nil
}

// boolArg reads keepalived's optional <BOOL> after a keyword: none is true.
func boolArg(n *Node) (bool, error) {
	if len(n.Args) == 0 {
		return true, nil
	}
	switch strings.ToLower(n.Args[0].Text) {
	case "on", "true", "yes":
		return true, nil
	case "off", "false", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not one of on, off, true, false, yes, no", n.Args[0].Text)
}

func joinWords(ws []Word) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = w.Text
	}
	return strings.Join(s, " ")
}

// flatWords returns the words of a list block, whether it holds one entry a
// line or several on one line ("unicast_peer { 192.0.2.2 192.0.2.3 }").
func flatWords(n *Node) []Word {
	var ws []Word
	for _, e := range n.Block {
		ws = append(ws, e.Words()...)
	}
	return append(n.Args, ws...)
}
