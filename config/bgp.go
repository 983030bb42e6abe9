package config

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipd/vipd/bgp"
)

// Announce is how an instance makes its VIPs reachable.
type Announce int

// The zero value is ARP, the default, so an Instance built in code announces
// the way it always did.
const (
	// AnnounceARP: the VRRP Master adds the VIPs to its interface and
	// announces them with gratuitous ARP (IPv6: unsolicited NAs).
	AnnounceARP Announce = iota
	// AnnounceBGP: the VRRP election decides the owner as with ARP; the
	// Master announces the VIPs, kept on lo, as host routes over BGP.
	AnnounceBGP
	// AnnounceBGPAnycast: no election; every host whose trackers are
	// healthy announces the VIPs over BGP, and the routers spread flows
	// by ECMP.
	AnnounceBGPAnycast
)

var announceNames = []string{"arp", "bgp", "bgp-anycast"}

func (a Announce) String() string {
	if int(a) >= 0 && int(a) < len(announceNames) {
		return announceNames[a]
	}
	return "Announce(" + strconv.Itoa(int(a)) + ")"
}

// BGPMode reports whether the VIPs are announced over BGP.
func (a Announce) BGPMode() bool { return a == AnnounceBGP || a == AnnounceBGPAnycast }

// BGP is the [bgp] table: the one BGP speaker of the daemon.
type BGP struct {
	ASN uint32 // local AS; not 0 nor 23456 (AS_TRANS)
	// RouterID is the BGP identifier, an IPv4 address; zero when not set,
	// and the daemon uses the node's primary IPv4 address.
	RouterID netip.Addr
	// ListenPort accepts sessions from peers; 0 (the default) opens no port
	// and vipd initiates every session.
	ListenPort int
	// GracefulRestartTime, when not 0, offers BGP graceful restart (RFC
	// 4724): routers keep the routes this long across an upgrade re-exec,
	// and also after a crash or a cut link.
	GracefulRestartTime time.Duration
	Peers               []BGPPeer // in file order, addresses unique
	Line                int       // of the [bgp] header
}

// BGPPeer is one [[bgp.peer]] table.
type BGPPeer struct {
	Address netip.Addr
	ASN     uint32 // the peer's AS: equal to BGP.ASN for iBGP
	// Password is the TCP-MD5 key given inline; PasswordFile names a file
	// that holds it instead (read by the daemon with ReadPassword, so vipd
	// check does not need it). At most one is set.
	Password, PasswordFile      string
	HoldTime, KeepaliveInterval time.Duration
	MultihopTTL                 uint8 // 1: the peer is on the link
	BFD                         bool  // single-hop BFD (RFC 5880, 5881)
	Line                        int   // of the [[bgp.peer]] header
}

// InstanceBGP holds an instance's BGP announcement settings; zero for an
// ARP instance.
type InstanceBGP struct {
	Communities []uint32 // RFC 1997, ASN<<16 | value
	MED         *uint32  // nil: none sent
	// GracefulShutdownTime is how long the VIPs are advertised with the
	// GRACEFUL_SHUTDOWN community (RFC 8326) before the withdraw on a
	// planned release (stop, drain, Backup after a handover).
	GracefulShutdownTime time.Duration
	// AnycastMinPriority, in bgp-anycast: while the effective priority is
	// below it the route is withdrawn; 0 is no floor (only a tracker of
	// weight 0 withdraws).
	AnycastMinPriority uint8
}

// Attrs are the path attributes of the instance's announcements.
func (b InstanceBGP) Attrs() bgp.Attrs {
	a := bgp.Attrs{Communities: slices.Clone(b.Communities)}
	if b.MED != nil {
		med := *b.MED
		a.MED = &med
	}
	return a
}

// ReadPassword returns the peer's TCP-MD5 password: Password, or the
// contents of PasswordFile without the trailing line end.
func (p BGPPeer) ReadPassword(readFile func(string) ([]byte, error)) (string, error) {
	if p.PasswordFile == "" {
		return p.Password, nil
	}
	b, err := readFile(p.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("bgp peer %s: password_file: %w", p.Address, err)
	}
	pw := strings.TrimRight(string(b), "\r\n")
	if pw == "" || strings.ContainsAny(pw, "\r\n") {
		return "", fmt.Errorf("bgp peer %s: password_file %s must hold the password on one line", p.Address, p.PasswordFile)
	}
	if len(pw) > maxBGPPassword {
		return "", fmt.Errorf("bgp peer %s: password in %s is longer than %d bytes, the kernel's TCP-MD5 limit", p.Address, p.PasswordFile, maxBGPPassword)
	}
	return pw, nil
}

// SpeakerConfig is the bgp.Config of b; routerID is used when b sets none
// (the node's primary IPv4 address), readFile reads password files.
func (b *BGP) SpeakerConfig(routerID netip.Addr, readFile func(string) ([]byte, error)) (bgp.Config, error) {
	c := bgp.Config{ASN: b.ASN, RouterID: b.RouterID, ListenPort: b.ListenPort, GracefulRestartTime: b.GracefulRestartTime}
	if !c.RouterID.IsValid() {
		c.RouterID = routerID
	}
	for _, p := range b.Peers {
		pw, err := p.ReadPassword(readFile)
		if err != nil {
			return bgp.Config{}, err
		}
		c.Peers = append(c.Peers, bgp.Peer{
			Address: p.Address, ASN: p.ASN, Password: pw,
			HoldTime: p.HoldTime, KeepaliveInterval: p.KeepaliveInterval, MultihopTTL: p.MultihopTTL, BFD: p.BFD,
		})
	}
	return c, c.Validate()
}

// Raw forms of the BGP tables.
type rawBGP struct {
	ASN        field        `toml:"asn"`
	RouterID   field        `toml:"router_id"`
	ListenPort field        `toml:"listen_port"`
	GRTime     field        `toml:"graceful_restart_time"`
	Peer       []rawBGPPeer `toml:"peer"`
}

type rawBGPPeer struct {
	Address           field `toml:"address"`
	ASN               field `toml:"asn"`
	Password          field `toml:"password"`
	PasswordFile      field `toml:"password_file"`
	HoldTime          field `toml:"hold_time"`
	KeepaliveInterval field `toml:"keepalive_interval"`
	MultihopTTL       field `toml:"multihop_ttl"`
	BFD               field `toml:"bfd"`
}

const (
	maxBGPPassword = 80 // TCP_MD5SIG_MAXKEYLEN
	maxASN         = 1<<32 - 1

	defaultGracefulShutdownTime = 5 * time.Second
	maxGracefulShutdownTime     = 10 * time.Minute
)

// bgpPresent reports whether the document has a [bgp] table.
func bgpPresent(doc map[string]any) bool {
	_, ok := doc["bgp"]
	return ok
}

// peerLabels names each [[bgp.peer]] for messages: by its address when
// that parses, else by its place.
func peerLabels(doc map[string]any) []string {
	b, _ := doc["bgp"].(map[string]any)
	peers := tablesOf(b["peer"])
	labels := make([]string, len(peers))
	for i, m := range peers {
		labels[i] = fmt.Sprintf("peer #%d", i+1)
		if s, ok := m["address"].(string); ok {
			if a, err := netip.ParseAddr(s); err == nil {
				labels[i] = "peer " + a.String()
			}
		}
	}
	return labels
}

// bgp checks the [bgp] table; nil when the document has none.
func (c *checker) bgp(present bool, r *rawBGP) *BGP {
	if !present {
		return nil
	}
	b := &BGP{Line: c.line("bgp")}
	key := func(name string) string { return keyPath("bgp", name) }

	c.need(r.ASN, key("asn"))
	if n, ok := c.asn(r.ASN, key("asn")); ok {
		b.ASN = n
	}
	if s, ok := c.str(r.RouterID, key("router_id")); ok {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil || !a.Is4():
			c.add(key("router_id"), "router_id %q is not an IPv4 address (a BGP identifier is 4 octets, RFC 4271 section 4.2, even on IPv6 sessions); leave it out to use the node's primary IPv4 address", s)
		case a.IsUnspecified() || a.IsMulticast() || isBroadcast(a):
			c.add(key("router_id"), "router_id %s is not a unicast address", a)
		default:
			b.RouterID = a
		}
	}
	if n, ok := c.integer(r.ListenPort, key("listen_port")); ok && c.inRange(key("listen_port"), n, 0, 65535) {
		b.ListenPort = int(n)
	}
	if d, ok := c.duration(r.GRTime, key("graceful_restart_time"), 0, 4095*time.Second); ok {
		if d%time.Second != 0 {
			c.add(key("graceful_restart_time"), "graceful_restart_time %q is not whole seconds (BGP carries it in seconds)", r.GRTime.val)
		} else {
			b.GracefulRestartTime = d
		}
	}
	seen := map[netip.Addr]int{}
	for j := range r.Peer {
		p := c.bgpPeer(elemPath(key("peer"), j), &r.Peer[j], b.ASN)
		if !p.Address.IsValid() {
			b.Peers = append(b.Peers, p)
			continue
		}
		if first, ok := seen[p.Address]; ok {
			c.add(keyPath(elemPath(key("peer"), j), "address"), "address %s is already a peer (line %d)", p.Address, b.Peers[first].Line)
		}
		seen[p.Address] = len(b.Peers)
		b.Peers = append(b.Peers, p)
	}
	return b
}

func (c *checker) bgpPeer(at string, r *rawBGPPeer, localASN uint32) BGPPeer {
	p := BGPPeer{HoldTime: bgp.DefaultHoldTime, KeepaliveInterval: bgp.DefaultKeepaliveInterval, MultihopTTL: 1, Line: c.line(at)}
	key := func(name string) string { return keyPath(at, name) }

	c.need(r.Address, key("address"))
	if s, ok := c.str(r.Address, key("address")); ok {
		a, msg := parseAddr(s, s)
		switch {
		case msg != "":
			c.add(key("address"), "address: %s", msg)
		case a.Zone() != "" || a.Is6() && a.IsLinkLocalUnicast():
			c.add(key("address"), "address %q is link-local: peer with a global or unique local address", s)
		case a.IsUnspecified() || a.IsMulticast() || isBroadcast(a) || a.IsLoopback():
			c.add(key("address"), "address %s is not a router's unicast address", a)
		default:
			p.Address = a
		}
	}
	c.need(r.ASN, key("asn"))
	if n, ok := c.asn(r.ASN, key("asn")); ok {
		p.ASN = n
	}
	if s, ok := c.str(r.Password, key("password")); ok {
		switch {
		case s == "":
			c.add(key("password"), "password is empty: leave it out for no TCP-MD5")
		case len(s) > maxBGPPassword:
			c.add(key("password"), "password is longer than %d bytes, the kernel's TCP-MD5 limit", maxBGPPassword)
		default:
			p.Password = s
		}
	}
	if s, ok := c.str(r.PasswordFile, key("password_file")); ok {
		switch {
		case r.Password.set:
			c.add(key("password_file"), "password_file and password are both set: give the TCP-MD5 password one way")
		case s == "":
			c.add(key("password_file"), "password_file is empty")
		default:
			if msg := absPathProblem(s); msg != "" {
				c.add(key("password_file"), "password_file %s", msg)
			} else {
				p.PasswordFile = path.Clean(s)
			}
		}
	}
	if d, ok := c.duration(r.HoldTime, key("hold_time"), 3*time.Second, 65535*time.Second); ok {
		if d%time.Second != 0 {
			c.add(key("hold_time"), "hold_time %q is not whole seconds (BGP carries it in seconds)", r.HoldTime.val)
		} else {
			p.HoldTime = d
			if !r.KeepaliveInterval.set {
				p.KeepaliveInterval = max(time.Second, (d / 3).Truncate(time.Second))
			}
		}
	}
	if d, ok := c.duration(r.KeepaliveInterval, key("keepalive_interval"), time.Second, 65535*time.Second/3); ok {
		switch {
		case d%time.Second != 0:
			c.add(key("keepalive_interval"), "keepalive_interval %q is not whole seconds", r.KeepaliveInterval.val)
		case d > p.HoldTime/3:
			c.add(key("keepalive_interval"), "keepalive_interval %q is more than a third of hold_time %s (RFC 4271 section 10): the session would expire between keepalives", r.KeepaliveInterval.val, FormatDuration(p.HoldTime))
		default:
			p.KeepaliveInterval = d
		}
	}
	if n, ok := c.integer(r.MultihopTTL, key("multihop_ttl")); ok && c.inRange(key("multihop_ttl"), n, 1, 255) {
		if localASN != 0 && p.ASN == localASN && n != 1 {
			c.add(key("multihop_ttl"), "multihop_ttl applies to eBGP peers only: this peer is in this host's AS %d (iBGP sessions are not limited to the link)", localASN)
		} else {
			p.MultihopTTL = uint8(n)
		}
	}
	if v, ok := c.boolean(r.BFD, key("bfd")); ok {
		if v && p.MultihopTTL > 1 {
			c.add(key("bfd"), "bfd is single-hop only (RFC 5881): it cannot run with multihop_ttl %d", p.MultihopTTL)
		} else {
			p.BFD = v
		}
	}
	return p
}

// asn reads an AS number: 1..4294967295, not AS_TRANS.
func (c *checker) asn(f field, p string) (uint32, bool) {
	n, ok := c.integer(f, p)
	if !ok {
		return 0, false
	}
	if n < 0 || n > maxASN {
		c.add(p, "%s %d out of range 1..%d", c.rel(p), n, int64(maxASN))
		return 0, false
	}
	if msg := bgp.ASNProblem(uint32(n)); msg != "" {
		c.add(p, "%s %s", c.rel(p), msg)
		return 0, false
	}
	return uint32(n), true
}

// announce reads an instance's announce key (before the rest of the
// instance: it decides which keys are required).
func (c *checker) announce(f field, p string) Announce {
	s, ok := c.str(f, p)
	if !ok {
		return AnnounceARP
	}
	if i := slices.Index(announceNames, s); i >= 0 {
		return Announce(i)
	}
	c.add(p, "announce %q is not one of %s", s, strings.Join(announceNames, ", "))
	return AnnounceARP
}

// vrrpOnlyKeys are the keys of an instance that only an election uses,
// refused in bgp-anycast.
func vrrpOnlyKeys(r *rawInstance) []struct {
	f    field
	name string
} {
	return []struct {
		f    field
		name string
	}{
		{r.Interface, "interface"}, {r.VRID, "vrid"}, {r.AdvertInterval, "advert_interval"}, {r.Preempt, "preempt"},
		{r.PreemptDelay, "preempt_delay"}, {r.UnicastPeers, "unicast_peers"}, {r.UnicastSource, "unicast_source"},
		{r.UnicastMinTTL, "unicast_min_ttl"}, {r.UnicastMaxTTL, "unicast_max_ttl"}, {r.Checksum, "checksum"},
		{r.Follow, "follow"}, {r.SplitBrainRecovery, "split_brain_recovery"}, {r.MasterDownAdverts, "master_down_adverts"},
		{r.TrustUnknownMasters, "trust_unknown_masters"}, {r.Version, "version"}, {r.AcceptVersions, "accept_versions"},
		{r.AuthPass, "auth_pass"}, {r.AddressOwner, "address_owner"},
	}
}

// instanceBGP checks an instance's BGP keys, given its announce mode.
func (c *checker) instanceBGP(at string, r *rawInstance, mode Announce) InstanceBGP {
	key := func(name string) string { return keyPath(at, name) }
	bgpKeys := []struct {
		f    field
		name string
	}{{r.Communities, "communities"}, {r.MED, "med"}, {r.GracefulShutdownTime, "graceful_shutdown_time"}, {r.AnycastMinPriority, "anycast_min_priority"}}
	if !mode.BGPMode() {
		for _, k := range bgpKeys {
			if k.f.set {
				c.add(key(k.name), "%s applies to BGP announcements only: set announce = \"bgp\" or \"bgp-anycast\", or leave it out", k.name)
			}
		}
		return InstanceBGP{}
	}
	if mode == AnnounceBGPAnycast {
		for _, k := range vrrpOnlyKeys(r) {
			if k.f.set {
				c.add(key(k.name), "%s is not used with announce = \"bgp-anycast\": nothing is elected, every healthy host announces the VIPs; leave it out", k.name)
			}
		}
		if r.GARP.anySet() {
			c.add(key("garp"), "[instance.garp] is not used with BGP announcements; leave it out")
		}
	} else if r.GARP.anySet() {
		c.add(key("garp"), "[instance.garp] is not used with BGP announcements: the VIPs are routed, not announced by ARP; leave it out")
	}

	b := InstanceBGP{GracefulShutdownTime: defaultGracefulShutdownTime}
	if list, ok := c.stringList(r.Communities, key("communities")); ok {
		for _, s := range list {
			cm, msg := parseCommunity(s)
			switch {
			case msg != "":
				c.add(key("communities"), "communities: %s", msg)
			case slices.Contains(b.Communities, cm):
				c.add(key("communities"), "communities: %s is listed twice", s)
			case cm == bgp.CommunityGracefulShutdown:
				c.add(key("communities"), "communities: 65535:0 is GRACEFUL_SHUTDOWN, which vipd adds itself during graceful_shutdown_time")
			default:
				b.Communities = append(b.Communities, cm)
			}
		}
	}
	if n, ok := c.integer(r.MED, key("med")); ok && c.inRange(key("med"), n, 0, maxASN) {
		med := uint32(n)
		b.MED = &med
	}
	if d, ok := c.duration(r.GracefulShutdownTime, key("graceful_shutdown_time"), 0, maxGracefulShutdownTime); ok {
		b.GracefulShutdownTime = d
	}
	if n, ok := c.integer(r.AnycastMinPriority, key("anycast_min_priority")); ok {
		if mode != AnnounceBGPAnycast {
			c.add(key("anycast_min_priority"), "anycast_min_priority applies to announce = \"bgp-anycast\" only: with \"bgp\" the election decides which host announces")
		} else if c.inRange(key("anycast_min_priority"), n, 0, ownerPriority-1) {
			b.AnycastMinPriority = uint8(n)
		}
	}
	return b
}

// parseCommunity parses "ASN:VALUE", each 0..65535 (RFC 1997).
func parseCommunity(s string) (uint32, string) {
	hi, lo, ok := strings.Cut(s, ":")
	a, errA := strconv.ParseUint(hi, 10, 16)
	v, errV := strconv.ParseUint(lo, 10, 16)
	if !ok || errA != nil || errV != nil {
		return 0, fmt.Sprintf("%q is not a community: write ASN:VALUE, each 0..65535, such as \"65000:100\"", s)
	}
	return uint32(a)<<16 | uint32(v), ""
}

// bgpInstances checks what BGP instances need of the [bgp] table: it
// exists, it has peers, and one of the VIPs' family.
func (c *checker) bgpInstances(b *BGP, ins []Instance) {
	for i, in := range ins {
		if in.Follow == "" {
			continue
		}
		j := slices.IndexFunc(ins, func(l Instance) bool { return l.Name == in.Follow })
		if j >= 0 && ins[j].Announce != in.Announce {
			c.add(keyPath(elemPath("instance", i), "follow"), "follow: %s has announce = %q, this instance %q: a follower announces its VIPs the way its leader does", c.label(j), ins[j].Announce, in.Announce)
		}
	}
	for i, in := range ins {
		if !in.Announce.BGPMode() {
			continue
		}
		at := keyPath(elemPath("instance", i), "announce")
		switch {
		case b == nil:
			c.add(at, "announce = %q needs a [bgp] table with asn and at least one [[bgp.peer]]", in.Announce)
		case len(b.Peers) == 0:
			c.add(at, "announce = %q needs at least one [[bgp.peer]] under [bgp] (line %d)", in.Announce, b.Line)
		case slices.ContainsFunc(b.Peers, func(p BGPPeer) bool { return !p.Address.IsValid() }):
			// A peer's address is wrong, and reported: its family is unknown.
		case len(in.VIPs) > 0 && !slices.ContainsFunc(b.Peers, func(p BGPPeer) bool { return p.Address.Is6() == in.IPv6() }):
			c.add(at, "announce = %q: no [[bgp.peer]] has an %s address, and %s VIPs are announced on %s sessions only", in.Announce, familyWord(in.IPv6()), familyWord(in.IPv6()), familyWord(in.IPv6()))
		}
	}
}
