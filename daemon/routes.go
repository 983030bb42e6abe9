package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/vipd/vipd/bgp"
	"github.com/vipd/vipd/config"
)

// In the BGP modes the VIPs live on the loopback interface and the routers
// carry them: announcing is advertising a host route, withdrawing is
// withdrawing it. The announcement policy decides when, as for ARP; the
// route announcer below is the sibling of the ARP and NDP announcers.

// loopback is where a BGP mode keeps its VIPs: reachable through the
// routers, announced to nobody on a link (no ARP).
const loopback = "lo"

// bgpTimeout bounds one call into the speaker.
const bgpTimeout = 5 * time.Second

// newSpeaker builds the daemon's BGP speaker for cfg, or nil without [bgp].
func newSpeaker(cfg *config.Config, env Env, log *slog.Logger, restarting bool) (RouteSpeaker, error) {
	if cfg.BGP == nil {
		return nil, nil
	}
	if env.NewSpeaker == nil {
		return nil, errors.New("daemon: this build has no BGP speaker")
	}
	sc, err := speakerConfig(cfg, env)
	if err != nil {
		return nil, err
	}
	// After a re-exec the routers kept our routes (graceful restart) and
	// wait for this process to announce them again.
	sc.Restarting = restarting && sc.GracefulRestartTime > 0
	return env.NewSpeaker(sc, log.With("component", "bgp"))
}

// speakerConfig turns [bgp] into the speaker's configuration. The router
// ID defaults to the primary IPv4 address of the first instance's
// interface.
func speakerConfig(cfg *config.Config, env Env) (bgp.Config, error) {
	read := env.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	var id netip.Addr
	if !cfg.BGP.RouterID.IsValid() {
		for _, ic := range cfg.Instances {
			if ic.Interface == "" {
				continue
			}
			if a, err := env.Links.PrimaryIPv4(ic.Interface, ic.VIPs); err == nil {
				id = a
				break
			}
		}
		if !id.IsValid() {
			return bgp.Config{}, errors.New("bgp: router_id is not set and no instance's interface has an IPv4 address to take it from: set router_id")
		}
	}
	return cfg.BGP.SpeakerConfig(id, read)
}

// routeAnnouncer announces an instance's VIPs as host routes. It remembers
// what it announced, so that a burst of announcements sends one update.
type routeAnnouncer struct {
	speaker RouteSpeaker
	attrs   bgp.Attrs
	log     *slog.Logger

	mu        sync.Mutex
	announced map[netip.Prefix]bool
	shut      bool // announced with GRACEFUL_SHUTDOWN, awaiting the withdraw
}

func newRouteAnnouncer(s RouteSpeaker, ib config.InstanceBGP, log *slog.Logger) *routeAnnouncer {
	return &routeAnnouncer{speaker: s, attrs: ib.Attrs(), log: log, announced: map[netip.Prefix]bool{}}
}

func hostRoute(vip netip.Addr) netip.Prefix { return netip.PrefixFrom(vip, vip.BitLen()) }

// Announce advertises the route of vip (once; again after a withdraw).
func (r *routeAnnouncer) Announce(vip netip.Addr) error {
	p := hostRoute(vip)
	r.mu.Lock()
	done := r.announced[p] && !r.shut
	r.mu.Unlock()
	if done {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), bgpTimeout)
	defer cancel()
	if err := r.speaker.Announce(ctx, p, r.attrs); err != nil {
		return fmt.Errorf("bgp announce %v: %w", p, err)
	}
	r.mu.Lock()
	r.announced[p] = true
	r.shut = false
	r.mu.Unlock()
	r.log.Info("route announced", "vip", p)
	return nil
}

// Probe has no BGP meaning: a second owner shows in the routers' tables.
func (r *routeAnnouncer) Probe(netip.Addr, netip.Addr) error { return nil }

func (r *routeAnnouncer) Close() error { return nil }

// shutdown re-announces every route with GRACEFUL_SHUTDOWN (RFC 8326): the
// routers move traffic to the other paths before the withdraw.
func (r *routeAnnouncer) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shut = true
	for p := range r.announced {
		ctx, cancel := context.WithTimeout(context.Background(), bgpTimeout)
		if err := r.speaker.GracefulShutdown(ctx, p); err != nil {
			r.log.Warn("bgp graceful shutdown failed", "vip", p, "error", err)
		} else {
			r.log.Info("route announced with GRACEFUL_SHUTDOWN before its withdraw", "vip", p)
		}
		cancel()
	}
}

// withdraw withdraws every route announced.
func (r *routeAnnouncer) withdraw(cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.announced {
		ctx, cancel := context.WithTimeout(context.Background(), bgpTimeout)
		if err := r.speaker.Withdraw(ctx, p); err != nil {
			r.log.Warn("bgp withdraw failed", "vip", p, "error", err)
		} else {
			r.log.Info("route withdrawn", "vip", p, "cause", cause)
		}
		cancel()
		delete(r.announced, p)
	}
	r.shut = false
}

// withdrawRoute withdraws one route, if announced.
func (r *routeAnnouncer) withdrawRoute(p netip.Prefix, cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.announced[p] {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), bgpTimeout)
	defer cancel()
	if err := r.speaker.Withdraw(ctx, p); err != nil {
		r.log.Warn("bgp withdraw failed", "vip", p, "error", err)
		return
	}
	delete(r.announced, p)
	r.log.Info("route withdrawn", "vip", p, "cause", cause)
}

// draining reports whether the routes are announced with GRACEFUL_SHUTDOWN.
func (r *routeAnnouncer) draining() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.shut && len(r.announced) > 0
}

// routes lists the announced routes, for status.
func (r *routeAnnouncer) routes() []netip.Prefix {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]netip.Prefix, 0, len(r.announced))
	for p := range r.announced {
		out = append(out, p)
	}
	return out
}

// BGPPeers are the speaker's peers, for status and metrics; nil without
// [bgp].
func (d *Daemon) BGPPeers() []bgp.PeerStatus {
	if d.speaker == nil {
		return nil
	}
	return d.speaker.Peers()
}
