package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/bgp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/hoststat"
	"github.com/vipd/vipd/internal/ktimer"
	"github.com/vipd/vipd/metrics"
	"github.com/vipd/vipd/ndp"
	"github.com/vipd/vipd/netif"
	"github.com/vipd/vipd/systemd"
	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
	"golang.org/x/sync/errgroup"
)

// handoverEnv names the file a re-executed daemon resumes from.
const handoverEnv = "VIPD_HANDOVER"

// runDaemon runs the daemon with the configuration at path until it is
// stopped, re-executing a new binary in place when an upgrade asks for it.
// adopt (or the state directory's adopt marker) keeps VIPs found on their
// interfaces at start (daemon.Options.Adopt).
func runDaemon(configPath string, adopt bool, stderr io.Writer) int {
	path := &configPath
	cfg, err := config.Load(*path)
	if err == nil {
		if cerr := daemon.CheckTrackers(cfg); cerr != nil {
			err = cerr
		}
	}
	if err != nil {
		printConfigError(stderr, *path, err)
		return exitConfig
	}
	level := new(slog.LevelVar)
	level.Set(cfg.Global.LogLevel)
	log, flushLog := newDaemonLogger(stderr, cfg.Global, level)
	defer flushLog()
	oneProcessor(log)
	pacer := collectOnGrowth(log)
	protectFromStarvation(cfg.Global, log)

	adopt = consumeAdoptMarker(cfg, log) || adopt
	var handover *daemon.Handover
	if p := os.Getenv(handoverEnv); p != "" {
		os.Unsetenv(handoverEnv)
		if handover, err = daemon.ReadHandover(p); err != nil {
			log.Error("cannot resume from the previous process; starting afresh", "error", err)
		} else {
			log.Info("resuming after a binary upgrade", "version", version, "handover", p)
		}
	}
	for {
		code, up := serve(*path, cfg, handover, adopt, level, log, pacer)
		if up == nil {
			return code
		}
		adopt = false
		// Same PID, new binary: systemd and the VIPs see no change.
		env := append(os.Environ(), handoverEnv+"="+up.file)
		log.Info("re-executing the new binary", "binary", up.exe)
		flushLog()
		err := syscall.Exec(up.exe, withoutAdopt(os.Args), env)
		// Only a failed exec returns: carry on in this process.
		log.Error("re-exec failed; continuing with the running binary", "binary", up.exe, "error", err)
		handover = up.handover
		os.Remove(up.file)
		if cfg, err = config.Load(*path); err != nil {
			printConfigError(stderr, *path, err)
			return exitConfig
		}
	}
}

// withoutAdopt is the command line for a re-exec: only the start that was
// asked to adopt adopts; the new binary resumes from the handover.
func withoutAdopt(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "adopt" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// kernelTimers gives the election loops timerfd timers of one group, so
// an idle daemon wakes only when one expires, with one goroutine waiting
// for them all (see internal/ktimer). nil: the runtime's timers.
func kernelTimers(log *slog.Logger) (newTimer func(fire func()) (daemon.Timer, error), stop func()) {
	g, err := ktimer.NewGroup()
	if err != nil {
		log.Warn("kernel timers unavailable; using the runtime's", "error", err)
		return nil, func() {}
	}
	return func(fire func()) (daemon.Timer, error) {
		t, err := g.New(fire)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return t, nil
	}, func() { g.Close() }
}

// adoptMarker, in the state directory, asks the next start to adopt the
// VIPs it finds (vipd run --adopt): how a unit whose command line is fixed
// replaces a keepalived Master without moving its address. It is removed
// as it is read, so only that start adopts.
const adoptMarker = "adopt"

func consumeAdoptMarker(cfg *config.Config, log *slog.Logger) bool {
	p := filepath.Join(cfg.Global.StateDir, adoptMarker)
	err := os.Remove(p)
	switch {
	case err == nil:
		log.Info("adopting the VIPs already on their interfaces at this start", "marker", p)
		return true
	case !errors.Is(err, os.ErrNotExist):
		log.Warn("cannot remove the adopt marker: not adopting", "marker", p, "error", err)
	}
	return false
}

// upgrade is a re-exec that serve prepared.
type upgrade struct {
	exe      string
	file     string
	handover *daemon.Handover
}

// serve runs the daemon until a signal stops it (the exit code) or a new
// binary takes over (the upgrade to carry out).
func serve(path string, cfg *config.Config, handover *daemon.Handover, adopt bool, level *slog.LevelVar, log *slog.Logger, pacer *gcPacer) (int, *upgrade) {
	notifier := systemd.NewNotifier(log)
	line := newStatusLine()
	rest := newRestWatch()

	// The control socket first: a second daemon with the same socket must
	// stop here, before it touches any address.
	host := hoststat.NewSampler()
	var d *daemon.Daemon // set below; read by the control socket and metrics
	ctl, err := control.Listen(cfg.Global.Socket, cfg.Global.SocketGroup, log, control.WithDaemonInfo(daemonInfo()),
		control.WithHostStats(func() *control.HostStat {
			s, err := host.Sample()
			if err != nil {
				return nil
			}
			return daemon.HostStat(s)
		}),
		control.WithBGPPeers(func() []control.BGPPeer {
			if d == nil {
				return nil
			}
			return d.ControlBGPPeers()
		}),
		control.WithInterfaceDrops(func() map[string]map[string]uint64 {
			if d == nil {
				return nil
			}
			return d.InterfaceDrops()
		}))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			// Restarting will not help: say what to change, and stop
			// systemd's restart loop with EX_CONFIG.
			log.Error("control socket: permission denied; with socket_group the unit needs SupplementaryGroups= that group and SystemCallFilter=@chown (see vipd(8))", "error", err)
			return exitConfig, nil
		}
		log.Error("control socket", "error", err)
		return 1, nil
	}
	defer ctl.Close()

	links, err := netif.New(log, netif.WithVIPs(allVIPs(cfg)...))
	if err != nil {
		log.Error("netlink", "error", err)
		return 1, nil
	}
	defer links.Close()
	newTimer, stopTimers := kernelTimers(log)
	defer stopTimers()
	env := daemon.Env{
		Links:      links,
		ListenVRRP: transport.Listen,
		DialARP: func(ifi *net.Interface) (daemon.Announcer, error) {
			return arp.Dial(ifi)
		},
		ListenARP: func(ifi *net.Interface) (daemon.ARPMonitor, error) {
			return arp.ListenMonitor(ifi)
		},
		DialNDP: func(ifi *net.Interface) (daemon.Announcer, error) {
			return ndp.Dial(ifi)
		},
		ListenNDP: func(ifi *net.Interface) (daemon.ARPMonitor, error) {
			return ndp.ListenMonitor(ifi)
		},
		HostStats:    host.Sample,
		HostBaseline: host.Baseline,
		NewTimer:     newTimer,
		NewSpeaker: func(cfg bgp.Config, log *slog.Logger) (daemon.RouteSpeaker, error) {
			return bgp.New(cfg, log)
		},
	}
	upgradeTo := make(chan string, 1)
	opts := daemon.Options{
		OnTransition: func(string, vrrp.Transition) { line.mark(); rest.mark() },
		HeldFile:     heldFile(cfg),
		// The log level changes with an applied reload only: a refused
		// one changes nothing at all.
		OnReload: func(next *config.Config) { level.Set(next.Global.LogLevel) },
		Handover: handover,
		Adopt:    adopt,
		Upgrade: func(ctx context.Context) (string, error) {
			return checkUpgrade(ctx, path, upgradeTo, log)
		},
	}
	// Without a listener nobody could read the metrics: none are kept
	// (about 1.3 KiB of counters per group, the registry's collectors).
	var m *metrics.Metrics
	if cfg.Global.MetricsListen != "" {
		m = metrics.New(func() []control.InstanceStatus { return d.StatusReport() }, metrics.WithBuildInfo(version, commitString()),
			metrics.WithBGPPeers(func() []control.BGPPeer { return d.ControlBGPPeers() }),
			metrics.WithInterfaceDrops(func() map[string]map[string]uint64 {
				if d == nil {
					return nil
				}
				return d.InterfaceDrops()
			}))
		opts.OnTransition = func(instance string, tr vrrp.Transition) {
			if tr.Reason != vrrp.ReasonResumed { // an upgrade is not a move
				m.Transition(instance, tr.From.String(), tr.To.String())
			}
			line.mark()
			rest.mark()
		}
		opts.OnConflict, opts.OnTrackerCheck = m.Conflict, m.TrackerCheck
	}
	d, err = daemon.New(cfg, log, env, opts)
	if err != nil {
		log.Error("starting", "error", err)
		return 1, nil
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	var next *upgrade
	var g errgroup.Group
	handler := controlHandler{d, notifier, log}
	g.Go(func() error { return ctl.Serve(runCtx, handler) })
	if m != nil {
		addr := cfg.Global.MetricsListen
		g.Go(func() error {
			if err := m.Serve(runCtx, addr, log); err != nil {
				log.Error("metrics", "address", addr, "error", err)
			}
			return nil
		})
	}
	g.Go(func() error {
		select {
		case <-d.Ready():
			notifier.Ready(summary(d))
			log.Info("ready: every instance has joined its group")
		case <-runCtx.Done():
		}
		return nil
	})
	g.Go(func() error {
		line.run(runCtx, statusLineEvery, func() { notifier.Status(summary(d)) })
		return nil
	})
	g.Go(func() error {
		if cfg.Global.LockMemory {
			pacer.settle() // no rest to wait for: rest's pacing now
			return nil     // locked pages cannot be given back
		}
		first := true
		rest.run(runCtx, restAfter, func() {
			if first {
				pacer.settle() // before the release's collections
			}
			releaseAtRest(log, first)
			first = false
		})
		return nil
	})
	g.Go(func() error { keepRealtime(runCtx, cfg.Global, log); return nil })
	if interval, ok := notifier.WatchdogInterval(); ok {
		g.Go(func() error { watchdog(runCtx, d, notifier, interval, log); return nil })
	}
	g.Go(func() error {
		for {
			select {
			case <-runCtx.Done():
				return nil
			case <-hup:
				// The same path as `vipd reload`: one reload at a time.
				handler.Reload(runCtx)
			case exe := <-upgradeTo:
				notifier.Reloading()
				// Let the reload's answer reach `vipd reload` first.
				time.Sleep(100 * time.Millisecond)
				h, err := d.Detach(runCtx)
				if err != nil {
					log.Error("upgrade abandoned: keeping the running binary", "error", err)
					notifier.Ready(summary(d))
					continue
				}
				file := filepath.Join(filepath.Dir(cfg.Global.Socket), fmt.Sprintf("handover-%d.json", os.Getpid()))
				if err := daemon.WriteHandover(file, h); err != nil {
					log.Error("upgrade abandoned: cannot write the handover; keeping the running binary", "error", err)
					notifier.Ready(summary(d))
					continue
				}
				next = &upgrade{exe: exe, file: file, handover: h}
				stopRun()
				return nil
			}
		}
	})

	log.Info("starting", "version", version, "config", path, "instances", len(cfg.Instances))
	err = d.Run(runCtx)
	if next == nil {
		// The status line's writer ended with runCtx: the states the
		// graceful stop left are written here.
		notifier.Status(summary(d))
		notifier.Stopping()
	}
	stopRun()
	g.Wait()
	if next != nil {
		return 0, next
	}
	if err != nil {
		log.Error("stopped", "error", err)
		return 1, nil
	}
	log.Info("stopped")
	return 0, nil
}

// checkUpgrade looks for a new binary at the path this one was started
// from (a package upgrade replaces the file). If there is one and it
// accepts the configuration, it queues the re-exec and names the binary; if
// it refuses, nothing changes and the error carries its problems.
func checkUpgrade(ctx context.Context, cfgPath string, upgradeTo chan<- string, log *slog.Logger) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil
	}
	onDisk, err1 := os.Stat(exe)
	running, err2 := os.Stat("/proc/self/exe")
	if err1 != nil || err2 != nil || os.SameFile(onDisk, running) {
		return "", nil
	}
	log.Info("a new binary is on disk: checking it against the configuration", "binary", exe)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, exe, "check", "--config", cfgPath).CombinedOutput()
	if err != nil {
		var problems []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				problems = append(problems, l)
			}
		}
		return "", &daemon.UpgradeRefused{Problems: problems, Err: fmt.Errorf("%s check: %w", exe, err)}
	}
	select {
	case upgradeTo <- exe:
	default: // an upgrade is already under way
	}
	return exe, nil
}

// heldFile is where the daemon lists the addresses it holds, beside its
// socket in the runtime directory, for `vipd cleanup`.
func heldFile(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(cfg.Global.Socket), "held.json")
}

// controlHandler answers the control socket. Its Reload is also what
// SIGHUP calls: one path, with systemd told about it (RELOADING, then READY
// unless a new binary takes over and reports READY itself).
type controlHandler struct {
	*daemon.Daemon
	n   *systemd.Notifier
	log *slog.Logger
}

func (h controlHandler) Reload(ctx context.Context) (control.ReloadResult, error) {
	h.n.Reloading()
	out, err := h.Daemon.Reload(ctx)
	if err != nil || out.Upgrade == "" {
		h.n.Ready(summary(h.Daemon))
	}
	switch {
	case err != nil:
		for _, p := range out.Problems {
			h.log.Error("reload refused: keeping the running configuration", "problem", p)
		}
		if len(out.Problems) == 0 {
			h.log.Error("reload failed", "error", err)
		}
	case out.Upgrade != "":
		h.log.Info("reload: a new binary takes over", "binary", out.Upgrade)
	}
	res := out.ReloadResult(err)
	var uerr *daemon.UpgradeRefused
	if errors.Is(err, daemon.ErrReloadRefused) && !errors.As(err, &uerr) {
		err = errors.New("configuration refused; the running one is kept")
	} else if uerr != nil {
		err = uerr
	}
	return res, err
}

// watchdog pings systemd while every instance's election loop answers; a
// stuck loop stops the pings and systemd restarts the daemon.
func watchdog(ctx context.Context, d *daemon.Daemon, n *systemd.Notifier, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.Alive(ctx, interval); err != nil {
				log.Error("watchdog: not pinging systemd", "error", err)
				continue
			}
			n.Watchdog()
		}
	}
}

func allVIPs(cfg *config.Config) []netip.Prefix {
	var vips []netip.Prefix
	for _, in := range cfg.Instances {
		vips = append(vips, in.VIPs...)
	}
	return vips
}
