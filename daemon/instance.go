package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipd/vipd/announce"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/vrrp"
)

// waitRetry is how often an instance looks again for a missing interface or
// address when no link event arrives.
const waitRetry = time.Second

// claimsPerVIP and maxClaimQueue bound the claims of a second owner
// waiting for an instance: room for a second Master's burst of gratuitous
// ARPs for each of its VIPs (the policy judges a burst as one conflict); in
// a storm beyond, the next one will do. Sized by the VIPs, not for the
// most any instance could have: a host with hundreds of one-VIP groups
// would otherwise hold kilobytes of empty queue per group.
const (
	claimsPerVIP  = 8
	maxClaimQueue = 64
)

// actionsPerEvent is the room for the actions of one event: 8 of 104
// bytes, lent by the daemon's actionRoom to each election while it runs.
const actionsPerEvent = 8

// actionRoom lends the elections room for their actions. An election
// needs it only while its goroutine runs, and few run at once: kept in
// each instance, it was 832 bytes a group (210 KB at 255 groups) for the
// moments a handful use it. A nil room makes a new one each time. Not a
// sync.Pool: that one drops what it holds at collections, and a quarter
// of what it is given under the race detector, and a loan must not
// allocate (TestSteadyMasterAllocatesNothingAnAdvert).
type actionRoom struct {
	mu   sync.Mutex
	free []*[actionsPerEvent]vrrp.Action // at most maxFreeActionRooms
}

// maxFreeActionRooms bounds what a burst of elections running at once (a
// takeover of many groups) leaves kept.
const maxFreeActionRooms = 16

func newActionRoom() *actionRoom { return &actionRoom{} }

func (r *actionRoom) get() *[actionsPerEvent]vrrp.Action {
	if r != nil {
		r.mu.Lock()
		if n := len(r.free); n > 0 {
			b := r.free[n-1]
			r.free = r.free[:n-1]
			r.mu.Unlock()
			return b
		}
		r.mu.Unlock()
	}
	return new([actionsPerEvent]vrrp.Action)
}

// put takes b back, emptied: the last actions' strings are not kept alive.
func (r *actionRoom) put(b *[actionsPerEvent]vrrp.Action) {
	if r == nil {
		return
	}
	clear(b[:])
	r.mu.Lock()
	if len(r.free) < maxFreeActionRooms {
		r.free = append(r.free, b)
	}
	r.mu.Unlock()
}

func claimQueue(vips int) int { return min(max(vips, 1)*claimsPerVIP, maxClaimQueue) }

// counters are read by status while the instance runs.
type counters struct {
	advertsSent     atomic.Uint64
	advertsReceived atomic.Uint64
	garpSent        atomic.Uint64
	transitions     atomic.Uint64
	conflicts       atomic.Uint64 // claims of our VIPs by another MAC while Master
	overruns        atomic.Uint64 // adverts lost because the loop was behind
	// drops by vrrp.DropReason.Index, made at the first: most groups
	// never drop an advert.
	drops atomic.Pointer[[vrrp.NumDropReasons]atomic.Uint64]
}

// drop counts a discarded advert of reason i.
func (c *counters) drop(i int) {
	d := c.drops.Load()
	if d == nil {
		d = new([vrrp.NumDropReasons]atomic.Uint64)
		if !c.drops.CompareAndSwap(nil, d) {
			d = c.drops.Load()
		}
	}
	d[i].Add(1)
}

// dropped is how many adverts were discarded for reason i.
func (c *counters) dropped(i int) uint64 {
	if d := c.drops.Load(); d != nil {
		return d[i].Load()
	}
	return 0
}

// instance drives one virtual router: it feeds the election (vrrp.Machine)
// and the announcement policy (announce.Policy) with events, and carries
// out their actions through the address holder and the announcer. One
// goroutine at a time runs it (mailbox.go); everything below "owned by
// run" is touched only there, and other goroutines reach it through its
// mailbox (do, for a command).
type instance struct {
	// id never changes: other goroutines may read it without a lock; nor
	// does follow, the leader this instance follows ("" for none).
	id     instanceID
	follow string
	// anycastMode: bgp-anycast, no election (a reload that changes the
	// mode restarts the instance).
	anycastMode  bool
	announceMode string // how the VIPs are announced: arp, bgp, bgp-anycast
	// probeEvery: how often its Master probes for a second owner
	// (probeEveryOn); set before it runs, and by a reload.
	probeEvery time.Duration
	log        *slog.Logger
	env        *Env           // the daemon's, shared
	hooks      *instanceHooks // the daemon's, shared
	stateDir   string

	// mb is how the other goroutines reach the election (mailbox.go):
	// &box.
	mb      *mailbox
	box     mailbox
	ready   chan struct{}
	once    sync.Once
	stopped chan struct{}
	filter  atomic.Pointer[readFilter] // read by the reader goroutine
	// quitting: cancel asked the instance to stop; end reports its end
	// (run). Not a context of its own: with its cancel, the parent's
	// record of it and the watch that posts the stop, one was about 800
	// bytes a group.
	quitting atomic.Bool
	end      func(error)
	drive    func() // the goroutine a post starts (mailbox.spawn)

	counters counters
	dropMu   sync.Mutex // guards drops and the collision fields
	drops    *dropLog   // made at the first drop: most groups never see one

	pubMu sync.Mutex // guards pub
	pub   published

	// Owned by run. cfg is the daemon's configuration's (config.Config
	// is not changed once parsed; a reload points it at the next one's).
	cfg    *config.Instance
	m      *vrrp.Machine    // &machine once begin made it
	policy *announce.Policy // &policyState once begin made it
	// The election's state and its policy's live in the instance: one
	// object a group (a daemon's instances are allocated together,
	// newInstances), where separate ones, made as the groups start among
	// the start-up's garbage, each held a span of their size class of
	// their own. Room for its actions is lent while it runs (actions).
	machine     vrrp.Machine
	policyState announce.Policy
	actions     *actionRoom
	holder      *addressHolder
	notify      *hookRunner
	resume      *InstanceHandover // from the previous process, at start only
	adopt       bool              // Options.Adopt, at start only
	detach      bool              // stop without releasing: a re-exec takes over
	trackers    *trackerSet
	drained     bool
	drainNote   string
	primary     netip.Addr
	sockets     *socketPool
	sock        *vrrpSocket // shared with the other instances on the link
	announcers  *announcerPool
	ann         *linkAnnouncer  // the interface's announcer and claim monitor
	routes      *routeAnnouncer // in the BGP modes: the VIPs' host routes
	linkIndex   int
	advert      advertFrames // the adverts last sent, kept while they hold (adverts.go)
	// wake is the one timer of every deadline (timers.go): dueAt, by
	// vrrp.Timer, and policyDue; zero is none. firesAt is when wake fires,
	// zero when not armed; kernelTimers: wake is Env.NewTimer's.
	wake      Timer
	dueAt     [4]time.Time
	policyDue time.Time
	// policyActions is tickPolicy's buffer, actions loop's.
	policyActions []announce.Action
	firesAt       time.Time
	kernelTimers  bool
	waking        bool // onWake is running what is due (rearm waits for it)
	quick         bool // run on the timers' goroutine for one wake-up (timerFired)
	// quietSet: the socket sets this instance's steady adverts aside
	// (quiet.go), assuming priority quietPrio; lastEventAt is when the
	// latest event the machine saw happened, deferredAt the arrival of the
	// advert set aside it is reading (its clock).
	quietSet    bool
	quietPrio   uint8
	lastEventAt time.Time
	deferredAt  time.Time
	// advertAt is when the last advert the election took arrived, from
	// advertFrom; advertGap is the time since the one before it from the
	// same router, its Master's interval as the wire shows it (afterAdvert).
	advertAt   time.Time
	advertFrom netip.Addr
	advertGap  time.Duration
	reopen     bool      // a reload changed the transport
	handover   bool      // the machine's next release is a planned move
	yielding   bool      // the policy's handover is a yield to a preempting Master
	lastClaim  time.Time // another host's last ARP or NA for our VIPs while we held them
	tookAt     time.Time // when the addresses were last taken
	// awaitSuccessor: the last planned move's report still lacks the
	// successor's advert (its announcement may have ended the move).
	awaitSuccessor bool
	leaderPrio     uint8 // a follower's leader's effective priority; 0 unknown
	// bgp-anycast: why the route is withdrawn ("" while healthy), and the
	// graceful-shutdown drain before the withdraw.
	anycastFault string
	drainT       *time.Timer
	rx           *received     // the advert whose actions run now
	late         time.Duration // how late the timer whose actions run now fired

	// collision is the latest VRID collision in words (dropMu), and
	// collisionKey the dropped advert it describes (collisionKey), 0 when
	// it describes none.
	collision    string
	collisionAt  time.Time
	collisionKey uint64
}

// instanceID is what identifies an instance for its whole life: a reload
// that changes it replaces the instance.
type instanceID struct {
	name, ifname string
	vrid         uint8
}

// instanceHooks report to the daemon; they must not block.
type instanceHooks struct {
	transition   func(instance string, tr vrrp.Transition, timerLate time.Duration)
	conflict     func(instance string)
	trackerCheck func(instance, tracker string, d time.Duration, ok bool)
	held         func() // the set of held addresses may have changed
	// leaderOf is a leader's state now; followed is told when an
	// instance's state or priority changed, for its followers.
	leaderOf func(name string) (leaderState, bool)
	followed func(name string)
	// tick is called at each advert sent or received: periodic work that
	// can ride on those wake-ups instead of timers of its own.
	tick        func()
	hookRunners *sync.WaitGroup
}

// newInstance makes ic's instance in into (new(instance), or a place of
// newInstances').
func newInstance(into *instance, ic *config.Instance, pools pools, stateDir string, log *slog.Logger, env *Env, hooks *instanceHooks) *instance {
	in := into
	*in = instance{
		id:           instanceID{name: ic.Name, ifname: ic.Interface, vrid: ic.VRID},
		follow:       ic.Follow,
		anycastMode:  ic.Announce == config.AnnounceBGPAnycast,
		announceMode: ic.Announce.String(),
		sockets:      pools.sockets,
		announcers:   pools.announcers,
		actions:      pools.actions,
		hooks:        hooks,
		stateDir:     stateDir,
		cfg:          ic,
		log:          newInstanceLogger(log, &in.id),
		env:          env,
		ready:        make(chan struct{}),
		stopped:      make(chan struct{}),
	}
	in.box.init(claimQueue(len(ic.VIPs)), pools.sockets.free)
	in.mb = &in.box
	in.filter.Store(&readFilter{peers: ic.UnicastPeers})
	holderIf := ic.Interface
	if ic.Announce.BGPMode() {
		holderIf = loopback
		if pools.speaker != nil {
			in.routes = newRouteAnnouncer(pools.speaker, ic.BGP, in.log)
		}
	}
	in.holder = newAddressHolder(env.Links, holderIf, ic.VIPs, in.log, in.heldChanged)
	in.drained, in.drainNote = in.loadDrain()
	in.pub = published{
		vips: ic.VIPs, base: ic.Priority, interval: ic.AdvertInterval, version: ic.Version,
		drained: in.drained, drainNote: in.drainNote, state: vrrp.StateInitialize,
	}
	in.pub.priority = in.effectivePriority()
	if !in.anycastMode {
		// Status tells from the first request what the instance waits for,
		// before its goroutine has looked.
		if _, err := env.Links.Link(ic.Interface); err != nil {
			in.pub.waiting = waitReason(ic, err)
		} else if _, err := in.source(ic); err != nil {
			in.pub.waiting = waitReason(ic, err)
		}
	}
	return in
}

// do runs fn on the election's goroutine, which owns the machine, and
// waits for it. It fails if the election does not take it before ctx ends.
func (in *instance) do(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	if ok, closed := in.mb.postOther(func() { fn(); close(done) }); closed {
		return errStopped
	} else if !ok {
		return errBusy
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

var (
	errStopped = errors.New("instance stopped")
	errBusy    = errors.New("instance busy: too many requests waiting for it")
)

// linkEvent hands a link or address event to the instance; one busy
// stopping, or behind by a queue of them, loses it.
func (in *instance) linkEvent(ev netif.Event) {
	if ok, closed := in.mb.postOther(&ev); !ok && !closed {
		in.log.Warn("link event dropped: instance busy", "event", ev.Kind.String())
	}
}

// waitingForLink: the instance waits for its interface or source address.
func (in *instance) waitingForLink() bool {
	in.pubMu.Lock()
	defer in.pubMu.Unlock()
	return in.pub.waiting != ""
}

// wantsAddrEvent: an instance acts on the removal or the state change of
// one of its own VIPs only; with many instances on a link, every address
// event of every takeover would otherwise reach them all.
func (in *instance) wantsAddrEvent(p netip.Prefix) bool {
	in.pubMu.Lock()
	defer in.pubMu.Unlock()
	return slices.Contains(in.pub.vips, p)
}

func (in *instance) markReady() { in.once.Do(func() { close(in.ready) }) }

// cancel asks the instance to stop, gracefully (a Master hands over), and
// returns at once; run's end reports when it has stopped. Asked before it
// has joined its group, it stops without joining.
func (in *instance) cancel() {
	in.quitting.Store(true)
	in.mb.postStop()
}

// errQuit: a phase that waited ended because the instance was asked to stop.
var errQuit = errors.New("instance stopping")

// run starts the instance on the calling goroutine and calls end, once,
// when the instance has stopped (nil after a graceful stop). Once the
// election has started, run returns; from then on a goroutine runs it
// only while it has something to do (mailbox.go).
func (in *instance) run(end func(error)) {
	in.end = end
	in.start(nil)
}

// start is run with in.end set: it sets the instance up and joins its
// group. From a list (sr), it hands the rest of the list on before
// anything that waits.
func (in *instance) start(sr *serialRun) {
	if in.quitting.Load() {
		// Asked to stop while it waited its turn in a list: no trackers
		// to start only to wait for their end, with the list behind it.
		in.finish(in.stop())
		return
	}
	if err := in.setUp(); err != nil {
		in.finish(err)
		return
	}
	if in.cfg.Announce == config.AnnounceBGPAnycast {
		sr.handOff()
		in.finish(in.runAnycast())
		return
	}
	in.drive = func() { in.steady(false, nil) }
	in.steady(true, sr)
}

// startInstances starts instances one after the other on this goroutine,
// each with its end set. The runtime keeps every goroutine record, and
// the stacks of as many as its free lists hold, for the life of the
// process: with a goroutine each, 255 groups' start-up left 0.12 MB of
// records in the heap at rest, and their stacks on the free lists.
func startInstances(list []*instance) {
	sr := &serialRun{next: startInstances}
	for i, in := range list {
		sr.rest = list[i+1:]
		in.start(sr)
		if sr.handed {
			return
		}
	}
}

// runElections runs elections that were handed adverts while idle, one
// after the other on this goroutine. One that is about to wait (for its
// link, or a successor at a stop) first hands the rest to a goroutine of
// their own (serialRun.handOff).
func runElections(idle []*instance) {
	sr := &serialRun{next: runElections}
	for i, in := range idle {
		sr.rest = idle[i+1:]
		in.steady(false, sr)
		if sr.handed {
			return
		}
	}
}

// serialRun is a list of instances still to run, one after the other,
// and how the rest of it runs once handed to a goroutine of its own.
type serialRun struct {
	rest   []*instance
	next   func([]*instance)
	handed bool
}

// handOff starts a goroutine for the rest of the list, once.
func (sr *serialRun) handOff() {
	if sr == nil || sr.handed {
		return
	}
	sr.handed = true
	if len(sr.rest) > 0 {
		go sr.next(sr.rest)
	}
}

// steady runs the election: from (re)joining the link when begin says so,
// then each event queued until none is left and the goroutine lets the
// election go. Each event is handled by a method of its own. Run from a
// list (sr), it hands the list on before anything that waits.
func (in *instance) steady(begin bool, sr *serialRun) {
	// No event of the machine gives more than 6 actions (a takeover); one
	// that gave more would allocate, not fail.
	room := in.actions.get()
	defer in.actions.put(room)
	for {
		if begin {
			stop, err := in.begin(sr)
			if stop || err != nil {
				in.finish(err)
				return
			}
			in.markReady()
			in.mb.detach(in.drive)
			begin = false
		}
		out := room[:0]
		in.checkQuiet()
		ev := in.mb.next(allKinds, true)
		if ev.kind != evNone && ev.kind != evNudge && (ev.kind != evPacket || !ev.packet.deferred) {
			// Run from a list, only what an advert set aside asks (a
			// timer pushed back) waits for the elections before it in
			// the list: an advert read when it came is timed when it is
			// handled, and the rest (a takeover's netlink, a stop's
			// handover, a reload) may take milliseconds.
			sr.handOff()
		}
		switch ev.kind {
		case evNone:
			return // the next post starts a goroutine (drive)
		case evStop:
			in.finish(in.stop())
			return
		case evFailed:
			if in.sock != nil && in.sock.hasFailed() {
				in.finish(in.readFailed())
				return
			}
		case evPacket:
			in.onPacket(ev.packet, out)
		case evWake:
			in.onWake(out)
		case evClaim:
			in.catchUp(out)
			in.onClaim(ev.claim)
		case evCmd:
			if err := in.onCommand(ev.cmd, out); err != nil {
				in.finish(err)
				return
			}
		case evTracker:
			in.catchUp(out)
			in.onTracker(ev.tracker)
			in.clearQuiet()
		case evLeader:
			in.onLeader(ev.leader, out)
		case evLink:
			begin = in.onLink(ev.link, out)
		case evNudge:
			in.catchUp(out)
		}
	}
}

// setUp starts what the instance runs beside its election: the trackers
// and (unless it is an anycast one) its timer. The notify hooks' runner
// is made at the first hook to run (runHook).
func (in *instance) setUp() error {
	ts, err := in.buildTrackers(in.cfg.Tracks)
	if err != nil {
		return err
	}
	in.startTrackers(ts, in.cfg.Tracks)
	if in.cfg.Announce != config.AnnounceBGPAnycast {
		in.wake = in.newTimer()
	}
	return nil
}

// finish undoes setUp, whatever part of it ran, tells those waiting for
// the instance that it has stopped, and reports its end.
func (in *instance) finish(err error) {
	in.mb.close()
	in.closeTimer()
	in.stopTrackers()
	switch {
	case in.notify == nil:
	case in.detach:
		in.notify.abandon()
	default:
		in.notify.close()
	}
	in.markReady()
	close(in.stopped)
	if in.end != nil {
		in.end(err)
	}
}

// begin waits for the link, opens the sockets and starts (or, after the
// link returned, resumes) the election. stop: ctx ended meanwhile, and the
// instance stopped.
func (in *instance) begin(sr *serialRun) (stop bool, err error) {
	if in.quitting.Load() {
		// Asked to stop before it joined (or rejoined): nothing to take
		// only to hand it over at once.
		return true, in.stop()
	}
	ifi, up, err := in.waitLink(sr)
	if err != nil {
		if in.quitting.Load() {
			return true, in.stop()
		}
		return false, err
	}
	if err := in.open(ifi); err != nil {
		return false, err
	}
	if in.m != nil {
		in.exec(in.m.SetLink(up, nil))
		return false, nil
	}
	if err = in.machine.Init(in.machineConfig(in.cfg), clock{in.clockNow}); err != nil {
		in.close()
		return false, err
	}
	in.m = &in.machine
	in.policyState.Init(policyConfig(in.cfg, in.ann.monitor != nil, in.probeEvery), ifi.HardwareAddr.String())
	in.policy = &in.policyState
	_, fault := in.health()
	in.m.SetFault(fault, nil)
	if r := in.resume; r != nil {
		in.log.Info("resuming the previous process's state", "state", r.State, "held", r.Held)
		// The resumed transition below is not a move.
		in.counters.transitions.Store(r.Transitions - 1)
		in.exec(in.m.Resume(up, r.State == vrrp.StateMaster.String() && r.Held, nil))
		in.resume = nil
	} else if in.adopt && in.adoptVIPs() {
		in.exec(in.m.Adopt(up, nil))
	} else {
		in.exec(in.m.Start(up, nil))
	}
	in.adopt = false
	if in.follow != "" && in.hooks.leaderOf != nil {
		if ls, ok := in.hooks.leaderOf(in.follow); ok {
			in.exec(in.followLeader(ls, nil))
		}
	}
	return false, nil
}

func (in *instance) onPacket(p *received, out []vrrp.Action) {
	in.receive(p, out)
	in.sockets.free(p)
	if in.hooks.tick != nil {
		in.hooks.tick()
	}
}

// onCommand runs a command on the loop; an error ends the instance.
func (in *instance) onCommand(cmd func(), out []vrrp.Action) error {
	in.catchUp(out)
	cmd()
	if in.reopen {
		if err := in.reopenVRRP(); err != nil {
			in.stop()
			return err
		}
	}
	return nil
}

func (in *instance) onLeader(ls leaderState, out []vrrp.Action) {
	in.catchUp(out)
	in.clearQuiet()
	in.exec(in.followLeader(ls, out[:0]))
	in.late = 0
}

// onLink handles a link or address event; gone: the interface went away
// (or was replaced), the sockets are closed, and the loop must reopen.
func (in *instance) onLink(ev *netif.Event, out []vrrp.Action) (gone bool) {
	in.catchUp(out)
	in.clearQuiet()
	out = in.onLinkEvent(*ev, out[:0])
	if ev.Kind == netif.LinkGone || (ev.Index != 0 && ev.Index != in.linkIndex && ev.Kind != netif.AddrAdded && ev.Kind != netif.AddrRemoved && ev.Kind != netif.AddrChanged) {
		in.exec(out)
		in.close()
		in.log.Warn("interface gone; waiting for it to return")
		return true
	}
	in.exec(out)
	in.late = 0
	return false
}

// readFailed ends the instance when its socket can no longer be read.
func (in *instance) readFailed() error {
	err := in.sock.err
	if in.quitting.Load() {
		return in.stop()
	}
	in.stop()
	return fmt.Errorf("reading adverts: %w", err)
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
	case netif.AddrChanged:
		if ev.State == netif.AddrDADFailed {
			if st, _ := in.m.State(); st == vrrp.StateMaster && in.holder.repair(ev.Prefix) {
				in.runPolicy(in.policy.Reannounce(in.env.Now(), nil))
			}
		}
	}
	return out
}

// stop ends the election gracefully, or, detached for a re-exec, just
// closes the sockets and leaves the addresses to the next process.
func (in *instance) stop() error {
	if !in.detach && in.m != nil {
		in.planned(func() { in.exec(in.m.Shutdown(nil)) })
		in.awaitHandover()
	}
	in.close()
	if in.detach {
		in.log.Info("detached: the next process takes over")
	}
	return nil
}

// pools are the daemon's shared sockets and announcers.
type pools struct {
	sockets    *socketPool
	announcers *announcerPool
	actions    *actionRoom  // nil: made at each run
	speaker    RouteSpeaker // nil without [bgp]
}
