package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// The routed scenes (issue 14): vipd hosts on links of their own behind
// FRR's bgpd, in announce = "bgp" (the VRRP Master announces the VIP as a
// host route), the client reaching the VIP only through the router.

const routedHostASN = 65001

// routedPriorities make h1 the Master, h2 the next.
var routedPriorities = []int{150, 100, 50}

// peerTimers are the [[bgp.peer]] session settings under test.
type peerTimers struct {
	HoldTime, Keepalive string // "" keeps vipd's defaults (9s, 3s)
	BFD                 bool
}

func (p peerTimers) String() string {
	s := "hold 9s (default)"
	if p.HoldTime != "" {
		s = fmt.Sprintf("hold %s, keepalive %s", p.HoldTime, p.Keepalive)
	}
	if p.BFD {
		s += ", BFD"
	}
	return s
}

// routedHost is one vipd process in a host namespace.
type routedHost struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (h *routedHost) running() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

func (h *routedHost) signal(sig syscall.Signal) { _ = syscall.Kill(-h.cmd.Process.Pid, sig) }

// stop sends SIGTERM and waits (SIGKILL after 15 s): a graceful stop.
func (h *routedHost) stop() {
	if !h.running() {
		return
	}
	h.signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(15 * time.Second):
		h.signal(syscall.SIGKILL)
		<-h.done
	}
}

// routedCluster is a routed lab with FRR and vipd in every host.
type routedCluster struct {
	l      *lab.RoutedLab
	dir    string // the lab's: the hosts' configs, sockets and logs
	bin    string
	timers peerTimers
	hosts  []*routedHost // by host number; [0] unused
}

// newRoutedCluster builds the lab, starts the router (with bfdd when the
// timers ask for BFD) and vipd on every host.
func newRoutedCluster(ctx context.Context, bin string, timers peerTimers, verbose, keep bool, stderr io.Writer) (*routedCluster, error) {
	const hosts = 3
	l, err := lab.NewRouted(ctx, newLogger(stderr, verbose), lab.RoutedOptions{Hosts: hosts, KeepDir: keep})
	if err != nil {
		return nil, err
	}
	c := &routedCluster{l: l, dir: l.Dir(), bin: bin, timers: timers, hosts: make([]*routedHost, hosts+1)}
	ns := lab.HostNeighbors(hosts, routedHostASN)
	for i := range ns {
		ns[i].BFD = timers.BFD
	}
	// One path, no ECMP: election mode has one owner, and while a silently
	// cut Master's path lingers until the hold timer, ECMP would hash the
	// client's flow to either host by chance. FRR keeps the older eBGP
	// path as best, so the measurement shows what the hold timer costs.
	if err := l.StartRouter(ctx, lab.RouterConfig{Neighbors: ns, MaximumPaths: 1, BFD: timers.BFD}); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	for i := 1; i <= hosts; i++ {
		if err := c.start(i); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// Close stops the daemons (backups first, so nothing moves) and removes
// the lab.
func (c *routedCluster) Close() error {
	for i := len(c.hosts) - 1; i >= 1; i-- {
		if c.hosts[i] != nil {
			c.hosts[i].stop()
		}
	}
	return c.l.Close()
}

// config is host i's vipd.toml: one BGP peer (the router on its link) and
// the election-mode instance, adverts unicast to the other hosts across
// the router (one hop: TTL 255 arrives as 254).
func (c *routedCluster) config(i int) string {
	dir := filepath.Join(c.dir, fmt.Sprintf("h%d", i))
	var peer strings.Builder
	fmt.Fprintf(&peer, "address = %q\nasn = %d\n", lab.RoutedRouterAddr(i), lab.RouterASN)
	if c.timers.HoldTime != "" {
		fmt.Fprintf(&peer, "hold_time = %q\nkeepalive_interval = %q\n", c.timers.HoldTime, c.timers.Keepalive)
	}
	if c.timers.BFD {
		peer.WriteString("bfd = true\n")
	}
	var others []string
	for j := 1; j < len(c.hosts); j++ {
		if j != i {
			others = append(others, fmt.Sprintf("%q", lab.RoutedHostAddr(j)))
		}
	}
	return fmt.Sprintf(`[global]
node_name = "h%d"
socket = %q
state_dir = %q

[bgp]
asn = %d
router_id = %q

[[bgp.peer]]
%s
[[instance]]
name = "api"
interface = "eth0"
vrid = 51
priority = %d
advert_interval = "100ms"
vips = [%q]
announce = "bgp"
graceful_shutdown_time = "1s"
unicast_source = %q
unicast_peers = [%s]
unicast_min_ttl = 250
`, i, filepath.Join(dir, "vipd.sock"), filepath.Join(dir, "state"), routedHostASN, lab.RoutedHostAddr(i),
		peer.String(), routedPriorities[i-1], lab.RoutedVIP(), lab.RoutedHostAddr(i), strings.Join(others, ", "))
}

// start runs vipd in host i (again, after a stop).
func (c *routedCluster) start(i int) error {
	dir := filepath.Join(c.dir, fmt.Sprintf("h%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "vipd.toml")
	if err := os.WriteFile(path, []byte(c.config(i)), 0o644); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "vipd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("ip", "netns", "exec", c.l.HostNS(i), c.bin, "run", "--config", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	// No Pdeathsig: it fires when the forking OS thread ends, and the lab's
	// namespace switches end threads. The lab's Close ends whatever runs in
	// its namespaces; vipd-lab clean after a SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("vipd in h%d: %w", i, err)
	}
	h := &routedHost{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(h.done)
	}()
	c.hosts[i] = h
	return nil
}

// logTail is the end of host i's vipd log, for an error message.
func (c *routedCluster) logTail(i int) string {
	b, _ := os.ReadFile(c.hosts[i].log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}

// waitMaster waits until host i's path alone is in FRR's table and stays so
// for settle; with BFD also until the router's BFD sessions are up (the
// first one may flap once when BGP comes up).
func (c *routedCluster) waitMaster(ctx context.Context, i int, settle time.Duration) error {
	vip := lab.RoutedVIP()
	for {
		if _, err := c.l.WaitNextHops(ctx, vip, 60*time.Second, lab.RoutedHostAddr(i)); err != nil {
			return fmt.Errorf("h%d alone as the next hop: %w\nh%d's log:\n%s", i, err, i, c.logTail(i))
		}
		if c.timers.BFD {
			if err := c.waitBFDUp(ctx); err != nil {
				return err
			}
		}
		select {
		case <-time.After(settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		if r, ok, err := c.l.Route(ctx, vip); err == nil && ok && slices.Equal(r.NextHops(), []netip.Addr{lab.RoutedHostAddr(i)}) && !hasCommunity(r, "graceful-shutdown") {
			return nil
		}
	}
}

func (c *routedCluster) waitBFDUp(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, err := c.l.Vtysh(ctx, "show bfd peers json")
		if err == nil && strings.Count(string(out), `"status":"up"`) >= len(c.hosts)-1 {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	out, _ := c.l.Vtysh(ctx, "show bfd peers brief")
	return fmt.Errorf("the router's BFD sessions are not all up:\n%s", out)
}

func hasCommunity(r lab.Route, community string) bool {
	for _, p := range r.Paths {
		if slices.Contains(p.Communities, community) {
			return true
		}
	}
	return false
}

// hostOf names the routed host whose link address a is ("h2").
func hostOf(a netip.Addr) string {
	for i := 1; i <= 60; i++ {
		if lab.RoutedHostAddr(i) == a {
			return fmt.Sprintf("h%d", i)
		}
	}
	return a.String()
}

// describeRoute is FRR's view of the VIP in one line: each path's host,
// whether it is best, and its communities.
func describeRoute(r lab.Route, ok bool) string {
	if !ok {
		return "no path"
	}
	var ps []string
	for _, p := range r.Paths {
		s := fmt.Sprintf("%s via %s", hostOf(p.NextHop), p.NextHop)
		if p.Best {
			s += " (best)"
		}
		if !p.Valid {
			s += " (invalid)"
		}
		if len(p.Communities) > 0 {
			s += " [" + strings.Join(p.Communities, " ") + "]"
		}
		ps = append(ps, s)
	}
	return strings.Join(ps, "; ")
}

// watchRoute polls FRR's table for the VIP every 20 ms until ctx ends and
// calls changed with each new view of it.
func watchRoute(ctx context.Context, l *lab.RoutedLab, changed func(at time.Time, r lab.Route, ok bool)) {
	last := "\x00"
	for ctx.Err() == nil {
		r, ok, err := l.Route(ctx, lab.RoutedVIP())
		if err == nil {
			if d := describeRoute(r, ok); d != last {
				last = d
				changed(time.Now(), r, ok)
			}
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

// runRoutedScene is the demo's last scene: election mode behind a router,
// the Master's route in FRR's table, a graceful stop of the Master, and
// what the client saw.
func runRoutedScene(ctx context.Context, vipdBin string, tl *timeline, stdout, stderr io.Writer, verbose, keep bool) error {
	timers := peerTimers{HoldTime: "3s", Keepalive: "1s"}
	vip := lab.RoutedVIP()
	fmt.Fprintf(stdout, "\nvipd-lab demo, routed: 3 vipd hosts on links of their own behind FRR's bgpd (AS %d); announce = \"bgp\", "+
		"adverts unicast across the router (unicast_min_ttl 250), priorities %v; VIP %v; BGP %s\n",
		lab.RouterASN, routedPriorities, vip, timers)
	start := time.Now()
	c, err := newRoutedCluster(ctx, vipdBin, timers, verbose, keep, stderr)
	if errors.Is(err, lab.ErrNoFRR) {
		tl.now("routed scene skipped: %v", err)
		return nil
	}
	if err != nil {
		return err
	}
	defer func() {
		dir := c.l.Dir()
		if err := c.Close(); err != nil {
			tl.now("clean-up error: %v", err)
			return
		}
		tl.now("routed lab removed")
		if keep {
			fmt.Fprintf(stdout, "logs and configs kept in %s\n", dir)
		}
	}()
	tl.now("routed lab up: h1 %v, h2 %v, h3 %v, client %v behind the router; vipd started on every host",
		lab.RoutedHostAddr(1), lab.RoutedHostAddr(2), lab.RoutedHostAddr(3), lab.RoutedClientAddr())

	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchRoute(wctx, c.l, func(at time.Time, r lab.Route, ok bool) {
			tl.at(at, "  FRR's table: %v: %s", vip, describeRoute(r, ok))
		})
	}()
	defer func() { stopWatch(); <-watched }()

	if err := c.waitMaster(ctx, 1, time.Second); err != nil {
		return err
	}
	tl.now("ELECTION: h1 (priority 150) is Master; its route alone is in FRR's table, %.1f s after the build began", time.Since(start).Seconds())
	p, err := c.l.StartProber(ctx, vip.Addr(), time.Millisecond)
	if err != nil {
		return err
	}
	defer p.Stop()
	from := time.Now()
	if err := sleepCtx(ctx, time.Second); err != nil {
		return err
	}
	tl.now("CLIENT: %d of %d probes to %v answered in 1 s, through the router", p.AnsweredSince(from), p.Sent(), vip.Addr())

	fmt.Fprintln(stdout)
	tl.now("SIGTERM to h1's vipd: a graceful stop (GRACEFUL_SHUTDOWN for graceful_shutdown_time 1s, then the withdraw)")
	t0 := time.Now()
	stopped := make(chan struct{})
	go func() { c.hosts[1].stop(); close(stopped) }()
	r, err := c.l.WaitNextHops(ctx, vip, 20*time.Second, lab.RoutedHostAddr(2))
	if err != nil {
		return err
	}
	<-stopped
	tl.now("h1's vipd exited; FRR's table: %s", describeRoute(r, true))
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	gap := p.LongestGap(t0.Add(-100*time.Millisecond), time.Now())
	lost, sent := p.Lost(t0, time.Now().Add(-100*time.Millisecond))
	tl.now("RESULT graceful (BGP): h2 is the next hop; the client's longest silence was %.1f ms (probes every 1 ms; %d of %d lost)",
		float64(gap.Len.Microseconds())/1000, lost, sent)
	fmt.Fprintln(stdout)
	tl.now("stopping the daemons")
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
