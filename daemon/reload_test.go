package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/transport"
	"github.com/vipd/vipd/vrrp"
)

// cfgNode is a node whose reloads read *file, as a reload reads the file
// on disk.
type cfgNode struct {
	*node
	mu   sync.Mutex
	file *config.Config
	logs *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startCfgNode(t *testing.T, h *fakeHost, opts Options, ics ...config.Instance) *cfgNode {
	t.Helper()
	cn := &cfgNode{file: &config.Config{Instances: ics}, logs: &syncBuffer{}}
	if opts.Load == nil {
		opts.Load = func(string) (*config.Config, error) {
			cn.mu.Lock()
			defer cn.mu.Unlock()
			return cn.file, nil
		}
	}
	log := slog.New(slog.NewTextHandler(cn.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := New(&config.Config{Instances: ics}, log, h.env(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cn.node = &node{host: h, d: d, cancel: cancel, done: make(chan error, 1)}
	go func() { cn.done <- d.Run(ctx) }()
	t.Cleanup(func() { cn.stop(t) })
	return cn
}

// edit writes a new configuration "on disk".
func (cn *cfgNode) edit(ics ...config.Instance) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	cn.file = &config.Config{Instances: ics}
}

func (cn *cfgNode) reload(t *testing.T) ReloadOutcome {
	t.Helper()
	out, err := cn.d.Reload(context.Background())
	if err != nil {
		t.Fatalf("reload: %v (%v)", err, out.Problems)
	}
	return out
}

func (cn *cfgNode) status(name string) Status {
	for _, st := range cn.d.Snapshot() {
		if st.Name == name {
			return st
		}
	}
	return Status{}
}

func unicastInstance(prio uint8, self, peer string) config.Instance {
	ic := testInstance(prio)
	ic.UnicastSource = netip.MustParseAddr(self)
	ic.UnicastPeers = []netip.Addr{netip.MustParseAddr(peer)}
	return ic
}

// Defect 1: with unicast_source set, a reload of an unchanged file restarted
// the instance (priority 0, the VIP released and taken back).
func TestReloadUnchangedUnicastSourceMovesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		const a, b = "198.51.100.11", "198.51.100.12"
		n1 := startCfgNode(t, newFakeHost(lan, a), Options{}, unicastInstance(150, a, b))
		n2 := startCfgNode(t, newFakeHost(lan, b), Options{}, unicastInstance(100, b, a))
		time.Sleep(10 * time.Second)
		if n1.state() != vrrp.StateMaster {
			t.Fatalf("n1 %v", n1.state())
		}
		before1, before2 := n1.status("k8s-api").Transitions, n2.status("k8s-api").Transitions
		out := n1.reload(t)
		time.Sleep(10 * time.Second)
		if len(out.Changes) != 0 || len(out.Restarted) != 0 {
			t.Errorf("an unchanged file changed %v, restarted %v", out.Changes, out.Restarted)
		}
		if got := n1.status("k8s-api").Transitions; got != before1 || n1.state() != vrrp.StateMaster {
			t.Errorf("n1: %d transitions (was %d), %v", got, before1, n1.state())
		}
		if got := n2.status("k8s-api").Transitions; got != before2 {
			t.Errorf("n2 moved: %d transitions (was %d): %+v", got, before2, n2.status("k8s-api").LastChange)
		}
	})
}

// Defect 2: a reload from unicast_peers to multicast was applied in place on
// a socket that never joined the group: both hosts became Master.
func TestReloadUnicastToMulticastKeepsOneMaster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		const a, b = "198.51.100.11", "198.51.100.12"
		n1 := startCfgNode(t, newFakeHost(lan, a), Options{}, unicastInstance(150, a, b))
		n2 := startCfgNode(t, newFakeHost(lan, b), Options{}, unicastInstance(100, b, a))
		time.Sleep(10 * time.Second)
		before := n1.status("k8s-api").Transitions
		// The rolling change: n2 first, then n1.
		n2.edit(testInstance(100))
		n2.reload(t)
		n1.edit(testInstance(150))
		out := n1.reload(t)
		time.Sleep(20 * time.Second)
		if n1.state() != vrrp.StateMaster || n2.state() != vrrp.StateBackup {
			t.Fatalf("after the change to multicast: n1 %v, n2 %v", n1.state(), n2.state())
		}
		if n2.host.holds(testVIP) {
			t.Error("n2 holds the VIP too")
		}
		if got := n1.status("k8s-api").Transitions; got != before {
			t.Errorf("n1 changed state %d times", got-before)
		}
		if !strings.Contains(strings.Join(out.Changes, "\n"), "unicast -> multicast") {
			t.Errorf("changes %q do not name the new transport", out.Changes)
		}
		if opened := n1.host.sockets(); opened[len(opened)-1].Unicast {
			t.Errorf("n1's socket was not reopened for multicast: %+v", opened)
		}
	})
}

// Defect 3: two reloads at once started an instance twice; the orphan kept
// advertising after the instance was removed.
func TestConcurrentReloadsStartAnInstanceOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, testInstance(150))
		time.Sleep(5 * time.Second)
		extra := testInstance(150)
		extra.Name, extra.VRID = "extra", 52
		extra.VIPs = []netip.Prefix{netip.MustParsePrefix("198.51.100.20/32")}
		n1.edit(testInstance(150), extra)
		// SIGHUP, `vipd reload` and two more clients at once.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := n1.d.Reload(context.Background()); err != nil {
					t.Errorf("reload: %v", err)
				}
			})
		}
		wg.Wait()
		time.Sleep(5 * time.Second)
		if n := len(n1.d.Snapshot()); n != 2 {
			t.Fatalf("%d instances after concurrent reloads, want 2", n)
		}
		n1.edit(testInstance(150))
		n1.reload(t)
		synctest.Wait()
		sent := lan.sentBy(52)
		time.Sleep(10 * time.Second)
		if got := lan.sentBy(52); got != sent {
			t.Errorf("VRID 52 was removed but %d more adverts of it were sent: an orphan instance", got-sent)
		}
	})
}

// Defect 10: a reload that fails half-way left the instances before the
// failure changed; now every instance is checked before any changes.
func TestRefusedReloadChangesNoInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		a := testInstance(150)
		b := testInstance(150)
		b.Name, b.VRID = "second", 52
		b.VIPs = []netip.Prefix{netip.MustParsePrefix("198.51.100.20/32")}
		b.UnicastSource = netip.MustParseAddr("198.51.100.11")
		reloaded := false
		n1 := startCfgNode(t, h, Options{OnReload: func(*config.Config) { reloaded = true }}, a, b)
		time.Sleep(5 * time.Second)
		// The first instance's priority changes; the second loses its
		// unicast_source on a host whose interface has no address now.
		a2, b2 := a, b
		a2.Priority = 120
		b2.UnicastSource = netip.Addr{}
		h.mu.Lock()
		h.noAddr = true
		h.mu.Unlock()
		n1.edit(a2, b2)
		out, err := n1.d.Reload(context.Background())
		if !errors.Is(err, ErrReloadRefused) || len(out.Problems) == 0 {
			t.Fatalf("reload = %v, problems %v; want refused", err, out.Problems)
		}
		synctest.Wait()
		if st := n1.status("k8s-api"); st.Base != 150 || st.Priority != 150 {
			t.Errorf("the first instance changed although the reload was refused: base %d, priority %d", st.Base, st.Priority)
		}
		if reloaded {
			t.Error("OnReload was called for a refused reload (it sets the log level)")
		}
	})
}

// Defect 10: an in-place VIP change left held.json stale.
func TestReloadOfTheVIPsRewritesTheHeldFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		held := filepath.Join(t.TempDir(), "held.json")
		n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{HeldFile: held}, testInstance(150))
		time.Sleep(5 * time.Second)
		next := testInstance(150)
		other := netip.MustParsePrefix("198.51.100.30/32")
		next.VIPs = []netip.Prefix{other}
		n1.edit(next)
		n1.reload(t)
		synctest.Wait()
		got, err := ReadHeld(held)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].VIP != other {
			t.Errorf("held.json after the reload: %+v, want only %v", got, other)
		}
		if !n1.host.holds(other) || n1.host.holds(testVIP) {
			t.Errorf("on the interface: new %v, old %v", n1.host.holds(other), n1.host.holds(testVIP))
		}
	})
}

// Defect 10: a duplicate of our own address (an advert from our primary
// address) was dropped without a word.
func TestOwnAddressInAnAdvertIsLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, testInstance(150))
		time.Sleep(5 * time.Second)
		src := netip.MustParseAddr("198.51.100.11")
		adv, _ := (&vrrp.Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{testVIP.Addr()}}).Append(nil, src, vrrp.GroupIPv4)
		// Another host on the link uses our address.
		lan.mu.Lock()
		for _, c := range lan.conns {
			if c.src == src {
				c.in <- fakePacket{b: adv, info: transport.PacketInfo{Src: src, Dst: vrrp.GroupIPv4, TTL: 255, IfIndex: 2}}
			}
		}
		lan.mu.Unlock()
		synctest.Wait()
		if !strings.Contains(n1.logs.String(), "advert from our own address") {
			t.Errorf("no log line for an advert from our own address:\n%s", n1.logs)
		}
		if n1.status("k8s-api").Drops["own_advert"] == 0 {
			t.Error("not counted")
		}
	})
}

// Defect 6: stopping an instance waited for its queued notify hooks; a
// VRID change must start the new instance at once.
func TestReplacingAnInstanceDoesNotWaitForItsHooks(t *testing.T) {
	lan := &fakeLAN{}
	release := filepath.Join(t.TempDir(), "release")
	ic := testInstance(150)
	ic.AdvertInterval = 100 * time.Millisecond
	ic.Notify = config.Notify{Master: sh("while [ ! -e " + release + " ]; do sleep 0.05; done"), Timeout: time.Minute}
	n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, ic)
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	waitState(t, n1, "k8s-api", vrrp.StateMaster, 5*time.Second)
	next := ic
	next.VRID = 52
	n1.edit(next)
	done := make(chan ReloadOutcome, 1)
	go func() { done <- n1.reload(t) }()
	select {
	case out := <-done:
		if len(out.Restarted) != 1 {
			t.Errorf("restarted %v, want the instance named with why", out.Restarted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reload waits for the old instance's notify hook")
	}
	waitState(t, n1, "k8s-api", vrrp.StateMaster, 5*time.Second)
	if st := n1.status("k8s-api"); st.VRID != 52 {
		t.Errorf("VRID %d", st.VRID)
	}
}

// An instance without hooks has no hook runner until one is to run; hooks
// a reload adds to it run all the same: a Backup hook when the group moves,
// and a stop hook that is the first to run, made at the stop, before the
// daemon exits.
func TestHooksAddedByAReloadRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		moves bool // a higher priority takes the group before the stop
	}{{"backup then stop", true}, {"stop only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			lan := &fakeLAN{}
			dir := t.TempDir()
			ic := testInstance(150)
			ic.AdvertInterval = 100 * time.Millisecond
			n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, ic)
			waitState(t, n1, "k8s-api", vrrp.StateMaster, 5*time.Second)
			next := ic
			next.Notify = config.Notify{
				Stop:    sh("echo \"$VIPD_STATE\" > " + filepath.Join(dir, "stop")),
				Timeout: 10 * time.Second,
			}
			if tc.moves {
				next.Notify.Backup = sh("echo \"$VIPD_STATE\" > " + filepath.Join(dir, "backup"))
			}
			n1.edit(next)
			n1.reload(t)
			if tc.moves {
				n2 := startCfgNode(t, newFakeHost(lan, "198.51.100.12"), Options{}, testInstance(200))
				waitState(t, n2, "k8s-api", vrrp.StateMaster, 5*time.Second)
				waitFile(t, filepath.Join(dir, "backup"))
			} else if n1.d.snapshot()[0].in.notify != nil {
				t.Error("a hook runner made before any hook ran")
			}
			n1.stop(t)
			b, err := os.ReadFile(filepath.Join(dir, "stop"))
			if err != nil {
				t.Fatalf("the stop hook did not run before the daemon exited: %v", err)
			}
			if got := strings.TrimSpace(string(b)); got != vrrp.StateInitialize.String() {
				t.Errorf("stop hook saw VIPD_STATE=%q, want %q", got, vrrp.StateInitialize)
			}
		})
	}
}

func waitState(t *testing.T, n *cfgNode, name string, want vrrp.State, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if n.status(name).State == want {
			return
		}
	}
	t.Fatalf("%s never became %v: %v", name, want, n.status(name).State)
}

// Defect 4: changing the VIP list on the Master first made the Backups drop
// its adverts as a VRID collision and take over: two Masters.
func TestVIPListChangedOnTheMasterFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1 := startCfgNode(t, newFakeHost(lan, "198.51.100.11"), Options{}, testInstance(150))
		n2 := startCfgNode(t, newFakeHost(lan, "198.51.100.12"), Options{}, testInstance(100))
		time.Sleep(10 * time.Second)
		next := testInstance(150)
		next.VIPs = append(next.VIPs, netip.MustParsePrefix("198.51.100.30/32"))
		n1.edit(next)
		n1.reload(t)
		time.Sleep(20 * time.Second)
		if n1.state() != vrrp.StateMaster || n2.state() != vrrp.StateBackup {
			t.Fatalf("after the Master's change: n1 %v, n2 %v", n1.state(), n2.state())
		}
		if n2.host.holds(testVIP) {
			t.Error("n2 took the old VIP too")
		}
		if !strings.Contains(n2.logs.String(), "the Master advertises other addresses than ours") {
			t.Errorf("n2 did not warn about the mismatch:\n%s", n2.logs)
		}
		st := n2.status("k8s-api")
		if !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.Contains(w, "address list mismatch") }) {
			t.Errorf("n2's status warnings %q", st.Warnings)
		}
	})
}

// A reload to garp.probe 0s stops a Master's routine probes, and one back
// to 1s starts them again, without a transition.
func TestReloadTurnsRoutineProbesOffAndOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		n1 := startCfgNode(t, h, Options{}, testInstance(150))
		time.Sleep(10 * time.Second)
		probes := func() int {
			synctest.Wait()
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.probes
		}
		count := func() int {
			before := probes()
			time.Sleep(20 * time.Second)
			return probes() - before
		}
		if got := count(); got < 18 || got > 22 {
			t.Fatalf("%d probes in 20 s with garp.probe 1s, want about 20", got)
		}
		off := testInstance(150)
		off.GARP.Probe = 0
		n1.edit(off)
		n1.reload(t)
		if got := count(); got != 0 {
			t.Errorf("%d probes in 20 s after a reload to garp.probe 0s, want none", got)
		}
		n1.edit(testInstance(150))
		n1.reload(t)
		if got := count(); got < 18 || got > 22 {
			t.Errorf("%d probes in 20 s after a reload back to 1s, want about 20", got)
		}
		if st := n1.status("k8s-api"); st.State != vrrp.StateMaster {
			t.Errorf("after the reloads: %v, want Master", st.State)
		}
	})
}
