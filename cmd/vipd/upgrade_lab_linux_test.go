package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
	"github.com/vipd/vipd/transport"
)

// advertClock records when a node's adverts arrive at the client.
type advertClock struct {
	mu    sync.Mutex
	times []time.Time
}

func watchAdverts(t *testing.T, l *lab.Lab, from int) *advertClock {
	t.Helper()
	var conn transport.Conn
	err := lab.RunInNetns(l.ClientNetns(), func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		conn, err = transport.Listen(ifi, transport.Options{Source: lab.ClientAddr()})
		return err
	})
	if err != nil {
		t.Fatalf("advert capture: %v", err)
	}
	ac := &advertClock{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 1500)
		for {
			_, info, err := conn.ReadFrom(b)
			if err != nil {
				return
			}
			if info.Src == l.NodeAddr(from) && b[2] > 0 {
				ac.mu.Lock()
				ac.times = append(ac.times, time.Now())
				ac.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return ac
}

// longestGap is the longest silence between adverts in [from, to].
func (ac *advertClock) longestGap(from, to time.Time) time.Duration {
	ac.mu.Lock()
	defer ac.mu.Unlock()
	var gap time.Duration
	prev := time.Time{}
	for _, at := range ac.times {
		if at.Before(from) || at.After(to) {
			continue
		}
		if !prev.IsZero() && at.Sub(prev) > gap {
			gap = at.Sub(prev)
		}
		prev = at
	}
	return gap
}

// TestLabUpgradeKeepsMaster replaces the master's binary on disk and
// reloads: the daemon re-executes the new binary with the same PID and the
// address neither moves nor disappears.
func TestLabUpgradeKeepsMaster(t *testing.T) {
	needRoot(t)
	const interval = time.Second
	c := newCluster(t, interval, noDaemon, lab.Vipd)
	// n1 runs from a copy the test can replace, as a package upgrade would.
	dir := t.TempDir()
	bin := filepath.Join(dir, "vipd")
	if out, err := exec.Command("cp", vipdBinary, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	spec := c.spec(1)
	spec.Kind, spec.Binary = lab.Vipd, bin
	c.kinds[0] = lab.Vipd
	c.startSpec(1, spec)
	c.waitOnlyHolder(1)
	adverts := watchAdverts(t, c.l, 1)
	time.Sleep(2 * interval)
	pid := c.daemons[1].PID()
	peerChanges := c.countLog(2, "state changed")

	// The new binary: another version string, written beside and renamed
	// over the old one (a new inode, as dpkg does).
	next := filepath.Join(dir, "vipd.new")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v2-upgrade-test", "-o", next, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	sock := filepath.Join(filepath.Dir(c.daemons[1].ConfigPath()), "vipd.sock")
	out, err := exec.Command(vipdBinary, "reload", "--socket", sock).CombinedOutput()
	if err != nil {
		t.Fatalf("vipd reload: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "re-executing") {
		t.Errorf("reload did not announce the re-exec:\n%s", out)
	}
	if !c.waitLog(1, "starting", "version=v2-upgrade-test") || !c.waitLog(1, "from=INITIALIZE", "to=MASTER", "reason=resumed") {
		t.Fatal("the new binary did not resume as master")
	}
	time.Sleep(3 * interval)
	after := time.Now()

	select {
	case <-c.daemons[1].Done():
		t.Fatal("the daemon process exited: not a re-exec")
	default:
	}
	if got := c.daemons[1].PID(); got != pid {
		t.Errorf("PID %d, want %d", got, pid)
	}
	for _, ev := range c.mon.Events(before, after) {
		if ev.Kind == lab.VIPRemoved || (ev.Kind == lab.VIPAdded && ev.Node != 1) {
			t.Errorf("during the upgrade: %s", ev.Describe())
		}
	}
	if got := c.countLog(2, "state changed"); got != peerChanges {
		t.Errorf("the peer changed state %d times during the upgrade", got-peerChanges)
	}
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v after the upgrade", s.Holders)
	}
	gap := adverts.longestGap(before.Add(-2*interval), after)
	t.Logf("upgrade: longest silence between the master's adverts %v (advert interval %v)", gap.Round(time.Millisecond), interval)
	if gap > vrrpMasterDown(interval) {
		t.Errorf("the master was silent for %v, longer than a backup waits", gap)
	}
	c.pingUntil(5 * time.Second)
	// The history survived the re-exec.
	hist, err := exec.Command(vipdBinary, "history", "--socket", sock).CombinedOutput()
	if err != nil || !strings.Contains(string(hist), "BACKUP -> MASTER") {
		t.Errorf("history after upgrade (%v):\n%s", err, hist)
	}
}

func vrrpMasterDown(interval time.Duration) time.Duration {
	return 3*interval + time.Duration(256-100)*interval/256
}
