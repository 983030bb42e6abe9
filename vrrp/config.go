package vrrp

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// A Clock tells the machine the time; the daemon passes the real clock,
// tests a fake one.
type Clock interface {
	Now() time.Time
}

// Config is what one virtual router needs to know about itself.
type Config struct {
	// Interface names the link, for the causes operators read.
	Interface string
	VRID      uint8
	// Priority is the base priority, 1..254. 255 (the address owner) is
	// not supported: vipd never owns the addresses it moves.
	Priority       uint8
	AdvertInterval time.Duration
	Preempt        bool
	// PreemptDelay is how long a Backup must have seen a lower-priority
	// Master before it stops accepting its adverts and takes over.
	PreemptDelay time.Duration
	// Addresses are the virtual addresses, all of Primary's family. An
	// IPv4 instance advertises IPv4 addresses, an IPv6 one IPv6 addresses
	// (RFC 5798 section 5.2.9); dual-stack takes two instances.
	Addresses []netip.Addr
	// Primary is this router's own address on the link: the source of its
	// adverts and the tie-break between equal priorities. Over IPv6 it is
	// the interface's link-local address (RFC 5798 section 5.1.2.1), or in
	// unicast the configured source, which may be global. Zones are
	// dropped: the machine compares addresses; the link is Interface.
	Primary netip.Addr
	// SplitBrainRecovery makes a Master that hears a lower-priority Master
	// answer at once and announce its addresses again, and a Master that
	// yields send one last advert, so that the winner re-announces. Both
	// repair neighbour caches that a partition left pointing at the loser.
	SplitBrainRecovery bool
	// TakeoverGrace is how long a new Master advertises before it takes
	// the addresses. Backups of equal priority time out at the same instant
	// and all become Master until the highest address wins; waiting a few
	// milliseconds for a competing advert keeps the losers from adding the
	// addresses (and announcing them) only to drop them again. Zero takes
	// them at once, as RFC 5798 does.
	TakeoverGrace time.Duration
	// PreemptGrace replaces TakeoverGrace for a takeover by preemption.
	// The Master preempted is up, so nothing is urgent, and Backups of
	// equal priority whose preempt delays end together need to hear each
	// other's first advert even on a loaded host. Zero: TakeoverGrace.
	PreemptGrace time.Duration
	// Peers are the configured unicast peers (empty in multicast), zones
	// dropped as for Primary. With
	// the Master a Backup follows, they are the hosts the machine trusts
	// with what one unauthenticated advert can otherwise abuse: a priority
	// 255 is accepted, and an advertised interval learnt, only from them.
	Peers []netip.Addr
	// TrustUnknownMasters lifts that limit (RFC 5798 behaviour): any host
	// may claim priority 255 and have its interval learnt at once. A group
	// with an address owner (a keepalived router at priority 255) in
	// multicast mode needs it, or the owner listed as a peer.
	TrustUnknownMasters bool
	// MasterDownAdverts is how many advert intervals a Backup waits before
	// declaring the Master dead: Master_Down_Interval is MasterDownAdverts
	// * Master_Adver_Interval + Skew_Time. RFC 5798 says 3 (0 means 3);
	// more rides out a starved host at the cost of a slower failover, and
	// every router of the group should use the same value.
	MasterDownAdverts int
	// Follower: this router's state follows a leader on the same host
	// (SetLeader) instead of its own election, so that two addresses —
	// an IPv4 and an IPv6 one — always end on one host. It advertises as
	// Master while the leader is Master, never takes over on its own
	// timers, and never yields to another Master's adverts: it reports
	// them (ActForeignMaster).
	Follower bool
	// UnicastMinTTL and UnicastMaxTTL are the TTL or hop limit range
	// accepted from unicast peers, so that peers behind routers (which
	// take one off the 255 sent per hop) can take part; 0 means 255.
	// Multicast always requires 255 (RFC 5798 section 7.1), and a range
	// without Peers is refused.
	UnicastMinTTL, UnicastMaxTTL uint8
	// Version is the VRRP version sent: 3 (RFC 5798; 0 means 3) or 2 (RFC
	// 3768: IPv4, whole seconds, Auth). A VRRPv2 router never learns the
	// Master's interval: RFC 3768 routers of a group agree on it, and an
	// advert with another is dropped.
	Version uint8
	// AcceptOtherVersion also accepts adverts of the other version of its
	// VRID (RFC 5798 section 8.4), so a group can move from VRRPv2 to
	// VRRPv3 one router at a time without two Masters.
	AcceptOtherVersion bool
	// Auth is the VRRPv2 authentication sent and required of VRRPv2
	// adverts (VRRPv3 adverts carry none).
	Auth Auth
	// AddressOwner is a host trusted with priority 255 besides Peers and
	// the Master followed: a keepalived router that owns the addresses
	// (state MASTER without a priority gives it 255).
	AddressOwner netip.Addr
}

// Limits of Config.MasterDownAdverts.
const (
	DefaultMasterDownAdverts = 3 // RFC 5798 section 6.1
	MaxMasterDownAdverts     = 10
)

// owned returns c with its slices copied and its defaults filled in.
func (c Config) owned() Config {
	cfgPeers := c.Peers
	c.Addresses = append([]netip.Addr(nil), c.Addresses...)
	c.Peers = make([]netip.Addr, len(c.Peers))
	for i, p := range cfgPeers {
		c.Peers[i] = p.WithZone("")
	}
	c.Primary = c.Primary.WithZone("")
	c.AddressOwner = c.AddressOwner.WithZone("")
	if c.Version == 0 {
		c.Version = Version
	}
	if c.MasterDownAdverts == 0 {
		c.MasterDownAdverts = DefaultMasterDownAdverts
	}
	if c.UnicastMinTTL == 0 {
		c.UnicastMinTTL = TTL
	}
	if c.UnicastMaxTTL == 0 {
		c.UnicastMaxTTL = TTL
	}
	return c
}

func (c *Config) validate() error {
	switch {
	case c.VRID == 0:
		return errors.New("vrrp: VRID 0 is not valid (1..255)")
	case c.Priority == 0 || c.Priority == 255:
		return fmt.Errorf("vrrp: priority %d is not valid (1..254)", c.Priority)
	case c.validateVersion() != nil:
		return c.validateVersion()
	case c.Version != Version2 && (c.AdvertInterval < MinAdvertInterval || c.AdvertInterval > MaxAdvertInterval || c.AdvertInterval%centisecond != 0):
		return fmt.Errorf("vrrp: advert interval %v is not a multiple of 10ms between %v and %v", c.AdvertInterval, MinAdvertInterval, MaxAdvertInterval)
	case c.PreemptDelay < 0:
		return fmt.Errorf("vrrp: negative preempt delay %v", c.PreemptDelay)
	case c.TakeoverGrace < 0 || c.TakeoverGrace >= c.AdvertInterval:
		return fmt.Errorf("vrrp: takeover grace %v must be shorter than the advert interval", c.TakeoverGrace)
	case c.PreemptGrace < 0 || c.PreemptGrace >= c.AdvertInterval:
		return fmt.Errorf("vrrp: preempt grace %v must be shorter than the advert interval", c.PreemptGrace)
	case !c.Primary.IsValid():
		return errors.New("vrrp: no primary address")
	case len(c.Addresses) == 0 || len(c.Addresses) > 255:
		return fmt.Errorf("vrrp: %d virtual addresses (1..255)", len(c.Addresses))
	case c.MasterDownAdverts != 0 && (c.MasterDownAdverts < DefaultMasterDownAdverts || c.MasterDownAdverts > MaxMasterDownAdverts):
		return fmt.Errorf("vrrp: master down adverts %d outside %d..%d", c.MasterDownAdverts, DefaultMasterDownAdverts, MaxMasterDownAdverts)
	case c.Primary.Is4In6():
		return fmt.Errorf("vrrp: primary address %v is IPv4-mapped: use %v", c.Primary, c.Primary.Unmap())
	case c.Primary.Is6() && len(c.Peers) == 0 && !c.Primary.IsLinkLocalUnicast():
		return fmt.Errorf("vrrp: primary address %v is not link-local: IPv6 adverts are sent from the interface's link-local address", c.Primary)
	}
	minTTL, maxTTL := cmp.Or(c.UnicastMinTTL, TTL), cmp.Or(c.UnicastMaxTTL, TTL)
	switch {
	case minTTL > maxTTL:
		return fmt.Errorf("vrrp: unicast TTL range %d..%d is empty", minTTL, maxTTL)
	case len(c.Peers) == 0 && minTTL != TTL:
		return fmt.Errorf("vrrp: a unicast TTL range (%d..%d) needs unicast peers: multicast adverts must arrive with TTL 255", minTTL, maxTTL)
	}
	for _, p := range c.Peers {
		if !p.IsValid() || p.Is4() != c.Primary.Is4() {
			return fmt.Errorf("vrrp: peer %v is not of the family of %v", p, c.Primary)
		}
	}
	for _, a := range c.Addresses {
		if a.Is4() != c.Primary.Is4() || a.Is4In6() {
			return fmt.Errorf("vrrp: virtual address %v is not of the family of %v", a, c.Primary)
		}
	}
	return nil
}
