package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// timeline prints lines stamped with milliseconds since the demo started;
// monitor callbacks, daemon output and the main flow all write through it.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func (t *timeline) at(at time.Time, format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "%10.1f ms  %s\n", float64(at.Sub(t.start).Microseconds())/1000, fmt.Sprintf(format, args...))
}

func (t *timeline) now(format string, args ...any) { t.at(time.Now(), format, args...) }

// stateLine picks the daemon lines worth showing: state transitions (both
// keepalived's "Entering MASTER STATE" and vipd's transition lines) and
// anything about a duplicate owner.
var stateLine = regexp.MustCompile(`(?i)state|transition|duplicate|conflict|owner`)

// logPrefix is the daemons' own timestamp (keepalived's date, slog's time=
// and level=), redundant on a timeline that has its own.
var logPrefix = regexp.MustCompile(`^(\w{3} \w{3} +\d+ [\d:]+ \d{4}: |time=\S+ (level=\S+ )?)`)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vipd := fs.String("vipd", "", "path of the vipd binary (runs vipd instead of keepalived)")
	daemon := fs.String("daemon", "", "vipd or keepalived (default: vipd when --vipd is given)")
	cfgPath := fs.String("config", "", "demo config (TOML; default: the embedded demo.toml)")
	interval := fs.Duration("interval", 0, "advert interval, overriding the config")
	keep := fs.Bool("keep-logs", false, "keep the daemons' logs and configs after the demo")
	dualStack := fs.Bool("dual-stack", true, "with vipd, then run the group dual-stack (an IPv6 VIP following the IPv4 one) through a cut and a graceful stop")
	routed := fs.Bool("routed", true, "with vipd, then run the routed scene: three hosts in announce = \"bgp\" behind FRR's bgpd, a graceful stop of the Master")
	verbose := fs.Bool("v", false, "debug logging from the lab")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	kindName := *daemon
	if kindName == "" {
		kindName = "keepalived"
		if *vipd != "" {
			kindName = "vipd"
		}
	}
	kind, err := lab.ParseDaemonKind(kindName)
	if err != nil {
		return err
	}
	cfg, err := loadDemoConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *interval != 0 {
		cfg.AdvertInterval = *interval
		if err := cfg.validate(); err != nil {
			return err
		}
	}
	if err := preflight([]lab.DaemonKind{kind}, *vipd); err != nil {
		return err
	}
	tl := &timeline{w: stdout, start: time.Now()}
	g := cfg.group()
	fmt.Fprintf(stdout, "vipd-lab demo: %s on %d nodes, VRID %d, advert interval %v, VIP %v\n",
		kind, cfg.Nodes, g.VRID, g.Interval, g.VIP)
	fmt.Fprintf(stdout, "timestamps are milliseconds since the start; the client probes the VIP every 1 ms\n\n")

	l, err := lab.New(ctx, newLogger(stderr, *verbose), lab.Options{Nodes: cfg.Nodes, KeepDir: *keep})
	if err != nil {
		return err
	}
	labClosed := false
	closeLab := func() {
		if labClosed {
			return
		}
		labClosed = true
		tl.now("deleting namespaces %s-* (bridge, veths and anything left in them)", l.ID())
		if err := l.Close(); err != nil {
			tl.now("clean-up error: %v", err)
			return
		}
		tl.now("lab removed: no namespaces, bridge, veths or daemons left")
		if *keep {
			fmt.Fprintf(stdout, "logs and configs kept in %s\n", l.Dir())
		}
	}
	defer closeLab()
	var nodes []string
	for i := 1; i <= l.Nodes(); i++ {
		nodes = append(nodes, fmt.Sprintf("n%d %v (priority %d)", i, l.NodeAddr(i), g.Priority(i)))
	}
	tl.now("lab up: bridge in its own namespace; %s; client %v", strings.Join(nodes, ", "), lab.ClientAddr())

	spec := lab.DaemonSpec{Kind: kind, Binary: *vipd, Group: g,
		OnLine: func(node int, at time.Time, line string) {
			if stateLine.MatchString(line) {
				tl.at(at, "  n%d %s: %s", node, kind, logPrefix.ReplaceAllString(strings.TrimSpace(line), ""))
			}
		}}
	tl.now("starting %s on every node (all start as backups; the election decides)", kind)
	grp, err := l.StartGroup(ctx, spec, func(e lab.Event) { tl.at(e.At, "  %s", e.Describe()) })
	if err != nil {
		return err
	}
	defer grp.Close()
	grp.OnPhase = func(at time.Time, text string) { tl.at(at, "%s", text) }

	master, err := grp.WaitStable(ctx, 0)
	if err != nil {
		return err
	}
	tl.now("ELECTION: n%d (priority %d) is master and alone holds %v", master, g.Priority(master), g.VIP.Addr())
	if err := showClient(ctx, l, grp, tl); err != nil {
		return err
	}

	for _, mode := range []lab.Mode{lab.Cut, lab.Graceful} {
		fmt.Fprintln(stdout)
		r, err := grp.Trial(ctx, mode, 1)
		if err != nil {
			return err
		}
		report(tl, mode, r)
	}
	fmt.Fprintln(stdout)
	tl.now("stopping the daemons (backups first, so nothing moves)")
	if err := grp.Close(); err != nil || kind != lab.Vipd {
		return err
	}
	closeLab()
	if *dualStack {
		if err := runDualStackScene(ctx, cfg, *vipd, tl, stdout, stderr, *verbose, *keep); err != nil {
			return err
		}
	}
	if !*routed {
		return nil
	}
	return runRoutedScene(ctx, *vipd, tl, stdout, stderr, *verbose, *keep)
}

// showClient probes the VIP for a second to show the client reaching it.
func showClient(ctx context.Context, l *lab.Lab, grp *lab.Group, tl *timeline) error {
	p, err := l.StartProber(ctx, grp.Spec().Group.VIP.Addr(), time.Millisecond)
	if err != nil {
		return err
	}
	from := time.Now()
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		p.Stop()
		return ctx.Err()
	}
	p.Stop()
	s := grp.Monitor().State()
	answered := len(p.Answers(from, time.Time{}))
	tl.now("CLIENT: %d of %d probes to %v answered in 1 s; its neighbour entry points at n%d (%v)",
		answered, p.Sent(), grp.Spec().Group.VIP.Addr(), s.NeighNode, s.NeighMAC)
	return nil
}

func report(tl *timeline, mode lab.Mode, r lab.TrialResult) {
	switch mode {
	case lab.Cut:
		tl.now("RESULT cut: n%d took over in %.1f ms; the client saw %.1f ms without answers; "+
			"VRRPv3 bound %.1f ms (Master_Down_Interval of priority-%d n%d minus %.1f ms since n%d's last advert), excess %.1f ms; "+
			"two owners at once: %.1f ms",
			r.NewMaster, r.TakeoverMS, r.OutageMS, r.BoundMS, r.NewPriority, r.NewMaster, r.SinceAdvertMS, r.OldMaster,
			r.ExcessMS, r.DuplicateMS)
	case lab.Graceful:
		exit := "still running"
		if r.ExitCode != nil {
			exit = fmt.Sprintf("exit status %d", *r.ExitCode)
		}
		tl.now("RESULT graceful: n%d released in %.1f ms (%s); n%d took over in %.1f ms; the client saw %.1f ms without answers; "+
			"bound (Skew_Time) %.1f ms, excess %.1f ms; two owners at once: %.1f ms",
			r.OldMaster, r.ReleaseMS, exit, r.NewMaster, r.TakeoverMS, r.OutageMS, r.BoundMS, r.ExcessMS, r.DuplicateMS)
	}
}
