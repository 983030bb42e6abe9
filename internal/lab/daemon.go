package lab

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DaemonKind says which VRRP daemon runs on the nodes.
type DaemonKind int

const (
	_ DaemonKind = iota // invalid zero value
	// Keepalived is Debian's keepalived in VRRPv3 mode.
	Keepalived
	// Vipd is this project's daemon.
	Vipd
)

func (k DaemonKind) String() string {
	switch k {
	case Keepalived:
		return "keepalived"
	case Vipd:
		return "vipd"
	}
	return "DaemonKind(" + strconv.Itoa(int(k)) + ")"
}

// ParseDaemonKind parses "vipd" or "keepalived".
func ParseDaemonKind(s string) (DaemonKind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "keepalived":
		return Keepalived, nil
	case "vipd":
		return Vipd, nil
	}
	return 0, fmt.Errorf("unknown daemon %q (want vipd or keepalived)", s)
}

// VRRPv3 advert interval limits (RFC 5798 §5.2.7: 12 bits of centiseconds).
const (
	MinAdvertInterval = 10 * time.Millisecond
	MaxAdvertInterval = 4095 * 10 * time.Millisecond
)

// GroupConfig is what every daemon of a group shares, whatever its kind.
type GroupConfig struct {
	VRID int
	// Priorities[i-1] is node i's priority.
	Priorities []int
	Interval   time.Duration
	// VIP is the group's address, IPv4 or IPv6 (an IPv6-only group).
	VIP netip.Prefix
	// VIP6, if set, makes the group dual-stack: an IPv6 instance on the
	// same VRID that follows the IPv4 one (VIP), so both move together.
	VIP6 netip.Prefix
	// NoPreempt turns preemption off (the zero value preempts, as issue 4
	// and keepalived's default do).
	NoPreempt bool
	// GARPRepeat and GARPInterval shape vipd's gratuitous ARP burst; zero
	// values take GARPDefaults. keepalived keeps its own defaults.
	GARPRepeat   int
	GARPInterval time.Duration
	// GARPProbe, if set, is vipd's garp.probe ("0s", "10s"); empty keeps
	// vipd's default.
	GARPProbe string
	// Version is the VRRP version every daemon speaks: 3 (zero) or 2,
	// keepalived's default. AuthPass is VRRPv2's simple text password.
	Version  int
	AuthPass string
}

// version is the group's VRRP version, 3 unless set.
func (g GroupConfig) version() int {
	if g.Version == 0 {
		return 3
	}
	return g.Version
}

// DefaultGroupConfig is issue 4's group: VRID 51, priorities 150/100/50
// (then 49, 48, ... for larger labs), VIP 198.51.100.10/32.
func DefaultGroupConfig(nodes int, interval time.Duration) GroupConfig {
	g := GroupConfig{VRID: VRID, Interval: interval, VIP: DefaultVIP()}
	for i := 1; i <= nodes; i++ {
		p := 150 - 50*(i-1)
		if i > 3 {
			p = max(1, 50-(i-3))
		}
		g.Priorities = append(g.Priorities, p)
	}
	g.GARPRepeat, g.GARPInterval = GARPDefaults(interval)
	return g
}

// GARPDefaults gives the lab's gratuitous ARP burst for vipd: 5 frames (as
// keepalived sends) spaced by the advert interval, clamped to 10ms..1s. The
// first frame moves the client; repeats only cover a lost frame, and spacing
// them by the advert interval keeps that recovery on the protocol's own time
// scale (a fixed 1s would turn one lost frame at 10ms into a 100x outage).
func GARPDefaults(interval time.Duration) (repeat int, spacing time.Duration) {
	return 5, min(max(interval, MinAdvertInterval), time.Second)
}

// Validate checks the config against VRRPv3's limits.
func (g GroupConfig) Validate() error {
	var errs []error
	if g.VRID < 1 || g.VRID > 255 {
		errs = append(errs, fmt.Errorf("vrid %d out of 1..255", g.VRID))
	}
	if g.Interval < MinAdvertInterval || g.Interval > MaxAdvertInterval || g.Interval%MinAdvertInterval != 0 {
		errs = append(errs, fmt.Errorf("advert interval %v: want 10ms..40.95s in steps of 10ms", g.Interval))
	}
	switch {
	case g.version() != 2 && g.version() != 3:
		errs = append(errs, fmt.Errorf("version %d: want 2 or 3", g.Version))
	case g.version() == 2 && (g.Interval%time.Second != 0 || g.VIP6.IsValid() || g.VIP.Addr().Is6()):
		errs = append(errs, fmt.Errorf("VRRPv2 needs whole-second intervals and IPv4 alone, not %v", g.Interval))
	case g.version() == 3 && g.AuthPass != "":
		errs = append(errs, errors.New("auth_pass is VRRPv2's"))
	}
	if err := validVIP(g.VIP); err != nil {
		errs = append(errs, err)
	}
	if g.VIP6.IsValid() {
		if err := validVIP(g.VIP6); err != nil {
			errs = append(errs, err)
		}
		if !g.VIP6.Addr().Is6() || !g.VIP.Addr().Is4() {
			errs = append(errs, fmt.Errorf("dual-stack vips %v and %v: want an IPv4 and an IPv6 address", g.VIP, g.VIP6))
		}
	}
	if len(g.Priorities) == 0 {
		errs = append(errs, errors.New("no priorities"))
	}
	for i, p := range g.Priorities {
		if p < 1 || p > 254 {
			errs = append(errs, fmt.Errorf("n%d priority %d out of 1..254", i+1, p))
		}
	}
	return errors.Join(errs...)
}

// Priority is node i's priority.
func (g GroupConfig) Priority(i int) int { return g.Priorities[i-1] }

// HighestNode is the node that should be master when all are healthy.
func (g GroupConfig) HighestNode() int {
	best := 1
	for i, p := range g.Priorities {
		if p > g.Priorities[best-1] {
			best = i + 1
		}
	}
	return best
}

// keepalivedConfig renders a VRRPv3 keepalived config (API-NOTES recipe):
// every node starts as BACKUP and the election decides.
func keepalivedConfig(node int, g GroupConfig) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# generated by the vipd lab for %s\n", NodeName(node))
	// VRRPv2 is keepalived's default: a stock config does not say it.
	fmt.Fprintf(&b, "global_defs {\n    router_id %s\n", NodeName(node))
	if g.version() != 2 {
		fmt.Fprintf(&b, "    vrrp_version %d\n", g.version())
	}
	fmt.Fprintf(&b, "}\n\n")
	fmt.Fprintf(&b, "vrrp_instance lab {\n")
	fmt.Fprintf(&b, "    state BACKUP\n    interface eth0\n")
	fmt.Fprintf(&b, "    virtual_router_id %d\n    priority %d\n", g.VRID, g.Priority(node))
	fmt.Fprintf(&b, "    advert_int %s\n", strconv.FormatFloat(g.Interval.Seconds(), 'f', -1, 64))
	if g.NoPreempt {
		fmt.Fprintf(&b, "    nopreempt\n")
	}
	if g.AuthPass != "" {
		fmt.Fprintf(&b, "    authentication {\n        auth_type PASS\n        auth_pass %s\n    }\n", g.AuthPass)
	}
	fmt.Fprintf(&b, "    virtual_ipaddress {\n        %s dev eth0\n    }\n}\n", g.VIP)
	if g.VIP6.IsValid() {
		keepalivedFollower(&b, node, g)
	}
	return b.Bytes()
}

// vipdConfig renders vipd's TOML config; socket is a per-node path so several
// daemons can share the host.
func vipdConfig(node int, g GroupConfig, socket, logLevel string) []byte {
	repeat, spacing := g.GARPRepeat, g.GARPInterval
	if repeat == 0 || spacing == 0 {
		repeat, spacing = GARPDefaults(g.Interval)
	}
	if logLevel == "" {
		logLevel = "info"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# generated by the vipd lab for %s\n", NodeName(node))
	// state_dir beside the socket: each node keeps its own drain marks,
	// never the host's.
	fmt.Fprintf(&b, "[global]\nnode_name = %q\nsocket = %q\nstate_dir = %q\nlog_format = \"text\"\nlog_level = %q\n\n",
		NodeName(node), socket, filepath.Join(filepath.Dir(socket), "state"), logLevel)
	fmt.Fprintf(&b, "[[instance]]\nname = \"lab\"\ninterface = \"eth0\"\nvrid = %d\npriority = %d\n", g.VRID, g.Priority(node))
	fmt.Fprintf(&b, "advert_interval = %q\nvips = [%q]\npreempt = %v\n", g.Interval.String(), g.VIP.String(), !g.NoPreempt)
	if g.version() == 2 {
		fmt.Fprintf(&b, "version = 2\n")
	}
	if g.AuthPass != "" {
		fmt.Fprintf(&b, "auth_pass = %q\n", g.AuthPass)
	}
	fmt.Fprintf(&b, "\n")
	vipdGARP(&b, g, repeat, spacing)
	if g.VIP6.IsValid() {
		vipdFollower(&b, g, repeat, spacing)
	}
	return b.Bytes()
}

// vipdGARP writes an instance's [instance.garp] table: the lab's repeat
// and spacing, and garp.probe when the group sets one.
func vipdGARP(b *bytes.Buffer, g GroupConfig, repeat int, spacing fmt.Stringer) {
	fmt.Fprintf(b, "[instance.garp]\nrepeat = %d\ninterval = %q\n", repeat, spacing.String())
	if g.GARPProbe != "" {
		fmt.Fprintf(b, "probe = %q\n", g.GARPProbe)
	}
}
