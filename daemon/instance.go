package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

// dropReportEvery limits how often the same drop reason from the same source
// is logged; counters count every one.
const dropReportEvery = 10 * time.Minute

type received struct {
	src netip.Addr
	ttl int
	adv vrrp.Advertisement
}

// counters are read by status while the instance runs.
type counters struct {
	advertsSent     atomic.Uint64
	advertsReceived atomic.Uint64
	garpSent        atomic.Uint64
	transitions     atomic.Uint64
	conflicts       atomic.Uint64      // ARP claims of our VIPs by another MAC while Master
	drops           [256]atomic.Uint64 // by vrrp.DropReason
}

// instance runs one virtual router.
type instance struct {
	cfg      config.Instance
	siblings []uint8 // VRIDs of other instances on the same interface
	log      *slog.Logger
	env      Env
	m        *vrrp.Machine
	vips     []netip.Prefix
	label    string

	links   chan netif.Event
	ready   chan struct{}
	once    sync.Once
	cmds    chan func() // run on the instance's goroutine
	stopped chan struct{}
	hooks   instanceHooks
	peers   atomic.Pointer[[]netip.Addr] // unicast peers, read by the reader goroutine

	// id never changes: other goroutines may read it without a lock.
	id            instanceID
	unicastSource netip.Addr // as configured; a change replaces the instance

	notify         *hookRunner
	resume         *InstanceHandover // from the previous process, at start only
	detach         bool              // stop without releasing: a re-exec takes over
	trackers       *trackerSet
	trackerChanges chan health.Status
	stateDir       string
	drained        bool // owned by the run goroutine; mirrored under mu for status
	drainNote      string

	counters     counters
	mu           sync.Mutex // guards snapshot fields below
	held         bool
	last         vrrp.Transition
	primary      netip.Addr
	vipsPub      []netip.Prefix
	base         uint8
	drainedPub   bool
	drainNotePub string
	intervalPub  time.Duration
	lastSent     time.Time
	trackersPub  []*health.Tracker
	collision    string // the latest VRID collision, in words
	collisionAt  time.Time
	state        vrrp.State
	since        time.Time
	priority     uint8
	master       vrrp.MasterInfo

	// The last foreign claim of a VIP while Master, for status.
	conflict arp.Claim

	// Owned by the run goroutine.
	conn      transport.Conn
	announcer Announcer
	monitor   ARPMonitor
	claims    chan arp.Claim
	// lastConflictAnnounce limits answers to a second owner; lastConflictLog
	// limits the log lines per foreign MAC.
	lastConflictAnnounce time.Time
	lastConflictLog      map[string]time.Time
	linkIndex            int
	sendBuf              []byte
	garpLeft             int
	garpTimer            *time.Timer
	refresh              *time.Timer
	probe                *time.Timer
	dueAt                [4]time.Time // when a precise timer is really due
	claimTimer           *time.Timer
	answerTimer          *time.Timer
	pendingClaim         *arp.Claim
	timers               [4]*time.Timer // by vrrp.Timer
	reported             map[dropKey]time.Time
}

type dropKey struct {
	reason vrrp.DropReason
	src    netip.Addr
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
}

func newInstance(ic config.Instance, siblings []uint8, stateDir string, log *slog.Logger, env Env, hooks instanceHooks) *instance {
	in := &instance{
		id:              instanceID{name: ic.Name, ifname: ic.Interface, vrid: ic.VRID},
		vipsPub:         ic.VIPs,
		base:            ic.Priority,
		hooks:           hooks,
		stateDir:        stateDir,
		cmds:            make(chan func(), 4),
		trackerChanges:  make(chan health.Status),
		cfg:             ic,
		siblings:        siblings,
		log:             log.With("instance", ic.Name, "vrid", ic.VRID, "interface", ic.Interface),
		env:             env,
		vips:            ic.VIPs,
		links:           make(chan netif.Event, 16),
		ready:           make(chan struct{}),
		stopped:         make(chan struct{}),
		reported:        map[dropKey]time.Time{},
		claims:          make(chan arp.Claim, 64),
		lastConflictLog: map[string]time.Time{},
		state:           vrrp.StateInitialize,
		priority:        ic.Priority,
	}
	if l := ic.Interface + ":vip"; len(l) <= 15 {
		in.label = l
	}
	in.peers.Store(&ic.UnicastPeers)
	in.drained, in.drainNote = in.loadDrain()
	in.drainedPub, in.drainNotePub = in.drained, in.drainNote
	in.priority = in.effectivePriority()
	return in
}

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
	in.notify = newHookRunner(in.log)
	defer in.notify.close()
	ts, err := in.buildTrackers(in.cfg.Tracks)
	if err != nil {
		return err
	}
	in.startTrackers(ts, in.cfg.Tracks)
	defer in.stopTrackers()
	for i := range in.timers {
		in.timers[i] = stoppedTimer()
	}
	in.garpTimer, in.refresh, in.probe = stoppedTimer(), stoppedTimer(), stoppedTimer()
	in.claimTimer, in.answerTimer = stoppedTimer(), stoppedTimer()
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
			cfg := vrrp.Config{
				Interface:          in.cfg.Interface,
				VRID:               in.cfg.VRID,
				Priority:           in.effectivePriority(),
				AdvertInterval:     in.cfg.AdvertInterval,
				Preempt:            in.cfg.Preempt,
				PreemptDelay:       in.cfg.PreemptDelay,
				Primary:            in.primary,
				SplitBrainRecovery: in.cfg.SplitBrainRecovery,
				TakeoverGrace:      takeoverGrace(in.cfg.AdvertInterval),
			}
			for _, v := range in.vips {
				cfg.Addresses = append(cfg.Addresses, v.Addr())
			}
			if in.m, err = vrrp.NewMachine(cfg, clock{in.env.Now}); err != nil {
				in.close()
				return err
			}
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

// waitLink waits until the interface exists and has a source address.
func (in *instance) waitLink(ctx context.Context) (*net.Interface, bool, error) {
	logged := false
	for {
		info, err := in.env.Links.Link(in.cfg.Interface)
		if err == nil {
			src := in.cfg.UnicastSource
			if !src.IsValid() {
				src, err = in.env.Links.PrimaryIPv4(in.cfg.Interface, in.vips)
			}
			if err == nil {
				in.mu.Lock()
				changed := in.primary.IsValid() && in.primary != src
				in.primary = src
				in.mu.Unlock()
				if changed {
					in.log.Warn("primary address changed; keeping the first one for this run", "address", src)
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

func (in *instance) open(ifi *net.Interface) error {
	conn, err := in.env.ListenVRRP(ifi, transport.Options{Source: in.primary, Unicast: len(in.cfg.UnicastPeers) > 0})
	if err != nil {
		return err
	}
	ann, err := in.env.DialARP(ifi)
	if err != nil {
		conn.Close()
		return err
	}
	in.conn, in.announcer, in.linkIndex = conn, ann, ifi.Index
	if in.env.ListenARP != nil {
		mon, err := in.env.ListenARP(ifi)
		if err != nil {
			// Detection of a second owner is a help, not a requirement.
			in.log.Warn("cannot watch ARP for a second owner of the VIPs", "error", err)
		} else {
			in.monitor = mon
		}
	}
	in.log.Info("joined", "source", in.primary, "mode", in.mode())
	return nil
}

func (in *instance) mode() string {
	if len(in.cfg.UnicastPeers) > 0 {
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
	packets := make(chan received, 64)
	readDone := make(chan error, 1)
	stopRead := make(chan struct{})
	conn := in.conn
	go func() { readDone <- in.read(conn, packets, stopRead) }()
	monCtx, stopMonitor := context.WithCancel(context.Background())
	monDone := make(chan struct{})
	if mon := in.monitor; mon != nil {
		go func() {
			defer close(monDone)
			err := mon.Run(monCtx, func(c arp.Claim) {
				select {
				case in.claims <- c:
				default: // a storm of claims: the next one will do
				}
			})
			if err != nil && monCtx.Err() == nil {
				in.log.Warn("ARP monitor stopped", "error", err)
			}
		}()
	} else {
		close(monDone)
	}
	defer func() {
		close(stopRead)
		// Unblock the reader and wait for it: it must not outlive us.
		conn.SetReadDeadline(time.Unix(1, 0))
		<-readDone
		stopMonitor()
		<-monDone
	}()

	out := make([]vrrp.Action, 0, 16)
	for {
		out = out[:0]
		select {
		case <-ctx.Done():
			return false, in.stop()
		case p := <-packets:
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
		case <-in.garpTimer.C:
			in.garpStep()
		case <-in.refresh.C:
			in.announce()
			in.refresh.Reset(in.cfg.GARP.Refresh)
		case <-in.probe.C:
			in.probeVIPs()
		case c := <-in.claims:
			in.onClaim(c)
		case <-in.claimTimer.C:
			in.reportConflict()
		case <-in.answerTimer.C:
			in.answerConflict()
		case cmd := <-in.cmds:
			cmd()
			continue
		case st := <-in.trackerChanges:
			in.onTracker(st)
			continue
		case ev := <-in.links:
			out = in.onLinkEvent(ev, out)
			if ev.Kind == netif.LinkGone || (ev.Index != 0 && ev.Index != in.linkIndex && ev.Kind != netif.AddrAdded && ev.Kind != netif.AddrRemoved) {
				in.exec(out)
				in.close()
				in.log.Warn("interface gone; waiting for it to return")
				return true, nil
			}
		case err := <-readDone:
			readDone <- err // for the deferred wait
			if ctx.Err() != nil {
				return false, in.stop()
			}
			in.stop()
			return false, fmt.Errorf("reading adverts: %w", err)
		}
		in.exec(out)
	}
}

func (in *instance) onLinkEvent(ev netif.Event, out []vrrp.Action) []vrrp.Action {
	switch ev.Kind {
	case netif.LinkUp:
		return in.m.SetLink(true, out)
	case netif.LinkDown, netif.LinkGone:
		return in.m.SetLink(false, out)
	case netif.AddrRemoved:
		st, _ := in.m.State()
		if st == vrrp.StateMaster && slices.Contains(in.vips, ev.Prefix) {
			in.log.Warn("virtual address removed by someone else while master: restoring it", "vip", ev.Prefix)
			in.takeAddresses()
		}
	}
	return out
}

// conflictAnswerEvery bounds how often a Master answers a second owner's ARP
// with its own; conflictLogEvery how often it logs the same foreign MAC.
const (
	conflictAnswerEvery = 100 * time.Millisecond
	conflictLogEvery    = 10 * time.Second
	// probeEvery is how often a Master asks who else has its VIPs.
	probeEvery = time.Second
	// conflictGrace is how long a claim waits for an advert that explains it.
	conflictGrace = 20 * time.Millisecond
)

// onClaim handles another host's ARP packet claiming one of our VIPs while
// we are Master. A peer that preempts us sends its advert and then its
// gratuitous ARP; both arrive together and may be read in either order, so
// the claim waits conflictGrace: if we are still Master then, the claimant
// is a second owner, not the new Master.
func (in *instance) onClaim(c arp.Claim) {
	if st, _ := in.m.State(); st != vrrp.StateMaster {
		return
	}
	ours := false
	for _, v := range in.vips {
		if v.Addr() == c.IP {
			ours = true
			break
		}
	}
	if !ours {
		return
	}
	if in.pendingClaim == nil {
		in.claimTimer.Reset(min(in.cfg.AdvertInterval, conflictGrace))
	}
	in.pendingClaim = &c
}

// reportConflict reports a claim that outlived conflictGrace and announces our
// MAC again, so neighbours end up on it: our answer comes after the other's.
func (in *instance) reportConflict() {
	claim := in.pendingClaim
	in.pendingClaim = nil
	if claim == nil {
		return
	}
	if st, _ := in.m.State(); st != vrrp.StateMaster {
		return
	}
	c := *claim
	in.counters.conflicts.Add(1)
	in.mu.Lock()
	in.conflict = c
	in.mu.Unlock()
	if in.hooks.conflict != nil {
		in.hooks.conflict(in.cfg.Name)
	}
	now := in.env.Now()
	mac := c.MAC.String()
	if last, ok := in.lastConflictLog[mac]; !ok || now.Sub(last) >= conflictLogEvery {
		if len(in.lastConflictLog) > 256 {
			clear(in.lastConflictLog)
		}
		in.lastConflictLog[mac] = now
		in.log.Warn("another host claims our virtual address: announcing ours again",
			"vip", c.IP, "foreign_mac", mac, "arp_op", c.Op.String(), "claims_seen", in.counters.conflicts.Load())
	}
	in.answerConflict()
}

// answerConflict announces our MAC at once, or, right after an earlier
// answer, as soon as conflictAnswerEvery allows: a burst of foreign claims
// must end with our word, never be left unanswered.
func (in *instance) answerConflict() {
	if st, _ := in.m.State(); st != vrrp.StateMaster {
		return
	}
	now := in.env.Now()
	if wait := conflictAnswerEvery - now.Sub(in.lastConflictAnnounce); wait > 0 {
		in.answerTimer.Reset(wait)
		return
	}
	in.lastConflictAnnounce = now
	in.announce()
}

// read decodes adverts until the socket fails or stop is closed. Malformed
// packets are counted and dropped here, so a flood never reaches the loop.
func (in *instance) read(conn transport.Conn, packets chan<- received, stop <-chan struct{}) error {
	buf := make([]byte, 1500)
	for {
		n, info, err := conn.ReadFrom(buf)
		if err != nil {
			select {
			case <-stop:
				return nil
			default:
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			return err
		}
		var p received
		if err := p.adv.Decode(buf[:n], info.Src, info.Dst); err != nil {
			in.drop(err, info.Src, nil)
			continue
		}
		if p.adv.VRID != in.cfg.VRID {
			if !slices.Contains(in.siblings, p.adv.VRID) {
				in.drop(vrrp.DropVRID, info.Src, &p.adv)
			}
			continue
		}
		if peers := *in.peers.Load(); len(peers) > 0 && !slices.Contains(peers, info.Src) {
			in.drop(vrrp.DropNotPeer, info.Src, &p.adv)
			continue
		}
		p.src, p.ttl = info.Src, info.TTL
		select {
		case packets <- p:
		case <-stop:
			return nil
		}
	}
}

// drop counts a discarded advert and logs it the first time it is seen from
// a source (and again after dropReportEvery).
func (in *instance) drop(err error, src netip.Addr, adv *vrrp.Advertisement) {
	var reason vrrp.DropReason
	if !errors.As(err, &reason) {
		in.log.Error("unexpected error from the election", "error", err)
		return
	}
	in.counters.drops[reason].Add(1)
	if reason == vrrp.DropOwnAdvert {
		return
	}
	key := dropKey{reason, src}
	now := in.env.Now()
	in.mu.Lock()
	last, seen := in.reported[key]
	if !seen || now.Sub(last) >= dropReportEvery {
		if len(in.reported) > 1024 {
			clear(in.reported) // a spoofing flood must not grow memory
		}
		in.reported[key] = now
	} else {
		in.mu.Unlock()
		return
	}
	in.mu.Unlock()
	attrs := []any{"reason", reason.String(), "source", src, "detail", reason.Error()}
	if adv != nil {
		attrs = append(attrs, "advert_vrid", adv.VRID, "advert_priority", adv.Priority, "advert_addresses", adv.Addresses)
	}
	if reason == vrrp.DropAddressList {
		in.mu.Lock()
		in.collision = fmt.Sprintf("VRID collision: %v advertises VRID %d with %v, not our addresses", src, adv.VRID, adv.Addresses)
		in.collisionAt = now
		in.mu.Unlock()
		in.log.Warn("advert for our VRID with other addresses: another group uses this VRID on this link", attrs...)
		return
	}
	in.log.Warn("advert dropped", attrs...)
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
			in.takeAddresses()
		case vrrp.ActReleaseAddresses:
			in.releaseAddresses()
		case vrrp.ActAnnounce:
			in.startBurst()
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
	for _, v := range in.vips {
		adv.Addresses = append(adv.Addresses, v.Addr())
	}
	dsts := *in.peers.Load()
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
	in.mu.Lock()
	in.lastSent = in.env.Now()
	in.mu.Unlock()
}

func (in *instance) takeAddresses() {
	for _, v := range in.vips {
		if err := in.env.Links.AddVIP(in.cfg.Interface, v, in.label); err != nil {
			in.log.Error("adding virtual address failed", "vip", v, "error", err)
		}
	}
	in.mu.Lock()
	in.held = true
	in.mu.Unlock()
	// A new term as Master: a second owner found now is news, whatever was
	// logged during an earlier one.
	clear(in.lastConflictLog)
	if in.hooks.held != nil {
		in.hooks.held()
	}
	in.startBurst()
	if in.cfg.GARP.Refresh > 0 {
		in.refresh.Reset(in.cfg.GARP.Refresh)
	}
	in.probeVIPs()
}

// probeVIPs asks who else holds our VIPs, now and every probeEvery while
// Master: a host that answers is a second owner (see onClaim).
func (in *instance) probeVIPs() {
	if in.announcer == nil || in.monitor == nil {
		return
	}
	if in.m != nil && in.m.Silent() {
		in.probe.Reset(probeEvery)
		return
	}
	for _, v := range in.vips {
		if err := in.announcer.Probe(v.Addr(), in.primary); err != nil {
			in.log.Debug("ARP probe failed", "vip", v, "error", err)
		}
	}
	in.probe.Reset(probeEvery)
}

func (in *instance) releaseAddresses() {
	in.garpLeft = 0
	in.garpTimer.Stop()
	in.refresh.Stop()
	in.probe.Stop()
	in.answerTimer.Stop()
	in.claimTimer.Stop()
	in.pendingClaim = nil
	for _, v := range in.vips {
		if err := in.env.Links.RemoveVIP(in.cfg.Interface, v); err != nil {
			in.log.Error("removing virtual address failed", "vip", v, "error", err)
		}
	}
	in.mu.Lock()
	in.held = false
	in.mu.Unlock()
	if in.hooks.held != nil {
		in.hooks.held()
	}
}

// startBurst announces every VIP now and repeat-1 more times at interval.
func (in *instance) startBurst() {
	in.garpLeft = in.cfg.GARP.Repeat
	in.garpStep()
}

func (in *instance) garpStep() {
	if in.garpLeft <= 0 {
		return
	}
	in.garpLeft--
	in.announce()
	if in.garpLeft > 0 {
		in.garpTimer.Reset(in.cfg.GARP.Interval)
	}
}

func (in *instance) announce() {
	if in.announcer == nil || !in.held || (in.m != nil && in.m.Silent()) {
		// Not (yet) holding the addresses — a new Master still in its
		// takeover grace — or thawed after a freeze: say nothing.
		return
	}
	for _, v := range in.vips {
		if err := in.announcer.Announce(v.Addr()); err != nil {
			in.log.Warn("gratuitous ARP failed", "vip", v, "error", err)
			continue
		}
		in.counters.garpSent.Add(1)
	}
}

func (in *instance) transition(tr vrrp.Transition) {
	in.counters.transitions.Add(1)
	in.mu.Lock()
	in.last = tr
	in.mu.Unlock()
	in.log.Info("state changed", "from", tr.From.String(), "to", tr.To.String(), "reason", tr.Reason.String(), "cause", tr.Cause)
	if in.drained && tr.To == vrrp.StateMaster {
		// Said loudly: the operator asked for the opposite.
		in.log.Error("drained, but no other node took over within Master_Down_Interval: holding the address, because an address with no owner is worse",
			"vips", in.vips)
	}
	if in.hooks.transition != nil {
		in.hooks.transition(in.cfg.Name, tr)
	}
	in.runHook(tr)
}

// runHook queues the notify hook of the state entered, if configured.
func (in *instance) runHook(tr vrrp.Transition) {
	if in.notify == nil || tr.Reason == vrrp.ReasonResumed {
		return // a resumed Master did not change state
	}
	var argv []string
	event := ""
	switch tr.To {
	case vrrp.StateMaster:
		argv, event = in.cfg.Notify.Master, "master"
	case vrrp.StateBackup:
		argv, event = in.cfg.Notify.Backup, "backup"
	case vrrp.StateFault:
		argv, event = in.cfg.Notify.Fault, "fault"
	case vrrp.StateInitialize:
		argv, event = in.cfg.Notify.Stop, "stop"
	}
	if len(argv) == 0 {
		return
	}
	vips := make([]string, 0, len(in.vips))
	for _, v := range in.vips {
		vips = append(vips, v.String())
	}
	in.notify.enqueue(hookRun{
		event: event,
		argv:  argv,
		env: []string{
			"VIPD_INSTANCE=" + in.cfg.Name,
			"VIPD_STATE=" + tr.To.String(),
			"VIPD_PREVIOUS_STATE=" + tr.From.String(),
			"VIPD_VIPS=" + strings.Join(vips, " "),
			"VIPD_CAUSE=" + tr.Cause,
			"VIPD_REASON=" + tr.Reason.String(),
		},
		timeout: in.cfg.Notify.Timeout,
	})
}

func (in *instance) publish() {
	if in.m == nil {
		return
	}
	state, since := in.m.State()
	in.mu.Lock()
	in.state, in.since = state, since
	in.priority = in.m.Priority()
	in.master = in.m.Master()
	in.mu.Unlock()
}

// takeoverGrace is how long a new Master advertises before it takes the
// addresses: long enough for the advert of an equal-priority Backup that
// timed out at the same instant to arrive, short against the outage.
func takeoverGrace(interval time.Duration) time.Duration {
	return min(interval/50, 3*time.Millisecond)
}

// timerLead is how early the Master_Down_Timer wakes the loop; the rest is
// waited out precisely. It only fires at a takeover, so the spin is rare.
const timerLead = 2 * time.Millisecond

// waitUntil yields the processor until t, for at most timerLead. A clock
// that stands still while we spin (a test's fake one) is slept on instead.
func (in *instance) waitUntil(t time.Time) {
	now := in.env.Now()
	if t.Sub(now) > timerLead {
		return
	}
	for still := 0; now.Before(t); {
		runtime.Gosched()
		next := in.env.Now()
		if next.Equal(now) {
			if still++; still > 100 {
				time.Sleep(t.Sub(now))
				return
			}
		}
		now = next
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}
