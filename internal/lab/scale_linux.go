package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// ScaleConfig drives RunScale.
type ScaleConfig struct {
	Daemons []DaemonKind
	// Intervals are the advert intervals of the one-group rows.
	Intervals []time.Duration
	// Groups are the group counts of the N-groups rows, all at
	// GroupsInterval (default 1s). The rows at rest (N = 1, ARP load,
	// wake-ups) come from the one-group lab at GroupsInterval, which is
	// measured even when Intervals leaves it out if Groups has 1 or
	// ARPRate is set.
	Groups         []int
	GroupsInterval time.Duration
	// Window is each steady window (default 60s).
	Window time.Duration
	// Rounds is how many pairs of labs measure each one-group interval's
	// quiet window, built anew each time (default 1). Where a lab's nodes
	// land on the machine's CPUs moves a daemon's figure by up to 2× from
	// one lab to the next (keepalived's at 100 ms: 75 to 143 ms/min per
	// node in one day's runs), so one pair of labs can cross 1.0 either
	// way; the rows pool the rounds and list each one.
	Rounds int
	// ARPRate is the background ARP load in requests a second (0: none).
	ARPRate int
	// Trials is the number of link cuts per daemon and interval for the
	// takeover − bound rows. BenchTrials, when not nil, are the trials of
	// an earlier bench run: their cut trials are reused and none is run.
	Trials      int
	BenchTrials []TrialResult
	// Failover cuts the master of the largest group count once per daemon.
	Failover bool
	// Perf runs perf stat beside the wake-up window, if perf is installed.
	Perf bool
	// VipdBinary is the vipd executable (needed when Daemons has Vipd);
	// KeepalivedBinary defaults to keepalived from PATH.
	VipdBinary       string
	KeepalivedBinary string
	// VipdGARPProbe, if set, is vipd's garp.probe in every lab ("0s": no
	// routine probes); empty keeps vipd's default.
	VipdGARPProbe string
	// Progress, if set, receives one line per step as the run goes.
	Progress func(string)
	// LogDir, if set, keeps every daemon's log there when its lab closes,
	// named after the lab's configuration and node (keepLogs).
	LogDir string
}

// RunScale measures issue 16's figures. Each configuration runs its vipd
// lab and its keepalived lab at the same time, with aligned windows, so
// both daemons see the same machine; the link cuts run one lab at a time.
// Failures of single labs are recorded, not fatal; the result is returned
// even when ctx ends early.
func RunScale(ctx context.Context, log *slog.Logger, cfg ScaleConfig) (*ScaleResult, error) {
	if cfg.GroupsInterval == 0 {
		cfg.GroupsInterval = time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 60 * time.Second
	}
	cfg.Rounds = max(cfg.Rounds, 1)
	if len(cfg.Intervals) == 0 && len(cfg.Groups) == 0 {
		return nil, errNoGroups
	}
	for _, n := range cfg.Groups {
		if _, err := ScaleGroups(DefaultGroupConfig(3, cfg.GroupsInterval), n); err != nil {
			return nil, err
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &scaleRun{cfg: cfg, log: log, start: time.Now(), progress: cfg.Progress}
	if r.progress == nil {
		r.progress = func(string) {}
	}
	res := &ScaleResult{Started: r.start, CPUs: runtime.NumCPU(), Versions: map[string]string{}}
	r.res = res
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		res.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	ivs := slices.Clone(cfg.Intervals)
	if rest := slices.Contains(cfg.Groups, 1) || cfg.ARPRate > 0; rest && !slices.Contains(ivs, cfg.GroupsInterval) {
		ivs = append(ivs, cfg.GroupsInterval)
	}
	res.Config = ScaleSettings{Groups: cfg.Groups, GroupsIntervalMS: ms(cfg.GroupsInterval), WindowS: cfg.Window.Seconds(),
		Rounds: cfg.Rounds, ARPRate: cfg.ARPRate, Trials: cfg.Trials, Priorities: DefaultGroupConfig(3, time.Second).Priorities,
		VipdGARPProbe: cfg.VipdGARPProbe}
	for _, iv := range ivs {
		res.Config.IntervalsMS = append(res.Config.IntervalsMS, ms(iv))
	}
	for _, d := range cfg.Daemons {
		res.Config.Daemons = append(res.Config.Daemons, d.String())
		res.Versions[d.String()] = daemonVersion(d, r.binary(d))
	}
	switch {
	case cfg.BenchTrials != nil:
		res.Config.TakeoverSource = "bench"
		for _, t := range cfg.BenchTrials {
			if t.Mode == Cut.String() && slices.Contains(res.Config.IntervalsMS, t.IntervalMS) {
				res.Trials = append(res.Trials, t)
			}
		}
		res.Config.Trials = 0
	case cfg.Trials > 0:
		res.Config.TakeoverSource = "scale"
	}
	if cfg.Perf {
		if r.perf, r.perfNote = perfBinary(); r.perfNote != "" {
			res.Notes = append(res.Notes, r.perfNote)
		}
	}

	var err error
	for _, iv := range ivs {
		if err = ctx.Err(); err != nil {
			break
		}
		r.oneGroup(ctx, iv)
	}
	for round := 2; round <= cfg.Rounds; round++ {
		for _, iv := range ivs {
			if err = ctx.Err(); err != nil {
				break
			}
			r.oneGroupAgain(ctx, iv, round)
		}
	}
	for _, n := range cfg.Groups {
		if err = ctx.Err(); err != nil {
			break
		}
		if n == 1 {
			continue // the one-group lab at GroupsInterval
		}
		r.nGroups(ctx, n, cfg.Failover && n == slices.Max(cfg.Groups))
	}
	if err == nil {
		err = ctx.Err()
	}
	res.Finished = time.Now()
	return res, err
}

// scaleRun is one RunScale; pairs of labs report into it concurrently.
type scaleRun struct {
	cfg      ScaleConfig
	log      *slog.Logger
	start    time.Time
	progress func(string)
	perf     string // perf binary, "" when skipped
	perfNote string

	mu  sync.Mutex // guards res and the progress output
	res *ScaleResult
}

func (r *scaleRun) binary(k DaemonKind) string {
	if k == Vipd {
		return r.cfg.VipdBinary
	}
	return r.cfg.KeepalivedBinary
}

func (r *scaleRun) say(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress(fmt.Sprintf("[%7.1fs] ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, args...))
}

func (r *scaleRun) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Notes = append(r.res.Notes, fmt.Sprintf(format, args...))
}

// scaleLab is one daemon kind's lab of a configuration.
type scaleLab struct {
	kind   DaemonKind
	iv     time.Duration
	groups []GroupConfig
	logDir string // where close keeps the daemons' logs; "" drops them
	round  int    // of the one-group labs, from 1; 0 for the others
	lab    *Lab
	g      *Group
	master int
	err    error // setup failed: no windows
}

func (s *scaleLab) name() string {
	name := fmt.Sprintf("%s, %s @%v", s.kind, groupsText(len(s.groups)), s.iv)
	if s.round > 1 {
		name += fmt.Sprintf(" (round %d)", s.round)
	}
	return name
}

// close tears the lab down (daemons, links, namespaces), keeping the
// daemons' logs first if asked to.
func (s *scaleLab) close() {
	if s.g != nil {
		// Close forgets the daemons; their logs stay until the lab's.
		logs := map[int]string{}
		for i := range s.groups[0].Priorities {
			if d := s.g.Daemon(i + 1); d != nil && s.logDir != "" {
				logs[i+1] = d.LogPath()
			}
		}
		_ = s.g.Close()
		for node, path := range logs {
			if err := keepLog(path, filepath.Join(s.logDir, scaleLogName(s.kind, len(s.groups), s.iv, node))); err != nil {
				s.lab.log.Warn("daemon log not kept", "node", NodeName(node), "error", err)
			}
		}
	}
	if s.lab != nil {
		_ = s.lab.Close()
	}
}

// eachLab runs fn for every lab that was set up, all at once.
func eachLab(labs []*scaleLab, fn func(*scaleLab)) {
	var wg sync.WaitGroup
	for _, s := range labs {
		if s.err == nil {
			wg.Go(func() { fn(s) })
		}
	}
	wg.Wait()
}

// setup builds one lab per daemon kind, at once, with n groups at iv, and
// waits until each is stable with every VIP on its master. round numbers
// the one-group labs (0 for the others).
func (r *scaleRun) setup(ctx context.Context, n int, iv time.Duration, round int, stranger bool) []*scaleLab {
	labs := make([]*scaleLab, len(r.cfg.Daemons))
	var wg sync.WaitGroup
	for i, kind := range r.cfg.Daemons {
		g := DefaultGroupConfig(3, iv)
		if kind == Vipd {
			g.GARPProbe = r.cfg.VipdGARPProbe
		}
		groups, _ := ScaleGroups(g, n) // n checked by RunScale
		s := &scaleLab{kind: kind, iv: iv, groups: groups, round: round, logDir: r.cfg.LogDir}
		labs[i] = s
		wg.Go(func() {
			s.err = r.build(ctx, s, stranger)
			if s.err != nil {
				r.say("%s: %v", s.name(), s.err)
				r.addWindow(ScaleWindow{Daemon: kind.String(), IntervalMS: ms(iv), Groups: n, Round: round, Error: s.err.Error()})
			}
		})
	}
	wg.Wait()
	return labs
}

func (r *scaleRun) build(ctx context.Context, s *scaleLab, stranger bool) error {
	var err error
	if s.lab, err = New(ctx, r.log, Options{Stranger: stranger}); err != nil {
		return err
	}
	extra := make(map[int][]byte)
	for i := 1; i <= s.lab.Nodes(); i++ {
		if extra[i], err = extraInstances(s.kind, i, s.groups); err != nil {
			return err
		}
	}
	spec := DaemonSpec{Kind: s.kind, Binary: r.binary(s.kind), Group: s.groups[0],
		Config: func(node int, gen []byte) []byte { return append(gen, extra[node]...) }}
	r.say("%s: starting 3 nodes", s.name())
	if s.g, err = s.lab.StartGroup(ctx, spec, nil); err != nil {
		return err
	}
	if s.master, err = s.g.WaitStable(ctx, 0); err != nil {
		return err
	}
	// Group 1 has been stable for a StableHold: the others, started with
	// it, need only be seen settled for an interval more.
	if err := r.waitAllHeld(ctx, s, s.iv+200*time.Millisecond, 0); err != nil {
		return err
	}
	// Start-up is not rest: vipd gives back what it allocated 5 s after
	// its last transition; both daemons get the same wait.
	select {
	case <-time.After(startupSettle):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// startupSettle is how long after the groups are held a configuration's
// windows start.
const startupSettle = 6 * time.Second

// holders maps each group of s to the node that alone holds its VIP (0:
// none or several).
func holders(s *scaleLab) ([]int, error) {
	byVIP := make(map[netip.Addr]int, len(s.groups))
	for k, g := range s.groups {
		byVIP[g.VIP.Addr()] = k
	}
	count := make([]int, len(s.groups))
	out := make([]int, len(s.groups))
	for i := 1; i <= s.lab.Nodes(); i++ {
		addrs, err := s.lab.NodeHandle(i).AddrList(nil, netlink.FAMILY_V4)
		if err != nil {
			return nil, fmt.Errorf("addresses of n%d: %w", i, err)
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			if k, ok := byVIP[ip.Unmap()]; ok {
				count[k]++
				out[k] = i
			}
		}
	}
	for k, c := range count {
		if c != 1 {
			out[k] = 0
		}
	}
	return out, nil
}

// waitAllHeld waits until the master alone holds every group's VIP, with
// nothing changing for hold (timeout 0: 10 intervals + 30 s, room for
// keepalived's start-up with 255 instances).
func (r *scaleRun) waitAllHeld(ctx context.Context, s *scaleLab, hold, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 10*s.iv + 30*time.Second
	}
	deadline := time.Now().Add(timeout)
	var since time.Time
	for {
		h, err := holders(s)
		if err != nil {
			return err
		}
		all := true
		for _, n := range h {
			all = all && n == s.master
		}
		switch {
		case !all:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= hold:
			return nil
		}
		if time.Now().After(deadline) {
			missing := 0
			for _, n := range h {
				if n != s.master {
					missing++
				}
			}
			return fmt.Errorf("%d of %d VIPs not held by n%d alone after %v", missing, len(h), s.master, timeout)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

func (r *scaleRun) addWindow(w ScaleWindow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Windows = append(r.res.Windows, w)
}

// oneGroup is the one-group configuration at iv: the quiet window (with
// perf at GroupsInterval), the ARP-load window at GroupsInterval, then the
// takeover trials one lab at a time.
func (r *scaleRun) oneGroup(ctx context.Context, iv time.Duration) {
	rest := iv == r.cfg.GroupsInterval
	labs := r.setup(ctx, 1, iv, 1, rest && r.cfg.ARPRate > 0)
	defer eachLab(labs, (*scaleLab).close)
	for _, s := range labs {
		if s.lab != nil && s.err != nil {
			s.close()
		}
	}
	eachLab(labs, func(s *scaleLab) { r.window(ctx, s, 0, rest && r.perf != "") })
	if rest && r.cfg.ARPRate > 0 {
		eachLab(labs, func(s *scaleLab) { r.window(ctx, s, r.cfg.ARPRate, false) })
	}
	if r.cfg.BenchTrials != nil {
		return
	}
	for _, s := range labs {
		if s.err != nil {
			continue
		}
		for n := 1; n <= r.cfg.Trials && ctx.Err() == nil; n++ {
			t, err := s.g.Trial(ctx, Cut, n)
			r.mu.Lock()
			r.res.Trials = append(r.res.Trials, t)
			r.mu.Unlock()
			if err != nil {
				r.say("%s cut %d/%d: FAILED: %v", s.name(), n, r.cfg.Trials, err)
				if _, err := s.g.WaitStable(ctx, 0); err != nil {
					break
				}
				continue
			}
			r.say("%s cut %d/%d: takeover %s ms, bound %s ms, takeover - bound %s ms",
				s.name(), n, r.cfg.Trials, fmtNum(t.TakeoverMS), fmtNum(t.BoundMS), fmtNum(t.TakeoverExcessMS))
		}
	}
}

// oneGroupAgain measures the one-group configuration at iv again in labs
// built anew: the quiet window of round.
func (r *scaleRun) oneGroupAgain(ctx context.Context, iv time.Duration, round int) {
	labs := r.setup(ctx, 1, iv, round, false)
	defer eachLab(labs, (*scaleLab).close)
	for _, s := range labs {
		if s.lab != nil && s.err != nil {
			s.close()
		}
	}
	eachLab(labs, func(s *scaleLab) { r.window(ctx, s, 0, false) })
}

// nGroups is the n-groups configuration at GroupsInterval: one window, then
// (failover) a link cut of the master in each lab in turn.
func (r *scaleRun) nGroups(ctx context.Context, n int, failover bool) {
	labs := r.setup(ctx, n, r.cfg.GroupsInterval, 0, false)
	defer eachLab(labs, (*scaleLab).close)
	for _, s := range labs {
		if s.lab != nil && s.err != nil {
			s.close()
		}
	}
	eachLab(labs, func(s *scaleLab) { r.window(ctx, s, 0, false) })
	if !failover {
		return
	}
	for _, s := range labs {
		if s.err != nil || ctx.Err() != nil {
			continue
		}
		f := r.failover(ctx, s)
		r.mu.Lock()
		r.res.Failovers = append(r.res.Failovers, f)
		r.mu.Unlock()
		ex := summarize(f.ExcessMS)
		if f.Error != "" {
			r.say("%s: failover FAILED: %s", s.name(), f.Error)
		}
		adv := summarize(f.AdvertExcessMS)
		r.say("%s: failover: %d of %d taken over, takeover - MDI min %s / median %s / max %s ms (first advert: %s / %s / %s), last VIP %s ms after the cut",
			s.name(), f.TakenOver, f.Groups, fmtNum(ex.Min), fmtNum(ex.Median), fmtNum(ex.Max),
			fmtNum(adv.Min), fmtNum(adv.Median), fmtNum(adv.Max), fmtNum(f.LastMS))
	}
}

// window measures every node's daemon over Window of the healthy lab s,
// with background ARP at arpRate (0: quiet) and perf stat (perf).
func (r *scaleRun) window(ctx context.Context, s *scaleLab, arpRate int, perf bool) {
	w := ScaleWindow{Daemon: s.kind.String(), IntervalMS: ms(s.iv), Groups: len(s.groups), Round: s.round, ARPRate: arpRate, Stable: true}
	defer func() { r.addWindow(w) }()
	fail := func(err error) {
		w.Stable, w.Error = false, err.Error()
		r.say("%s: window: %v", s.name(), err)
	}
	if ctx.Err() != nil {
		fail(ctx.Err())
		return
	}
	nodes := s.lab.Nodes()
	before := make([]procSample, nodes)
	pids := make([][]int, nodes)
	for i := 1; i <= nodes; i++ {
		smp, err := sampleDaemon(s.g.Daemon(i))
		if err != nil {
			fail(fmt.Errorf("n%d: %w", i, err))
			return
		}
		before[i-1], pids[i-1] = smp, smp.pids
	}
	held, err := holders(s)
	if err != nil {
		fail(err)
		return
	}
	wctx, stop := context.WithTimeout(ctx, r.cfg.Window)
	defer stop()
	var perfs []*perfJob
	if perf {
		for i := range nodes {
			j, err := startPerf(ctx, r.perf, pids[i], r.cfg.Window)
			if err != nil {
				r.note("perf stat did not start: %v", err)
				break
			}
			perfs = append(perfs, j)
		}
	}
	arpDone := make(chan ARPLoadStats, 1)
	if arpRate > 0 {
		go func() {
			st, err := s.lab.ARPLoad(wctx, arpRate)
			if err != nil {
				r.say("%s: ARP load: %v", s.name(), err)
			}
			arpDone <- st
		}()
	}
	what := "quiet"
	if arpRate > 0 {
		what = fmt.Sprintf("ARP load %d/s", arpRate)
	}
	r.say("%s: n%d is master; %s window %v", s.name(), s.master, what, r.cfg.Window)
	from := time.Now()
	<-wctx.Done()
	if ctx.Err() != nil {
		fail(ctx.Err())
		return
	}
	to := time.Now()
	w.WindowS = to.Sub(from).Seconds()
	if arpRate > 0 {
		st := <-arpDone
		w.ARPSent = st.Sent
	}
	var errs []error
	for i := 1; i <= nodes; i++ {
		after, err := sampleDaemon(s.g.Daemon(i))
		if err != nil {
			errs = append(errs, fmt.Errorf("n%d: %w", i, err))
			continue
		}
		role := "backup"
		if i == s.master {
			role = "master"
		}
		u, err := usageBetween(i, role, before[i-1], after)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.Nodes = append(w.Nodes, u)
	}
	for i, j := range perfs {
		c, err := j.wait()
		cs, okcs := c["context-switches"]
		clk, okclk := c["cpu-clock"]
		if err != nil || !okcs || !okclk {
			r.perfOnce("perf stat -p counted nothing here (%v): perf rows skipped; the schedstat and /proc status rows count the same", errOr(err, "<not counted>"))
			continue
		}
		for k := range w.Nodes {
			if w.Nodes[k].Node == i+1 {
				w.Nodes[k].PerfSwitches, w.Nodes[k].PerfCPUMS = &cs, &clk
			}
		}
	}
	// Stability: nothing moved, and only the master advertised group 1.
	now, err := holders(s)
	if err != nil {
		errs = append(errs, err)
	} else if !slices.Equal(now, held) {
		w.Stable = false
		errs = append(errs, errors.New("VIPs moved during the window"))
	}
	mon := s.g.Monitor()
	for _, e := range mon.Events(from, to) {
		if e.Kind == VIPAdded || e.Kind == VIPRemoved {
			w.Stable = false
			errs = append(errs, errors.New("group 1's VIP moved during the window"))
			break
		}
	}
	for i := 1; i <= nodes; i++ {
		if i != s.master && mon.AdvertsFrom(i, from, to) > 0 {
			w.Stable = false
			errs = append(errs, fmt.Errorf("backup n%d advertised during the window", i))
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		w.Error = strings.Join(msgs, "; ") // one line in the table's notes
	}
	var cpu []float64
	for _, n := range w.Nodes {
		cpu = append(cpu, perMinute(n.CPUMS, w.WindowS))
	}
	sp := spreadOf(cpu)
	r.say("%s: %s: cpu %s ms/min per node [%s..%s]%s", s.name(), what, fmtNum(sp.Mean), fmtNum(sp.Min), fmtNum(sp.Max), errText(w.Error))
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

func errText(s string) string {
	if s == "" {
		return ""
	}
	return "; " + s
}

// perfOnce records a perf note the first time only.
func (r *scaleRun) perfOnce(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.perfNote != "" {
		return
	}
	r.perfNote = fmt.Sprintf(format, args...)
	r.res.Notes = append(r.res.Notes, r.perfNote)
}

// failover cuts the master's link and times every group's takeover against
// its Master_Down_Interval, from the old master's last advert of that
// group as the client saw it (kernel receive stamps) to the VIP on its new
// holder (netlink events in the nodes' namespaces).
func (r *scaleRun) failover(ctx context.Context, s *scaleLab) FailoverResult {
	old := s.master
	f := FailoverResult{Daemon: s.kind.String(), IntervalMS: ms(s.iv), Groups: len(s.groups), OldMaster: old}
	fail := func(err error) FailoverResult {
		f.Error = err.Error()
		return f
	}
	if err := r.waitAllHeld(ctx, s, 0, 0); err != nil {
		return fail(err)
	}
	vrids := make(map[int]int, len(s.groups)) // VRID → group index
	byVIP := make(map[netip.Addr]int, len(s.groups))
	for k, g := range s.groups {
		vrids[g.VRID], byVIP[g.VIP.Addr()] = k, k
	}
	capt, err := r.captureAdverts(s, old, vrids)
	if err != nil {
		return fail(err)
	}
	defer capt.close()
	adds, err := r.watchAdds(s, old, byVIP)
	if err != nil {
		return fail(err)
	}
	defer adds.close()
	// Two intervals of adverts, so every group's last one before the cut is seen.
	if err := sleepCtx(ctx, 2*s.iv+50*time.Millisecond); err != nil {
		return fail(err)
	}
	r.say("%s: cutting n%d's link", s.name(), old)
	t0, _, err := s.g.Fault(Cut, old)
	if err != nil {
		return fail(err)
	}
	next := s.g.expectedMaster(old)
	f.BoundMS = ms(MasterDownInterval(s.groups[0].Priority(next), s.iv))
	lowest := slices.Min(s.groups[0].Priorities)
	deadline := time.Now().Add(3*MasterDownInterval(lowest, s.iv) + 10*time.Second)
	for adds.count(t0) < len(s.groups) && time.Now().Before(deadline) {
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return fail(err)
		}
	}
	last := capt.before(t0)
	taken := adds.first(t0)
	gs := make([]groupTakeover, len(s.groups))
	var lastAt time.Time
	for k, g := range s.groups {
		gs[k] = groupTakeover{VRID: g.VRID, LastAdvert: last[k], TakenAt: taken[k].at}
		if taken[k].node > 0 {
			gs[k].Bound = MasterDownInterval(g.Priority(taken[k].node), s.iv)
		}
		if taken[k].at.After(lastAt) {
			lastAt = taken[k].at
		}
		if taken[k].at.IsZero() {
			f.TakeoverMS = append(f.TakeoverMS, -1)
		} else {
			f.TakeoverMS = append(f.TakeoverMS, ms(taken[k].at.Sub(t0)))
		}
	}
	f.ExcessMS, f.TakenOver = takeoverExcess(gs)
	// The same from the new master's first advert: kernel-stamped at the
	// client, so it is free of the lab's own lateness in reading netlink.
	adv := make([]groupTakeover, len(s.groups))
	for k, a := range capt.firstOthers() {
		adv[k] = groupTakeover{VRID: s.groups[k].VRID, LastAdvert: last[k]}
		if a.node > 0 && !a.at.Before(t0) {
			adv[k].TakenAt, adv[k].Bound = a.at, MasterDownInterval(s.groups[k].Priority(a.node), s.iv)
		}
	}
	f.AdvertExcessMS, _ = takeoverExcess(adv)
	if !lastAt.IsZero() {
		f.LastMS = ms(lastAt.Sub(t0))
	}
	var missingAdvert int
	for _, g := range gs {
		if !g.TakenAt.IsZero() && g.LastAdvert.IsZero() {
			missingAdvert++
		}
	}
	var errs []error
	if f.TakenOver < len(s.groups) {
		errs = append(errs, fmt.Errorf("%d of %d groups not taken over by %v", len(s.groups)-f.TakenOver, len(s.groups), deadline.Sub(t0).Round(time.Millisecond)))
	}
	if missingAdvert > 0 {
		errs = append(errs, fmt.Errorf("no advert seen before the cut for %d groups", missingAdvert))
	}
	if err := errors.Join(errs...); err != nil {
		f.Error = err.Error()
	}
	return f
}

// advertCapture keeps, per group, the times of the master's adverts that
// reached the client namespace, and the first advert of any other node:
// in a stable group only the master advertises, so that one is a new
// master's.
type advertCapture struct {
	conn *net.IPConn
	wg   sync.WaitGroup

	mu       sync.Mutex
	seen     [][]time.Time // per group, the master's last few arrival times
	newFirst []nodeAdd     // per group, the first advert of another node
}

// captureAdverts listens in the client namespace (as the lab's Monitor
// does, for every VRID of s) for adverts from node master.
func (r *scaleRun) captureAdverts(s *scaleLab, master int, vrids map[int]int) (*advertCapture, error) {
	c := &advertCapture{seen: make([][]time.Time, len(s.groups)), newFirst: make([]nodeAdd, len(s.groups))}
	err := inNetns(s.lab.ClientNetns(), func() error {
		pc, err := net.ListenPacket(fmt.Sprintf("ip4:%d", vrrpProto), "0.0.0.0")
		if err != nil {
			return fmt.Errorf("advert capture socket: %w", err)
		}
		ifi, err := net.InterfaceByName("eth0")
		if err == nil {
			err = ipv4.NewPacketConn(pc).JoinGroup(ifi, &net.IPAddr{IP: vrrpGroup()})
		}
		if err != nil {
			pc.Close()
			return fmt.Errorf("join VRRP group in client: %w", err)
		}
		c.conn = pc.(*net.IPConn)
		enableStamps(c.conn)
		return nil
	})
	if err != nil {
		return nil, err
	}
	from := s.lab.NodeAddr(master)
	c.wg.Go(func() {
		buf, oob := make([]byte, 1500), make([]byte, 128)
		for {
			n, src, at, err := readStamped(c.conn, buf, oob)
			if err != nil {
				return // closed
			}
			a, ok := parseAdvert(buf[:n])
			if !ok || a.prio == 0 {
				continue
			}
			k, ok := vrids[a.vrid]
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(src.IP)
			node := s.lab.NodeByAddr(ip.Unmap())
			c.mu.Lock()
			switch {
			case ip.Unmap() == from:
				c.seen[k] = append(c.seen[k], at)
				if len(c.seen[k]) > 8 {
					c.seen[k] = c.seen[k][1:]
				}
			case node > 0 && c.newFirst[k].at.IsZero():
				c.newFirst[k] = nodeAdd{at: at, node: node}
			}
			c.mu.Unlock()
		}
	})
	return c, nil
}

// before is each group's last advert that arrived before t (zero: none).
func (c *advertCapture) before(t time.Time) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Time, len(c.seen))
	for k, ts := range c.seen {
		for _, at := range ts {
			if at.Before(t) && at.After(out[k]) {
				out[k] = at
			}
		}
	}
	return out
}

// firstOthers is each group's first advert from a node other than the
// master (zero: none).
func (c *advertCapture) firstOthers() []nodeAdd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.newFirst)
}

func (c *advertCapture) close() {
	c.conn.Close()
	c.wg.Wait()
}

// addWatch records when each group's VIP appeared on a node other than
// the old master.
type addWatch struct {
	done []chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	perGroup [][]nodeAdd // every add seen, per group
}

type nodeAdd struct {
	at   time.Time
	node int
}

func (r *scaleRun) watchAdds(s *scaleLab, old int, byVIP map[netip.Addr]int) (*addWatch, error) {
	w := &addWatch{perGroup: make([][]nodeAdd, len(s.groups))}
	for i := 1; i <= s.lab.Nodes(); i++ {
		if i == old {
			continue
		}
		ch := make(chan netlink.AddrUpdate, 1024)
		done := make(chan struct{})
		ns := s.lab.NodeNetns(i)
		if err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{Namespace: &ns}); err != nil {
			close(done)
			w.close()
			return nil, fmt.Errorf("subscribe addresses in n%d: %w", i, err)
		}
		w.done = append(w.done, done)
		// The library closes ch once done is closed.
		w.wg.Go(func() {
			for u := range ch {
				at := time.Now()
				if !u.NewAddr {
					continue
				}
				ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
				if !ok {
					continue
				}
				if k, ok := byVIP[ip.Unmap()]; ok {
					w.mu.Lock()
					w.perGroup[k] = append(w.perGroup[k], nodeAdd{at: at, node: i})
					w.mu.Unlock()
				}
			}
		})
	}
	return w, nil
}

// first is each group's first add at or after t (zero: none yet).
func (w *addWatch) first(t time.Time) []nodeAdd {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]nodeAdd, len(w.perGroup))
	for k, adds := range w.perGroup {
		for _, a := range adds {
			if !a.at.Before(t) && (out[k].at.IsZero() || a.at.Before(out[k].at)) {
				out[k] = a
			}
		}
	}
	return out
}

// count is the number of groups added somewhere at or after t.
func (w *addWatch) count(t time.Time) int {
	n := 0
	for _, a := range w.first(t) {
		if !a.at.IsZero() {
			n++
		}
	}
	return n
}

func (w *addWatch) close() {
	for _, d := range w.done {
		close(d)
	}
	w.done = nil
	w.wg.Wait()
}
