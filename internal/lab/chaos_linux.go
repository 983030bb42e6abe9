package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipd/vipd/hoststat"
	"golang.org/x/sys/unix"
)

// Scenario is one fault of the chaos suite (issue 11). It runs on a stable
// group in a lab of its own; the fault ends when its injection returns, and
// the group is then watched until it settles.
type Scenario struct {
	Name    string
	Summary string
	// Interval is the advert interval the group runs at.
	Interval time.Duration
	// Settle bounds the wait for the group to settle after the fault (0:
	// 15 s + 10 advert intervals).
	Settle time.Duration
	inject func(ctx context.Context, r *chaosRun) error
}

// chaosRun is what a scenario's fault works on.
type chaosRun struct {
	lab    *Lab
	group  *Group
	filter *Filter
	master int

	mu    sync.Mutex
	notes []string
	// base is each node's daemon CPU when measuring began (0 for a daemon
	// started later); retired is what stopped daemons spent meanwhile.
	base    []time.Duration
	retired time.Duration
}

// holder is the node that holds the VIP alone now, else the master the
// run began with: a repeated freeze or delete hits whoever is master by
// then.
func (r *chaosRun) holder() int {
	if h := r.group.mon.State().OnlyHolder(); h != 0 {
		return h
	}
	return r.master
}

func (r *chaosRun) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *chaosRun) startCPU() {
	r.base = make([]time.Duration, r.lab.Nodes())
	for i := 1; i <= r.lab.Nodes(); i++ {
		if d := r.group.Daemon(i); d != nil {
			if u, err := d.Usage(); err == nil {
				r.base[i-1] = u.CPU
			}
		}
	}
}

func (r *chaosRun) cpuSpent() time.Duration {
	r.mu.Lock()
	total := r.retired
	r.mu.Unlock()
	for i := 1; i <= r.lab.Nodes(); i++ {
		if d := r.group.Daemon(i); d != nil {
			if u, err := d.Usage(); err == nil {
				total += u.CPU - r.base[i-1]
			}
		}
	}
	return total
}

// restart stops node i's daemon gracefully and starts it again, keeping
// the CPU it spent.
func (r *chaosRun) restart(i int) error {
	d := r.group.Daemon(i)
	if d == nil {
		return fmt.Errorf("lab: n%d has no daemon", i)
	}
	if u, err := d.Usage(); err == nil {
		r.mu.Lock()
		r.retired += u.CPU - r.base[i-1]
		r.mu.Unlock()
	}
	r.base[i-1] = 0
	if err := d.Stop(shutdownGrace); err != nil {
		r.note("n%d's %s exited with %v on SIGTERM", i, d.Kind(), err)
	}
	return r.group.Start(i)
}

// LossScenario drops percent % of the adverts towards every node, each
// receiver on its own, for d.
func LossScenario(percent int, interval, d time.Duration) Scenario {
	return Scenario{
		Name:     fmt.Sprintf("loss%d-%v", percent, interval),
		Summary:  fmt.Sprintf("%d%% of the adverts lost towards each node (nft numgen) for %v", percent, d),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			defer r.heal()
			for i := 1; i <= r.lab.Nodes(); i++ {
				if err := r.filter.LossTowards(ctx, i, percent); err != nil {
					return err
				}
			}
			if err := sleepCtx(ctx, d); err != nil {
				return err
			}
			r.noteDropped(ctx)
			return nil
		},
	}
}

// PartitionScenario drops every advert between the master and the other
// nodes, both ways, for d; ARP and IP still flow. Then it heals.
func PartitionScenario(interval, d time.Duration) Scenario {
	return Scenario{
		Name:     "partition",
		Summary:  fmt.Sprintf("adverts between the master and the others dropped both ways for %v (ARP and IP flow), then healed", d),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			defer r.heal()
			if err := r.filter.Partition(ctx, r.master); err != nil {
				return err
			}
			if err := sleepCtx(ctx, d); err != nil {
				return err
			}
			r.noteDropped(ctx)
			return nil
		},
	}
}

func (r *chaosRun) noteDropped(ctx context.Context) {
	if n, err := r.filter.Dropped(ctx); err == nil {
		r.note("nft dropped %d adverts", n)
	}
}

// heal removes the filter's rules even when ctx has ended.
func (r *chaosRun) heal() {
	if err := r.filter.Heal(context.Background()); err != nil {
		r.note("heal: %v", err)
	}
}

// FlapScenario takes the link of the host that was master at the start
// down for down, n times, up for up in between.
func FlapScenario(name string, interval, down, up time.Duration, n int) Scenario {
	summary := fmt.Sprintf("the master's link down for %v, once", down)
	if n > 1 {
		summary = fmt.Sprintf("the master's link down for %v, %d× (up %v in between)", down, n, up)
	}
	return Scenario{
		Name:     name,
		Summary:  summary,
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			for k := range n {
				if k > 0 {
					if err := sleepCtx(ctx, up); err != nil {
						return err
					}
				}
				// The same host every time: a flaky cable stays with its host.
				if _, _, err := r.group.Fault(Cut, r.master); err != nil {
					return err
				}
				serr := sleepCtx(ctx, down)
				if err := r.group.Restore(Cut, r.master); err != nil {
					return err
				}
				if serr != nil {
					return serr
				}
			}
			return nil
		},
	}
}

// StopScenario freezes the master's daemon (SIGSTOP to its process group)
// for stop, n times, gap apart: a paused VM.
func StopScenario(name string, interval, stop, gap time.Duration, n int) Scenario {
	return Scenario{
		Name:     name,
		Summary:  fmt.Sprintf("the master's daemon frozen (SIGSTOP) for %v, %d× (%v apart; whoever is master then)", stop, n, gap),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			for k := range n {
				if k > 0 {
					if err := sleepCtx(ctx, gap); err != nil {
						return err
					}
				}
				d := r.group.Daemon(r.holder())
				if d == nil {
					return errors.New("lab: the master has no daemon")
				}
				if err := d.SignalGroup(syscall.SIGSTOP); err != nil {
					return err
				}
				serr := sleepCtx(ctx, stop)
				if err := d.SignalGroup(syscall.SIGCONT); err != nil {
					return err
				}
				if serr != nil {
					return serr
				}
			}
			return nil
		},
	}
}

// StarveScenario keeps every core busy with stress-ng for d.
func StarveScenario(interval, d time.Duration) Scenario {
	return Scenario{
		Name:     "starve-" + interval.String(),
		Summary:  fmt.Sprintf("every core busy (stress-ng --cpu %d) for %v", runtime.NumCPU(), d),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			bin, err := exec.LookPath("stress-ng")
			if err != nil {
				return errors.New("lab: stress-ng is missing: apt-get install stress-ng")
			}
			// --timeout as a backstop; the kill below is what ends it.
			cmd := exec.Command(bin, "--cpu", strconv.Itoa(runtime.NumCPU()), "--timeout",
				strconv.Itoa(int(d.Seconds())+10)+"s", "--quiet")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := r.lab.spawn(cmd); err != nil {
				return fmt.Errorf("lab: start stress-ng: %w", err)
			}
			defer func() {
				_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
				_ = cmd.Wait()
			}()
			return sleepCtx(ctx, d)
		},
	}
}

// MoonshotScenario is issue 11's moonshot: 10 ms adverts (a failover of
// about 40 ms) for d with every core busy (stress-ng) and 1 % of the
// adverts lost towards each node; the goal is no false move at all.
func MoonshotScenario(d time.Duration) Scenario {
	interval := 10 * time.Millisecond
	starve := StarveScenario(interval, d)
	return Scenario{
		Name:     "moonshot",
		Summary:  fmt.Sprintf("10 ms adverts, every core busy (stress-ng --cpu %d) and 1%% of the adverts lost towards each node, for %v", runtime.NumCPU(), d),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			defer r.heal()
			for i := 1; i <= r.lab.Nodes(); i++ {
				if err := r.filter.LossTowards(ctx, i, 1); err != nil {
					return err
				}
			}
			err := starve.inject(ctx, r)
			r.noteDropped(ctx)
			return err
		},
	}
}

// PauseScenario freezes every daemon for a random 20–80 ms every 500 ms,
// each on its own schedule, for d: a hypervisor stealing time.
func PauseScenario(interval, d time.Duration) Scenario {
	const every, minPause, maxPause = 500 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond
	return Scenario{
		Name:     "pauses-" + interval.String(),
		Summary:  fmt.Sprintf("every daemon frozen (SIGSTOP) for %v–%v every %v for %v", minPause, maxPause, every, d),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			var wg sync.WaitGroup
			var mu sync.Mutex
			pauses := 0
			var paused time.Duration
			for i := 1; i <= r.lab.Nodes(); i++ {
				dm := r.group.Daemon(i)
				if dm == nil {
					continue
				}
				wg.Go(func() {
					rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
					// A random phase, so the daemons are not frozen together.
					if sleepCtx(ctx, time.Duration(rnd.Int64N(int64(every)))) != nil {
						return
					}
					for ctx.Err() == nil {
						p := minPause + time.Duration(rnd.Int64N(int64(maxPause-minPause)))
						if dm.SignalGroup(syscall.SIGSTOP) != nil {
							return
						}
						start := time.Now()
						time.Sleep(p) // not cut short: the pause is the fault
						_ = dm.SignalGroup(syscall.SIGCONT)
						mu.Lock()
						pauses++
						paused += time.Since(start)
						mu.Unlock()
						_ = sleepCtx(ctx, every-p)
					}
				})
			}
			wg.Wait()
			r.note("%d pauses, %v frozen in all", pauses, paused.Round(time.Millisecond))
			return nil
		},
	}
}

// FloodScenario sends malformed and foreign VRRP packets from the stranger
// at rate a second for d.
func FloodScenario(interval time.Duration, rate int, d time.Duration) Scenario {
	return Scenario{
		Name:     "flood",
		Summary:  fmt.Sprintf("%d malformed or foreign VRRP packets a second from a stranger for %v", rate, d),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			g := r.group.spec.Group
			st, err := r.lab.Flood(ctx, g.VIP.Addr(), g.VRID, rate, d)
			r.note("sent %d frames in %v (%d send errors)", st.Sent, st.Took.Round(time.Millisecond), st.Errors)
			return err
		},
	}
}

// RestartBackupsScenario restarts every backup's daemon (SIGTERM, start)
// n times, every apart.
func RestartBackupsScenario(interval, every time.Duration, n int) Scenario {
	return Scenario{
		Name:     "restart-backups",
		Summary:  fmt.Sprintf("every backup's daemon restarted %d× (%v apart)", n, every),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			for k := range n {
				if k > 0 {
					if err := sleepCtx(ctx, every); err != nil {
						return err
					}
				}
				m := r.holder()
				for i := 1; i <= r.lab.Nodes(); i++ {
					if i == m {
						continue
					}
					if err := r.restart(i); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
}

// VIPDeletedScenario deletes the VIP on the master by hand n times, every
// apart.
func VIPDeletedScenario(interval, every time.Duration, n int) Scenario {
	return Scenario{
		Name:     "vip-deleted",
		Summary:  fmt.Sprintf("the VIP deleted by hand on the master %d× (%v apart)", n, every),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			for k := range n {
				if k > 0 {
					if err := sleepCtx(ctx, every); err != nil {
						return err
					}
				}
				if err := r.lab.RemoveNodeAddr(r.holder(), r.group.spec.Group.VIP); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// ARPClaimScenario has the stranger claim the VIP with gratuitous ARP n
// times, every apart (it never configures the address).
func ARPClaimScenario(interval, every time.Duration, n int) Scenario {
	return Scenario{
		Name:     "arp-claim",
		Summary:  fmt.Sprintf("a foreign host claims the VIP by gratuitous ARP %d× (%v apart)", n, every),
		Interval: interval,
		inject: func(ctx context.Context, r *chaosRun) error {
			for k := range n {
				if k > 0 {
					if err := sleepCtx(ctx, every); err != nil {
						return err
					}
				}
				if err := r.lab.ClaimByARP(r.group.spec.Group.VIP.Addr()); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// Scenarios is the suite of issue 11. scale multiplies the long windows
// (loss, starvation, pauses, flood: 1 gives 60 s of loss); counts and the
// protocol-bound durations (partition, flaps, stops) stay as they are.
func Scenarios(scale float64) []Scenario {
	if scale <= 0 {
		scale = 1
	}
	sc := func(d, floor time.Duration) time.Duration { return max(floor, time.Duration(float64(d)*scale)) }
	const s, ms100, ms10 = time.Second, 100 * time.Millisecond, 10 * time.Millisecond
	// At 1 s adverts the master's peers wait 3.6 s (Master_Down_Interval).
	partition := 3 * MasterDownInterval(100, s)
	if scale < 1 {
		partition = 2 * MasterDownInterval(100, s)
	}
	return []Scenario{
		LossScenario(10, ms100, sc(60*s, 5*s)),
		LossScenario(20, ms100, sc(60*s, 5*s)),
		LossScenario(10, ms10, sc(60*s, 5*s)),
		LossScenario(20, ms10, sc(60*s, 5*s)),
		PartitionScenario(s, partition.Round(100*time.Millisecond)),
		FlapScenario("flap-short-once", s, 300*time.Millisecond, 0, 1),
		FlapScenario("flap-short", s, 300*time.Millisecond, 2*s, 5),
		// Long: well past the peers' Master_Down_Interval (361 ms at 100 ms).
		FlapScenario("flap-long-once", ms100, 1500*time.Millisecond, 0, 1),
		FlapScenario("flap-long", ms100, 1500*time.Millisecond, 3*s, 3),
		StopScenario("sigstop-short", ms100, 200*time.Millisecond, 2*s, 3),
		StopScenario("sigstop-long", ms100, 1500*time.Millisecond, 3*s, 2),
		StarveScenario(ms10, sc(60*s, 10*s)),
		PauseScenario(ms100, sc(30*s, 10*s)),
		FloodScenario(ms100, 5000, sc(20*s, 5*s)),
		RestartBackupsScenario(ms100, 2*s, 5),
		VIPDeletedScenario(ms100, 2*s, 3),
		ARPClaimScenario(ms100, s, 3),
		MoonshotScenario(sc(10*time.Minute, 30*s)),
	}
}

// SelectScenarios picks scenarios by name, in the order given; a name may
// end in "*" to take every scenario it starts ("loss*").
func SelectScenarios(all []Scenario, names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Scenario
	var unknown []string
	for _, n := range names {
		found := false
		for _, s := range all {
			if s.Name == n || strings.HasSuffix(n, "*") && strings.HasPrefix(s.Name, strings.TrimSuffix(n, "*")) {
				if !slices.ContainsFunc(out, func(o Scenario) bool { return o.Name == s.Name }) {
					out = append(out, s)
				}
				found = true
			}
		}
		if !found {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		known := make([]string, len(all))
		for i, s := range all {
			known[i] = s.Name
		}
		return nil, fmt.Errorf("unknown scenario %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return out, nil
}

// RunScenario runs sc against spec's daemon kind in a fresh lab (opts, with
// a stranger added): a stable group, the client probing the VIP every
// millisecond, the fault, then the group watched until it settles (one
// holder, the client on its MAC, nothing moving for Group.StableHold) or
// sc.Settle passes. spec.Group defaults to DefaultGroupConfig at
// sc.Interval. Not settling is a measurement, not an error; an error means
// the run could not be made or measured.
func RunScenario(ctx context.Context, log *slog.Logger, opts Options, sc Scenario, spec DaemonSpec) (ChaosResult, error) {
	if spec.Group.Interval == 0 {
		n := opts.Nodes
		if n == 0 {
			n = 3
		}
		spec.Group = DefaultGroupConfig(n, sc.Interval)
	}
	iv := spec.Group.Interval
	res := ChaosResult{Scenario: sc.Name, Daemon: spec.Kind.String(), IntervalMS: ms(iv)}
	fail := func(err error) (ChaosResult, error) {
		res.Error = err.Error()
		return res, err
	}
	opts.Stranger = true
	if opts.Nodes == 0 {
		opts.Nodes = len(spec.Group.Priorities)
	}
	l, err := New(ctx, log, opts)
	if err != nil {
		return fail(err)
	}
	defer l.Close()
	f, err := l.NewFilter(ctx)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	g, err := l.StartGroup(ctx, spec, nil)
	if err != nil {
		return fail(err)
	}
	defer g.Close()
	master, err := g.WaitStable(ctx, 0)
	if err != nil {
		return fail(err)
	}
	res.Master = master
	p, err := l.StartProber(ctx, spec.Group.VIP.Addr(), time.Millisecond)
	if err != nil {
		return fail(err)
	}
	defer p.Stop()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = g.mon.Wait(wctx, 5*time.Millisecond, func(s State) bool {
		return s.NeighNode == master && p.Flowing(100*time.Millisecond, 20*time.Millisecond)
	})
	cancel()
	if err != nil {
		return fail(fmt.Errorf("lab: client does not reach the VIP on n%d before the fault: %w", master, err))
	}

	r := &chaosRun{lab: l, group: g, filter: f, master: master}
	r.startCPU()
	host := hoststat.NewSampler()
	_, _ = host.Sample()
	t0 := time.Now()
	injErr := sc.inject(ctx, r)
	t1 := time.Now()
	settle := sc.Settle
	if settle == 0 {
		settle = 15*time.Second + 10*iv
	}
	// Quiet for StableHold when the node that should be master holds the
	// VIP; any other holder must stay put until even the lowest priority's
	// Master_Down_Interval has passed, or a preemption still to come would
	// be missed.
	hold := g.StableHold()
	lowest := slices.Min(spec.Group.Priorities)
	sctx, cancel := context.WithTimeout(ctx, settle)
	_, serr := g.mon.Wait(sctx, 10*time.Millisecond, func(s State) bool {
		h := s.OnlyHolder()
		quiet := hold
		if h != g.expectedMaster(0) {
			quiet = MasterDownInterval(lowest, iv) + hold
		}
		if h == 0 || s.NeighNode != h || s.At.Sub(t1) < quiet {
			return false
		}
		if len(g.mon.Events(s.At.Add(-quiet), time.Time{})) > 0 {
			return false
		}
		return p.Flowing(quiet, max(20*time.Millisecond, 2*iv))
	})
	cancel()
	res.Settled = serr == nil
	t2 := time.Now()
	res.CPUMS = ms(r.cpuSpent())
	if hs, err := host.Sample(); err == nil {
		res.Host = hs.String()
	}
	// Let the last probes' answers arrive before counting the lost ones.
	time.Sleep(20 * time.Millisecond)
	p.Stop()

	res.Fault = r.window(p, t0, t0, t1)
	res.Total = r.window(p, t0, t0, t2)
	s := g.mon.State()
	res.Holders = s.Holders
	res.OneOwner = len(s.Holders) == 1
	res.ClientOnOwner = res.OneOwner && s.NeighNode == s.Holders[0]
	res.Daemons = l.Nodes()
	for i := 1; i <= l.Nodes(); i++ {
		if d := g.Daemon(i); d != nil {
			select {
			case <-d.Done():
				r.note("n%d's %s exited: %s (log %s)", i, d.Kind(), exitText(d.Err()), d.LogPath())
			default:
				res.DaemonsAlive++
			}
		}
	}
	r.mu.Lock()
	res.Notes = slices.Clone(r.notes)
	r.mu.Unlock()
	if !res.Settled && ctx.Err() == nil {
		res.Notes = append(res.Notes, fmt.Sprintf("not settled %v after the fault (holders %v, client on n%d)", settle, s.Holders, s.NeighNode))
	}
	if injErr != nil {
		return fail(fmt.Errorf("lab: %s: %w", sc.Name, injErr))
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	return res, nil
}

// window measures [from, to); t0 is the fault's start.
func (r *chaosRun) window(p *Prober, t0, from, to time.Time) ChaosWindow {
	ev := r.group.mon.Events(time.Time{}, time.Time{})
	hs := holderStats(ev, r.lab.Nodes(), from, to)
	w := ChaosWindow{
		FromMS: ms(from.Sub(t0)), ToMS: ms(to.Sub(t0)),
		AddressMoves: hs.Acquisitions, NeighMoves: neighMoves(ev, from, to),
		TwoHoldersMS: ms(hs.TwoHolders), NoHolderMS: ms(hs.NoHolder), LongestNoHolderMS: ms(hs.LongestNoHolder),
		ProbeStallMS: ms(p.LongestSendGap(from, to)),
	}
	// The last answer before the window anchors the first gap; a silence
	// that lasts to the window's end counts too.
	answers := p.Answers(from.Add(-50*time.Millisecond), to)
	switch {
	case len(answers) == 0:
		w.OutageMS = ms(to.Sub(from))
	default:
		gap := longestGap(answers, answers[0].Recv, to).Len
		w.OutageMS = ms(max(gap, to.Sub(answers[len(answers)-1].Recv)))
	}
	w.LostProbes, w.ProbesSent = p.Lost(from, to.Add(-100*time.Millisecond))
	return w
}

// ChaosConfig drives RunChaos.
type ChaosConfig struct {
	Daemons   []DaemonKind
	Scenarios []Scenario
	// Scale is what the scenarios were built with (for the report).
	Scale            float64
	Quick            bool
	VipdBinary       string
	KeepalivedBinary string
	// Progress, if set, receives a line per step.
	Progress func(string)
}

// RunChaos runs every scenario against every daemon kind, one fresh lab
// each, daemons of a scenario back to back. A scenario that fails is
// recorded and the suite goes on; only the end of ctx stops it. The report
// is returned even then.
func RunChaos(ctx context.Context, log *slog.Logger, cfg ChaosConfig) (*ChaosReport, error) {
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	rep := &ChaosReport{Started: time.Now(), Versions: map[string]string{}, Quick: cfg.Quick, Scale: cfg.Scale}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		rep.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	for _, d := range cfg.Daemons {
		bin := cfg.KeepalivedBinary
		if d == Vipd {
			bin = cfg.VipdBinary
		}
		rep.Versions[d.String()] = daemonVersion(d, bin)
	}
	start := time.Now()
	say := func(format string, args ...any) {
		progress(fmt.Sprintf("[%7.1fs] ", time.Since(start).Seconds()) + fmt.Sprintf(format, args...))
	}
	var err error
	for _, sc := range cfg.Scenarios {
		rep.Scenarios = append(rep.Scenarios, ScenarioInfo{Name: sc.Name, Summary: sc.Summary, IntervalMS: ms(sc.Interval)})
		for _, kind := range cfg.Daemons {
			if err = ctx.Err(); err != nil {
				break
			}
			bin := cfg.KeepalivedBinary
			if kind == Vipd {
				bin = cfg.VipdBinary
			}
			say("%s / %s @ %v: %s", sc.Name, kind, sc.Interval, sc.Summary)
			res, rerr := RunScenario(ctx, log, Options{}, sc, DaemonSpec{Kind: kind, Binary: bin})
			rep.Results = append(rep.Results, res)
			if rerr != nil {
				say("%s / %s: FAILED: %v", sc.Name, kind, rerr)
				continue
			}
			t := res.Total
			say("%s / %s: vip moves %d, client moves %d, 2 holders %s ms, 0 holders %s ms (longest %s), outage %s ms, lost %d, one owner %s, client on owner %s, alive %d/%d, cpu %.0f ms%s",
				sc.Name, kind, t.AddressMoves, t.NeighMoves, fmtNum(t.TwoHoldersMS), fmtNum(t.NoHolderMS), fmtNum(t.LongestNoHolderMS),
				fmtNum(t.OutageMS), t.LostProbes, yesNo(res.OneOwner), yesNo(res.ClientOnOwner), res.DaemonsAlive, res.Daemons, res.CPUMS,
				notesText(res.Notes))
		}
		if err != nil {
			break
		}
	}
	rep.Finished = time.Now()
	return rep, err
}

func notesText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}
