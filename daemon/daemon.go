package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/hoststat"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/vrrp"
)

// historySize is how many transitions `vipd history` keeps.
const historySize = 256

// hostSampleEvery is how often the host's CPU times are read, so that the
// steal and iowait recorded with a transition cover the last seconds (at
// least hoststat.MinSpan). Not more often: each reading is /proc/stat's
// open, read and close, which the daemon's steady cost would feel.
const hostSampleEvery = 5 * time.Second

// Options are the daemon's hooks into the rest of the program; all optional.
type Options struct {
	// OnTransition is called after every state change, on the instance's
	// goroutine: it must not block (metrics, sd_notify status).
	OnTransition func(instance string, tr vrrp.Transition)
	// OnConflict is called when a Master sees another MAC claim its VIP.
	OnConflict func(instance string)
	// OnTrackerCheck is called after every health check.
	OnTrackerCheck func(instance, tracker string, d time.Duration, ok bool)
	// Load reads and validates the configuration for a reload; nil means
	// config.Load of the path the daemon was started with.
	Load func(path string) (*config.Config, error)
	// OnReload is called once a reload has been applied, with the new
	// configuration (the log level, say); never for a refused one.
	OnReload func(cfg *config.Config)
	// Handover, when set, is the state the previous process of this daemon
	// left at a binary upgrade: its Masters carry on as Masters.
	Handover *Handover
	// Adopt: an instance whose VIPs are all on its interface at start
	// (left there by the daemon vipd replaces, keepalived killed without
	// its cleanup) starts as Master and keeps them instead of releasing
	// them, so replacing the Master moves nothing. Instances started by a
	// later reload do not adopt.
	Adopt bool
	// HeldFile, when set, is where the daemon keeps the list of addresses it
	// holds, for `vipd cleanup` after a crash with an unreadable config.
	HeldFile string
	// Upgrade, when set, is asked at every reload whether a new binary is on
	// disk and accepts the configuration; if it names one, that binary
	// takes over and the reload is its to finish. An *UpgradeRefused error
	// refuses the reload.
	Upgrade func(ctx context.Context) (binary string, err error)
}

// Daemon runs every instance of one configuration.
type Daemon struct {
	log  *slog.Logger
	env  Env
	opts Options

	heldMu     sync.Mutex     // serialises writes of Options.HeldFile
	heldDirty  chan struct{}  // the held set changed: rewrite the file
	hostAt     atomic.Int64   // when the host was last sampled, in Unix ns
	sockets    *socketPool    // the VRRP sockets, one per interface and source
	announcers *announcerPool // ARP and NDP, one per interface and family
	actions    *actionRoom    // the elections' room for their actions
	speaker    RouteSpeaker   // BGP, nil without [bgp]
	done       chan struct{}  // closed when Run returns
	reloadMu   sync.Mutex     // one reload at a time
	mu         sync.Mutex     // guards cfg, instances, history
	cfg        *config.Config
	instances  []*running
	history    []Transition // a ring: oldest first once full
	histNext   int

	// group owns the instances' goroutines for Run; hookRunners the notify
	// hooks still queued by stopped instances.
	wg          sync.WaitGroup
	hookRunners sync.WaitGroup
	// running: Run has started the instances (those a reload adds start
	// at once); stopping: Run is stopping them (one a reload adds is not
	// started). Guarded by mu.
	running, stopping bool
	fatal             chan error
	// instHooks are shared by the instances: made for each, they were a
	// hundred bytes of closures a group.
	instHooks *instanceHooks
}

// running is an instance of the daemon's; in.stopped is closed once it
// has stopped.
type running struct {
	in *instance
}

// Transition is one entry of the history.
type Transition struct {
	Instance string
	vrrp.Transition
	// TimerLate is how late the timer that made the change fired.
	TimerLate time.Duration
	// Host is the host's pressure and CPU steal at the change; nil when
	// not read.
	Host *hoststat.Sample
}

// New prepares the instances of cfg; Run starts them.
func New(cfg *config.Config, log *slog.Logger, env Env, opts Options) (*Daemon, error) {
	if env.Now == nil {
		env.Now = time.Now
	}
	if env.Links == nil || env.ListenVRRP == nil || env.DialARP == nil {
		return nil, errors.New("daemon: incomplete environment")
	}
	if opts.Load == nil {
		opts.Load = config.Load
	}
	d := &Daemon{log: log, env: env, cfg: cfg, opts: opts, fatal: make(chan error, 1), heldDirty: make(chan struct{}, 1), done: make(chan struct{})}
	d.sockets = newSocketPool(env, log)
	d.announcers = newAnnouncerPool(env)
	d.actions = newActionRoom()
	var err error
	if d.speaker, err = newSpeaker(cfg, env, log, opts.Handover != nil); err != nil {
		return nil, err
	}
	d.restoreHistory(opts.Handover)
	places := newInstances(len(cfg.Instances))
	for i := range cfg.Instances {
		in := d.newInstance(&places[i], &cfg.Instances[i], cfg)
		in.resume = opts.Handover.resumeFrom(in.id)
		in.adopt = opts.Adopt && in.resume == nil
		d.instances = append(d.instances, &running{in: in})
	}
	return d, nil
}

// newInstances is room for n instances in one allocation. Made one by
// one, between the start-up's netlink dumps and parses, each instance (4.6
// KiB with its election's state and its mailbox; until 2026-12-06 a dozen
// objects of 0.1 to 2.3 KiB) landed in spans of its size classes among
// garbage, and the spans stayed for it: at 255 groups about 1 MB of heap
// held for nothing once the garbage was collected. The room stays while
// any of them runs: a reload that removes most of a daemon's groups keeps
// theirs, and what their last state points to, until the next restart.
func newInstances(n int) []instance { return make([]instance, n) }

func (d *Daemon) newInstance(into *instance, ic *config.Instance, cfg *config.Config) *instance {
	if d.instHooks == nil {
		d.instHooks = d.hooks()
	}
	in := newInstance(into, ic, pools{sockets: d.sockets, announcers: d.announcers, actions: d.actions, speaker: d.speaker}, cfg.Global.StateDir, d.log, &d.env, d.instHooks)
	in.probeEvery = probeEveryOn(cfg, ic)
	return in
}

// hooks are what instances report to the daemon.
func (d *Daemon) hooks() *instanceHooks {
	return &instanceHooks{
		transition: func(name string, tr vrrp.Transition, late time.Duration) {
			d.record(name, tr, late)
			if d.opts.OnTransition != nil {
				d.opts.OnTransition(name, tr)
			}
		},
		conflict: func(name string) {
			if d.opts.OnConflict != nil {
				d.opts.OnConflict(name)
			}
		},
		trackerCheck: d.opts.OnTrackerCheck,
		held:         d.heldChanged,
		leaderOf:     d.leaderOf,
		tick:         d.hostTick,
		followed:     d.tellFollowers,
		hookRunners:  &d.hookRunners,
	}
}

func (d *Daemon) record(name string, tr vrrp.Transition, late time.Duration) {
	t := Transition{Instance: name, Transition: tr, TimerLate: late}
	if d.env.HostStats != nil {
		if s, err := d.env.HostStats(); err == nil {
			t.Host = &s
		}
	}
	d.appendHistory(t)
}

func (d *Daemon) appendHistory(t Transition) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.history) < historySize {
		d.history = append(d.history, t)
		return
	}
	d.history[d.histNext] = t
	d.histNext = (d.histNext + 1) % historySize
}

// transitions returns the last transitions of every instance, oldest first.
func (d *Daemon) transitions() []Transition {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Transition, 0, len(d.history))
	out = append(out, d.history[d.histNext:]...)
	return append(out, d.history[:d.histNext]...)
}

// Run runs until ctx ends, then stops every instance gracefully: a Master
// sends priority 0 and releases its addresses. It returns nil after a clean
// stop, or the first fatal error of an instance.
func (d *Daemon) Run(ctx context.Context) error {
	// The link watcher outlives the instances' graceful stop.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	events := make(chan netif.Event, 64)
	watchDone := make(chan error, 1)
	go func() {
		defer close(events)
		err := d.env.Links.Watch(watchCtx, events)
		if err != nil && watchCtx.Err() == nil {
			err = fmt.Errorf("watching links: %w", err)
		} else {
			err = nil
		}
		watchDone <- err
	}()
	fanDone := make(chan struct{})
	go func() {
		defer close(fanDone)
		for ev := range events {
			addr := ev.Kind == netif.AddrRemoved || ev.Kind == netif.AddrChanged
			for _, r := range d.snapshot() {
				if ev.Kind == netif.AddrAdded {
					// Only an instance waiting for its source address
					// acts on an address appearing.
					if ev.Link == r.in.id.ifname && r.in.waitingForLink() {
						r.in.linkEvent(ev)
					}
					continue
				}
				// The VIPs of a BGP mode live on lo: its address events
				// (a VIP deleted by hand) are the instance's too.
				onLink := ev.Link == r.in.id.ifname || ev.Link == "" || addr && ev.Link == r.in.holder.ifname
				if onLink && (!addr || r.in.wantsAddrEvent(ev.Prefix)) {
					r.in.linkEvent(ev)
				}
			}
		}
	}()
	// The BGP speaker outlives the instances' graceful stop: their
	// withdraws go through it.
	speakerCtx, stopSpeaker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSpeaker()
	speakerDone := make(chan struct{})
	if d.speaker != nil {
		go func() {
			defer close(speakerDone)
			if err := d.speaker.Run(speakerCtx); err != nil && speakerCtx.Err() == nil {
				d.log.Error("bgp speaker stopped", "error", err)
				select {
				case d.fatal <- fmt.Errorf("bgp: %w", err):
				default:
				}
			}
		}()
	} else {
		close(speakerDone)
	}

	// held.json is written on a goroutine of its own: an election loop
	// must not wait for the disk.
	heldCtx, stopHeld := context.WithCancel(context.Background())
	heldDone := make(chan struct{})
	go func() { defer close(heldDone); d.heldWriter(heldCtx) }()
	defer func() { stopHeld(); <-heldDone }()

	d.mu.Lock()
	d.running = true
	d.startAllLocked()
	d.mu.Unlock()

	var err error
	select {
	case <-ctx.Done():
	case err = <-d.fatal:
	}
	d.stopAll()
	d.wg.Wait()
	// The stop hooks run before the daemon exits, each within its timeout.
	d.hookRunners.Wait()
	stopSpeaker()
	<-speakerDone
	close(d.done)
	stopWatch()
	<-fanDone
	if werr := <-watchDone; err == nil {
		err = werr
	}
	return err
}

// startLocked starts r's goroutine; d.mu must be held.
func (d *Daemon) startLocked(r *running) {
	if d.stopping {
		// A reload's instance, as Run stops them all: it never joins
		// (it would take its VIPs to give them away at once), and Run,
		// which may be waiting for the others already, does not wait
		// for it.
		r.in.finish(nil)
		return
	}
	go r.in.run(d.endOf(r))
}

// startAllLocked starts Run's instances in as many lists as the runtime
// runs goroutines at once, one after the other in each (startInstances);
// d.mu must be held.
func (d *Daemon) startAllLocked() {
	lists := make([][]*instance, min(runtime.GOMAXPROCS(0), len(d.instances)))
	for i, r := range d.instances {
		r.in.end = d.endOf(r)
		lists[i%len(lists)] = append(lists[i%len(lists)], r.in)
	}
	for _, l := range lists {
		go startInstances(l)
	}
}

// endOf is what r's instance calls when it has stopped.
func (d *Daemon) endOf(r *running) func(error) {
	d.wg.Add(1)
	return func(err error) {
		defer d.wg.Done()
		d.stopped(r, err)
	}
}

// stopAll asks every instance to stop; those a reload adds from now on
// are not started.
func (d *Daemon) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopping = true
	for _, r := range d.instances {
		r.in.cancel()
	}
}

// stopped reports an instance's end.
func (d *Daemon) stopped(r *running, err error) {
	if err != nil {
		d.log.Error("instance stopped", "instance", r.in.id.name, "error", err)
		select {
		case d.fatal <- fmt.Errorf("instance %q: %w", r.in.id.name, err):
		default:
		}
	}
}

func (d *Daemon) snapshot() []*running {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.instances)
}

// Ready is closed once every instance has joined its group (or stopped).
func (d *Daemon) Ready() <-chan struct{} {
	ch := make(chan struct{})
	rs := d.snapshot()
	go func() {
		defer close(ch)
		for _, r := range rs {
			<-r.in.ready
		}
		d.waitBGP()
	}()
	return ch
}

// waitBGP waits, in the BGP modes, until a peer is established: until
// then the VIPs reach nobody through the routers, and the daemon is not
// ready (status says why).
func (d *Daemon) waitBGP() {
	if d.speaker == nil {
		return
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	logged := false
	for !d.speaker.Established() {
		if !logged {
			d.log.Warn("not ready: no BGP peer established yet")
			logged = true
		}
		select {
		case <-d.done:
			return
		case <-t.C:
		}
	}
	if logged {
		d.log.Info("a BGP peer is established")
	}
}

// Snapshot returns the state of every instance.
func (d *Daemon) Snapshot() []Status {
	rs := d.snapshot()
	st := make([]Status, 0, len(rs))
	for _, r := range rs {
		st = append(st, r.in.status())
	}
	return st
}

// Alive asks every instance's election loop to answer within timeout: the
// watchdog pings systemd only when all do, so a stuck loop gets the daemon
// restarted.
func (d *Daemon) Alive(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, r := range d.snapshot() {
		if err := r.in.do(ctx, func() {}); err != nil {
			return fmt.Errorf("instance %q does not answer: %w", r.in.id.name, err)
		}
	}
	return nil
}

func (d *Daemon) find(name string) ([]*running, error) {
	rs := d.snapshot()
	if name == "" {
		return rs, nil
	}
	for _, r := range rs {
		if r.in.id.name == name {
			return []*running{r}, nil
		}
	}
	return nil, fmt.Errorf("no instance %q", name)
}

// HeldVIP is one address a daemon holds, as kept in Options.HeldFile.
type HeldVIP struct {
	Interface string       `json:"interface"`
	VIP       netip.Prefix `json:"vip"`
}

// heldChanged tells the held file's writer, without waiting.
func (d *Daemon) heldChanged() {
	select {
	case d.heldDirty <- struct{}{}:
	default: // a rewrite is pending; it will see this change too
	}
}

// heldWriter rewrites the held file after each change until ctx ends, and
// once more then if a change is pending (the last release at a stop).
func (d *Daemon) heldWriter(ctx context.Context) {
	for {
		select {
		case <-d.heldDirty:
			d.writeHeld()
		case <-ctx.Done():
			select {
			case <-d.heldDirty:
				d.writeHeld()
			default:
			}
			return
		}
	}
}

// writeHeld rewrites Options.HeldFile with the addresses held now.
func (d *Daemon) writeHeld() {
	if d.opts.HeldFile == "" {
		return
	}
	d.heldMu.Lock()
	defer d.heldMu.Unlock()
	held := []HeldVIP{}
	for _, r := range d.snapshot() {
		link, vips := r.in.heldVIPs()
		for _, v := range vips {
			held = append(held, HeldVIP{Interface: link, VIP: v})
		}
	}
	b, _ := json.Marshal(held)
	tmp := d.opts.HeldFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		d.log.Warn("cannot record the held addresses for vipd cleanup", "error", err)
		return
	}
	if err := os.Rename(tmp, d.opts.HeldFile); err != nil {
		d.log.Warn("cannot record the held addresses for vipd cleanup", "error", err)
	}
}

// ReadHeld returns what a daemon last recorded in its held file.
func ReadHeld(path string) ([]HeldVIP, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var held []HeldVIP
	return held, json.Unmarshal(b, &held)
}

// leaderOf is the state of the instance name, for its followers.
func (d *Daemon) leaderOf(name string) (leaderState, bool) {
	for _, r := range d.snapshot() {
		if r.in.id.name == name {
			st := r.in.status()
			return leaderState{master: st.State == vrrp.StateMaster, prio: st.Priority,
				cause: fmt.Sprintf("%s (%s)", name, st.State)}, true
		}
	}
	return leaderState{}, false
}

// tellFollowers hands the instances that follow name its new state. It
// runs on name's goroutine and never blocks it.
func (d *Daemon) tellFollowers(name string) {
	var ls leaderState
	found := false
	for _, r := range d.snapshot() {
		if r.in.follow != name {
			continue
		}
		if !found {
			if ls, found = d.leaderOf(name); !found {
				return
			}
		}
		r.in.leaderChanged(ls)
	}
}

// hostTick reads the host's CPU times every hostSampleEvery at most,
// riding on the adverts' wake-ups, so that the steal and iowait a
// transition records cover the last seconds, not the time since the last
// transition.
func (d *Daemon) hostTick() {
	if d.env.HostBaseline == nil {
		return
	}
	now := d.env.Now().UnixNano()
	last := d.hostAt.Load()
	if now-last < int64(hostSampleEvery) || !d.hostAt.CompareAndSwap(last, now) {
		return
	}
	_ = d.env.HostBaseline() // a failed reading shows in the next Sample
}
