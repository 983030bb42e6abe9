package daemon

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/bgp"
	"github.com/vipd/vipd/hoststat"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/transport"
)

// Links adds and removes addresses and reports link changes; *netif.Manager
// implements it.
type Links interface {
	Link(name string) (netif.LinkInfo, error)
	PrimaryIPv4(ifname string, exclude []netip.Prefix) (netip.Addr, error)
	// LinkLocal is the interface's IPv6 link-local address, and whether
	// duplicate address detection still runs on it.
	LinkLocal(ifname string) (addr netip.Addr, tentative bool, err error)
	AddVIP(ifname string, vip netip.Prefix, label string) error
	RemoveVIP(ifname string, vip netip.Prefix) error
	// AdoptVIP takes an address equal to vip already on ifname for one
	// vipd added, and reports whether it was there (Options.Adopt).
	AdoptVIP(ifname string, vip netip.Prefix) (bool, error)
	Watch(ctx context.Context, events chan<- netif.Event) error
}

// Announcer sends gratuitous ARP for an address, and probes who else has
// it; *arp.Announcer implements it.
type Announcer interface {
	Announce(vip netip.Addr) error
	Probe(vip, from netip.Addr) error
	Close() error
}

// ARPMonitor reports ARP packets from other hosts; *arp.Monitor implements it.
type ARPMonitor interface {
	Run(ctx context.Context, onClaim func(arp.Claim)) error
	Close() error
}

// RouteSpeaker announces VIPs as host routes over BGP; *bgp.Speaker
// implements it.
type RouteSpeaker interface {
	Run(ctx context.Context) error
	Announce(ctx context.Context, vip netip.Prefix, attrs bgp.Attrs) error
	GracefulShutdown(ctx context.Context, vip netip.Prefix) error
	Withdraw(ctx context.Context, vip netip.Prefix) error
	Established() bool
	Peers() []bgp.PeerStatus
	Reconfigure(ctx context.Context, cfg bgp.Config) error
	// StopForRestart keeps the routes in the routers (BGP graceful
	// restart) when Run's context ends: a re-exec takes over.
	StopForRestart()
}

// Env is the daemon's view of the operating system.
type Env struct {
	Links Links
	// NewTimer makes the election loop's timers, which call fire at each
	// expiry (ktimer in the daemon: an idle process then wakes only when
	// one expires); nil: the runtime's, whose clock tests can fake.
	NewTimer func(fire func()) (Timer, error)
	// ListenVRRP opens the VRRP socket of an interface.
	ListenVRRP func(ifi *net.Interface, opts transport.Options) (transport.Conn, error)
	// DialARP opens the gratuitous ARP sender of an interface.
	DialARP func(ifi *net.Interface) (Announcer, error)
	// ListenARP opens the monitor that spots another host claiming a VIP;
	// nil turns the check off.
	ListenARP func(ifi *net.Interface) (ARPMonitor, error)
	// DialNDP and ListenNDP are the same for IPv6 (unsolicited Neighbor
	// Advertisements, and claims by NA); nil: IPv6 VIPs are not announced,
	// or not watched.
	DialNDP   func(ifi *net.Interface) (Announcer, error)
	ListenNDP func(ifi *net.Interface) (ARPMonitor, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// HostStats reads the host's pressure and CPU steal since its previous
	// reading (hoststat.Sampler.Sample); nil records none. HostBaseline
	// takes such a reading alone (hoststat.Sampler.Baseline); nil: none
	// between transitions.
	HostStats    func() (hoststat.Sample, error)
	HostBaseline func() error
	// NewSpeaker starts nothing: it returns the BGP speaker of a [bgp]
	// configuration; nil refuses such a configuration.
	NewSpeaker func(cfg bgp.Config, log *slog.Logger) (RouteSpeaker, error)
	// ReadFile reads a BGP password_file; nil means os.ReadFile.
	ReadFile func(name string) ([]byte, error)
}

type clock struct{ now func() time.Time }

func (c clock) Now() time.Time { return c.now() }
