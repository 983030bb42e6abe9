package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BenchConfig drives RunBench.
type BenchConfig struct {
	Daemons   []DaemonKind
	Intervals []time.Duration
	Modes     []Mode
	Trials    int
	// Steady is the healthy-group window for CPU and RSS (0: skip it).
	Steady time.Duration
	// VipdBinary is the vipd executable (needed when Daemons has Vipd);
	// KeepalivedBinary defaults to keepalived from PATH.
	VipdBinary       string
	KeepalivedBinary string
	// Progress, if set, receives one line per step as the bench runs.
	Progress func(string)
	// IPv6 also measures every daemon with an IPv6 VIP (2001:db8::10) in
	// an IPv6 lab, reported as "vipd ipv6" and "keepalived ipv6"
	// (IPv6Label); without a steady window, which IPv4 measures.
	IPv6 bool
}

// RunBench measures every daemon at every interval: a fresh lab per
// (interval, daemon), a steady window that also checks stability, then
// Trials trials of every mode. Failures of single trials are recorded, not
// fatal; the result is returned even when ctx ends early.
func RunBench(ctx context.Context, log *slog.Logger, cfg BenchConfig) (*BenchResult, error) {
	if cfg.Trials <= 0 {
		cfg.Trials = 10
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	res := &BenchResult{Started: time.Now(), Versions: map[string]string{}}
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		res.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	g0 := DefaultGroupConfig(3, time.Second)
	res.Config = BenchSettings{Trials: cfg.Trials, SteadyS: cfg.Steady.Seconds(), ProbeMS: 1,
		Priorities: g0.Priorities, VRID: g0.VRID, VIP: g0.VIP.String()}
	for _, d := range cfg.Daemons {
		res.Config.Daemons = append(res.Config.Daemons, d.String())
		res.Versions[d.String()] = daemonVersion(d, binaryFor(cfg, d))
	}
	if cfg.IPv6 {
		for _, d := range cfg.Daemons {
			res.Config.Daemons = append(res.Config.Daemons, IPv6Label(d))
			res.Versions[IPv6Label(d)] = res.Versions[d.String()]
		}
	}
	for _, iv := range cfg.Intervals {
		res.Config.IntervalsMS = append(res.Config.IntervalsMS, ms(iv))
	}
	for _, m := range cfg.Modes {
		res.Config.Modes = append(res.Config.Modes, m.String())
	}
	start := time.Now()
	say := func(format string, args ...any) {
		progress(fmt.Sprintf("[%7.1fs] ", time.Since(start).Seconds()) + fmt.Sprintf(format, args...))
	}
	var err error
	for _, iv := range cfg.Intervals {
		for _, kind := range cfg.Daemons {
			if err = ctx.Err(); err != nil {
				break
			}
			spec := DaemonSpec{Kind: kind, Binary: binaryFor(cfg, kind), Group: DefaultGroupConfig(3, iv)}
			if err = benchGroup(ctx, log, cfg, spec, benchVariant{label: kind.String()}, res, say); err != nil {
				break
			}
			if cfg.IPv6 {
				if err = benchGroup(ctx, log, cfg, ipv6Spec(spec), ipv6Variant(kind), res, say); err != nil {
					break
				}
			}
		}
	}
	res.Finished = time.Now()
	return res, err
}

func binaryFor(cfg BenchConfig, k DaemonKind) string {
	if k == Vipd {
		return cfg.VipdBinary
	}
	return cfg.KeepalivedBinary
}

// benchGroup runs one (daemon, interval) in a lab of its own, so daemon
// kinds never share a group or leave state for each other. Only a lab that
// cannot be built, or the end of ctx, is returned as an error.
func benchGroup(ctx context.Context, log *slog.Logger, cfg BenchConfig, spec DaemonSpec, v benchVariant, res *BenchResult, say func(string, ...any)) error {
	iv := spec.Group.Interval
	status := GroupStatus{Daemon: v.label, IntervalMS: ms(iv)}
	defer func() { res.Groups = append(res.Groups, status) }()
	if v.noSteady {
		cfg.Steady = 0
	}
	l, err := New(ctx, log, v.opts)
	if err != nil {
		status.Error = err.Error()
		return err
	}
	defer l.Close()
	g, err := l.StartGroup(ctx, spec, nil)
	if err != nil {
		status.Error = err.Error()
		return err
	}
	defer g.Close()
	say("%s @ %v: starting 3 nodes", v.label, iv)
	master, err := g.WaitStable(ctx, 0)
	if err != nil {
		status.Error = err.Error()
		say("%s @ %v: %v", v.label, iv, err)
		return ctx.Err()
	}
	status.Stable = true
	if cfg.Steady > 0 {
		say("%s @ %v: n%d is master; steady window %v", v.label, iv, master, cfg.Steady)
		st, moves, foreign, err := steadyWindow(ctx, g, master, cfg.Steady)
		if err != nil {
			status.Error = err.Error()
			return err
		}
		res.Steady = append(res.Steady, st)
		status.VIPMoves, status.ForeignAdverts = moves, foreign
		if moves > 0 || foreign > 0 {
			status.Stable = false
			status.Error = fmt.Sprintf("%d VIP changes and %d adverts from backups in a healthy group over %v", moves, foreign, cfg.Steady)
			say("%s @ %v: UNSTABLE: %s; skipping its trials", v.label, iv, status.Error)
			return nil
		}
		var parts []string
		for _, n := range st.Nodes {
			parts = append(parts, fmt.Sprintf("n%d %s cpu %.3fs rss %.1fMiB", n.Node, n.Role, n.CPUSeconds, n.PeakRSSMiB))
		}
		say("%s @ %v: steady: %s", v.label, iv, strings.Join(parts, ", "))
	}
	for _, mode := range cfg.Modes {
		for n := 1; n <= cfg.Trials; n++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			t, err := g.Trial(ctx, mode, n)
			t.Daemon = v.label
			res.Trials = append(res.Trials, t)
			if err != nil {
				say("%s @ %v %s %d/%d: FAILED: %v", v.label, iv, mode, n, cfg.Trials, err)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// Give the group one chance to recover before the next trial.
				if _, err := g.WaitStable(ctx, 0); err != nil {
					status.Error = "gave up after a failed trial: " + err.Error()
					say("%s @ %v: %s", v.label, iv, status.Error)
					return ctx.Err()
				}
				continue
			}
			line := fmt.Sprintf("%s @ %v %s %d/%d: outage %s ms, takeover %s ms (bound %s), dup %s ms, client moved %s ms after takeover",
				v.label, iv, mode, n, cfg.Trials, fmtNum(t.OutageMS), fmtNum(t.TakeoverMS), fmtNum(t.BoundMS),
				fmtNum(t.DuplicateMS), fmtNum(t.NeighAfterTakeoverMS))
			if mode == Graceful {
				line += fmt.Sprintf(", priority 0 sent %s ms after SIGTERM", fmtNum(t.ReleaseMS))
			}
			if t.ProbeStallMS > 5 {
				line += fmt.Sprintf(" (lab stalled %s ms: machine busy)", fmtNum(t.ProbeStallMS))
			}
			if t.SecondOwnerReported != nil {
				line += fmt.Sprintf(", second owner reported: %v", *t.SecondOwnerReported)
			}
			say("%s", line)
		}
	}
	return nil
}

// steadyWindow measures the daemons' CPU time and peak RSS over d of a
// healthy group and counts anything that moved meanwhile.
func steadyWindow(ctx context.Context, g *Group, master int, d time.Duration) (SteadyResult, int, int, error) {
	n := g.lab.Nodes()
	before := make([]Usage, n)
	for i := 1; i <= n; i++ {
		u, err := g.Daemon(i).Usage()
		if err != nil {
			return SteadyResult{}, 0, 0, err
		}
		before[i-1] = u
	}
	from := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return SteadyResult{}, 0, 0, ctx.Err()
	}
	to := time.Now()
	st := SteadyResult{Daemon: g.spec.Kind.String(), IntervalMS: ms(g.spec.Group.Interval), WindowS: to.Sub(from).Seconds()}
	var errs []error
	for i := 1; i <= n; i++ {
		u, err := g.Daemon(i).Usage()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		role := "backup"
		if i == master {
			role = "master"
		}
		st.Nodes = append(st.Nodes, NodeUsage{Node: i, Role: role, Procs: u.Procs,
			CPUSeconds: (u.CPU - before[i-1].CPU).Seconds(), PeakRSSMiB: float64(u.PeakRSS) / (1 << 20)})
	}
	moves, foreign := 0, 0
	for _, e := range g.mon.Events(from, to) {
		if e.Kind == VIPAdded || e.Kind == VIPRemoved {
			moves++
		}
	}
	for i := 1; i <= n; i++ {
		if i != master {
			foreign += g.mon.AdvertsFrom(i, from, to)
		}
	}
	return st, moves, foreign, errors.Join(errs...)
}

// daemonVersion asks the binary for its version, for the record.
func daemonVersion(k DaemonKind, bin string) string {
	var cmd *exec.Cmd
	switch k {
	case Keepalived:
		if bin == "" {
			bin = "keepalived"
		}
		cmd = exec.Command(bin, "--version")
	case Vipd:
		if bin == "" {
			return ""
		}
		cmd = exec.Command(bin, "version")
	default:
		return ""
	}
	out, _ := cmd.CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
