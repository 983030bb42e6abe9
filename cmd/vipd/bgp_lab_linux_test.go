package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// Issue 14 against FRR's bgpd with the real daemon: three vipd hosts on
// separate links (no shared L2) behind a router.

const bgpHostASN = 65001

type routedVipd struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func newRoutedLab(t *testing.T, hosts int) *lab.RoutedLab {
	t.Helper()
	needRoot(t)
	l, err := lab.NewRouted(context.Background(), slog.New(slog.DiscardHandler), lab.RoutedOptions{Hosts: hosts})
	if err != nil {
		t.Skipf("routed lab: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.StartRouter(context.Background(), lab.RouterConfig{Neighbors: lab.HostNeighbors(hosts, bgpHostASN), MaximumPaths: 8}); err != nil {
		t.Fatalf("router: %v", err)
	}
	return l
}

// startRoutedVipd runs vipd in host i with the instance block given.
func startRoutedVipd(t *testing.T, l *lab.RoutedLab, i int, instance string) *routedVipd {
	t.Helper()
	dir := filepath.Join(l.Dir(), fmt.Sprintf("h%d", i))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`[global]
node_name = "h%d"
socket = %q
state_dir = %q

[bgp]
asn = %d
router_id = %q

[[bgp.peer]]
address = %q
asn = %d
hold_time = "3s"
keepalive_interval = "1s"

%s`, i, filepath.Join(dir, "vipd.sock"), filepath.Join(dir, "state"), bgpHostASN, lab.RoutedHostAddr(i),
		lab.RoutedRouterAddr(i), lab.RouterASN, instance)
	path := filepath.Join(dir, "vipd.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "vipd.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", l.HostNS(i), vipdBinary, "run", "--config", path)
	cmd.Stdout, cmd.Stderr = logf, logf
	// No Pdeathsig: it fires when the OS thread that started the child
	// ends, and the lab's namespace switches end threads. The cleanup
	// stops the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	v := &routedVipd{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(v.done) }()
	t.Cleanup(func() {
		v.stop()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("--- h%d vipd log ---\n%s", i, tail(b, 40))
		}
	})
	return v
}

func tail(b []byte, n int) []byte {
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

func (v *routedVipd) signal(sig syscall.Signal) { syscall.Kill(-v.cmd.Process.Pid, sig) }

func (v *routedVipd) stop() {
	select {
	case <-v.done:
		return
	default:
	}
	v.signal(syscall.SIGTERM)
	select {
	case <-v.done:
	case <-time.After(15 * time.Second):
		v.signal(syscall.SIGKILL)
		<-v.done
	}
}

func (v *routedVipd) logHas(s string) bool {
	b, _ := os.ReadFile(v.log)
	return bytes.Contains(b, []byte(s))
}

func routedPeers(l *lab.RoutedLab, self, hosts int) string {
	var ps []string
	for j := 1; j <= hosts; j++ {
		if j != self {
			ps = append(ps, fmt.Sprintf("%q", lab.RoutedHostAddr(j)))
		}
	}
	return strings.Join(ps, ", ")
}

// Election mode: only the Master's route is in FRR's RIB; a graceful stop
// moves it, announced with GRACEFUL_SHUTDOWN first; the client keeps
// reaching the VIP.
func TestLabBGPElectionOnlyTheMasterIsRouted(t *testing.T) {
	const hosts = 3
	l := newRoutedLab(t, hosts)
	vip := lab.RoutedVIP()
	prios := []int{150, 100, 50}
	vs := make([]*routedVipd, hosts+1)
	for i := 1; i <= hosts; i++ {
		vs[i] = startRoutedVipd(t, l, i, fmt.Sprintf(`[[instance]]
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
`, prios[i-1], vip, lab.RoutedHostAddr(i), routedPeers(l, i, hosts)))
	}
	ctx := context.Background()
	if _, err := l.WaitNextHops(ctx, vip, 30*time.Second, lab.RoutedHostAddr(1)); err != nil {
		t.Fatalf("the Master h1 alone as the next hop: %v", err)
	}
	// Stable: still one path a few seconds later.
	time.Sleep(2 * time.Second)
	r, ok, err := l.Route(ctx, vip)
	if err != nil || !ok || len(r.Paths) != 1 || r.Paths[0].NextHop != lab.RoutedHostAddr(1) {
		t.Fatalf("FRR's RIB: %+v (%v, %v); want h1's path only", r, ok, err)
	}
	if out, err := l.ClientCommand(ctx, "ping", "-c", "1", "-W", "2", vip.Addr().String()).CombinedOutput(); err != nil {
		t.Fatalf("the client cannot reach the VIP: %v: %s", err, out)
	}
	// A graceful stop of h1: its path carries graceful-shutdown, then h2's
	// replaces it.
	go vs[1].stop()
	gshut := false
	r, err = l.WaitRoute(ctx, vip, 20*time.Second, func(r lab.Route, ok bool) bool {
		for _, p := range r.Paths {
			if p.NextHop == lab.RoutedHostAddr(1) && slices.Contains(p.Communities, "graceful-shutdown") {
				gshut = true
			}
		}
		return ok && len(r.Paths) == 1 && r.Paths[0].NextHop == lab.RoutedHostAddr(2)
	})
	if err != nil {
		t.Fatalf("after h1's stop: %v", err)
	}
	if !gshut {
		t.Error("FRR never saw h1's path with graceful-shutdown before the withdraw")
	}
	<-vs[1].done
	if !vs[1].logHas("route withdrawn") {
		t.Error("h1 does not log its withdraw")
	}
	if out, err := l.ClientCommand(ctx, "ping", "-c", "1", "-W", "2", vip.Addr().String()).CombinedOutput(); err != nil {
		t.Errorf("the client cannot reach the VIP after the move: %v: %s", err, out)
	}
}

// Anycast: every healthy host is a next hop (ECMP); a failing tracker on
// one removes exactly its path.
func TestLabBGPAnycastHealthyHostsAreRouted(t *testing.T) {
	const hosts = 3
	l := newRoutedLab(t, hosts)
	vip := lab.RoutedVIP()
	sick := filepath.Join(l.Dir(), "h2-sick")
	for i := 1; i <= hosts; i++ {
		path := filepath.Join(l.Dir(), fmt.Sprintf("h%d-sick", i))
		startRoutedVipd(t, l, i, fmt.Sprintf(`[[instance]]
name = "api"
vips = [%q]
announce = "bgp-anycast"
graceful_shutdown_time = "1s"

[[instance.track]]
name = "api"
type = "file"
path = %q
weight = 0
fall = 2
rise = 2
interval = "200ms"
`, vip, path))
	}
	ctx := context.Background()
	all := []netip.Addr{lab.RoutedHostAddr(1), lab.RoutedHostAddr(2), lab.RoutedHostAddr(3)}
	if _, err := l.WaitNextHops(ctx, vip, 30*time.Second, all...); err != nil {
		t.Fatalf("three next hops: %v", err)
	}
	if err := os.WriteFile(sick, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := l.WaitNextHops(ctx, vip, 10*time.Second, lab.RoutedHostAddr(1), lab.RoutedHostAddr(3)); err != nil {
		t.Fatalf("h2's path after its tracker failed: %v", err)
	}
	t.Logf("h2's path left FRR's RIB %v after its tracker began failing (fall 2 × 200 ms)", time.Since(start).Round(time.Millisecond))
	os.Remove(sick)
	if _, err := l.WaitNextHops(ctx, vip, 10*time.Second, all...); err != nil {
		t.Fatalf("h2's path after recovery: %v", err)
	}
}
