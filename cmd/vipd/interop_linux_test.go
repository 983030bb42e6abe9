package main

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// Interop: vipd and keepalived (Debian package, VRRPv3) in one group.

func TestInteropKeepalivedVipdHigher(t *testing.T) {
	vipdHigherThanKeepalived(newCluster(t, 100*time.Millisecond, lab.Vipd, lab.Keepalived))
}

func TestInteropKeepalivedHigher(t *testing.T) {
	keepalivedHigherThanVipd(newCluster(t, 100*time.Millisecond, lab.Keepalived, lab.Vipd), nil)
}

// vipdHigherThanKeepalived: vipd on n1 fails (link cut) and keepalived on
// n2 takes over; vipd returns and preempts it; vipd stops gracefully and
// keepalived takes over on its priority 0.
func vipdHigherThanKeepalived(c *cluster) {
	t := c.t
	t.Helper()
	c.waitOnlyHolder(1)
	c.pingUntil(5 * time.Second)
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(2)
	c.pingUntil(5 * time.Second)
	c.waitFor("the client following keepalived", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	c.waitFor("the client following vipd", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 || s.NeighNode == 0 })
	c.pingUntil(5 * time.Second)
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(2)
	if c.logHas(1, "advert dropped") {
		t.Error("vipd dropped keepalived's adverts")
	}
}

// keepalivedHigherThanVipd: keepalived on n1 fails (link cut) and vipd on
// n2 takes over, citing keepalived's silence; keepalived returns and
// preempts vipd; keepalived stops gracefully and vipd takes over on its
// priority 0. settled, if set, runs once vipd is keepalived's Backup.
func keepalivedHigherThanVipd(c *cluster, settled func()) {
	t := c.t
	t.Helper()
	c.waitOnlyHolder(1)
	c.pingUntil(5 * time.Second)
	if !c.waitLog(2, "to=BACKUP") {
		t.Fatal("vipd did not settle as backup")
	}
	if settled != nil {
		settled()
	}
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("vipd holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })
	if !c.waitLog(2, "to=MASTER", "no advert from 198.51.100.11") {
		t.Error("vipd's takeover cause does not name keepalived")
	}
	c.pingUntil(5 * time.Second)
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	if !c.waitLog(2, "from=MASTER", "to=BACKUP", "higher priority 150 from 198.51.100.11") {
		t.Error("vipd did not yield to keepalived's higher priority")
	}
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(2)
	if !c.waitLog(2, "priority 0 from master 198.51.100.11: it is releasing") {
		t.Error("vipd did not take over on keepalived's priority 0")
	}
	if c.logHas(2, "advert dropped") {
		t.Error("vipd dropped keepalived's adverts")
	}
}

// Interop with FRR's vrrpd (zebra + vrrpd per namespace, a macvlan with the
// virtual MAC per VRID). A Backup FRR keeps the VIP on its macvlan in
// protodown, so FRR is judged by its adverts, not by addresses.

const frrBin = "/usr/lib/frr"

type frrPeer struct {
	dir          string
	zebra, vrrpd *exec.Cmd
	done         map[*exec.Cmd]chan struct{}
}

func startFRR(t *testing.T, c *cluster, i, prio int) *frrPeer {
	t.Helper()
	for _, b := range []string{"zebra", "vrrpd"} {
		if _, err := os.Stat(filepath.Join(frrBin, b)); err != nil {
			t.Skipf("skipping: FRR is not installed (apt-get install frr; .ci/run does): %v", err)
		}
	}
	if _, err := user.Lookup("frr"); err != nil {
		t.Skipf("skipping: no frr user: %v", err)
	}
	ns := c.l.NodeNS(i)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	run("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv4.conf.all.arp_ignore=1",
		"net.ipv4.conf.all.arp_announce=2", "net.ipv4.conf.eth0.ignore_routes_with_linkdown=1")
	vmac := fmt.Sprintf("00:00:5e:00:01:%02x", c.group.VRID)
	run("ip", "-n", ns, "link", "add", "vrrp4-51", "link", "eth0", "type", "macvlan", "mode", "bridge")
	run("ip", "-n", ns, "link", "set", "vrrp4-51", "address", vmac)
	run("ip", "-n", ns, "addr", "add", c.group.VIP.String(), "dev", "vrrp4-51")
	run("ip", "-n", ns, "link", "set", "vrrp4-51", "up")
	version := cmp.Or(c.group.Version, 3)
	conf := fmt.Sprintf("interface eth0\n vrrp %d version %d\n vrrp %d priority %d\n vrrp %d advertisement-interval %d\n vrrp %d ip %s\n",
		c.group.VRID, version, c.group.VRID, prio, c.group.VRID, c.group.Interval.Milliseconds(), c.group.VRID, c.group.VIP.Addr())
	return startFRRConf(t, c, i, conf)
}

// stop ends an FRR daemon with SIGTERM (vrrpd then sends priority 0).
func (p *frrPeer) stop(cmd *exec.Cmd) {
	if cmd == nil {
		return
	}
	done := p.done[cmd]
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func TestInteropFRRVipdHigher(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, lab.Vipd, noDaemon)
	c.waitFor("vipd master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.Holds(1) })
	startFRR(t, c, 2, 100)
	// FRR comes up as Backup and stays silent while vipd (150) advertises.
	time.Sleep(2 * time.Second)
	if n := c.mon.AdvertsFrom(2, time.Now().Add(-time.Second), time.Now()); n != 0 {
		t.Fatalf("FRR sent %d adverts in the last second beside a higher-priority vipd", n)
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
		t.Error("vipd dropped FRR's adverts")
	}
}

func TestInteropFRRHigher(t *testing.T) {
	frrHigherThanVipd(newCluster(t, 100*time.Millisecond, noDaemon, lab.Vipd), time.Second)
}

// frrHigherThanVipd: FRR's vrrpd on n1 at 150 is Master and vipd on n2 its
// Backup, holding nothing for settle; FRR stops and vipd takes over on its
// priority 0, having dropped none of its adverts.
func frrHigherThanVipd(c *cluster, settle time.Duration) {
	t := c.t
	t.Helper()
	frr := startFRR(t, c, 1, 150)
	c.waitFor("FRR master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.AdvertPriority == 150 })
	if !c.waitLog(2, "to=BACKUP") {
		t.Fatal("vipd did not start")
	}
	time.Sleep(settle)
	if s := c.mon.State(); s.Holds(2) {
		t.Fatal("vipd holds the VIP beside a higher-priority FRR master")
	}
	frr.stop(frr.vrrpd)
	c.waitFor("vipd master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 2 && s.Holds(2) })
	if !c.waitLog(2, "to=MASTER", "priority 0 from master 198.51.100.11: it is releasing") {
		t.Error("vipd did not take over on FRR's priority 0")
	}
	if c.logHas(2, "advert dropped") {
		t.Error("vipd dropped FRR's adverts")
	}
}
