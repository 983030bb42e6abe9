package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/vipd/vipd/vrrp"
)

const (
	// DefaultPath is where the daemon and vipd check look for the config.
	DefaultPath = "/etc/vipd/vipd.toml"
	// DefaultSocket is the control socket when global.socket is not set.
	DefaultSocket = "/run/vipd/vipd.sock"
	// DefaultStateDir holds the state that survives restarts and reboots
	// (drain marks) when global.state_dir is not set.
	DefaultStateDir = "/var/lib/vipd"
)

// Config is a loaded and validated config file.
type Config struct {
	Path      string // the name the file was loaded under
	Global    Global
	BGP       *BGP       // the [bgp] table; nil when the file has none
	Instances []Instance // in file order
}

// Global holds the settings of the daemon as a whole.
type Global struct {
	NodeName  string // names this host in status and logs
	Socket    string // control socket path
	LogFormat string // "text" or "json"
	LogLevel  slog.Level
	// StateDir is the absolute path of the directory for persistent state.
	StateDir string
	// SocketGroup is the group, a name or a numeric gid, whose members may
	// use the control socket (mode 0660); "" leaves it to root's group. It is
	// not looked up here, so a config can be checked on another host.
	SocketGroup string
	// MetricsListen is the host:port the Prometheus /metrics endpoint listens
	// on, the host an IP address or empty for every address; "" is off.
	MetricsListen string
	// RealtimePriority, 1..99, runs the daemon under the real-time policy
	// RealtimePolicy ("rr" or "fifo"); 0 (the default) leaves it to the
	// ordinary scheduler. LockMemory locks its pages in memory (mlockall).
	RealtimePriority int
	RealtimePolicy   string
	LockMemory       bool
}

// Instance is one virtual router: a VRID on one interface and its VIPs.
// With Announce = AnnounceBGPAnycast it is no virtual router but a set of
// VIPs that every healthy host announces: Interface and VRID are empty.
type Instance struct {
	Name      string
	Announce  Announce
	BGP       InstanceBGP // zero unless Announce.BGPMode()
	Interface string
	VRID      uint8
	// Priority, Preempt, PreemptDelay and MasterDownAdverts of a follower
	// are its leader's (it may not set them).
	Priority       uint8 // 1..254
	AdvertInterval time.Duration
	// VIPs are IPv4 /32s or IPv6 /128s, never both (IPv6 reports which).
	VIPs         []netip.Prefix
	Preempt      bool
	PreemptDelay time.Duration
	// UnicastPeers and UnicastSource are of the VIPs' family. A link-local
	// IPv6 address is kept without its zone, which could only name
	// Interface.
	UnicastPeers  []netip.Addr // empty: multicast
	UnicastSource netip.Addr   // zero: the interface's primary IPv4 address, or its IPv6 link-local address
	// UnicastMinTTL..UnicastMaxTTL is the TTL (hop limit) range accepted
	// from unicast peers, 255..255 unless set; a multicast instance
	// always requires 255.
	UnicastMinTTL, UnicastMaxTTL uint8
	// Checksum is the IPv4 checksum form sent (vrrp.ChecksumPseudoHeader,
	// RFC 5798's, unless set); both are accepted. IPv6 always uses the
	// pseudo-header.
	Checksum vrrp.ChecksumForm
	// Follow names this instance's leader, "" for none: a follower is
	// Master exactly while its leader (an instance of this file that
	// follows no one) is, and advertises the leader's effective priority,
	// so that the two instances' addresses (typically IPv4 and IPv6 of one
	// service) are always on one host. It has no priority, preemption or
	// trackers of its own; its advert_interval defaults to the leader's.
	Follow string
	GARP   GARP
	Tracks []Track // in file order; names unique within the instance
	Notify Notify
	// SplitBrainRecovery: a Master that hears a lower-priority Master answers
	// at once and announces again; a Master that yields sends one last advert
	// so the winner re-announces.
	SplitBrainRecovery bool
	// MasterDownAdverts is how many advert intervals a Backup waits for
	// the Master before taking over (RFC 5798: 3; 3..10). More rides out a
	// starved host, at the cost of a slower failover; all peers should
	// agree.
	MasterDownAdverts int
	// TrustUnknownMasters lets a host that is neither a unicast peer nor
	// the Master followed claim priority 255 and have its advert interval
	// learnt from one advert, as RFC 5798 does.
	TrustUnknownMasters bool
	// Version is the VRRP version spoken: 3 (RFC 5798, the default) or 2
	// (RFC 3768: IPv4 only, whole-second intervals, AuthPass), for groups
	// with keepalived routers at its default vrrp_version 2.
	Version uint8
	// AcceptOtherVersion: adverts of the other version of the VRID are
	// accepted too (accept_versions = [2, 3]), so a group can move from
	// VRRPv2 to VRRPv3 one host at a time without two Masters.
	AcceptOtherVersion bool
	// AuthPass is VRRPv2's simple text password (RFC 2338), 1..8 bytes,
	// "" for none. It is sent in clear: it keeps a misconfigured router
	// out of the group, not an attacker.
	AuthPass string
	// AddressOwner is a host, of the VIPs' family, whose priority 255
	// (the address owner's: a keepalived router with state MASTER and no
	// priority) is accepted in a multicast group; zero: none.
	AddressOwner netip.Addr
}

// Track is one health tracker, an [[instance.track]] table. Only the keys of
// its type are set; files and commands are not looked at here (vipd check
// may run on another host), so the daemon checks them at start and reports
// what it finds at Line.
type Track struct {
	Name string
	Type string // "http", "exec", "file" or "interface"
	// Weight, -254..254: a negative weight is added to the priority while the
	// tracker fails, a positive one while it is healthy; 0 puts the instance
	// in Fault while the tracker fails.
	Weight int
	// Fall consecutive failures make a healthy tracker failing; Rise
	// consecutive successes make a failing one healthy again.
	Fall, Rise int
	// Interval separates the starts of two checks; Timeout, shorter, bounds
	// one check (it is set for every type, and configurable for http and exec).
	Interval, Timeout time.Duration

	// http
	URL                string
	OKStatus           []int // the status codes that count as healthy
	CAFile             string
	CertFile, KeyFile  string // both or neither
	InsecureSkipVerify bool

	// exec: the argv, run without a shell; Command[0] is an absolute path.
	Command []string

	// file: failing while this absolute path exists (a drain switch).
	Path string

	// interface: failing while this interface is down.
	Interface string

	Line int // of the [[instance.track]] header (or inline table), 0 if unknown
}

// Notify lists the commands run on each state change of an instance, each
// an argv run without a shell; an empty one runs nothing.
type Notify struct {
	Master, Backup, Fault, Stop []string
	Timeout                     time.Duration // bounds each run
}

// GARP says how a new Master announces its VIPs with gratuitous ARP.
type GARP struct {
	Repeat   int           // announcements after each takeover
	Interval time.Duration // between them
	Refresh  time.Duration // periodic re-announcement while Master; 0 = off
	// Probe is how often a Master asks who else holds its VIPs (an ARP
	// probe; IPv6: a Neighbor Solicitation); 0 = only at a takeover and
	// while it stands down for a second owner.
	Probe time.Duration
}

// IPv6 reports whether the instance's VIPs, and so its adverts, peers and
// source, are IPv6 (RFC 5798 section 5.2.9: one family per instance).
func (in Instance) IPv6() bool {
	return len(in.VIPs) > 0 && in.VIPs[0].Addr().Is6()
}

// Instance returns the instance with the given name.
func (c *Config) Instance(name string) (Instance, bool) {
	for _, in := range c.Instances {
		if in.Name == name {
			return in, true
		}
	}
	return Instance{}, false
}

// Load reads and parses the config file at path. A file that cannot be read
// gives the *os.PathError; a file with problems gives *Error.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// Parse parses and validates a config; name is the file name used in
// problems. It returns *Error listing every problem found.
func Parse(name string, data []byte) (*Config, error) {
	return parse(name, data, os.Hostname)
}

// parse is Parse with the host-name lookup given, so tests can fix it.
func parse(name string, data []byte, hostname func() (string, error)) (*Config, error) {
	c := &checker{file: name}
	src := string(data)

	// Phase 1a: a generic decode finds syntax errors and lets the shape of the
	// tables be checked before the typed decode, which would stop at the
	// first mismatch.
	var doc map[string]any
	md, err := toml.Decode(src, &doc)
	if err != nil {
		c.syntax(src, err)
		return nil, c.err()
	}
	c.pos, err = scanPositions(src)
	if err != nil || !c.pos.agrees(md.Keys()) {
		// Better no lines than wrong ones.
		c.pos = positionsFromKeys(md.Keys())
	}
	c.labels, c.trackLabels = instanceLabels(doc)
	c.peerLabels = peerLabels(doc)
	c.checkShape(doc, reflect.TypeFor[rawConfig](), "", nil)
	if len(c.problems) > 0 {
		return nil, c.err()
	}

	// Phase 1b: the typed decode; every leaf is a field, so it cannot fail on
	// a value, and whatever it did not decode is an unknown key.
	var raw rawConfig
	md, err = toml.Decode(src, &raw)
	if err != nil {
		c.syntax(src, err) // not expected after the shape check
		return nil, c.err()
	}
	c.unknownKeys(md.Undecoded())

	// Phase 2: values into the typed config.
	cfg := &Config{Path: name}
	cfg.Global = c.global(&raw.Global, hostname)
	cfg.BGP = c.bgp(bgpPresent(doc), &raw.BGP)
	// Sized once: the daemon's instances point into this slice for the
	// life of the configuration, so its slack would stay too.
	cfg.Instances = make([]Instance, 0, len(raw.Instance))
	for i := range raw.Instance {
		cfg.Instances = append(cfg.Instances, c.instance(i, &raw.Instance[i]))
	}
	if len(raw.Instance) == 0 {
		c.add("instance", "no [[instance]] defined: vipd needs at least one")
	}
	c.acrossInstances(cfg.Instances)
	c.followers(cfg.Instances, raw.Instance)
	c.bgpInstances(cfg.BGP, cfg.Instances)
	if err := c.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// syntax records a decoding error. A toml.ParseError carries the offset of
// the error; the line is counted from it because the decoder's own line is
// one too far when the error is at a line end ("got '\n'").
func (c *checker) syntax(src string, err error) {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		c.problems = append(c.problems, Problem{File: c.file, Message: err.Error()})
		return
	}
	line := pe.Position.Line
	if src = stripBOM(src); pe.Position.Start >= 0 && pe.Position.Start <= len(src) {
		line = strings.Count(src[:pe.Position.Start], "\n") + 1
	}
	c.problems = append(c.problems, Problem{File: c.file, Line: line, Message: "invalid TOML: " + pe.Message})
}
