package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// Limits of the schema. The advertisement interval travels in a 12-bit field
// of centiseconds (RFC 5798 section 5.2.7).
const (
	maxNameLen       = 32
	maxIfnameLen     = 15  // IFNAMSIZ less the NUL
	maxSocketPathLen = 107 // sizeof(sun_path) less the NUL
	maxNodeNameLen   = 64  // HOST_NAME_MAX

	defaultPriority       = 100
	defaultAdvertInterval = time.Second
	ownerPriority         = 255 // RFC 5798 section 5.2.4: the address owner's

	advertUnit        = 10 * time.Millisecond
	minAdvertInterval = advertUnit
	maxAdvertInterval = 0xfff * advertUnit // 40.95s

	maxPreemptDelay = time.Hour

	defaultGARPRepeat   = 5
	defaultGARPInterval = time.Second
	minGARPInterval     = 10 * time.Millisecond
	maxGARPInterval     = time.Minute
	minGARPRefresh      = time.Second
	defaultGARPProbe    = time.Second
	minGARPProbe        = time.Second
)

// instanceLabels names each [[instance]] for messages, and each of its
// [[instance.track]] tables: by its name when that is valid, else by its
// place, counted from 1.
func instanceLabels(doc map[string]any) (labels []string, tracks [][]string) {
	instances := tablesOf(doc["instance"])
	labels = make([]string, len(instances))
	tracks = make([][]string, len(instances))
	for i, m := range instances {
		labels[i] = fmt.Sprintf("instance #%d", i+1)
		if name, ok := m["name"].(string); ok && nameProblem(name) == "" {
			labels[i] = fmt.Sprintf("instance %q", name)
		}
		ts := tablesOf(m["track"])
		tracks[i] = make([]string, len(ts))
		for j, t := range ts {
			tracks[i][j] = fmt.Sprintf("track #%d", j+1)
			if name, ok := t["name"].(string); ok && nameProblem(name) == "" {
				tracks[i][j] = fmt.Sprintf("track %q", name)
			}
		}
	}
	return labels, tracks
}

// tablesOf returns the elements of an array of tables in a generic decode;
// an element that is not a table is nil, which keeps the numbering.
func tablesOf(v any) []map[string]any {
	switch v := v.(type) {
	case []map[string]any:
		return v
	case []any:
		ms := make([]map[string]any, len(v))
		for i, e := range v {
			ms[i], _ = e.(map[string]any)
		}
		return ms
	}
	return nil
}

func (c *checker) global(r *rawGlobal, hostname func() (string, error)) Global {
	g := Global{Socket: DefaultSocket, LogFormat: "text", LogLevel: slog.LevelInfo, StateDir: DefaultStateDir}
	key := func(name string) string { return keyPath("global", name) }

	if s, ok := c.str(r.NodeName, key("node_name")); ok {
		switch {
		case s == "":
			c.add(key("node_name"), "node_name is empty: leave it out to use the host name")
		case len(s) > maxNodeNameLen:
			c.add(key("node_name"), "node_name %q is longer than %d characters", s, maxNodeNameLen)
		case strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }):
			c.add(key("node_name"), "node_name %q contains control characters", s)
		default:
			g.NodeName = s
		}
	} else if !r.NodeName.set {
		h, err := hostname()
		if err == nil && h == "" {
			err = errors.New("it is empty")
		}
		if err != nil {
			c.add(key("node_name"), "node_name is not set and the host name cannot be used (%v): set node_name", err)
		}
		g.NodeName = h
	}

	if s, ok := c.str(r.Socket, key("socket")); ok {
		switch {
		case !path.IsAbs(s):
			c.add(key("socket"), "socket %q must be an absolute path", s)
		case len(s) > maxSocketPathLen:
			c.add(key("socket"), "socket %q is longer than %d bytes, the limit for a unix socket path", s, maxSocketPathLen)
		case strings.HasSuffix(s, "/"):
			c.add(key("socket"), "socket %q names a directory, not a socket file", s)
		default:
			g.Socket = s
		}
	}

	if s, ok := c.str(r.LogFormat, key("log_format")); ok {
		if s == "text" || s == "json" {
			g.LogFormat = s
		} else {
			c.add(key("log_format"), "log_format %q is not one of text, json", s)
		}
	}

	if s, ok := c.str(r.LogLevel, key("log_level")); ok {
		levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}
		if l, ok := levels[s]; ok {
			g.LogLevel = l
		} else {
			c.add(key("log_level"), "log_level %q is not one of debug, info, warn, error", s)
		}
	}

	if s, ok := c.str(r.StateDir, key("state_dir")); ok {
		if s == "" {
			c.add(key("state_dir"), "state_dir is empty: leave it out to use %s", DefaultStateDir)
		} else if msg := absPathProblem(s); msg != "" {
			c.add(key("state_dir"), "state_dir %s", msg)
		} else {
			g.StateDir = path.Clean(s)
		}
	}

	if s, ok := c.str(r.SocketGroup, key("socket_group")); ok {
		if msg := groupProblem(s); msg != "" {
			c.add(key("socket_group"), "%s", msg)
		} else {
			g.SocketGroup = s
		}
	}

	if s, ok := c.str(r.MetricsListen, key("metrics_listen")); ok && s != "" {
		if msg := listenProblem(s); msg != "" {
			c.add(key("metrics_listen"), "%s", msg)
		} else {
			g.MetricsListen = s
		}
	}

	if n, ok := c.integer(r.RealtimePrio, key("realtime_priority")); ok && c.inRange(key("realtime_priority"), n, 0, 99) {
		g.RealtimePriority = int(n)
	}
	if g.RealtimePriority > 0 {
		g.RealtimePolicy = "rr"
	}
	if s, ok := c.str(r.RealtimePol, key("realtime_policy")); ok {
		switch {
		case s != "rr" && s != "fifo":
			c.add(key("realtime_policy"), "realtime_policy %q is not one of rr, fifo", s)
		case g.RealtimePriority == 0:
			c.add(key("realtime_policy"), "realtime_policy without realtime_priority (1..99) does nothing: set both or neither")
		default:
			g.RealtimePolicy = s
		}
	}
	if b, ok := c.boolean(r.LockMemory, key("lock_memory")); ok {
		g.LockMemory = b
	}
	return g
}

func (c *checker) instance(i int, r *rawInstance) Instance {
	in := Instance{
		Priority:           defaultPriority,
		AdvertInterval:     defaultAdvertInterval,
		Preempt:            true,
		GARP:               GARP{Repeat: defaultGARPRepeat, Interval: defaultGARPInterval, Probe: defaultGARPProbe},
		Notify:             Notify{Timeout: defaultNotifyTimeout},
		SplitBrainRecovery: true,
		MasterDownAdverts:  vrrp.DefaultMasterDownAdverts,
	}
	at := elemPath("instance", i)
	key := func(name string) string { return keyPath(at, name) }

	c.need(r.Name, key("name"))
	if s, ok := c.checkedStr(r.Name, key("name"), nameProblem); ok {
		in.Name = s
	}

	// bgp-anycast elects nothing: no interface, no VRID.
	in.Announce = c.announce(r.Announce, key("announce"))
	elected := in.Announce != AnnounceBGPAnycast

	if elected {
		c.need(r.Interface, key("interface"))
	}
	if s, ok := c.checkedStr(r.Interface, key("interface"), ifnameProblem); ok {
		in.Interface = s
	}

	if elected {
		c.need(r.VRID, key("vrid"))
	}
	if n, ok := c.integer(r.VRID, key("vrid")); ok && c.inRange(key("vrid"), n, 1, 255) {
		in.VRID = uint8(n)
	}

	if n, ok := c.integer(r.Priority, key("priority")); ok {
		if n == ownerPriority {
			c.add(key("priority"), "priority 255 is reserved for the address owner (RFC 5798 section 5.2.4), a router whose own interface address is the VIP; vipd adds VIPs and never owns them: use 1..254")
		} else if c.inRange(key("priority"), n, 1, ownerPriority-1) {
			in.Priority = uint8(n)
		}
	}

	// VRRPv2 carries up to 255s; version() checks its whole seconds.
	maxInterval := maxAdvertInterval
	if n, ok := r.Version.val.(int64); ok && n == vrrp.Version2 {
		maxInterval = vrrp.MaxAdvertIntervalV2
	}
	if d, ok := c.duration(r.AdvertInterval, key("advert_interval"), minAdvertInterval, maxInterval); ok {
		if d%advertUnit != 0 {
			c.add(key("advert_interval"), "advert_interval %q is not a multiple of 10ms (VRRPv3 carries it in centiseconds)", r.AdvertInterval.val)
		} else {
			in.AdvertInterval = d
		}
	}

	vips := map[netip.Addr]bool{}
	c.need(r.VIPs, key("vips"))
	if list, ok := c.stringList(r.VIPs, key("vips")); ok {
		if len(list) == 0 {
			c.add(key("vips"), "vips is empty: list at least one address")
		}
		for _, s := range list {
			p, msg := parseVIP(s)
			switch {
			case msg != "":
				c.add(key("vips"), "vips: %s", msg)
			case vips[p.Addr()]:
				c.add(key("vips"), "vips: %s is listed twice", p.Addr())
			case len(in.VIPs) > 0 && p.Addr().Is6() != in.IPv6():
				c.add(key("vips"), "vips: %s is %s but %s is %s: an instance holds one address family (RFC 5798 section 5.2.9); for dual-stack put the %s VIPs in an instance of their own with follow = %q, which keeps them on the same host as these",
					p.Addr(), familyName(p.Addr()), in.VIPs[0].Addr(), familyName(in.VIPs[0].Addr()), familyName(p.Addr()), c.nameOr(in.Name))
			default:
				vips[p.Addr()] = true
				in.VIPs = append(in.VIPs, p)
			}
		}
	}
	// The family of the peers and the source; unknown without a valid VIP.
	family := func(a netip.Addr) string {
		if len(in.VIPs) == 0 || a.Is6() == in.IPv6() {
			return ""
		}
		return fmt.Sprintf("%s is %s, but the instance's VIPs are %s: adverts, peers and source are of the VIPs' family", a, familyName(a), familyName(in.VIPs[0].Addr()))
	}

	if b, ok := c.boolean(r.Preempt, key("preempt")); ok {
		in.Preempt = b
	}

	if d, ok := c.duration(r.PreemptDelay, key("preempt_delay"), 0, maxPreemptDelay); ok {
		in.PreemptDelay = d
	}

	if s, ok := c.str(r.UnicastSource, key("unicast_source")); ok && s != "" {
		a, msg := parseUnicast(s, in.Interface)
		if msg == "" {
			msg = family(a)
		}
		switch {
		case msg != "":
			c.add(key("unicast_source"), "unicast_source: %s", msg)
		case vips[a]:
			c.add(key("unicast_source"), "unicast_source %s is one of the VIPs; it must be this host's own address, which stays when the VIP moves", a)
		default:
			in.UnicastSource = a
		}
	}

	if list, ok := c.stringList(r.UnicastPeers, key("unicast_peers")); ok {
		peers := map[netip.Addr]bool{}
		for _, s := range list {
			a, msg := parseUnicast(s, in.Interface)
			if msg == "" {
				msg = family(a)
			}
			switch {
			case msg != "":
				c.add(key("unicast_peers"), "unicast_peers: %s", msg)
			case peers[a]:
				c.add(key("unicast_peers"), "unicast_peers: %s is listed twice", a)
			case a == in.UnicastSource:
				c.add(key("unicast_peers"), "unicast_peers: %s is unicast_source, this host itself", a)
			case vips[a]:
				c.add(key("unicast_peers"), "unicast_peers: %s is one of the VIPs; list the peers' own addresses", a)
			default:
				peers[a] = true
				in.UnicastPeers = append(in.UnicastPeers, a)
			}
		}
	}
	// RFC 5798 section 5.1.2.1: multicast IPv6 adverts come from the
	// link-local address, which receivers check.
	if a := in.UnicastSource; a.Is6() && !a.IsLinkLocalUnicast() && !r.UnicastPeers.set {
		c.add(key("unicast_source"), "unicast_source %s is not link-local: IPv6 adverts to the multicast group are sent from the interface's link-local address (RFC 5798 section 5.1.2.1); leave unicast_source out, or list unicast_peers", a)
		in.UnicastSource = netip.Addr{}
	}

	in.UnicastMinTTL, in.UnicastMaxTTL = vrrp.TTL, vrrp.TTL
	for _, t := range []struct {
		f    field
		name string
		to   *uint8
	}{{r.UnicastMinTTL, "unicast_min_ttl", &in.UnicastMinTTL}, {r.UnicastMaxTTL, "unicast_max_ttl", &in.UnicastMaxTTL}} {
		n, ok := c.integer(t.f, key(t.name))
		switch {
		case !ok:
		case !r.UnicastPeers.set:
			c.add(key(t.name), "%s applies to unicast peers only: adverts to the multicast group must arrive with TTL 255, proof that they come from the link (RFC 5798 section 7.1); list unicast_peers or leave it out", t.name)
		case c.inRange(key(t.name), n, 1, vrrp.TTL):
			*t.to = uint8(n)
		}
	}
	if in.UnicastMinTTL > in.UnicastMaxTTL {
		at := key("unicast_max_ttl")
		if !r.UnicastMaxTTL.set {
			at = key("unicast_min_ttl")
		}
		c.add(at, "unicast_min_ttl %d is above unicast_max_ttl %d: no TTL would be accepted", in.UnicastMinTTL, in.UnicastMaxTTL)
	}

	if s, ok := c.str(r.Checksum, key("checksum")); ok {
		switch {
		case in.IPv6():
			c.add(key("checksum"), "checksum applies to IPv4 instances only: IPv6 adverts always include the pseudo-header (RFC 9568 section 5.2.8); leave it out")
		case s == vrrp.ChecksumPseudoHeader.String():
			in.Checksum = vrrp.ChecksumPseudoHeader
		case s == vrrp.ChecksumNoPseudoHeader.String():
			in.Checksum = vrrp.ChecksumNoPseudoHeader
		default:
			c.add(key("checksum"), "checksum %q is not one of %s (with the IPv4 pseudo-header, as stock keepalived and FRR), %s (without, as Cisco and Juniper)",
				s, vrrp.ChecksumPseudoHeader, vrrp.ChecksumNoPseudoHeader)
		}
	}

	if s, ok := c.checkedStr(r.Follow, key("follow"), func(s string) string {
		if msg := nameProblem(s); msg != "" {
			return "follow: " + strings.TrimPrefix(msg, "name ")
		}
		return ""
	}); ok {
		in.Follow = s
	}

	garp := func(name string) string { return keyPath(key("garp"), name) }
	if n, ok := c.integer(r.GARP.Repeat, garp("repeat")); ok && c.inRange(garp("repeat"), n, 1, 100) {
		in.GARP.Repeat = int(n)
	}
	if d, ok := c.duration(r.GARP.Interval, garp("interval"), minGARPInterval, maxGARPInterval); ok {
		in.GARP.Interval = d
	}
	if d, ok := c.anyDuration(r.GARP.Refresh, garp("refresh")); ok {
		if d < 0 || d != 0 && d < minGARPRefresh {
			c.add(garp("refresh"), "garp.refresh %q must be 0s (off) or at least 1s", r.GARP.Refresh.val)
		} else {
			in.GARP.Refresh = d
		}
	}
	if d, ok := c.anyDuration(r.GARP.Probe, garp("probe")); ok {
		if d < 0 || d != 0 && d < minGARPProbe {
			c.add(garp("probe"), "garp.probe %q must be 0s (no routine probes) or at least 1s", r.GARP.Probe.val)
		} else {
			in.GARP.Probe = d
		}
	}

	if b, ok := c.boolean(r.SplitBrainRecovery, key("split_brain_recovery")); ok {
		in.SplitBrainRecovery = b
	}
	if n, ok := c.integer(r.MasterDownAdverts, key("master_down_adverts")); ok &&
		c.inRange(key("master_down_adverts"), n, vrrp.DefaultMasterDownAdverts, vrrp.MaxMasterDownAdverts) {
		in.MasterDownAdverts = int(n)
	}
	if b, ok := c.boolean(r.TrustUnknownMasters, key("trust_unknown_masters")); ok {
		in.TrustUnknownMasters = b
	}
	c.version(r, &in, key)
	in.Tracks = c.tracks(key("track"), r.Track)
	in.Notify = c.notify(key("notify"), &r.Notify)
	in.BGP = c.instanceBGP(at, r, in.Announce)
	return in
}

// acrossInstances checks what must be unique among instances. Each clash is
// reported at the later instance and names the line of the earlier one.
func (c *checker) acrossInstances(ins []Instance) {
	// IPv4 and IPv6 virtual routers are separate (RFC 5798 section 1):
	// the two instances of a dual-stack pair may share a VRID.
	type router struct {
		ifname string
		vrid   uint8
		ipv6   bool
	}
	var (
		names   = map[string]int{}
		routers = map[router]int{}
		vips    = map[netip.Addr]int{}
	)
	key := func(i int, name string) string { return keyPath(elemPath("instance", i), name) }
	for i, in := range ins {
		if in.Name != "" {
			if first, ok := names[in.Name]; ok {
				c.add(key(i, "name"), "name %q is already used at line %d", in.Name, c.line(key(first, "name")))
			} else {
				names[in.Name] = i
			}
		}
		if in.Interface != "" && in.VRID != 0 {
			r := router{in.Interface, in.VRID, in.IPv6()}
			if first, ok := routers[r]; ok {
				c.add(key(i, "vrid"), "vrid %d is already used for %s on %s by %s (line %d)", in.VRID, familyWord(in.IPv6()), in.Interface, c.label(first), c.line(key(first, "vrid")))
			} else {
				routers[r] = i
			}
		}
		for _, p := range in.VIPs {
			if first, ok := vips[p.Addr()]; ok && first != i {
				c.add(key(i, "vips"), "vips: %s is already a VIP of %s (line %d)", p.Addr(), c.label(first), c.line(key(first, "vips")))
			} else {
				vips[p.Addr()] = i
			}
		}
	}
}

// followers checks each follow: the leader exists and follows no one (no
// chains, so no cycles), and the follower leaves what the leader decides to
// the leader, whose values it takes.
func (c *checker) followers(ins []Instance, raws []rawInstance) {
	key := func(i int, name string) string { return keyPath(elemPath("instance", i), name) }
	for i := range ins {
		in := &ins[i]
		if in.Follow == "" || i >= len(raws) {
			continue
		}
		r := &raws[i]
		for _, k := range []struct {
			f    field
			name string
		}{{r.Priority, "priority"}, {r.Preempt, "preempt"}, {r.PreemptDelay, "preempt_delay"}, {r.MasterDownAdverts, "master_down_adverts"}} {
			if k.f.set {
				c.add(key(i, k.name), "%s is not allowed with follow: a follower takes its leader's (%q)", k.name, in.Follow)
			}
		}
		if len(r.Track) > 0 {
			c.add(elemPath(key(i, "track"), 0), "[[instance.track]] is not allowed with follow: the trackers of leader %q act for both instances; move them there", in.Follow)
		}
		j := slices.IndexFunc(ins, func(l Instance) bool { return l.Name == in.Follow })
		switch {
		case j == i:
			c.add(key(i, "follow"), "follow: an instance cannot follow itself")
			continue
		case j < 0:
			c.add(key(i, "follow"), "follow: no instance is named %q", in.Follow)
			continue
		case ins[j].Follow != "":
			head, cycle := chainHead(ins, j)
			hint := fmt.Sprintf("let both follow %q", head)
			if cycle {
				hint = "the follows form a cycle: remove follow from the instance that should lead"
			}
			c.add(key(i, "follow"), "follow: %s follows %q itself (line %d): a leader cannot be a follower; %s",
				c.label(j), ins[j].Follow, c.line(key(j, "follow")), hint)
			continue
		}
		leader := ins[j]
		in.Priority, in.Preempt, in.PreemptDelay, in.MasterDownAdverts = leader.Priority, leader.Preempt, leader.PreemptDelay, leader.MasterDownAdverts
		if !r.AdvertInterval.set {
			in.AdvertInterval = leader.AdvertInterval
		}
	}
}

// chainHead returns the instance that the chain of follows from j ends at,
// the one to follow instead, or reports a cycle.
func chainHead(ins []Instance, j int) (string, bool) {
	seen := map[int]bool{}
	for ins[j].Follow != "" {
		if seen[j] {
			return "", true
		}
		seen[j] = true
		k := slices.IndexFunc(ins, func(l Instance) bool { return l.Name == ins[j].Follow })
		if k < 0 {
			break
		}
		j = k
	}
	return ins[j].Name, false
}

// nameOr returns name, or a placeholder for an instance without a valid one.
func (c *checker) nameOr(name string) string {
	if name == "" {
		return "NAME"
	}
	return name
}

// need reports a required key that is missing; the line is its table's.
func (c *checker) need(f field, p string) {
	if !f.set {
		c.add(p, "missing required key %q", c.rel(p))
	}
}

func (c *checker) str(f field, p string) (string, bool) {
	if !f.set {
		return "", false
	}
	s, ok := f.val.(string)
	if !ok {
		c.add(p, "%s must be a string, not %s", c.rel(p), typeName(f.val))
	}
	return s, ok
}

func (c *checker) boolean(f field, p string) (bool, bool) {
	if !f.set {
		return false, false
	}
	b, ok := f.val.(bool)
	if !ok {
		c.add(p, "%s must be true or false, not %s", c.rel(p), typeName(f.val))
	}
	return b, ok
}

func (c *checker) integer(f field, p string) (int64, bool) {
	if !f.set {
		return 0, false
	}
	n, ok := f.val.(int64)
	if !ok {
		c.add(p, "%s must be an integer, not %s", c.rel(p), typeName(f.val))
	}
	return n, ok
}

func (c *checker) inRange(p string, n, lo, hi int64) bool {
	if n < lo || n > hi {
		c.add(p, "%s %d out of range %d..%d", c.rel(p), n, lo, hi)
		return false
	}
	return true
}

// duration reads a Go duration string such as "1s" or "250ms" and checks it
// against lo..hi.
func (c *checker) duration(f field, p string, lo, hi time.Duration) (time.Duration, bool) {
	d, ok := c.anyDuration(f, p)
	if ok && (d < lo || d > hi) {
		c.add(p, "%s %q out of range %s..%s", c.rel(p), f.val, FormatDuration(lo), FormatDuration(hi))
		return 0, false
	}
	return d, ok
}

func (c *checker) anyDuration(f field, p string) (time.Duration, bool) {
	if !f.set {
		return 0, false
	}
	s, ok := f.val.(string)
	if !ok {
		c.add(p, "%s must be a duration string such as \"1s\" or \"250ms\", not %s", c.rel(p), typeName(f.val))
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.add(p, "%s %q is not a duration; write it like \"1s\" or \"250ms\"", c.rel(p), s)
		return 0, false
	}
	return d, true
}

// FormatDuration writes d as the config file does: without the zero units
// time.Duration.String adds (1h, not 1h0m0s).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkedStr reads a string and refuses it, with its message, when problem
// says what is wrong with it.
func (c *checker) checkedStr(f field, p string, problem func(string) string) (string, bool) {
	s, ok := c.str(f, p)
	if !ok {
		return "", false
	}
	if msg := problem(s); msg != "" {
		c.add(p, "%s", msg)
		return "", false
	}
	return s, true
}

// stringList reads an array of strings.
func (c *checker) stringList(f field, p string) ([]string, bool) {
	return listOf[string](c, f, p, "strings", "a string")
}

// listOf reads an array whose elements must all be of type T, reporting the
// array or each element that is not; plural and one name T in messages.
func listOf[T any](c *checker, f field, p, plural, one string) ([]T, bool) {
	if !f.set {
		return nil, false
	}
	arr, ok := f.val.([]any)
	if !ok {
		c.add(p, "%s must be an array of %s, not %s", c.rel(p), plural, typeName(f.val))
		return nil, false
	}
	list := make([]T, 0, len(arr))
	for i, v := range arr {
		x, ok := v.(T)
		if !ok {
			c.add(p, "%s: element %d is %s, not %s", c.rel(p), i+1, typeName(v), one)
			continue
		}
		list = append(list, x)
	}
	return list, true
}

// nameProblem says what is wrong with an instance name, or "".
func nameProblem(s string) string {
	switch {
	case s == "":
		return "name is empty"
	case len(s) > maxNameLen:
		return fmt.Sprintf("name %q is longer than %d characters", s, maxNameLen)
	case strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}):
		return fmt.Sprintf("name %q may only contain A-Z, a-z, 0-9, '_', '.' and '-'", s)
	}
	return ""
}

// ifnameProblem applies the kernel's rules for interface names
// (dev_valid_name), so a typo fails here rather than at start-up.
func ifnameProblem(s string) string {
	switch {
	case s == "":
		return "interface is empty"
	case len(s) > maxIfnameLen:
		return fmt.Sprintf("interface %q is longer than %d characters, the Linux limit", s, maxIfnameLen)
	case s == "." || s == "..":
		return fmt.Sprintf("interface %q is not a valid interface name", s)
	case strings.ContainsAny(s, "/: \t\n\v\f\r"):
		return fmt.Sprintf("interface %q is not a valid interface name: Linux refuses '/', ':' and whitespace", s)
	}
	return ""
}

// parseAddr parses an IPv4 or IPv6 address. Messages quote shown, the text
// as the user wrote it.
func parseAddr(s, shown string) (netip.Addr, string) {
	a, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return netip.Addr{}, fmt.Sprintf("%q is not an IPv4 or IPv6 address", shown)
	case a.Is4In6():
		return netip.Addr{}, fmt.Sprintf("%q is an IPv4-mapped IPv6 address: write %s", shown, a.Unmap())
	}
	return a, ""
}

func isBroadcast(a netip.Addr) bool { return a.Is4() && a.As4() == [4]byte{255, 255, 255, 255} }

func familyName(a netip.Addr) string { return familyWord(a.Is6()) }

func familyWord(ipv6 bool) string {
	if ipv6 {
		return "IPv6"
	}
	return "IPv4"
}

// parseVIP parses "192.0.2.10", "192.0.2.10/32", "2001:db8::10" or
// "2001:db8::10/128".
func parseVIP(s string) (netip.Prefix, string) {
	addr, bits, hasBits := strings.Cut(s, "/")
	a, msg := parseAddr(addr, s)
	if msg != "" {
		return netip.Prefix{}, msg
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Sprintf("%q has a zone: a VIP is not link-local, and its interface is the instance's", s)
	}
	host := a.BitLen()
	if hasBits {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Sprintf("%q: /%s is not a prefix length", s, bits)
		}
		if p.Bits() != host {
			return netip.Prefix{}, fmt.Sprintf("%q: only /%d is accepted (each VIP is added as a host address)", s, host)
		}
	}
	switch {
	case a.IsUnspecified():
		return netip.Prefix{}, fmt.Sprintf("%q is the unspecified address", s)
	case a.IsMulticast():
		return netip.Prefix{}, fmt.Sprintf("%q is a multicast address", s)
	case a.IsLoopback():
		return netip.Prefix{}, fmt.Sprintf("%q is a loopback address", s)
	case isBroadcast(a):
		return netip.Prefix{}, fmt.Sprintf("%q is the broadcast address", s)
	case a.Is6() && a.IsLinkLocalUnicast():
		return netip.Prefix{}, fmt.Sprintf("%q is a link-local address: clients off the link cannot reach it, and the adverts' link-local source must not move; use a global or unique local address", s)
	}
	return netip.PrefixFrom(a, host), ""
}

// parseUnicast parses a unicast peer or source address of an instance on
// interface ifname. An IPv6 link-local address may carry a zone, which must
// name that interface; it is dropped.
func parseUnicast(s, ifname string) (netip.Addr, string) {
	a, msg := parseAddr(s, s)
	switch {
	case msg != "":
		return netip.Addr{}, msg
	case a.Zone() != "" && !a.IsLinkLocalUnicast():
		return netip.Addr{}, fmt.Sprintf("%q has a zone, which only a link-local address takes", s)
	case a.Zone() != "" && ifname != "" && a.Zone() != ifname:
		return netip.Addr{}, fmt.Sprintf("%q: zone %q is not the instance's interface %q; leave the zone out", s, a.Zone(), ifname)
	case a.IsUnspecified():
		return netip.Addr{}, fmt.Sprintf("%q is the unspecified address", s)
	case a.IsMulticast():
		return netip.Addr{}, fmt.Sprintf("%q is a multicast address", s)
	case isBroadcast(a):
		return netip.Addr{}, fmt.Sprintf("%q is the broadcast address", s)
	}
	return a.WithZone(""), ""
}
