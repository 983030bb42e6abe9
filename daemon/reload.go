package daemon

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"slices"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/vrrp"
)

// ReloadConfig reads the configuration file again and applies it without
// releasing any address that is still configured: an instance whose VRID
// and interface are unchanged is changed in place, a new instance starts, a
// removed one stops gracefully, and one whose identity changed is replaced.
// A configuration that does not load changes nothing; its error is a
// *config.Error listing the problems.
func (d *Daemon) ReloadConfig(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	path := d.cfg.Path
	d.mu.Unlock()
	next, err := d.opts.Load(path)
	if err != nil {
		return nil, err
	}
	if cerr := CheckTrackers(next); cerr != nil {
		return nil, cerr
	}
	var changes []string
	d.mu.Lock()
	prevGlobal := d.cfg.Global
	d.mu.Unlock()
	if g := next.Global; g != prevGlobal {
		if g.LogLevel != prevGlobal.LogLevel {
			changes = append(changes, fmt.Sprintf("global: log_level %v -> %v", prevGlobal.LogLevel, g.LogLevel))
		}
		g.LogLevel = prevGlobal.LogLevel
		if g != prevGlobal {
			changes = append(changes, "global: node_name, socket, socket_group, state_dir, log_format or metrics_listen changed: they take effect at the next restart")
		}
	}
	old := d.snapshot()
	byName := map[string]*running{}
	for _, r := range old {
		byName[r.in.id.name] = r
	}
	var keep, stop []*running
	var start []config.Instance
	for _, ic := range next.Instances {
		r, ok := byName[ic.Name]
		delete(byName, ic.Name)
		switch {
		case !ok:
			start = append(start, ic)
			changes = append(changes, fmt.Sprintf("%s: new instance (VRID %d on %s)", ic.Name, ic.VRID, ic.Interface))
		case r.in.id.vrid != ic.VRID || r.in.id.ifname != ic.Interface || r.in.unicastSource != ic.UnicastSource:
			stop = append(stop, r)
			start = append(start, ic)
			changes = append(changes, fmt.Sprintf("%s: VRID, interface or source changed: restarted (VRID %d on %s)", ic.Name, ic.VRID, ic.Interface))
		default:
			var lines []string
			var rerr error
			sib := siblingVRIDs(next, ic)
			if err := r.in.do(ctx, func() { lines, rerr = r.in.reconfigure(ic, sib) }); err != nil {
				return changes, fmt.Errorf("instance %q: %w", ic.Name, err)
			}
			if rerr != nil {
				return changes, fmt.Errorf("instance %q: %w", ic.Name, rerr)
			}
			changes = append(changes, lines...)
			keep = append(keep, r)
		}
	}
	for _, r := range old {
		if _, gone := byName[r.in.id.name]; gone {
			stop = append(stop, r)
			changes = append(changes, fmt.Sprintf("%s: removed: released gracefully", r.in.id.name))
		}
	}
	// Stop first: a VIP or VRID that moves between instances must be free.
	for _, r := range stop {
		r.cancel()
		<-r.done
	}
	d.mu.Lock()
	d.cfg = next
	d.instances = keep
	for _, ic := range start {
		r := &running{in: d.newInstance(ic, next)}
		d.instances = append(d.instances, r)
		if d.runCtx != nil {
			d.startLocked(r)
		}
	}
	d.mu.Unlock()
	if len(changes) == 0 {
		d.log.Info("configuration reloaded: no changes")
	} else {
		d.log.Info("configuration reloaded", "changes", changes)
	}
	return changes, nil
}

// reconfigure applies a changed configuration in place, on the instance's
// goroutine, and says what changed.
func (in *instance) reconfigure(ic config.Instance, siblings []uint8) ([]string, error) {
	old := in.cfg
	var changes []string
	note := func(format string, args ...any) {
		changes = append(changes, in.id.name+": "+fmt.Sprintf(format, args...))
	}
	// Trackers are built first: one that cannot be built refuses the
	// reload before anything changed.
	tracksChanged := !sameTracks(old.Tracks, ic.Tracks)
	var trackers []*health.Tracker
	if tracksChanged {
		var err error
		if trackers, err = in.buildTrackers(ic.Tracks); err != nil {
			return nil, err
		}
	}
	if in.m != nil {
		vc := in.m.Config()
		vc.AdvertInterval, vc.Preempt, vc.PreemptDelay = ic.AdvertInterval, ic.Preempt, ic.PreemptDelay
		vc.SplitBrainRecovery = ic.SplitBrainRecovery
		vc.Addresses = vc.Addresses[:0:0]
		for _, v := range ic.VIPs {
			vc.Addresses = append(vc.Addresses, v.Addr())
		}
		if err := in.m.Reconfigure(vc); err != nil {
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
	if old.GARP != ic.GARP {
		note("garp %+v -> %+v", old.GARP, ic.GARP)
	}
	if !slices.Equal(old.UnicastPeers, ic.UnicastPeers) {
		note("unicast_peers %v -> %v", old.UnicastPeers, ic.UnicastPeers)
	}
	added, removed := diffPrefixes(old.VIPs, ic.VIPs)
	if len(added)+len(removed) > 0 {
		note("vips %v -> %v", old.VIPs, ic.VIPs)
	}
	if !reflect.DeepEqual(old.Notify, ic.Notify) {
		note("notify hooks changed")
	}
	if tracksChanged {
		note("trackers changed: restarted (%d)", len(ic.Tracks))
	}
	in.cfg = ic
	in.siblings = siblings
	if tracksChanged {
		in.stopTrackers()
		in.startTrackers(trackers, ic.Tracks)
	}
	in.peers.Store(&ic.UnicastPeers)
	in.vips = ic.VIPs
	in.mu.Lock()
	in.vipsPub, in.base, in.intervalPub = ic.VIPs, ic.Priority, ic.AdvertInterval
	in.mu.Unlock()
	if in.m != nil {
		if st, _ := in.m.State(); st == vrrp.StateMaster {
			// Keep what stays; add and announce what is new; drop what went.
			for _, v := range removed {
				if err := in.env.Links.RemoveVIP(ic.Interface, v); err != nil {
					in.log.Error("removing virtual address failed", "vip", v, "error", err)
				}
			}
			for _, v := range added {
				if err := in.env.Links.AddVIP(ic.Interface, v, in.label); err != nil {
					in.log.Error("adding virtual address failed", "vip", v, "error", err)
				}
			}
			if len(added) > 0 {
				in.startBurst()
			}
			if ic.GARP.Refresh != old.GARP.Refresh {
				in.refresh.Stop()
				if ic.GARP.Refresh > 0 {
					in.refresh.Reset(ic.GARP.Refresh)
				}
			}
		}
	}
	in.applyPriority()
	return changes, nil
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

func diffPrefixes(old, next []netip.Prefix) (added, removed []netip.Prefix) {
	for _, p := range next {
		if !slices.Contains(old, p) {
			added = append(added, p)
		}
	}
	for _, p := range old {
		if !slices.Contains(next, p) {
			removed = append(removed, p)
		}
	}
	return added, removed
}
