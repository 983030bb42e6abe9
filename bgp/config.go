package bgp

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// ASNs that cannot be a speaker's or a peer's (RFC 7607: 0; RFC 6793: 23456,
// AS_TRANS, stands in for a 4-octet ASN towards 2-octet speakers).
const (
	asnReserved = 0
	asnTrans    = 23456
)

// Defaults of a peer's timers. RFC 4271 suggests 90s and 30s; a VIP that
// should move when its host dies wants the data-centre values FRR also uses
// (its "datacenter" profile), and BFD for anything faster.
const (
	DefaultHoldTime          = 9 * time.Second
	DefaultKeepaliveInterval = 3 * time.Second
	// connectRetry paces GoBGP's reconnect attempts to a peer that is down.
	connectRetry = 5 * time.Second
	// BFD (RFC 5881 port). GoBGP detects a failure after bfdMultiplier
	// intervals without a packet and does not stretch that to the peer's
	// pace; a peer sends at most once a second until the session is up
	// (RFC 5880 section 6.8.3), so 5 × 300ms tolerates that and still
	// detects a failure in 1.5s.
	bfdPort        = 3784
	bfdInterval    = 300 * time.Millisecond
	bfdMultiplier  = 5
	maxRestartTime = 4095 * time.Second
	// RFC 4271 section 4.2: a hold time is 0 or at least 3 seconds.
	minHoldTime = 3 * time.Second
	maxHoldTime = 65535 * time.Second
)

// Communities vipd itself uses.
const (
	// CommunityGracefulShutdown is GRACEFUL_SHUTDOWN, 65535:0 (RFC 8326
	// section 3): routers lower the path's preference, so traffic moves to
	// the other paths before the withdraw.
	CommunityGracefulShutdown uint32 = 0xFFFF0000
)

// Config is a speaker's configuration.
type Config struct {
	ASN      uint32
	RouterID netip.Addr // IPv4; the daemon fills in the node's primary IPv4 address
	// ListenPort is the TCP port accepting sessions from peers; 0 opens
	// none, and vipd initiates every session.
	ListenPort int
	Peers      []Peer
	// GracefulRestartTime, when not 0, offers graceful restart (RFC 4724)
	// to every peer: a router that supports it keeps this host's routes
	// for up to this long after the session ends without a NOTIFICATION,
	// as it does when Run ends after StopForRestart (a re-exec). It also
	// keeps them when the session breaks for other reasons, a crash or a
	// cut link, so it delays a failover by as much: leave it 0 unless
	// upgrades matter more. Whole seconds, at most 4095s.
	GracefulRestartTime time.Duration
	// Restarting says this speaker replaces one that stopped with
	// StopForRestart: its OPEN sets the Restart State and Forwarding State
	// bits, so routers keep the old routes until its End-of-RIB.
	Restarting bool
}

// Peer is one BGP neighbour, usually a top-of-rack router.
type Peer struct {
	Address  netip.Addr
	ASN      uint32 // equal to Config.ASN: iBGP; otherwise eBGP
	Password string // TCP-MD5 (RFC 2385); "" for none
	// HoldTime and KeepaliveInterval are proposed in the OPEN message (the
	// lower hold time of the two sides wins); 0 takes the defaults.
	HoldTime, KeepaliveInterval time.Duration
	// MultihopTTL is the TTL of an eBGP session's packets; 0 or 1: the
	// peer is on the link.
	MultihopTTL uint8
	// BFD runs single-hop BFD (RFC 5880, 5881) with the peer, which then
	// must run it too: a lost BFD session resets the BGP session at once,
	// in about 1.5s instead of a hold time.
	BFD bool
}

// Attrs are the optional path attributes of an announcement.
type Attrs struct {
	Communities []uint32 // RFC 1997, high 16 bits the ASN: 65000:100 is 65000<<16|100
	MED         *uint32  // MULTI_EXIT_DISC; nil: none
}

// ErrGlobalChanged is returned by Reconfigure when the ASN, router ID,
// listen port or graceful-restart time changed: those need a new speaker
// (every session restarts).
var ErrGlobalChanged = errors.New("bgp: asn, router_id, listen_port or graceful_restart_time changed: the speaker must be restarted")

// withDefaults returns p with its zero timers replaced by the defaults.
func (p Peer) withDefaults() Peer {
	if p.HoldTime == 0 {
		p.HoldTime = DefaultHoldTime
	}
	if p.KeepaliveInterval == 0 {
		p.KeepaliveInterval = min(DefaultKeepaliveInterval, p.HoldTime/3)
	}
	return p
}

// Validate reports what is wrong with a configuration, every problem
// joined in one error.
func (c Config) Validate() error {
	var errs []error
	if msg := ASNProblem(c.ASN); msg != "" {
		errs = append(errs, fmt.Errorf("asn: %s", msg))
	}
	if !c.RouterID.Is4() || c.RouterID.IsUnspecified() {
		errs = append(errs, fmt.Errorf("router_id %v: want a non-zero IPv4 address", c.RouterID))
	}
	if g := c.GracefulRestartTime; g < 0 || g > maxRestartTime || g%time.Second != 0 {
		errs = append(errs, fmt.Errorf("graceful_restart_time %s: want whole seconds, 0s..%s (RFC 4724: 12 bits)", g, maxRestartTime))
	}
	if c.Restarting && c.GracefulRestartTime == 0 {
		errs = append(errs, errors.New("restarting without graceful_restart_time: the routers did not keep the routes"))
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		errs = append(errs, fmt.Errorf("listen_port %d out of range 0..65535", c.ListenPort))
	}
	seen := map[netip.Addr]bool{}
	for _, p := range c.Peers {
		if err := p.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		if seen[p.Address] {
			errs = append(errs, fmt.Errorf("peer %s is listed twice", p.Address))
		}
		seen[p.Address] = true
	}
	return errors.Join(errs...)
}

func (p Peer) validate() error {
	a := p.Address
	switch {
	case !a.IsValid() || a.IsUnspecified() || a.IsMulticast():
		return fmt.Errorf("peer address %v: want a unicast address", a)
	case a.Is4In6():
		return fmt.Errorf("peer address %v: write it as IPv4, %v", a, a.Unmap())
	case a.Zone() != "":
		return fmt.Errorf("peer %v: link-local peers (with a zone) are not supported", a)
	}
	if msg := ASNProblem(p.ASN); msg != "" {
		return fmt.Errorf("peer %s: asn: %s", a, msg)
	}
	p = p.withDefaults()
	if p.HoldTime < minHoldTime || p.HoldTime > maxHoldTime || p.HoldTime%time.Second != 0 {
		return fmt.Errorf("peer %s: hold_time %s: want whole seconds, 3s..65535s (RFC 4271 section 4.2)", a, p.HoldTime)
	}
	if p.KeepaliveInterval < time.Second || p.KeepaliveInterval%time.Second != 0 || p.KeepaliveInterval > p.HoldTime/3 {
		return fmt.Errorf("peer %s: keepalive_interval %s: want whole seconds, 1s..hold_time/3 (%s)", a, p.KeepaliveInterval, p.HoldTime/3)
	}
	if len(p.Password) > 80 { // TCP_MD5SIG_MAXKEYLEN
		return fmt.Errorf("peer %s: password longer than 80 bytes, the kernel's TCP-MD5 limit", a)
	}
	return nil
}

// ASNProblem says what is wrong with an ASN as a speaker's or peer's, or "".
func ASNProblem(asn uint32) string {
	switch asn {
	case asnReserved:
		return "0 is reserved (RFC 7607)"
	case asnTrans:
		return "23456 is AS_TRANS (RFC 6793), a placeholder, not an AS"
	}
	return ""
}

// HostRoute reports whether p can be announced: a /32 or a /128.
func HostRoute(p netip.Prefix) bool {
	return p.IsValid() && p.Bits() == p.Addr().BitLen() && p.Addr().Zone() == "" && !p.Addr().Is4In6()
}
