package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"time"

	"github.com/vipd/vipd/bgp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/vrrp"
)

// A ReloadOutcome is what one reload did.
type ReloadOutcome struct {
	// Changes are what changed, in words, one per line.
	Changes []string
	// Restarted names the instances that were replaced, with why: their
	// identity (VRID, interface) changed, so their address may move.
	Restarted []string
	// Upgrade is the new binary that takes over, if a package upgrade put
	// one on disk: the reload is its to finish (a re-exec, same PID).
	Upgrade string
	// Problems say why a reload was refused, as FILE:LINE: message.
	Problems []string
}

// ErrReloadRefused is returned (wrapped) when a reload changed nothing
// because the configuration or the new binary refused it.
var ErrReloadRefused = errors.New("reload refused; the running configuration is kept")

// Reload is the one way a running daemon changes: SIGHUP, `vipd reload` and
// a package upgrade all come here, one at a time. A new binary on disk is
// checked and re-executed (Options.Upgrade); otherwise the file is read and
// every instance's change is prepared and checked before any is applied,
// so a refused reload changes nothing at all. An instance whose VRID and
// interface are unchanged is changed in place through its election loop:
// its priority, interval, addresses, trackers and transport (unicast or
// multicast, the source) change without moving the address.
func (d *Daemon) Reload(ctx context.Context) (ReloadOutcome, error) {
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	if d.opts.Upgrade != nil {
		bin, err := d.opts.Upgrade(ctx)
		if err != nil {
			out := ReloadOutcome{}
			var uerr *UpgradeRefused
			if errors.As(err, &uerr) {
				out.Problems = uerr.Problems
			}
			return out, fmt.Errorf("%w: %w", ErrReloadRefused, err)
		}
		if bin != "" {
			return ReloadOutcome{
				Upgrade: bin,
				Changes: []string{fmt.Sprintf("new binary %s: re-executing it with the running state (same PID; Masters stay Masters)", bin)},
			}, nil
		}
	}
	d.mu.Lock()
	path, prev := d.cfg.Path, d.cfg
	d.mu.Unlock()
	next, err := d.opts.Load(path)
	if err == nil {
		if cerr := CheckTrackers(next); cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		out := ReloadOutcome{}
		var cerr *config.Error
		if errors.As(err, &cerr) {
			for _, p := range cerr.Problems {
				out.Problems = append(out.Problems, p.String())
			}
		} else {
			out.Problems = []string{err.Error()}
		}
		return out, fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}
	plan, err := d.plan(ctx, prev, next)
	if err != nil {
		return ReloadOutcome{Problems: []string{err.Error()}}, fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}
	if err := d.commit(ctx, plan); err != nil {
		return plan.outcome, err
	}
	if d.opts.OnReload != nil {
		d.opts.OnReload(next)
	}
	if len(plan.outcome.Changes) == 0 {
		d.log.Info("configuration reloaded: no changes")
	} else {
		d.log.Info("configuration reloaded", "changes", plan.outcome.Changes)
	}
	return plan.outcome, nil
}

// reloadPlan is a checked reload, not applied yet.
type reloadPlan struct {
	next    *config.Config
	bgp     *bgp.Config // the speaker's new configuration; nil: unchanged
	outcome ReloadOutcome
	stop    []*running
	start   []*config.Instance // next's
	keep    []*running
	updates []*instanceUpdate // beside keep
}

// plan compares prev and next and prepares every kept instance's change on
// its goroutine. Nothing changes yet; a failure refuses the reload.
func (d *Daemon) plan(ctx context.Context, prev, next *config.Config) (*reloadPlan, error) {
	p := &reloadPlan{next: next}
	note := func(s string) { p.outcome.Changes = append(p.outcome.Changes, s) }
	if g := next.Global; g != prev.Global {
		if g.LogLevel != prev.Global.LogLevel {
			note(fmt.Sprintf("global: log_level %v -> %v", prev.Global.LogLevel, g.LogLevel))
		}
		g.LogLevel = prev.Global.LogLevel
		if g != prev.Global {
			note("global: node_name, socket, socket_group, state_dir, log_format, metrics_listen, realtime_priority, realtime_policy or lock_memory changed: they take effect at the next restart")
		}
	}
	if err := d.planBGP(p, prev, next); err != nil {
		return nil, err
	}
	byName := map[string]*running{}
	for _, r := range d.snapshot() {
		byName[r.in.id.name] = r
	}
	prevFollow := map[string]string{}
	prevAnnounce := map[string]config.Announce{}
	for _, ic := range prev.Instances {
		prevFollow[ic.Name] = ic.Follow
		prevAnnounce[ic.Name] = ic.Announce
	}
	for i := range next.Instances {
		ic := &next.Instances[i]
		r, ok := byName[ic.Name]
		delete(byName, ic.Name)
		switch {
		case !ok:
			p.start = append(p.start, ic)
			note(fmt.Sprintf("%s: new instance (VRID %d on %s)", ic.Name, ic.VRID, ic.Interface))
		case r.in.id.vrid != ic.VRID || r.in.id.ifname != ic.Interface || prevFollow[ic.Name] != ic.Follow || prevAnnounce[ic.Name] != ic.Announce:
			p.stop = append(p.stop, r)
			p.start = append(p.start, ic)
			why := fmt.Sprintf("%s: VRID %d on %s -> VRID %d on %s: restarted (its address moves if this host held it)",
				ic.Name, r.in.id.vrid, r.in.id.ifname, ic.VRID, ic.Interface)
			if prevFollow[ic.Name] != ic.Follow {
				why = fmt.Sprintf("%s: follow %q -> %q: restarted (its address moves if this host held it)", ic.Name, prevFollow[ic.Name], ic.Follow)
			}
			if prevAnnounce[ic.Name] != ic.Announce {
				why = fmt.Sprintf("%s: announce %s -> %s: restarted (its address moves if this host held it)", ic.Name, prevAnnounce[ic.Name], ic.Announce)
			}
			note(why)
			p.outcome.Restarted = append(p.outcome.Restarted, why)
		default:
			var u *instanceUpdate
			var perr error
			if err := r.in.do(ctx, func() { u, perr = r.in.prepare(ic) }); err != nil {
				return nil, fmt.Errorf("instance %q: %w", ic.Name, err)
			}
			if perr != nil {
				return nil, fmt.Errorf("instance %q: %w", ic.Name, perr)
			}
			u.probeEvery = probeEveryOn(next, ic)
			p.outcome.Changes = append(p.outcome.Changes, u.notes...)
			p.keep = append(p.keep, r)
			p.updates = append(p.updates, u)
		}
	}
	for _, r := range d.snapshot() {
		if _, gone := byName[r.in.id.name]; gone {
			p.stop = append(p.stop, r)
			note(fmt.Sprintf("%s: removed: released gracefully", r.in.id.name))
		}
	}
	return p, nil
}

// commit applies a plan: stop first (a VIP or VRID that moves between
// instances must be free), then change the kept instances, then start the
// new ones.
func (d *Daemon) commit(ctx context.Context, p *reloadPlan) error {
	for _, r := range p.stop {
		r.in.cancel()
		<-r.in.stopped
	}
	var errs []error
	if p.bgp != nil {
		// Peers change in place; unrelated sessions stay up.
		if err := d.speaker.Reconfigure(ctx, *p.bgp); err != nil {
			errs = append(errs, fmt.Errorf("bgp: %w", err))
		}
	}
	for i, r := range p.keep {
		u := p.updates[i]
		if err := r.in.do(ctx, func() { r.in.apply(u) }); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", r.in.id.name, err))
		}
	}
	d.mu.Lock()
	d.cfg = p.next
	d.instances = p.keep
	for _, ic := range p.start {
		r := &running{in: d.newInstance(new(instance), ic, p.next)}
		d.instances = append(d.instances, r)
		if d.running {
			d.startLocked(r)
		}
	}
	d.mu.Unlock()
	return errors.Join(errs...)
}

// instanceUpdate is one instance's prepared change.
type instanceUpdate struct {
	cfg      *config.Instance // the next configuration's
	filter   readFilter
	machine  vrrp.Config // valid when hasMachine
	source   netip.Addr
	reopen   bool
	trackers []*health.Tracker // built, not started; nil when unchanged
	tracks   bool              // the trackers changed
	notes    []string
	// probeEvery under the new configuration (probeEveryOn).
	probeEvery time.Duration
}

// prepare checks a changed configuration against the running instance, on
// its goroutine, and builds what it needs; it changes nothing.
func (in *instance) prepare(ic *config.Instance) (*instanceUpdate, error) {
	old := in.cfg
	u := &instanceUpdate{cfg: ic, filter: readFilter{peers: ic.UnicastPeers}}
	note := func(format string, args ...any) {
		u.notes = append(u.notes, in.id.name+": "+fmt.Sprintf(format, args...))
	}
	// Trackers that cannot be built refuse the reload before anything
	// changed.
	if !sameTracks(old.Tracks, ic.Tracks) {
		ts, err := in.buildTrackers(ic.Tracks)
		if err != nil {
			return nil, err
		}
		u.trackers, u.tracks = ts, true
		note("trackers changed: restarted (%d)", len(ic.Tracks))
	}
	u.source = in.primary
	if old.UnicastSource != ic.UnicastSource {
		if in.primary.IsValid() {
			src, err := in.source(ic)
			if err != nil {
				return nil, fmt.Errorf("the new source address: %w", err)
			}
			u.source = src
		}
		note("unicast_source %v -> %v: socket reopened, state kept", old.UnicastSource, ic.UnicastSource)
	}
	if (len(old.UnicastPeers) > 0) != (len(ic.UnicastPeers) > 0) || u.source != in.primary {
		u.reopen = in.sock != nil
		if mode(old) != mode(ic) {
			note("%s -> %s: socket reopened, state kept", mode(old), mode(ic))
		}
	}
	if in.m != nil {
		saved := in.primary
		in.primary = u.source
		u.machine = in.machineConfig(ic)
		in.primary = saved
		// A machine of its own checks the new configuration: the running
		// one must not change before every instance has passed.
		if _, err := vrrp.NewMachine(u.machine, clock{in.env.Now}); err != nil {
			return nil, err
		}
	}
	if old.Priority != ic.Priority {
		note("priority %d -> %d", old.Priority, ic.Priority)
	}
	if old.AdvertInterval != ic.AdvertInterval {
		note("advert_interval %v -> %v", old.AdvertInterval, ic.AdvertInterval)
	}
	if old.Preempt != ic.Preempt || old.PreemptDelay != ic.PreemptDelay {
		note("preempt %v/%v -> %v/%v", old.Preempt, old.PreemptDelay, ic.Preempt, ic.PreemptDelay)
	}
	if old.Version != ic.Version || old.AcceptOtherVersion != ic.AcceptOtherVersion {
		note("VRRP version %s -> %s: state kept", versionText(old), versionText(ic))
	}
	if old.AuthPass != ic.AuthPass {
		note("auth_pass changed")
	}
	if old.AddressOwner != ic.AddressOwner {
		note("address_owner %v -> %v", old.AddressOwner, ic.AddressOwner)
	}
	if old.GARP != ic.GARP {
		note("garp %+v -> %+v", old.GARP, ic.GARP)
	}
	if !slices.Equal(old.UnicastPeers, ic.UnicastPeers) {
		note("unicast_peers %v -> %v", old.UnicastPeers, ic.UnicastPeers)
	}
	if !slices.Equal(old.VIPs, ic.VIPs) {
		note("vips %v -> %v", old.VIPs, ic.VIPs)
	}
	if !reflect.DeepEqual(old.Notify, ic.Notify) {
		note("notify hooks changed")
	}
	return u, nil
}

// versionText is the version sent and, while moving between versions, the
// other one accepted.
func versionText(ic *config.Instance) string {
	if ic.AcceptOtherVersion {
		return fmt.Sprintf("%d (accepting 2 and 3)", ic.Version)
	}
	return fmt.Sprint(ic.Version)
}

// apply commits a prepared change; it cannot fail. The machine keeps its
// state: a Master stays Master.
func (in *instance) apply(u *instanceUpdate) {
	// The next advert is judged by the new configuration, at once.
	in.clearQuiet()
	oldVIPs := in.cfg.VIPs
	in.cfg = u.cfg
	in.filter.Store(&u.filter)
	if u.tracks {
		in.stopTrackers()
		in.startTrackers(u.trackers, u.cfg.Tracks)
	}
	if u.source.IsValid() {
		in.setPrimary(u.source)
	}
	in.pubMu.Lock()
	in.pub.base, in.pub.interval, in.pub.version = u.cfg.Priority, u.cfg.AdvertInterval, u.cfg.Version
	in.pubMu.Unlock()
	if in.m != nil {
		// Checked in prepare with the same configuration.
		if err := in.m.Reconfigure(u.machine); err != nil {
			in.log.Error("reconfiguring the election failed after its check passed", "error", err)
		}
	}
	now := in.env.Now()
	in.probeEvery = u.probeEvery // also for a policy built later
	if in.policy != nil {
		in.policy.SetConfig(policyConfig(u.cfg, in.ann != nil && in.ann.monitor != nil, u.probeEvery), now)
	}
	if in.ann != nil {
		vips := make([]netip.Addr, 0, len(u.cfg.VIPs))
		for _, v := range u.cfg.VIPs {
			vips = append(vips, v.Addr())
		}
		in.announcers.setVIPs(in.ann, in, vips)
	}
	if added := in.holder.setVIPs(u.cfg.VIPs); len(added) > 0 && in.policy != nil {
		in.runPolicy(in.policy.Reannounce(now, nil))
	} else if in.policy != nil {
		in.armPolicy()
	}
	in.reopen = u.reopen
	if u.cfg.Announce == config.AnnounceBGPAnycast && in.routes != nil {
		in.anycastVIPs(oldVIPs)
	}
	in.applyPriority()
}

// sameTracks compares tracker configurations, ignoring where in the file
// they are: moving a block must not reset its state.
func sameTracks(a, b []config.Track) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Line, y.Line = 0, 0
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// planBGP checks a changed [bgp] table: peers change in place; the AS, the
// router ID and the listen port, or a speaker added or removed, wait for
// the next restart.
func (d *Daemon) planBGP(p *reloadPlan, prev, next *config.Config) error {
	if reflect.DeepEqual(prev.BGP, next.BGP) {
		return nil
	}
	if d.speaker == nil || next.BGP == nil {
		p.outcome.Changes = append(p.outcome.Changes, "bgp: [bgp] added or removed: it takes effect at the next restart")
		return nil
	}
	sc, err := speakerConfig(next, d.env)
	if err != nil {
		return err
	}
	old, _ := speakerConfig(prev, d.env)
	if sc.ASN != old.ASN || sc.RouterID != old.RouterID || sc.ListenPort != old.ListenPort || sc.GracefulRestartTime != old.GracefulRestartTime {
		p.outcome.Changes = append(p.outcome.Changes, "bgp: asn, router_id, listen_port or graceful_restart_time changed: they take effect at the next restart")
		sc.ASN, sc.RouterID, sc.ListenPort, sc.GracefulRestartTime = old.ASN, old.RouterID, old.ListenPort, old.GracefulRestartTime
	}
	p.bgp = &sc
	p.outcome.Changes = append(p.outcome.Changes, fmt.Sprintf("bgp: peers changed in place (%d)", len(sc.Peers)))
	return nil
}
