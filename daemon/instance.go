package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipd/vipd/announce"
	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// waitRetry is how often an instance looks again for a missing interface or
// address when no link event arrives.
const waitRetry = time.Second

// counters are read by status while the instance runs.
type counters struct {
	advertsSent     atomic.Uint64
	advertsReceived atomic.Uint64
	garpSent        atomic.Uint64
	transitions     atomic.Uint64
	conflicts       atomic.Uint64      // claims of our VIPs by another MAC while Master
	drops           [256]atomic.Uint64 // by vrrp.DropReason
}

// instance drives one virtual router: it feeds the election (vrrp.Machine)
// and the announcement policy (announce.Policy) with events, and carries
// out their actions through the address holder and the announcer. It owns
// one goroutine (run); everything below "owned by run" is touched only
// there, and other goroutines reach it through do.
type instance struct {
	// id never changes: other goroutines may read it without a lock.
	id       instanceID
	log      *slog.Logger
	env      Env
	hooks    instanceHooks
	stateDir string

	links          chan netif.Event
	ready          chan struct{}
	once           sync.Once
	cmds           chan func() // run on the instance's goroutine
	stopped        chan struct{}
	packets        chan received
	trackerChanges chan health.Status
	claims         chan arp.Claim
	filter         atomic.Pointer[readFilter] // read by the reader goroutine

	counters counters
	dropMu   sync.Mutex // guards drops, collision, collisionAt
	drops    *dropLog

	pubMu sync.Mutex // guards pub
	pub   published

	// Owned by run.
	cfg       config.Instance
	m         *vrrp.Machine
	policy    *announce.Policy
	holder    *addressHolder
	notify    *hookRunner
	resume    *InstanceHandover // from the previous process, at start only
	detach    bool              // stop without releasing: a re-exec takes over
	trackers  *trackerSet
	drained   bool
	drainNote string
	primary   netip.Addr
	conn      transport.Conn
	reader    *reader
	announcer Announcer
	monitor   ARPMonitor
	stopMon   func()
	linkIndex int
	sendBuf   []byte
	timers    [4]*time.Timer // by vrrp.Timer
	dueAt     [4]time.Time   // when a precise timer is really due
	policyT   *time.Timer
	reopen    bool // a reload changed the transport

	// collision is the latest VRID collision in words (dropMu).
	collision   string
	collisionAt time.Time
}

// instanceID is what identifies an instance for its whole life: a reload
// that changes it replaces the instance.
type instanceID struct {
	name, ifname string
	vrid         uint8
}

// instanceHooks report to the daemon; they must not block.
type instanceHooks struct {
	transition   func(instance string, tr vrrp.Transition)
	conflict     func(instance string)
	trackerCheck func(instance, tracker string, d time.Duration, ok bool)
	held         func() // the set of held addresses may have changed
	hookRunners  *sync.WaitGroup
}

func newInstance(ic config.Instance, siblings []uint8, stateDir string, log *slog.Logger, env Env, hooks instanceHooks) *instance {
	in := &instance{
		id:             instanceID{name: ic.Name, ifname: ic.Interface, vrid: ic.VRID},
		hooks:          hooks,
		stateDir:       stateDir,
		cmds:           make(chan func(), 4),
		trackerChanges: make(chan health.Status),
		cfg:            ic,
		log:            log.With("instance", ic.Name, "vrid", ic.VRID, "interface", ic.Interface),
		env:            env,
		links:          make(chan netif.Event, 16),
		ready:          make(chan struct{}),
		stopped:        make(chan struct{}),
		packets:        make(chan received, 64),
		claims:         make(chan arp.Claim, 64),
		drops:          newDropLog(dropReportEvery, dropLinesPerReason, dropWindow),
	}
	in.filter.Store(&readFilter{vrid: ic.VRID, siblings: siblings, peers: ic.UnicastPeers})
	in.holder = newAddressHolder(env.Links, ic.Interface, ic.VIPs, in.log, in.heldChanged)
	in.drained, in.drainNote = in.loadDrain()
	in.pub = published{
		vips: ic.VIPs, base: ic.Priority, interval: ic.AdvertInterval,
		drained: in.drained, drainNote: in.drainNote, state: vrrp.StateInitialize,
	}
	in.pub.priority = in.effectivePriority()
	return in
}

// Drop logging limits: once per (reason, source) per dropReportEvery, and
// at most dropLinesPerReason lines per reason per dropWindow.
const (
	dropReportEvery    = 10 * time.Minute
	dropLinesPerReason = 10
	dropWindow         = time.Minute
)

// do runs fn on the instance's goroutine, which owns the machine, and waits
// for it. It fails if the goroutine does not take it before ctx ends.
func (in *instance) do(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	select {
	case in.cmds <- func() { fn(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-in.stopped:
		return errStopped
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-in.stopped:
		return errStopped
	}
}

var errStopped = errors.New("instance stopped")

// linkEvent hands a link or address event to the instance without blocking
// the watcher for long: an instance that is busy stopping drops it.
func (in *instance) linkEvent(ev netif.Event) {
	select {
	case in.links <- ev:
	case <-time.After(time.Second):
		in.log.Warn("link event dropped: instance busy", "event", ev.Kind.String())
	}
}

func (in *instance) markReady() { in.once.Do(func() { close(in.ready) }) }

func (in *instance) run(ctx context.Context) error {
	defer close(in.stopped)
	defer in.markReady()
	in.notify = newHookRunner(in.log, in.hooks.hookRunners)
	defer func() {
		if in.detach {
			in.notify.abandon()
		} else {
			in.notify.close()
		}
	}()
	ts, err := in.buildTrackers(in.cfg.Tracks)
	if err != nil {
		return err
	}
	in.startTrackers(ts, in.cfg.Tracks)
	defer in.stopTrackers()
	for i := range in.timers {
		in.timers[i] = stoppedTimer()
	}
	in.policyT = stoppedTimer()
	for {
		ifi, up, err := in.waitLink(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return in.stop()
			}
			return err
		}
		if err := in.open(ifi); err != nil {
			return err
		}
		if in.m == nil {
			if in.m, err = vrrp.NewMachine(in.machineConfig(in.cfg), clock{in.env.Now}); err != nil {
				in.close()
				return err
			}
			in.policy = announce.New(policyConfig(in.cfg, in.monitor != nil), ifi.HardwareAddr.String())
			_, fault := in.health()
			in.m.SetFault(fault, nil)
			if r := in.resume; r != nil {
				in.log.Info("resuming the previous process's state", "state", r.State, "held", r.Held)
				// The resumed transition below is not a move.
				in.counters.transitions.Store(r.Transitions - 1)
				in.exec(in.m.Resume(up, r.State == vrrp.StateMaster.String() && r.Held, nil))
				in.resume = nil
			} else {
				in.exec(in.m.Start(up, nil))
			}
		} else {
			in.exec(in.m.SetLink(up, nil))
		}
		in.markReady()
		gone, err := in.loop(ctx)
		if err != nil || !gone {
			return err
		}
	}
}

// machineConfig is the election's view of ic.
func (in *instance) machineConfig(ic config.Instance) vrrp.Config {
	cfg := vrrp.Config{
		Interface:          ic.Interface,
		VRID:               ic.VRID,
		Priority:           in.effectivePriority(),
		AdvertInterval:     ic.AdvertInterval,
		Preempt:            ic.Preempt,
		PreemptDelay:       ic.PreemptDelay,
		Primary:            in.primary,
		SplitBrainRecovery: ic.SplitBrainRecovery,
		TakeoverGrace:      takeoverGrace(ic.AdvertInterval),
	}
	for _, v := range ic.VIPs {
		cfg.Addresses = append(cfg.Addresses, v.Addr())
	}
	return cfg
}

// policyConfig is the announcement policy's view of ic; without a claim
// monitor there is nothing to probe for.
func policyConfig(ic config.Instance, monitor bool) announce.Config {
	cfg := announce.Config{
		Repeat: ic.GARP.Repeat, Interval: ic.GARP.Interval, Refresh: ic.GARP.Refresh,
		ClaimGrace: min(ic.AdvertInterval, conflictGrace),
	}
	if monitor {
		cfg.ProbeEvery = probeEvery
	}
	return cfg
}

const (
	// probeEvery is how often a Master asks who else has its VIPs.
	probeEvery = time.Second
	// conflictGrace is how long a claim waits for an advert that explains it.
	conflictGrace = 20 * time.Millisecond
)

// source is the address adverts go out from: unicast_source, or the
// interface's primary IPv4 address.
func (in *instance) source(ic config.Instance) (netip.Addr, error) {
	if ic.UnicastSource.IsValid() {
		return ic.UnicastSource, nil
	}
	return in.env.Links.PrimaryIPv4(ic.Interface, ic.VIPs)
}

// waitLink waits until the interface exists and has a source address.
func (in *instance) waitLink(ctx context.Context) (*net.Interface, bool, error) {
	logged := false
	for {
		info, err := in.env.Links.Link(in.cfg.Interface)
		if err == nil {
			var src netip.Addr
			if src, err = in.source(in.cfg); err == nil {
				if in.primary.IsValid() && in.primary != src {
					in.log.Warn("primary address changed; keeping the first one for this run", "address", src)
				} else {
					in.setPrimary(src)
				}
				ifi := &net.Interface{Index: info.Index, Name: info.Name, HardwareAddr: info.HardwareAddr, MTU: 1500}
				return ifi, info.Up, nil
			}
		}
		if !errors.Is(err, netif.ErrNoLink) && !errors.Is(err, netif.ErrNoAddress) {
			return nil, false, fmt.Errorf("interface %s: %w", in.cfg.Interface, err)
		}
		if !logged {
			in.log.Warn("waiting for the interface and its IPv4 address", "reason", err)
			logged = true
		}
		t := time.NewTimer(waitRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, ctx.Err()
		case <-in.links:
		case cmd := <-in.cmds:
			cmd()
		case st := <-in.trackerChanges:
			in.onTracker(st)
		case <-t.C:
		}
		t.Stop()
	}
}

func (in *instance) setPrimary(src netip.Addr) {
	in.primary = src
	in.pubMu.Lock()
	in.pub.primary = src
	in.pubMu.Unlock()
}

func (in *instance) open(ifi *net.Interface) error {
	if err := in.openVRRP(ifi); err != nil {
		return err
	}
	ann, err := in.env.DialARP(ifi)
	if err != nil {
		in.close()
		return err
	}
	in.announcer, in.linkIndex = ann, ifi.Index
	if in.env.ListenARP != nil {
		mon, err := in.env.ListenARP(ifi)
		if err != nil {
			// Detection of a second owner is a help, not a requirement.
			in.log.Warn("cannot watch ARP for a second owner of the VIPs", "error", err)
		} else {
			in.monitor = mon
		}
	}
	in.log.Info("joined", "source", in.primary, "mode", mode(in.cfg))
	return nil
}

func (in *instance) openVRRP(ifi *net.Interface) error {
	conn, err := in.env.ListenVRRP(ifi, transport.Options{Source: in.primary, Unicast: len(in.cfg.UnicastPeers) > 0})
	if err != nil {
		return err
	}
	in.conn = conn
	return nil
}

func mode(ic config.Instance) string {
	if len(ic.UnicastPeers) > 0 {
		return "unicast"
	}
	return "multicast"
}

func (in *instance) close() {
	if in.conn != nil {
		in.conn.Close()
		in.conn = nil
	}
	if in.announcer != nil {
		in.announcer.Close()
		in.announcer = nil
	}
	if in.monitor != nil {
		in.monitor.Close()
		in.monitor = nil
	}
}

// stop ends the election gracefully, or, detached for a re-exec, just
// closes the sockets and leaves the addresses to the next process.
func (in *instance) stop() error {
	if in.detach {
		in.close()
		in.log.Info("detached: the next process takes over")
		return nil
	}
	if in.m != nil {
		in.exec(in.m.Shutdown(nil))
	}
	in.close()
	return nil
}

// loop runs the election on an open socket until ctx ends (graceful stop,
// returns false) or the link disappears (returns true: wait and reopen).
func (in *instance) loop(ctx context.Context) (linkGone bool, err error) {
	in.startReader()
	in.startMonitor()
	defer func() {
		in.stopReader()
		in.stopMonitor()
	}()
	out := make([]vrrp.Action, 0, 16)
	for {
		out = out[:0]
		var readErr <-chan error
		if in.reader != nil {
			readErr = in.reader.done
		}
		select {
		case <-ctx.Done():
			return false, in.stop()
		case p := <-in.packets:
			var err error
			out, err = in.m.ReceiveAdvert(p.src, p.ttl, &p.adv, out)
			if err != nil {
				in.drop(err, p.src, &p.adv)
				continue
			}
			in.counters.advertsReceived.Add(1)
		case <-in.timers[vrrp.TimerAdvert].C:
			out = in.m.TimerFired(vrrp.TimerAdvert, out)
		case <-in.timers[vrrp.TimerMasterDown].C:
			in.waitUntil(in.dueAt[vrrp.TimerMasterDown])
			out = in.m.TimerFired(vrrp.TimerMasterDown, out)
		case <-in.timers[vrrp.TimerTakeover].C:
			in.waitUntil(in.dueAt[vrrp.TimerTakeover])
			out = in.m.TimerFired(vrrp.TimerTakeover, out)
		case <-in.policyT.C:
			in.runPolicy(in.policy.Tick(in.env.Now(), nil))
			continue
		case c := <-in.claims:
			in.onClaim(c)
			continue
		case cmd := <-in.cmds:
			cmd()
			if in.reopen {
				if err := in.reopenVRRP(); err != nil {
					in.stop()
					return false, err
				}
			}
			continue
		case st := <-in.trackerChanges:
			in.onTracker(st)
			continue
		case ev := <-in.links:
			out = in.onLinkEvent(ev, out)
			if ev.Kind == netif.LinkGone || (ev.Index != 0 && ev.Index != in.linkIndex && ev.Kind != netif.AddrAdded && ev.Kind != netif.AddrRemoved) {
				in.exec(out)
				in.stopReader()
				in.stopMonitor()
				in.close()
				in.log.Warn("interface gone; waiting for it to return")
				return true, nil
			}
		case err := <-readErr:
			in.reader.done <- err // for the deferred wait
			if ctx.Err() != nil {
				return false, in.stop()
			}
			in.stop()
			return false, fmt.Errorf("reading adverts: %w", err)
		}
		in.exec(out)
	}
}

// reopenVRRP replaces the VRRP socket after a reload changed the transport
// (unicast and multicast, the source): the machine, its timers and the
// addresses stay as they are, so a Master stays Master.
func (in *instance) reopenVRRP() error {
	in.reopen = false
	in.stopReader()
	if in.conn != nil {
		in.conn.Close()
		in.conn = nil
	}
	info, err := in.env.Links.Link(in.cfg.Interface)
	if err != nil {
		return fmt.Errorf("reopening the VRRP socket: %w", err)
	}
	ifi := &net.Interface{Index: info.Index, Name: info.Name, HardwareAddr: info.HardwareAddr, MTU: 1500}
	if err := in.openVRRP(ifi); err != nil {
		return fmt.Errorf("reopening the VRRP socket: %w", err)
	}
	in.startReader()
	in.log.Info("VRRP socket reopened", "source", in.primary, "mode", mode(in.cfg))
	return nil
}

func (in *instance) onLinkEvent(ev netif.Event, out []vrrp.Action) []vrrp.Action {
	switch ev.Kind {
	case netif.LinkUp:
		return in.m.SetLink(true, out)
	case netif.LinkDown, netif.LinkGone:
		return in.m.SetLink(false, out)
	case netif.AddrRemoved:
		if st, _ := in.m.State(); st == vrrp.StateMaster && in.holder.restore(ev.Prefix) {
			in.runPolicy(in.policy.Reannounce(in.env.Now(), nil))
		}
	}
	return out
}

// exec publishes the machine's state for readers on other goroutines, then
// carries out its actions in order. The machine has moved before it returns
// actions and does not move while they run, so one publication, first,
// serves status and the transition hooks alike.
func (in *instance) exec(actions []vrrp.Action) {
	in.publish()
	for _, a := range actions {
		switch a.Kind {
		case vrrp.ActSendAdvert:
			in.sendAdvert(a.Priority)
		case vrrp.ActTakeAddresses:
			in.holder.take()
			in.runPolicy(in.policy.TookOver(in.env.Now(), nil))
		case vrrp.ActReleaseAddresses:
			in.policy.Released()
			in.holder.release()
			in.armPolicy()
		case vrrp.ActAnnounce:
			in.runPolicy(in.policy.Reannounce(in.env.Now(), nil))
		case vrrp.ActArmTimer:
			after := a.After
			if a.Timer != vrrp.TimerAdvert {
				// Go's timers wake through epoll in whole milliseconds and
				// so fire up to a millisecond late; a takeover should not.
				// Wake early and wait out the rest (waitUntil).
				in.dueAt[a.Timer] = in.env.Now().Add(after)
				after = max(after-timerLead, 0)
			}
			in.timers[a.Timer].Reset(after)
		case vrrp.ActStopTimer:
			in.timers[a.Timer].Stop()
		case vrrp.ActTransition:
			in.transition(a.Transition)
		}
	}
}

func (in *instance) sendAdvert(prio uint8) {
	if in.conn == nil {
		return
	}
	adv := vrrp.Advertisement{VRID: in.cfg.VRID, Priority: prio, Interval: in.cfg.AdvertInterval}
	for _, v := range in.cfg.VIPs {
		adv.Addresses = append(adv.Addresses, v.Addr())
	}
	dsts := in.cfg.UnicastPeers
	if len(dsts) == 0 {
		dsts = []netip.Addr{vrrp.GroupIPv4}
	}
	for _, dst := range dsts {
		var err error
		in.sendBuf, err = adv.Append(in.sendBuf[:0], in.primary, dst)
		if err == nil {
			err = in.conn.WriteTo(in.sendBuf, dst)
		}
		if err != nil {
			in.log.Warn("sending advert failed", "destination", dst, "error", err)
			continue
		}
		in.counters.advertsSent.Add(1)
	}
	in.pubMu.Lock()
	in.pub.lastSent = in.env.Now()
	in.pubMu.Unlock()
}

// heldChanged is the holder's report: publish it and rewrite held.json.
func (in *instance) heldChanged(held bool, vips []netip.Prefix) {
	in.pubMu.Lock()
	in.pub.held, in.pub.vips = held, vips
	in.pubMu.Unlock()
	if in.hooks.held != nil {
		in.hooks.held()
	}
}

func (in *instance) transition(tr vrrp.Transition) {
	in.counters.transitions.Add(1)
	in.pubMu.Lock()
	in.pub.last = tr
	in.pubMu.Unlock()
	in.log.Info("state changed", "from", tr.From.String(), "to", tr.To.String(), "reason", tr.Reason.String(), "cause", tr.Cause)
	if in.drained && tr.To == vrrp.StateMaster {
		// Said loudly: the operator asked for the opposite.
		in.log.Error("drained, but no other node took over within Master_Down_Interval: holding the address, because an address with no owner is worse",
			"vips", in.cfg.VIPs)
	}
	if in.hooks.transition != nil {
		in.hooks.transition(in.id.name, tr)
	}
	in.runHook(tr)
}
