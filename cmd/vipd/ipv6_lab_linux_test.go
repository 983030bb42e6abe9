package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/internal/lab"
)

// IPv6 instances in the lab (issue 13): the nodes also have 2001:db8::11-13
// and their link-locals, the client 2001:db8::99, the VIP is 2001:db8::10.

// newCluster6 is newCluster on a lab built with opts (IPv6 set), for group
// g, whose VIP the monitor watches.
func newCluster6(t *testing.T, opts lab.Options, g lab.GroupConfig, kinds ...lab.DaemonKind) *cluster {
	t.Helper()
	needRoot(t)
	for _, k := range kinds {
		if k == lab.Keepalived {
			if _, err := exec.LookPath("keepalived"); err != nil {
				t.Skip("skipping: keepalived is not installed (apt-get install keepalived; .ci/run does)")
			}
		}
	}
	opts.Nodes, opts.IPv6 = len(kinds), true
	l, err := lab.New(context.Background(), slog.New(slog.DiscardHandler), opts)
	if err != nil {
		t.Fatalf("lab: %v", err)
	}
	c := &cluster{t: t, l: l, group: g, kinds: kinds}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
		l.Close()
	})
	c.mon, err = l.Watch(context.Background(), g.VIP.Addr(), g.VRID, nil)
	if err != nil {
		t.Fatalf("monitor: %v", err)
	}
	t.Cleanup(c.mon.Close)
	c.daemons = make([]*lab.Daemon, len(kinds)+1)
	for i, k := range kinds {
		if k != noDaemon {
			c.start(i + 1)
		}
	}
	return c
}

// routeSource is the source address node i's kernel picks to reach dst.
func (c *cluster) routeSource(i int, dst netip.Addr) netip.Addr {
	c.t.Helper()
	f := strings.Fields(c.nodeCmd(i, "ip", "-6", "route", "get", dst.String()))
	for k := 0; k+1 < len(f); k++ {
		if f[k] == "src" {
			if a, err := netip.ParseAddr(f[k+1]); err == nil {
				return a
			}
		}
	}
	c.t.Fatalf("n%d: no src in `ip -6 route get %v`: %v", i, dst, f)
	return netip.Addr{}
}

// checkVIPNeverSource checks on node i, which holds the VIP, that the kernel
// never picks it as the source of the host's own connections: the route to
// the client and to an unused address of the LAN take the node's own
// address, and the VIP has preferred_lft 0 and no DAD (issue 13).
func (c *cluster) checkVIPNeverSource(i int, vip netip.Prefix) {
	c.t.Helper()
	for _, dst := range []netip.Addr{netip.MustParseAddr("2001:db8::99"), netip.MustParseAddr("2001:db8::123")} {
		if src := c.routeSource(i, dst); src != c.l.NodeAddr6(i) {
			c.t.Errorf("n%d: ip -6 route get %v: src %v, want the node's own %v (VIP %v)", i, dst, src, c.l.NodeAddr6(i), vip.Addr())
		}
	}
	addrs, err := c.l.NodeHandle(i).AddrList(nil, netlink.FAMILY_V6)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, _ := netip.AddrFromSlice(a.IP); ip == vip.Addr() {
			ones, _ := a.Mask.Size()
			if a.PreferedLft != 0 || a.Flags&0x02 == 0 || ones != 128 { // IFA_F_NODAD
				c.t.Errorf("n%d: VIP %v/%d preferred_lft %d flags %#x, want /128, 0 and nodad", i, ip, ones, a.PreferedLft, a.Flags)
			}
			return
		}
	}
	c.t.Errorf("n%d does not have %v", i, vip)
}

func TestLabIPv6ElectionCutAndGracefulStop(t *testing.T) {
	g := lab.IPv6GroupConfig(3, 100*time.Millisecond)
	c := newCluster6(t, lab.Options{}, g, vipdOnly(3)...)
	s := c.waitFor("n1 alone holding the VIP and advertising", 20*time.Second, func(s lab.State) bool {
		return s.OnlyHolder() == 1 && s.Advertiser == 1
	})
	if s.AdvertPriority != 150 {
		t.Errorf("n1 advertises priority %d, want 150", s.AdvertPriority)
	}
	// The client talks to the VIP first: Linux updates an existing entry on
	// an unsolicited NA, it does not create one.
	c.pingUntil(5 * time.Second)
	c.waitFor("the client's neighbour entry on n1", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })
	c.checkVIPNeverSource(1, g.VIP)
	time.Sleep(500 * time.Millisecond)
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Fatalf("holders %v in a stable group", s.Holders)
	}
	for i := 2; i <= 3; i++ {
		if n := c.mon.AdvertsFrom(i, time.Now().Add(-400*time.Millisecond), time.Now()); n != 0 {
			t.Errorf("backup n%d sent %d adverts", i, n)
		}
	}

	// Cut n1's cable: n2 takes over and the client follows its unsolicited
	// NA. The client sends nothing until its entry has moved, so neighbour
	// unreachability detection cannot be what moved it: only an NA can.
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("n2 holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) && !s.Holds(3) })
	c.waitFor("the client's neighbour entry on n2", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	c.pingUntil(5 * time.Second)
	c.waitFor("n1 in FAULT releasing the VIP", 10*time.Second, func(s lab.State) bool { return !s.Holds(1) })
	ll1 := c.l.NodeLinkLocal(1).String()
	if !c.waitLog(2, "to=MASTER", "no advert from "+ll1) {
		t.Errorf("n2's log has no MASTER transition naming n1's link-local %s", ll1)
	}
	c.checkVIPNeverSource(2, g.VIP)

	// Restore n1: it preempts back (150 > 100) and the client follows.
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	c.waitFor("the client's neighbour entry back on n1", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })

	// Graceful stop: priority 0, n2 takes over after Skew_Time.
	stop := time.Now()
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatalf("stop n1: %v", err)
	}
	if err := c.daemons[1].Err(); err != nil {
		t.Errorf("vipd exited with %v after SIGTERM, want status 0", err)
	}
	s = c.waitOnlyHolder(2)
	t.Logf("graceful handover over IPv6: n2 alone holds the VIP %v after SIGTERM", s.At.Sub(stop).Round(time.Millisecond))
	if !c.waitLog(2, "to=MASTER", "priority 0 from master "+ll1+": it is releasing") {
		t.Error("n2's log does not say the master released")
	}
	c.waitFor("the client's neighbour entry on n2 after the stop", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	c.pingUntil(5 * time.Second)
	c.checkVIPNeverSource(2, g.VIP)
	for i := 2; i <= 3; i++ {
		if c.logHas(i, "advert dropped") {
			t.Errorf("n%d dropped adverts in an all-vipd IPv6 group", i)
		}
	}
}

// statusOnce reads node i's instances from `vipd status --json` once; ok is
// false while the daemon does not answer yet.
func (c *cluster) statusOnce(i int) ([]control.InstanceStatus, bool) {
	r := c.opCLI(i, "status", "--json")
	var sts []control.InstanceStatus
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &sts) != nil {
		return nil, false
	}
	return sts, true
}

// A tentative link-local at start-up must not give two masters (keepalived
// #2570/#2678): every node starts while its link-local is still in DAD; the
// daemons wait, say so in status, never advertise from a tentative address,
// and one Master results.
func TestLabIPv6TentativeLinkLocalAtStart(t *testing.T) {
	g := lab.IPv6GroupConfig(3, 100*time.Millisecond)
	// DAD with 3 probes a second apart: the link-locals stay tentative for
	// 3-4s after New, ample time to start the daemons and ask them.
	c := newCluster6(t, lab.Options{DAD: 3}, g, noDaemon, noDaemon, noDaemon)
	w, err := c.l.WatchLinkLocals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	start := time.Now()
	for i := 1; i <= 3; i++ {
		if tent, err := c.l.NodeLinkLocalTentative(i); err != nil || !tent {
			t.Fatalf("n%d link-local tentative=%v (%v) before the start: the test needs DAD running", i, tent, err)
		}
		c.kinds[i-1] = lab.Vipd
		c.start(i)
	}
	// Status while tentative: a sample counts only when the link-local was
	// tentative both before the request and after the answer, so the daemon
	// cannot have seen it usable.
	sampled := make([]bool, 4)
	for i := 1; i <= 3; i++ {
		for !sampled[i] {
			before, _ := c.l.NodeLinkLocalTentative(i)
			sts, ok := c.statusOnce(i)
			after, _ := c.l.NodeLinkLocalTentative(i)
			if !before {
				t.Fatalf("n%d's link-local left the tentative state (%v after start) before its daemon answered status", i, time.Since(start).Round(time.Millisecond))
			}
			if !ok || !after {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			sampled[i] = true
			if len(sts) != 1 {
				t.Fatalf("n%d: %d instances in status", i, len(sts))
			}
			st := sts[0]
			if !strings.Contains(st.Waiting, "tentative") {
				t.Errorf("n%d status while its link-local is tentative: state %s, waiting %q; want waiting for the tentative link-local", i, st.State, st.Waiting)
			}
			if st.State == control.StateMaster {
				t.Errorf("n%d is MASTER with a tentative link-local", i)
			}
			r := c.opCLI(i, "status")
			if !strings.Contains(r.stdout, "waiting") {
				t.Errorf("n%d: `vipd status` does not show waiting:\n%s", i, r.stdout)
			}
		}
	}
	c.waitOnlyHolder(1)
	time.Sleep(time.Second)
	end := time.Now()
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Fatalf("holders %v after start-up", s.Holders)
	}
	// One node's DAD can end after another's Master_Down_Interval: that one
	// is Master alone for a while, and the preferred node preempts it when
	// it joins. The preempted Master then keeps the VIP until the new one
	// announces it (make-before-break, within the bound it logs): that
	// overlap is a handover, not two Masters.
	allowed := time.Duration(0)
	for i := 1; i <= 3; i++ {
		if b, ok := c.yieldBound(i); ok {
			allowed = max(allowed, b)
		}
	}
	if dup := c.mon.DuplicateTime(start, end); dup > allowed {
		t.Errorf("two nodes held the VIP for %v during start-up (a preemption's make-before-break allows %v)", dup, allowed)
	}
	for i := 1; i <= 3; i++ {
		ready, ok := w.Ready(i)
		if !ok {
			t.Fatalf("n%d's link-local never became usable", i)
		}
		t.Logf("n%d: link-local usable %v after start", i, ready.Sub(start).Round(time.Millisecond))
		// The watch stamps netlink events when it reads them, later than
		// the kernel: an advert may arrive a little before the stamp
		// without having been sent early. A daemon that advertised while
		// tentative would do so from the start, seconds earlier.
		if n := c.mon.AdvertsFrom(i, start, ready.Add(-100*time.Millisecond)); n > 0 {
			t.Errorf("n%d sent %d adverts while its link-local was tentative", i, n)
		}
		if !c.waitLog(i, "tentative") {
			t.Errorf("n%d's log does not say it waits for the tentative link-local", i)
		}
		sts, ok := c.statusOnce(i)
		if !ok || len(sts) != 1 || sts[0].Waiting != "" {
			t.Errorf("n%d still waiting after DAD: %+v", i, sts)
		}
	}
	masters := 0
	for i := 1; i <= 3; i++ {
		if sts, _ := c.statusOnce(i); len(sts) == 1 && sts[0].State == control.StateMaster {
			masters++
		}
	}
	if masters != 1 {
		t.Errorf("%d masters after start-up, want 1", masters)
	}
}

// ---------------------------------------------------------------------------
// Interop over IPv6 with keepalived 2.2.7 (vrrp_version 3, an IPv6 VIP).

func TestInteropIPv6KeepalivedVipdHigher(t *testing.T) {
	g := lab.IPv6GroupConfig(2, 100*time.Millisecond)
	c := newCluster6(t, lab.Options{}, g, lab.Vipd, lab.Keepalived)
	c.waitFor("vipd alone holding the VIP and advertising", 20*time.Second, func(s lab.State) bool {
		return s.OnlyHolder() == 1 && s.Advertiser == 1
	})
	c.pingUntil(5 * time.Second)
	c.waitFor("the client on vipd", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })
	// vipd fails: keepalived takes over, and the client follows its NA.
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(2)
	c.pingUntil(5 * time.Second)
	c.waitFor("the client following keepalived", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	// vipd returns and preempts keepalived.
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	c.waitFor("the client following vipd", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })
	c.pingUntil(5 * time.Second)
	// Graceful stop: keepalived takes over on vipd's priority 0.
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(2)
	c.pingUntil(5 * time.Second)
	if c.logHas(1, "advert dropped") {
		t.Error("vipd dropped keepalived's IPv6 adverts")
	}
}

func TestInteropIPv6KeepalivedHigher(t *testing.T) {
	g := lab.IPv6GroupConfig(2, 100*time.Millisecond)
	c := newCluster6(t, lab.Options{}, g, lab.Keepalived, lab.Vipd)
	c.waitOnlyHolder(1)
	c.pingUntil(5 * time.Second)
	if !c.waitLog(2, "to=BACKUP") {
		t.Fatal("vipd did not settle as backup")
	}
	ll1 := c.l.NodeLinkLocal(1).String()
	// keepalived fails: vipd takes over, citing keepalived's silence.
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("vipd holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })
	if !c.waitLog(2, "to=MASTER", "no advert from "+ll1) {
		t.Errorf("vipd's takeover cause does not name keepalived's link-local %s", ll1)
	}
	c.pingUntil(5 * time.Second)
	c.waitFor("the client following vipd", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	// keepalived returns and preempts vipd.
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	if !c.waitLog(2, "from=MASTER", "to=BACKUP", "higher priority 150 from "+ll1) {
		t.Error("vipd did not yield to keepalived's higher priority")
	}
	// keepalived stops gracefully: vipd takes over on its priority 0.
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(2)
	if !c.waitLog(2, "priority 0 from master "+ll1+": it is releasing") {
		t.Error("vipd did not take over on keepalived's priority 0")
	}
	c.pingUntil(5 * time.Second)
	if c.logHas(2, "advert dropped") {
		t.Error("vipd dropped keepalived's IPv6 adverts")
	}
}

// ---------------------------------------------------------------------------
// Interop over IPv6 with FRR vrrpd: a macvlan vrrp6-VRID with the IPv6
// virtual MAC 00:00:5e:00:02:VRID, a link-local of its own (not derived from
// that MAC, which every router shares) and the VIP.

func startFRR6(t *testing.T, c *cluster, i, prio int) *frrPeer {
	t.Helper()
	ns := c.l.NodeNS(i)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	mv := fmt.Sprintf("vrrp6-%d", c.group.VRID)
	run("ip", "-n", ns, "link", "add", mv, "link", "eth0", "type", "macvlan", "mode", "bridge")
	run("ip", "-n", ns, "link", "set", mv, "addrgenmode", "none")
	run("ip", "-n", ns, "link", "set", mv, "address", fmt.Sprintf("00:00:5e:00:02:%02x", c.group.VRID))
	run("ip", "-n", ns, "addr", "add", fmt.Sprintf("fe80::1:%d/64", i), "dev", mv)
	run("ip", "-n", ns, "addr", "add", c.group.VIP.String(), "dev", mv)
	run("ip", "-n", ns, "link", "set", mv, "up")
	conf := fmt.Sprintf("interface eth0\n vrrp %d version 3\n vrrp %d priority %d\n vrrp %d advertisement-interval %d\n vrrp %d ipv6 %s\n",
		c.group.VRID, c.group.VRID, prio, c.group.VRID, c.group.Interval.Milliseconds(), c.group.VRID, c.group.VIP.Addr())
	return startFRRConf(t, c, i, conf)
}

// frrSource is the link-local FRR's vrrpd on node i sends from.
func frrSource(i int) string { return fmt.Sprintf("fe80::1:%d", i) }

func TestInteropIPv6FRRVipdHigher(t *testing.T) {
	g := lab.IPv6GroupConfig(2, 100*time.Millisecond)
	c := newCluster6(t, lab.Options{}, g, lab.Vipd, noDaemon)
	c.waitFor("vipd master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.Holds(1) })
	startFRR6(t, c, 2, 100)
	// FRR comes up as Backup and stays silent while vipd (150) advertises.
	time.Sleep(2 * time.Second)
	if n := c.mon.AdvertsFrom(2, time.Now().Add(-time.Second), time.Now()); n != 0 {
		t.Fatalf("FRR sent %d IPv6 adverts in the last second beside a higher-priority vipd", n)
	}
	c.pingUntil(5 * time.Second)
	// vipd stops gracefully: FRR takes over.
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitFor("FRR advertising as master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 2 && s.AdvertPriority == 100 })
	c.pingUntil(5 * time.Second)
	// vipd returns and preempts FRR.
	c.start(1)
	c.waitFor("vipd master again", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.Holds(1) })
	time.Sleep(time.Second)
	if n := c.mon.AdvertsFrom(2, time.Now().Add(-500*time.Millisecond), time.Now()); n != 0 {
		t.Errorf("FRR still advertises (%d in 500ms) after vipd preempted it", n)
	}
	if c.logHas(1, "advert dropped") {
		t.Error("vipd dropped FRR's IPv6 adverts")
	}
}

func TestInteropIPv6FRRHigher(t *testing.T) {
	g := lab.IPv6GroupConfig(2, 100*time.Millisecond)
	c := newCluster6(t, lab.Options{}, g, noDaemon, lab.Vipd)
	frr := startFRR6(t, c, 1, 150)
	c.waitFor("FRR master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.AdvertPriority == 150 })
	if !c.waitLog(2, "to=BACKUP") {
		t.Fatal("vipd did not start")
	}
	time.Sleep(time.Second)
	if s := c.mon.State(); s.Holds(2) {
		t.Fatal("vipd holds the VIP beside a higher-priority FRR master")
	}
	c.pingUntil(5 * time.Second)
	// FRR stops: vipd takes over on its priority 0.
	frr.stop(frr.vrrpd)
	c.waitFor("vipd master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 2 && s.Holds(2) })
	if !c.waitLog(2, "to=MASTER", "priority 0 from master "+frrSource(1)+": it is releasing") {
		t.Error("vipd did not take over on FRR's priority 0")
	}
	c.pingUntil(5 * time.Second)
	if c.logHas(2, "advert dropped") {
		t.Error("vipd dropped FRR's IPv6 adverts")
	}
}

// startFRRConf runs zebra and vrrpd with vrrpd.conf conf in node i's
// namespace, as startFRR does for IPv4 (the macvlan is the caller's).
func startFRRConf(t *testing.T, c *cluster, i int, conf string) *frrPeer {
	t.Helper()
	for _, b := range []string{"zebra", "vrrpd"} {
		if _, err := os.Stat(filepath.Join(frrBin, b)); err != nil {
			t.Skipf("skipping: FRR is not installed (apt-get install frr; .ci/run does): %v", err)
		}
	}
	u, err := user.Lookup("frr")
	if err != nil {
		t.Skipf("skipping: no frr user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	ns := c.l.NodeNS(i)
	// The daemons drop to user frr: their directory must be reachable by it.
	dir, err := os.MkdirTemp("", "vipd-frr6-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"zebra.conf": "hostname " + lab.NodeName(i) + "\n", "vrrpd.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	p := &frrPeer{dir: dir, done: map[*exec.Cmd]chan struct{}{}}
	start := func(daemon string) *exec.Cmd {
		cmd := exec.Command("ip", "netns", "exec", ns, filepath.Join(frrBin, daemon), "-P", "0",
			"-z", filepath.Join(dir, "zserv.api"), "--vty_socket", dir,
			"-f", filepath.Join(dir, daemon+".conf"), "-i", filepath.Join(dir, daemon+".pid"),
			"--log", "file:"+filepath.Join(dir, daemon+".log"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", daemon, err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		p.done[cmd] = done
		return cmd
	}
	p.zebra = start("zebra")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "vrrpd.log"))
			t.Logf("--- FRR vrrpd log on n%d ---\n%s", i, b)
		}
		p.stop(p.vrrpd)
		p.stop(p.zebra)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "zserv.api")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("zebra did not create its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.vrrpd = start("vrrpd")
	return p
}

// A graceful stop over IPv6 is make-before-break as over IPv4 (issue 15):
// the successor's address is usable before the old Master removes its own,
// and the client, probing every 2 ms, loses nothing.
func TestLabIPv6GracefulStopIsMakeBeforeBreak(t *testing.T) {
	g := lab.IPv6GroupConfig(2, 100*time.Millisecond)
	c := newCluster6(t, lab.Options{}, g, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	for round := 1; round <= 3; round++ {
		from, to := 1, 2
		if round%2 == 0 {
			from, to = 2, 1
		}
		p := c.startProbingEvery(handoverProbe)
		start := time.Now()
		if err := c.daemons[from].Stop(5 * time.Second); err != nil {
			t.Fatalf("stop n%d: %v", from, err)
		}
		c.checkPlannedMove6(p, fmt.Sprintf("round %d: graceful stop of n%d", round, from), from, to, start)
		p.Stop()
		// Back with the lower priority, so it stays a Backup and the next
		// round stops the new Master.
		spec := c.spec(from)
		spec.Group.Priorities = []int{100, 100}
		spec.Group.Priorities[to-1] = 150
		c.startSpec(from, spec)
		c.waitLog(from, "to=BACKUP")
		time.Sleep(300 * time.Millisecond)
		if s := c.mon.State(); s.OnlyHolder() != to {
			t.Fatalf("round %d: holders %v after n%d restarted as a Backup", round, s.Holders, from)
		}
	}
}

// monitorSkew is how far apart the monitor may stamp two address events in
// different namespaces that happened the other way round: each netlink
// subscription has its own goroutine, which stamps a message when it reads
// it, and the kernel gives netlink messages no timestamp. Inversions
// beyond it are real (the kernel published the successor's address after
// the old Master had removed its own).
const monitorSkew = 200 * time.Microsecond

// monitorInversion bounds the inversion a planned-move test accepts from
// the monitor when the old Master's own report shows it removed the VIP on
// the successor's announcement (seen under make test's load: 474 µs and
// 1.1 ms).
const monitorInversion = 5 * time.Millisecond

// checkPlannedMove6 is checkPlannedMove with monitorSkew: a planned move
// from n`from` to n`to` that began at start must cost the client no probe
// and be make-before-break.
func (c *cluster) checkPlannedMove6(p *lab.Prober, what string, from, to int, start time.Time) {
	t := c.t
	t.Helper()
	c.waitOnlyHolder(to)
	c.waitFor(fmt.Sprintf("the client on n%d", to), 5*time.Second, func(s lab.State) bool { return s.NeighNode == to })
	c.opWaitAnswers(p, time.Now())
	end := time.Now()
	gap, sendGap := p.LongestGap(start, end), p.LongestSendGap(start, end)
	added, okA := c.opVIPEvent(lab.VIPAdded, to, start)
	removed, okR := c.opVIPEvent(lab.VIPRemoved, from, start)
	if !okA || !okR {
		t.Fatalf("%s: VIP events: added on n%d %v, removed from n%d %v", what, to, okA, from, okR)
	}
	both := removed.Sub(added)
	t.Logf("%s: the client's longest gap %v (probes every %v; the prober's own longest send gap %v); both held the VIP for %v",
		what, gap.Len.Round(time.Microsecond), handoverProbe, sendGap.Round(time.Microsecond), both.Round(time.Microsecond))
	if gap.Len > sendGap+2*handoverProbe {
		t.Errorf("%s: the client went %v without an answer (prober stalled %v at most): not make-before-break", what, gap.Len, sendGap)
	}
	if both < -monitorSkew {
		t.Errorf("%s: n%d removed the VIP %v before the kernel of n%d published it: break before make", what, from, -both, to)
	}
	if s := c.mon.State(); s.OnlyHolder() != to || s.NeighNode != to {
		t.Errorf("%s: holders %v, client on n%d; want n%d alone and the client on it", what, s.Holders, s.NeighNode, to)
	}
}

// withTTLRange adds an accepted TTL range to a generated vipd config (after
// withUnicastPeers: the range is for unicast peers only).
func withTTLRange(minTTL, maxTTL int, inner func(int, []byte) []byte) func(int, []byte) []byte {
	return func(node int, cfg []byte) []byte {
		cfg = inner(node, cfg)
		return []byte(strings.Replace(string(cfg), "\n[instance.garp]",
			fmt.Sprintf("unicast_min_ttl = %d\nunicast_max_ttl = %d\n\n[instance.garp]", minTTL, maxTTL), 1))
	}
}

// Routed unicast (issue 13): adverts from a peer behind routers arrive with
// a TTL below 255. The bridge rewrites the TTL of n1's adverts as routers
// would; n2 accepts 250..255 and drops the rest, counted as ttl.
func TestLabUnicastTTLRange(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, noDaemon, noDaemon)
	ctx := context.Background()
	f, err := c.l.NewFilter(ctx)
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	setTTL := func(ttl int) {
		t.Helper()
		if err := f.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.SetTTLFrom(ctx, 1, ttl); err != nil {
			t.Fatalf("nft cannot rewrite the TTL on this kernel: %v", err)
		}
	}
	setTTL(252) // three routers on the way
	peers := withUnicastPeers(map[int][]string{1: {"198.51.100.12"}, 2: {"198.51.100.11"}})
	for i := 1; i <= 2; i++ {
		spec := c.spec(i)
		spec.Kind, spec.Binary = lab.Vipd, vipdBinary
		spec.Config = withTTLRange(250, 255, peers)
		c.kinds[i-1] = lab.Vipd
		c.startSpec(i, spec)
	}
	ttlDrops := func(i int) uint64 {
		t.Helper()
		sts, ok := c.statusOnce(i)
		if !ok || len(sts) != 1 {
			t.Fatalf("n%d: no status", i)
		}
		return sts[0].Counters.Drops["ttl"]
	}

	// TTL 252, inside the range: n2 follows n1.
	c.waitOnlyHolder(1)
	time.Sleep(time.Second)
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Fatalf("holders %v with n1's adverts at TTL 252 inside 250..255", s.Holders)
	}
	if n, err := f.Dropped(ctx); err != nil || n < 5 {
		t.Fatalf("the TTL rule matched %d of n1's adverts (%v): the test did not rewrite them", n, err)
	}
	if st, _ := c.statusOnce(2); len(st) != 1 || st[0].State != control.StateBackup || st[0].Master.Address != c.l.NodeAddr(1) {
		t.Errorf("n2 with n1's adverts at TTL 252: %+v, want BACKUP following 198.51.100.11", st)
	}
	if n := ttlDrops(2); n != 0 {
		t.Errorf("n2 dropped %d adverts for their TTL inside the range", n)
	}

	// TTL 240, outside: n2 no longer hears n1 and takes over.
	setTTL(240)
	c.waitFor("n2 taking over as n1's adverts fall outside the TTL range", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })
	if !c.waitLog(2, "advert dropped", "reason=ttl", "source=198.51.100.11") {
		t.Error("n2 does not log the drop of n1's TTL-240 adverts")
	}
	if n := ttlDrops(2); n == 0 {
		t.Error("n2's ttl drop counter is 0 with n1's adverts at TTL 240")
	}

	// Back inside the range: n2 hears n1's higher priority again and yields.
	setTTL(253)
	c.waitOnlyHolder(1)
	before := ttlDrops(2)
	time.Sleep(time.Second)
	if n := ttlDrops(2); n != before {
		t.Errorf("n2 dropped %d more adverts for their TTL at 253", n-before)
	}
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v with the TTL back inside the range", s.Holders)
	}
}

// yieldBound is the make-before-break bound node i logged when a
// preempting Master made it yield, if it did.
func (c *cluster) yieldBound(i int) (time.Duration, bool) {
	b, _ := os.ReadFile(c.daemons[i].LogPath())
	m := regexp.MustCompile(`preempted: keeping the addresses until the new Master announces them.* bound=(\S+)`).FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(string(m[1]))
	return d, err == nil
}
