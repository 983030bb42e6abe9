package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// The tests in this file run the real vipd binary in network namespaces the
// lab builds (a bridge, nodes 198.51.100.11-13, a client 198.51.100.99),
// beside keepalived and FRR where a test says so.

var vipdBinary string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() == 0 {
			dir, err := os.MkdirTemp("", "vipd-test-bin-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			vipdBinary = filepath.Join(dir, "vipd")
			out, err := exec.Command("go", "build", "-o", vipdBinary, ".").CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "building vipd: %v\n%s", err, out)
				return 1
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root for network namespaces, raw sockets and netlink (run `make test` as root)")
	}
}

// cluster is a lab with one daemon per node and a monitor of the VIP.
type cluster struct {
	t       *testing.T
	l       *lab.Lab
	mon     *lab.Monitor
	group   lab.GroupConfig
	kinds   []lab.DaemonKind
	daemons []*lab.Daemon
}

func newCluster(t *testing.T, interval time.Duration, kinds ...lab.DaemonKind) *cluster {
	t.Helper()
	return newClusterGroup(t, lab.DefaultGroupConfig(len(kinds), interval), kinds...)
}

// newClusterGroup is newCluster with the group's settings given.
func newClusterGroup(t *testing.T, g lab.GroupConfig, kinds ...lab.DaemonKind) *cluster {
	t.Helper()
	needRoot(t)
	for _, k := range kinds {
		if k == lab.Keepalived {
			if _, err := exec.LookPath("keepalived"); err != nil {
				t.Skip("skipping: keepalived is not installed (apt-get install keepalived; .ci/run does)")
			}
		}
	}
	l, err := lab.New(context.Background(), slog.New(slog.DiscardHandler), lab.Options{Nodes: len(kinds)})
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
	c.mon, err = l.Watch(context.Background(), c.group.VIP.Addr(), c.group.VRID, nil)
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

func (c *cluster) spec(i int) lab.DaemonSpec {
	return lab.DaemonSpec{Kind: c.kinds[i-1], Binary: c.binary(i), Group: c.group, LogLevel: "debug"}
}

func (c *cluster) binary(i int) string {
	if c.kinds[i-1] == lab.Vipd {
		return vipdBinary
	}
	return ""
}

func (c *cluster) start(i int) {
	c.startSpec(i, c.spec(i))
}

func (c *cluster) startSpec(i int, spec lab.DaemonSpec) {
	c.t.Helper()
	d, err := c.l.StartDaemon(i, spec)
	if err != nil {
		c.t.Fatalf("start n%d: %v", i, err)
	}
	c.daemons[i] = d
}

// noDaemon leaves a node to a peer the test starts itself (FRR).
const noDaemon lab.DaemonKind = 0

func (c *cluster) dumpLogs() {
	for _, d := range c.daemons {
		if d == nil {
			continue
		}
		b, _ := os.ReadFile(d.LogPath())
		if len(b) > 8000 {
			b = b[len(b)-8000:]
		}
		c.t.Logf("--- n%d %v log (tail) ---\n%s", d.Node(), d.Kind(), b)
	}
}

// waitFor waits for cond on the monitor's state; timeouts are generous
// because the machine is shared: they catch hangs, not slowness.
func (c *cluster) waitFor(what string, timeout time.Duration, cond func(lab.State) bool) lab.State {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := c.mon.Wait(ctx, 10*time.Millisecond, cond)
	if err != nil {
		c.t.Fatalf("waiting for %s: %v (state: holders %v, neighbour n%d, advertiser n%d)", what, err, s.Holders, s.NeighNode, s.Advertiser)
	}
	return s
}

func (c *cluster) waitOnlyHolder(i int) lab.State {
	c.t.Helper()
	return c.waitFor(fmt.Sprintf("n%d alone holding the VIP", i), 20*time.Second, func(s lab.State) bool { return s.OnlyHolder() == i })
}

// ping sends one echo request from the client to the VIP.
func (c *cluster) ping() error {
	out, err := c.l.ClientCommand(context.Background(), "ping", "-n", "-c", "1", "-W", "1", c.group.VIP.Addr().String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping: %v: %s", err, out)
	}
	return nil
}

// pingUntil pings until an answer arrives or the timeout passes.
func (c *cluster) pingUntil(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := c.ping()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("client cannot reach the VIP: %v", err)
		}
	}
}

func (c *cluster) nodeCmd(i int, args ...string) string {
	c.t.Helper()
	out, err := c.l.NodeCommand(context.Background(), i, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("n%d: %s: %v: %s", i, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// logHas reports whether node i's daemon log has a line containing all parts.
func (c *cluster) logHas(i int, parts ...string) bool {
	b, _ := os.ReadFile(c.daemons[i].LogPath())
	for _, line := range bytes.Split(b, []byte("\n")) {
		ok := true
		for _, p := range parts {
			if !bytes.Contains(line, []byte(p)) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// waitLog waits until node i's log has a line containing all parts: the
// line is written just after the action a monitor sees.
func (c *cluster) waitLog(i int, parts ...string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !c.logHas(i, parts...) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func (c *cluster) countLog(i int, part string) int {
	b, _ := os.ReadFile(c.daemons[i].LogPath())
	return bytes.Count(b, []byte(part))
}

func vipdOnly(n int) []lab.DaemonKind {
	ks := make([]lab.DaemonKind, n)
	for i := range ks {
		ks[i] = lab.Vipd
	}
	return ks
}

func TestLabElectionCutAndGracefulStop(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(3)...)
	c.waitOnlyHolder(1)
	c.pingUntil(5 * time.Second)
	s := c.waitFor("the client's neighbour entry on n1", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })
	if s.NeighNode != 1 {
		t.Fatalf("client's neighbour entry points at n%d", s.NeighNode)
	}

	// Cut n1's cable: n2 takes over and the client follows its gratuitous ARP.
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("n2 holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) && !s.Holds(3) })
	c.waitFor("the client's neighbour entry on n2", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	c.pingUntil(5 * time.Second)
	c.waitFor("n1 in FAULT releasing the VIP", 10*time.Second, func(s lab.State) bool { return !s.Holds(1) })
	if !c.waitLog(1, "to=FAULT", "interface eth0 down") {
		t.Error("n1's log has no FAULT transition with its cause")
	}
	if !c.waitLog(2, "to=MASTER", "no advert from 198.51.100.11") {
		t.Error("n2's log has no MASTER transition with its cause")
	}

	// Restore n1: it preempts back (150 > 100).
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)

	// Graceful stop of the master: priority 0, n2 takes over after Skew_Time.
	stop := time.Now()
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatalf("stop n1: %v", err)
	}
	if err := c.daemons[1].Err(); err != nil {
		t.Errorf("vipd exited with %v after SIGTERM, want status 0", err)
	}
	s = c.waitOnlyHolder(2)
	t.Logf("graceful handover: n2 alone holds the VIP %v after SIGTERM (Skew_Time(100) at 100ms is %v)",
		s.At.Sub(stop).Round(time.Millisecond), time.Duration(156)*100*time.Millisecond/256)
	if !c.waitLog(2, "to=MASTER", "priority 0 from master 198.51.100.11: it is releasing") {
		t.Error("n2's log does not say the master released")
	}
	c.pingUntil(5 * time.Second)
}

func TestLabVIPDeletedIsRestored(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	before := time.Now()
	c.nodeCmd(1, "ip", "addr", "del", c.group.VIP.String(), "dev", "eth0")
	if !c.waitLog(1, "removed by someone else while master: restoring it") {
		t.Fatal("n1's log does not report the restore")
	}
	c.waitOnlyHolder(1)
	var removed, added bool
	for _, ev := range c.mon.Events(before, time.Time{}) {
		switch {
		case ev.Kind == lab.VIPRemoved && ev.Node == 1:
			removed = true
		case ev.Kind == lab.VIPAdded && ev.Node == 1 && removed:
			added = true
		}
	}
	if !removed || !added {
		t.Errorf("netlink saw removed=%v, added again=%v", removed, added)
	}
}

func TestLabInterfaceDownIsFault(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	c.nodeCmd(1, "ip", "link", "set", "eth0", "down")
	c.waitOnlyHolder(2)
	if !c.waitLog(1, "to=FAULT", "interface eth0 down") {
		t.Error("n1 did not report FAULT")
	}
	c.nodeCmd(1, "ip", "link", "set", "eth0", "up")
	// Back to Backup, then preempting with its higher priority.
	c.waitOnlyHolder(1)
	if !c.waitLog(1, "from=FAULT", "to=BACKUP", "interface eth0 up") {
		t.Error("n1 did not report leaving FAULT")
	}
}

func TestLabLeftOverVIPRemovedAtRestart(t *testing.T) {
	c := newCluster(t, 100*time.Millisecond, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	// SIGKILL: no priority 0, the address stays on n1.
	if err := c.daemons[1].Kill(); err != nil {
		t.Fatal(err)
	}
	c.waitFor("n2 taking over beside n1's left-over", 20*time.Second, func(s lab.State) bool { return s.Holds(1) && s.Holds(2) })
	// n2 finds the second owner with its ARP probe and keeps the client.
	if !c.waitLog(2, "another host claims our virtual address", "foreign_mac="+c.l.NodeMAC(1).String()) {
		t.Error("n2 did not report n1's left-over address")
	}
	c.pingUntil(5 * time.Second)
	c.waitFor("the client on n2", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	// Restart n1 with a priority below n2's so that it stays Backup: the
	// left-over must go at start-up.
	spec := c.spec(1)
	spec.Group.Priorities = []int{40, 100}
	c.startSpec(1, spec)
	c.waitOnlyHolder(2)
	time.Sleep(time.Second)
	if s := c.mon.State(); s.OnlyHolder() != 2 {
		t.Fatalf("holders %v after restart", s.Holders)
	}
}

func TestLabSurvivesMalformedFlood(t *testing.T) {
	// 1s adverts: what is tested is the flood, not the scheduler of a
	// loaded 2-core machine.
	c := newCluster(t, time.Second, vipdOnly(2)...)
	c.waitOnlyHolder(1)
	// The transition is logged just after the address is added.
	if !c.waitLog(1, "to=MASTER") {
		t.Fatal("n1 did not log its transition to MASTER")
	}
	transitions := c.countLog(1, "state changed")
	sent, took := flood(t, c.l, 10000, 10*time.Second)
	t.Logf("flood: sent %d malformed adverts in %v", sent, took.Round(time.Millisecond))
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Fatalf("holders %v after the flood", s.Holders)
	}
	if got := c.countLog(1, "state changed"); got != transitions {
		t.Errorf("n1 made %d transitions during the flood", got-transitions)
	}
	if !c.waitLog(1, "advert dropped") {
		t.Error("n1 did not report any dropped advert")
	}
	c.pingUntil(2 * time.Second)
	// The daemon is still alive and answers a graceful stop.
	if err := c.daemons[1].Stop(5 * time.Second); err != nil || c.daemons[1].Err() != nil {
		t.Errorf("stop after flood: %v / %v", err, c.daemons[1].Err())
	}
}

// flood sends malformed adverts to the VRRP group from the client, at rate
// a second for d, from a raw socket opened inside the client's namespace.
func flood(t *testing.T, l *lab.Lab, rate int, d time.Duration) (int, time.Duration) {
	t.Helper()
	var fd int
	err := lab.RunInNetns(l.ClientNetns(), func() error {
		var err error
		if fd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, 112); err != nil {
			return err
		}
		// The client has no route for multicast: name the interface.
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		if err := syscall.SetsockoptIPMreqn(fd, syscall.IPPROTO_IP, syscall.IP_MULTICAST_IF, &syscall.IPMreqn{Ifindex: int32(ifi.Index)}); err != nil {
			return err
		}
		return syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, syscall.IP_MULTICAST_TTL, 255)
	})
	if err != nil {
		t.Fatalf("flood socket: %v", err)
	}
	defer syscall.Close(fd)
	group := &syscall.SockaddrInet4{Addr: [4]byte{224, 0, 0, 18}}
	payloads := [][]byte{
		{0x31, 51, 200, 1, 0, 100, 0xde, 0xad, 198, 51, 100, 10}, // bad checksum
		{0x21, 51, 200, 1, 0, 100, 0, 0, 198, 51, 100, 10},       // version 2
		{0x31, 51, 200, 9, 0, 100, 0, 0, 198, 51, 100, 10},       // count/length mismatch
		{0x31}, // too short
	}
	total := int(float64(rate) * d.Seconds())
	start := time.Now()
	sent := 0
	for sent < total {
		// Small batches paced to the wall clock.
		due := min(int(time.Since(start).Seconds()*float64(rate)), total)
		for ; sent < due; sent++ {
			if err := syscall.Sendto(fd, payloads[sent%len(payloads)], 0, group); err != nil {
				t.Fatalf("send: %v", err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	return sent, time.Since(start)
}

// withUnicastPeers rewrites a generated vipd config to send adverts to peers.
func withUnicastPeers(peers map[int][]string) func(int, []byte) []byte {
	return func(node int, cfg []byte) []byte {
		list := `"` + strings.Join(peers[node], `", "`) + `"`
		return bytes.Replace(cfg, []byte("\n[instance.garp]"), []byte("unicast_peers = ["+list+"]\n\n[instance.garp]"), 1)
	}
}

func TestLabUnicast(t *testing.T) {
	needRoot(t)
	c := newCluster(t, 100*time.Millisecond, noDaemon, noDaemon, noDaemon)
	peers := withUnicastPeers(map[int][]string{
		1: {"198.51.100.12"},
		2: {"198.51.100.11"},
		// n3 is nobody's peer: its adverts must be dropped, whatever its priority.
		3: {"198.51.100.11", "198.51.100.12"},
	})
	prios := []int{150, 100, 200}
	for i := 1; i <= 3; i++ {
		spec := c.spec(i)
		spec.Kind, spec.Binary = lab.Vipd, vipdBinary
		spec.Group.Priorities = prios
		spec.Config = peers
		c.kinds[i-1] = lab.Vipd
		c.startSpec(i, spec)
	}
	// n3 becomes Master of its own (nobody answers it) and n1 of the pair.
	c.waitFor("n1 and n3 holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(1) && s.Holds(3) && !s.Holds(2) })
	if !c.waitLog(1, "advert dropped", "reason=not_peer", "source=198.51.100.13") {
		t.Error("n1 did not drop the non-peer's adverts")
	}
	if c.logHas(1, "to=BACKUP", "198.51.100.13") {
		t.Error("n1 yielded to a non-peer")
	}
	// Stop n3, then fail n1: n2 takes over from its unicast peer.
	if err := c.daemons[3].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("n2 holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })
	if !c.waitLog(2, "to=MASTER", "no advert from 198.51.100.11") {
		t.Error("n2's takeover cause does not name n1")
	}
	c.pingUntil(5 * time.Second)
}
