package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// needRoot skips privileged tests with a hint instead of failing them.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("lab tests need root (network namespaces, veths, raw sockets): run `sudo go test ./lab`")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("lab tests need iproute2's ip")
	}
}

func testLog(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newTestLab(t *testing.T, opts Options) *Lab {
	t.Helper()
	needRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := New(ctx, testLog(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

func TestTopology(t *testing.T) {
	l := newTestLab(t, Options{})
	if got := l.Nodes(); got != 3 {
		t.Fatalf("Nodes() = %d, want 3", got)
	}
	// Every node reaches the client and the other nodes over the bridge.
	for i := 1; i <= 3; i++ {
		for _, dst := range []string{"198.51.100.99", l.NodeAddr(i%3 + 1).String()} {
			out, err := l.NodeCommand(t.Context(), i, "ping", "-c1", "-W2", dst).CombinedOutput()
			if err != nil {
				t.Errorf("n%d ping %s: %v\n%s", i, dst, err, out)
			}
		}
	}
	// A cut node loses carrier and is unreachable; restoring brings it back.
	if err := l.CutLink(2); err != nil {
		t.Fatal(err)
	}
	if out, err := l.ClientCommand(t.Context(), "ping", "-c1", "-W1", "198.51.100.12").CombinedOutput(); err == nil {
		t.Errorf("cut n2 still answers:\n%s", out)
	}
	out, _ := l.NodeCommand(t.Context(), 2, "ip", "link", "show", "eth0").CombinedOutput()
	if !strings.Contains(string(out), "NO-CARRIER") {
		t.Errorf("cut n2 eth0 has carrier:\n%s", out)
	}
	if err := l.RestoreLink(2); err != nil {
		t.Fatal(err)
	}
	// The kernel starts sending on a link whose carrier returned only when
	// its link watcher has run (up to a second later, longer under load;
	// until then the device drops what it is given): wait for that, as
	// operstate UP says, then give the neighbour resolution a few tries. A
	// make test under load once lost the single ping sent at once.
	deadline := time.Now().Add(10 * time.Second)
	for {
		link, lerr := l.node(2).h.LinkByName("eth0")
		if lerr == nil && link.Attrs().OperState == netlink.OperUp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restored n2's eth0 never came up: %v %v", lerr, link)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var err error
	for range 3 {
		if out, err = l.ClientCommand(t.Context(), "ping", "-c1", "-W2", "198.51.100.12").CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("restored n2 unreachable after 3 pings: %v\n%s", err, out)
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	needRoot(t)
	l, err := New(t.Context(), testLog(t), Options{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{l.NodeNS(1), l.NodeNS(2), l.ClientNS(), l.BridgeNS()}
	dir := l.Dir()
	// A stray process in a node namespace must not keep it alive.
	sleeper := l.NodeCommand(context.Background(), 1, "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	// Close can only find it once `ip netns exec` has entered the namespace
	// and become sleep.
	for i := 0; i < 200; i++ {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", sleeper.Process.Pid)); strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	exited := make(chan struct{})
	go func() {
		_ = sleeper.Wait() // Close kills it
		close(exited)
	}()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, n := range names {
		if h, err := netns.GetFromName(n); err == nil {
			h.Close()
			t.Errorf("namespace %s still exists", n)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dir %s still exists: %v", dir, err)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Errorf("process in the lab survived Close")
	}
}

// vipdBinary finds a vipd to test: $VIPD_BIN, or a build of ../../cmd/vipd
// when that package exists. "" means keepalived only.
func vipdBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("VIPD_BIN"); p != "" {
		return p
	}
	if _, err := os.Stat(filepath.Join("..", "..", "cmd", "vipd", "main.go")); err != nil {
		t.Log("no ../../cmd/vipd and no VIPD_BIN: testing keepalived only")
		return ""
	}
	bin := filepath.Join(t.TempDir(), "vipd")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/vipd").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ../../cmd/vipd: %v\n%s", err, out)
	}
	return bin
}

// TestBenchShort is the lab end to end in a few trials: both daemons, every
// fault mode, at 100 ms (fast enough for make test). Numbers are logged, not
// asserted: only that the faults were survived and measured.
func TestBenchShort(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: the lab bench takes about 30 s")
	}
	cfg := BenchConfig{
		Intervals: []time.Duration{100 * time.Millisecond},
		Modes:     Modes(),
		Trials:    2,
		Steady:    2 * time.Second,
		Progress:  func(s string) { t.Log(s) },
	}
	if bin := vipdBinary(t); bin != "" {
		cfg.Daemons = append(cfg.Daemons, Vipd)
		cfg.VipdBinary = bin
	}
	if _, err := exec.LookPath("keepalived"); err == nil {
		cfg.Daemons = append(cfg.Daemons, Keepalived)
	} else {
		t.Log("keepalived is not installed (apt-get install keepalived): not measured")
	}
	if len(cfg.Daemons) == 0 {
		t.Skip("neither vipd (VIPD_BIN or ../../cmd/vipd) nor keepalived (apt-get install keepalived) to run")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	res, err := RunBench(ctx, testLog(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table.String())

	// The machine is shared: a stall of a few hundred ms can make a group
	// flap or a trial fail. That is reported, not failed, as long as some
	// daemon ran stably; each stable daemon must get through every mode at
	// least once, with sane numbers.
	stable := map[string]bool{}
	for _, g := range res.Groups {
		stable[g.Daemon] = g.Stable
		if !g.Stable {
			t.Logf("%s at %vms not stable (busy machine?): %s", g.Daemon, g.IntervalMS, g.Error)
		}
	}
	if len(res.Groups) != len(cfg.Daemons) {
		t.Fatalf("%d groups for %d daemons", len(res.Groups), len(cfg.Daemons))
	}
	anyStable := false
	for _, d := range cfg.Daemons {
		if !stable[d.String()] {
			continue
		}
		anyStable = true
		for _, m := range cfg.Modes {
			ok := 0
			for _, tr := range res.Trials {
				if tr.Daemon != d.String() || tr.Mode != m.String() {
					continue
				}
				if tr.Error != "" {
					t.Logf("%s %s trial %d failed: %s", d, m, tr.Trial, tr.Error)
					continue
				}
				ok++
				if tr.OldMaster != 1 || tr.NewMaster != 2 {
					t.Errorf("%s %s: master n%d -> n%d, want n1 -> n2", d, m, tr.OldMaster, tr.NewMaster)
				}
				if tr.TakeoverMS <= 0 || tr.BoundMS <= 0 || tr.ProbesAnswered == 0 {
					t.Errorf("%s %s: nothing measured: %+v", d, m, tr)
				}
				if m == Kill && tr.NeighMS < 0 {
					t.Errorf("%s kill: the client's entry never moved to the new master", d)
				}
				if m == Graceful && (tr.ExitCode == nil || *tr.ExitCode != 0) {
					t.Errorf("%s graceful: exit code %v, want 0", d, tr.ExitCode)
				}
			}
			if ok == 0 {
				t.Errorf("%s %s: no successful trial", d, m)
			}
		}
	}
	if !anyStable {
		t.Error("no daemon ran stably at 100ms: the lab itself is suspect")
	}
	var svg bytes.Buffer
	if err := res.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	checkXML(t, svg.Bytes())
	path := filepath.Join(t.TempDir(), "bench.json")
	if err := res.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	var back BenchResult
	if err := json.Unmarshal(b, &back); err != nil || len(back.Trials) != len(res.Trials) {
		t.Errorf("JSON round trip: %v (%d trials)", err, len(back.Trials))
	}
}
