package bgp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// Namespace tests against FRR's bgpd: a router namespace peers with host
// namespaces over separate /30 links, and a client behind the router
// reaches the VIP that a host keeps on its loopback.

const hostASN = 65001

// routeWait bounds waiting for a session or a route change: a session comes
// up within a connect retry or two; the margin is for a loaded machine.
const routeWait = 30 * time.Second

func newRouted(t *testing.T, hosts int, rc lab.RouterConfig) *lab.RoutedLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: needs root for network namespaces and FRR (run the test as root)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	l, err := lab.NewRouted(ctx, nil, lab.RoutedOptions{Hosts: hosts})
	if errors.Is(err, lab.ErrNoFRR) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := l.Vtysh(context.Background(), "show ip bgp json", "show bgp summary")
			t.Logf("--- FRR bgpd log ---\n%s\n--- FRR's table ---\n%s", l.RouterLog("bgpd"), out)
		}
		if err := l.Close(); err != nil {
			t.Errorf("lab close: %v", err)
		}
	})
	if err := l.StartRouter(ctx, rc); err != nil {
		t.Fatal(err)
	}
	return l
}

// hostConfig is host i's speaker config, peering with the router.
func hostConfig(i int) Config {
	return Config{ASN: hostASN, RouterID: lab.RoutedHostAddr(i), Peers: []Peer{{Address: lab.RoutedRouterAddr(i), ASN: lab.RouterASN}}}
}

func ping(t *testing.T, l *lab.RoutedLab, a netip.Addr) error {
	t.Helper()
	out, err := l.ClientCommand(t.Context(), "ping", "-c", "1", "-W", "1", a.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s: %v: %s", a, err, out)
	}
	return nil
}

// pingUntil retries for a few seconds: the kernel route follows FRR's RIB
// through zebra a moment later.
func pingUntil(t *testing.T, l *lab.RoutedLab, a netip.Addr) {
	t.Helper()
	var err error
	for range 10 {
		if err = ping(t, l, a); err == nil {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatal(err)
}

func TestFRRAnnounceGracefulShutdownWithdraw(t *testing.T) {
	l := newRouted(t, 1, lab.RouterConfig{Neighbors: lab.HostNeighbors(1, hostASN)})
	vip := lab.RoutedVIP()
	if err := l.AddLoopbackVIP(1, vip); err != nil {
		t.Fatal(err)
	}
	sp := startSpeaker(t, l.HostNS(1), hostConfig(1))
	med := uint32(10)
	sp.announce(vip, Attrs{Communities: []uint32{65000<<16 | 100}, MED: &med})

	r, err := l.WaitNextHops(t.Context(), vip, routeWait, lab.RoutedHostAddr(1))
	if err != nil {
		t.Fatal(err)
	}
	p := r.Paths[0]
	if !slices.Contains(p.Communities, "65000:100") || slices.Contains(p.Communities, "graceful-shutdown") {
		t.Errorf("communities in FRR = %q, want 65000:100 only", p.Communities)
	}
	if p.MED == nil || *p.MED != med {
		t.Errorf("MED in FRR = %v, want %d", p.MED, med)
	}
	pingUntil(t, l, vip.Addr())
	st := sp.waitPeer(lab.RoutedRouterAddr(1), routeWait, func(p PeerStatus) bool { return p.Up && p.PrefixesSent == 1 })
	if st.State != "established" || st.Since.IsZero() {
		t.Errorf("peer status = %+v, want established with a Since", st)
	}
	if !sp.peers().Established {
		t.Error("Established() = false with the session up")
	}

	// Graceful shutdown: the same path, now carrying 65535:0, before any
	// withdraw.
	sp.must(helperRequest{Op: "gshut", VIP: vip})
	r, err = l.WaitRoute(t.Context(), vip, routeWait, func(r lab.Route, ok bool) bool {
		return ok && len(r.Paths) == 1 && slices.Contains(r.Paths[0].Communities, "graceful-shutdown")
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Paths[0].Communities, "65000:100") {
		t.Errorf("graceful shutdown dropped the instance's community: %q", r.Paths[0].Communities)
	}
	if err := ping(t, l, vip.Addr()); err != nil {
		t.Errorf("VIP unreachable while draining (the route must stay until the withdraw): %v", err)
	}

	sp.must(helperRequest{Op: "withdraw", VIP: vip})
	if _, err := l.WaitRoute(t.Context(), vip, routeWait, func(_ lab.Route, ok bool) bool { return !ok }); err != nil {
		t.Fatal(err)
	}
	// zebra updates the kernel after bgpd's table: wait for it.
	var nhs []netip.Addr
	var kerr error
	for deadline := time.Now().Add(routeWait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if nhs, kerr = l.KernelNextHops(vip); kerr == nil && len(nhs) == 0 {
			break
		}
	}
	if kerr != nil || len(nhs) != 0 {
		t.Errorf("router's kernel still routes %s via %v (%v)", vip, nhs, kerr)
	}
	if st := sp.peers(); !st.Established || st.Peers[0].PrefixesSent != 0 {
		t.Errorf("after withdraw: %+v, want the session up with 0 prefixes", st)
	}
}

func TestFRRAnycastECMP(t *testing.T) {
	const n = 3
	l := newRouted(t, n, lab.RouterConfig{Neighbors: lab.HostNeighbors(n, hostASN)})
	vip := lab.RoutedVIP()
	var sps []*remoteSpeaker
	var want []netip.Addr
	for i := 1; i <= n; i++ {
		if err := l.AddLoopbackVIP(i, vip); err != nil {
			t.Fatal(err)
		}
		sp := startSpeaker(t, l.HostNS(i), hostConfig(i))
		sp.announce(vip, Attrs{})
		sps = append(sps, sp)
		want = append(want, lab.RoutedHostAddr(i))
	}
	if _, err := l.WaitNextHops(t.Context(), vip, routeWait, want...); err != nil {
		t.Fatal(err)
	}
	// FRR marks the paths it uses for ECMP once it has compared them.
	r, err := l.WaitRoute(t.Context(), vip, routeWait, func(r lab.Route, ok bool) bool {
		multipath := 0
		for _, p := range r.Paths {
			if p.Multipath {
				multipath++
			}
		}
		return multipath == n
	})
	if err != nil {
		t.Fatal(err)
	}
	// zebra installs all three in the router's kernel.
	var nhs []netip.Addr
	for range 50 {
		if nhs, err = l.KernelNextHops(vip); err == nil && slices.Equal(nhs, r.NextHops()) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(nhs, r.NextHops()) {
		t.Fatalf("kernel next hops %v (%v), want %v", nhs, err, r.NextHops())
	}
	pingUntil(t, l, vip.Addr())

	// One host drains: its path stays valid but leaves the ECMP set, so
	// new flows avoid it before the withdraw.
	sps[1].must(helperRequest{Op: "gshut", VIP: vip})
	others := []netip.Addr{lab.RoutedHostAddr(1), lab.RoutedHostAddr(3)}
	for range 50 {
		if nhs, err = l.KernelNextHops(vip); err == nil && slices.Equal(nhs, others) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(nhs, others) {
		t.Fatalf("while host 2 drains, kernel next hops %v (%v), want %v", nhs, err, others)
	}
	if r, ok, err := l.Route(t.Context(), vip); err != nil || !ok || len(r.NextHops()) != n {
		t.Errorf("while host 2 drains, FRR has %+v (%v), want its path still valid", r, err)
	}
	// It withdraws: exactly its path goes.
	sps[1].must(helperRequest{Op: "withdraw", VIP: vip})
	if _, err := l.WaitNextHops(t.Context(), vip, routeWait, lab.RoutedHostAddr(1), lab.RoutedHostAddr(3)); err != nil {
		t.Fatal(err)
	}
	pingUntil(t, l, vip.Addr())
}

// TestFRRWrongASN: each side configured with a wrong ASN for the other.
// The session stays down, the status says why, and GoBGP keeps retrying,
// so fixing the config brings it up without a restart.
func TestFRRWrongASN(t *testing.T) {
	t.Run("router expects another AS", func(t *testing.T) {
		l := newRouted(t, 1, lab.RouterConfig{Neighbors: lab.HostNeighbors(1, 65099)})
		sp := startSpeaker(t, l.HostNS(1), hostConfig(1))
		router := lab.RoutedRouterAddr(1)
		// Under load the first attempt can end on GoBGP's own FSM error
		// (a collision of the two sides' connections) before the refusal
		// reaches it; a later attempt (5 s, then 10 s on) says why.
		st := sp.waitPeer(router, routeWait, func(p PeerStatus) bool { return p.Up || strings.Contains(p.LastError, "OPEN") })
		if st.Up {
			t.Fatalf("session up with a wrong ASN: %+v", st)
		}
		if !strings.Contains(st.LastError, "OPEN") {
			t.Errorf("LastError = %q, want the refused OPEN", st.LastError)
		}
		t.Logf("reported: state %s, last error %q", st.State, st.LastError)
		// Fix the router: the next retry succeeds.
		if err := l.ConfigureRouter(t.Context(), 0, fmt.Sprintf("neighbor %s remote-as %d", lab.RoutedHostAddr(1), hostASN)); err != nil {
			t.Fatal(err)
		}
		sp.waitPeer(router, time.Minute, func(p PeerStatus) bool { return p.Up })
	})
	t.Run("speaker expects another AS", func(t *testing.T) {
		l := newRouted(t, 1, lab.RouterConfig{Neighbors: lab.HostNeighbors(1, hostASN)})
		cfg := hostConfig(1)
		cfg.Peers[0].ASN = 65077
		sp := startSpeaker(t, l.HostNS(1), cfg)
		router := lab.RoutedRouterAddr(1)
		// As above: a first attempt may end on a collision instead.
		st := sp.waitPeer(router, routeWait, func(p PeerStatus) bool { return p.Up || strings.Contains(p.LastError, "bad peer as") })
		if st.Up {
			t.Fatalf("session up with a wrong ASN: %+v", st)
		}
		if !strings.Contains(st.LastError, "bad peer as") {
			t.Errorf("LastError = %q, want the NOTIFICATION bad peer as sent", st.LastError)
		}
		t.Logf("reported: state %s, last error %q", st.State, st.LastError)
		// Reconfigure replaces the peer; it comes up.
		sp.must(helperRequest{Op: "reconfigure", Config: new(hostConfig(1))})
		sp.waitPeer(router, time.Minute, func(p PeerStatus) bool { return p.Up })
	})
}

// TestFRRPassword: TCP-MD5. A wrong password never gets a TCP connection
// (the router drops the segments), which the status reports; the right one
// establishes.
func TestFRRPassword(t *testing.T) {
	ns := lab.HostNeighbors(1, hostASN)
	ns[0].Password = "s3cret-vipd"
	l := newRouted(t, 1, lab.RouterConfig{Neighbors: ns})
	router := lab.RoutedRouterAddr(1)
	cfg := hostConfig(1)
	cfg.Peers[0].Password = "wrong"
	sp := startSpeaker(t, l.HostNS(1), cfg)
	st := sp.waitPeer(router, routeWait, func(p PeerStatus) bool { return strings.HasPrefix(p.LastError, "connect:") })
	if !strings.Contains(st.LastError, "password") {
		t.Errorf("LastError = %q, want a hint at the password", st.LastError)
	}
	if st.Up {
		t.Fatalf("session up with a wrong password: %+v", st)
	}
	t.Logf("wrong password reported: state %s, last error %q", st.State, st.LastError)
	// Two failed attempts in a row are visible as retries in the log.
	time.Sleep(2 * connectRetry)
	if st := sp.peers().Peers[0]; st.Up {
		t.Fatalf("session came up with a wrong password: %+v", st)
	}

	cfg.Peers[0].Password = ns[0].Password
	sp.must(helperRequest{Op: "reconfigure", Config: &cfg})
	sp.waitPeer(router, time.Minute, func(p PeerStatus) bool { return p.Up })
	out, err := l.Vtysh(t.Context(), "show bgp neighbors "+lab.RoutedHostAddr(1).String()+" json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"bgpState":"Established"`) {
		t.Errorf("FRR does not see the session established:\n%s", out)
	}
}

// TestFRRReconfigureAddPeer: adding a second (multihop) peer leaves the
// first session alone. The second session runs from another address of
// the host (198.51.100.250 on its lo) to the router's client-side address.
func TestFRRReconfigureAddPeer(t *testing.T) {
	second := netip.MustParseAddr("198.51.100.250")
	l := newRouted(t, 1, lab.RouterConfig{Neighbors: lab.HostNeighbors(1, hostASN)})
	for _, c := range [][]string{
		{"host", "ip", "addr", "add", second.String() + "/32", "dev", "lo"},
		{"host", "ip", "route", "add", lab.RoutedClientGateway().String() + "/32", "via", lab.RoutedRouterAddr(1).String(), "src", second.String()},
		{"router", "ip", "route", "add", second.String() + "/32", "via", lab.RoutedHostAddr(1).String()},
	} {
		cmd := l.RouterCommand(t.Context(), c[1], c[2:]...)
		if c[0] == "host" {
			cmd = l.HostCommand(t.Context(), 1, c[1], c[2:]...)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", c, err, out)
		}
	}
	if err := l.AddRouterNeighbor(t.Context(), 0, lab.RouterNeighbor{Address: second, ASN: hostASN}); err != nil {
		t.Fatal(err)
	}
	if err := l.ConfigureRouter(t.Context(), 0, fmt.Sprintf("neighbor %s ebgp-multihop 2", second)); err != nil {
		t.Fatal(err)
	}

	cfg := hostConfig(1)
	sp := startSpeaker(t, l.HostNS(1), cfg)
	first := sp.waitPeer(lab.RoutedRouterAddr(1), routeWait, func(p PeerStatus) bool { return p.Up })

	cfg.Peers = append(cfg.Peers, Peer{Address: lab.RoutedClientGateway(), ASN: lab.RouterASN, MultihopTTL: 2})
	sp.must(helperRequest{Op: "reconfigure", Config: &cfg})
	sp.waitPeer(lab.RoutedClientGateway(), time.Minute, func(p PeerStatus) bool { return p.Up })

	now := sp.waitPeer(lab.RoutedRouterAddr(1), time.Second, func(p PeerStatus) bool { return true })
	if !now.Up || !now.Since.Equal(first.Since) {
		t.Errorf("first session changed: before %+v, after %+v", first, now)
	}
	out, err := l.Vtysh(t.Context(), "show bgp neighbors "+lab.RoutedHostAddr(1).String()+" json")
	if err != nil {
		t.Fatal(err)
	}
	var nb map[string]struct {
		Established int `json:"connectionsEstablished"`
		Dropped     int `json:"connectionsDropped"`
	}
	if err := json.Unmarshal(out, &nb); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := nb[lab.RoutedHostAddr(1).String()]; got.Established != 1 || got.Dropped != 0 {
		t.Errorf("FRR saw the first session established %d times, dropped %d; want 1 and 0", got.Established, got.Dropped)
	}
}

// TestFRRBFD: GoBGP's single-hop BFD against FRR's bfdd. With a hold time
// of a minute, only BFD can take the route away within the wait below when
// the speaker freezes (SIGSTOP keeps its sockets open, so the TCP session
// does not end either).
func TestFRRBFD(t *testing.T) {
	ns := lab.HostNeighbors(1, hostASN)
	ns[0].BFD = true
	l := newRouted(t, 1, lab.RouterConfig{Neighbors: ns, BFD: true})
	vip := lab.RoutedVIP()
	cfg := hostConfig(1)
	cfg.Peers[0].BFD = true
	cfg.Peers[0].HoldTime, cfg.Peers[0].KeepaliveInterval = time.Minute, 20*time.Second
	if err := l.ConfigureRouter(t.Context(), 0, fmt.Sprintf("neighbor %s timers 20 60", lab.RoutedHostAddr(1))); err != nil {
		t.Fatal(err)
	}
	sp := startSpeaker(t, l.HostNS(1), cfg)
	sp.announce(vip, Attrs{})
	// FRR restarts its BFD session when the BGP session comes up, which
	// GoBGP takes for a failure: the first session can flap once. Wait
	// until BFD is up and the BGP session has been up for a few seconds.
	router := lab.RoutedRouterAddr(1)
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := l.Vtysh(t.Context(), "show bfd peers json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &peers); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		st := sp.waitPeer(router, time.Second, func(PeerStatus) bool { return true })
		if len(peers) == 1 && peers[0].Status == "up" && st.Up && time.Since(st.Since) > 3*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stable session with BFD up: FRR %s, speaker %+v", out, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := l.WaitNextHops(t.Context(), vip, routeWait, lab.RoutedHostAddr(1)); err != nil {
		t.Fatal(err)
	}
	sp.signal(syscall.SIGSTOP)
	defer sp.signal(syscall.SIGCONT)
	start := time.Now()
	if _, err := l.WaitRoute(t.Context(), vip, 20*time.Second, func(_ lab.Route, ok bool) bool { return !ok }); err != nil {
		t.Fatalf("route still there with BFD and the speaker frozen: %v", err)
	}
	t.Logf("route withdrawn %v after the speaker froze (hold time 60s, BFD 5 x 300ms)", time.Since(start).Round(time.Millisecond))
	sp.signal(syscall.SIGCONT)
	if _, err := l.WaitNextHops(t.Context(), vip, time.Minute, lab.RoutedHostAddr(1)); err != nil {
		t.Fatalf("after the speaker thawed: %v", err)
	}
}

// TestFRRIPv6: an IPv6 VIP on IPv6 sessions (ipv6-unicast), two hosts as
// two next hops, reached by the client over IPv6.
func TestFRRIPv6(t *testing.T) {
	const n = 2
	l := newRouted(t, n, lab.RouterConfig{Neighbors: lab.HostNeighbors6(n, hostASN)})
	vip := lab.RoutedVIP6()
	var want []netip.Addr
	for i := 1; i <= n; i++ {
		if err := l.AddLoopbackVIP(i, vip); err != nil {
			t.Fatal(err)
		}
		cfg := hostConfig(i)
		cfg.Peers = []Peer{{Address: lab.RoutedRouterAddr6(i), ASN: lab.RouterASN}}
		startSpeaker(t, l.HostNS(i), cfg).announce(vip, Attrs{})
		want = append(want, lab.RoutedHostAddr6(i))
	}
	if _, err := l.WaitNextHops(t.Context(), vip, routeWait, want...); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 10 {
		var out []byte
		if out, err = l.ClientCommand(t.Context(), "ping", "-6", "-c", "1", "-W", "1", vip.Addr().String()).CombinedOutput(); err == nil {
			return
		}
		err = fmt.Errorf("%v: %s", err, out)
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("client cannot reach %s: %v", vip, err)
}

// TestFRRGracefulRestart: a speaker stopped for a re-exec leaves its route
// in FRR (stale) and reachable, and its successor takes it over; a plain
// stop withdraws at once.
func TestFRRGracefulRestart(t *testing.T) {
	l := newRouted(t, 1, lab.RouterConfig{Neighbors: lab.HostNeighbors(1, hostASN)})
	vip := lab.RoutedVIP()
	if err := l.AddLoopbackVIP(1, vip); err != nil {
		t.Fatal(err)
	}
	cfg := hostConfig(1)
	cfg.GracefulRestartTime = 2 * time.Minute
	old := startSpeaker(t, l.HostNS(1), cfg)
	old.announce(vip, Attrs{})
	if _, err := l.WaitNextHops(t.Context(), vip, routeWait, lab.RoutedHostAddr(1)); err != nil {
		t.Fatal(err)
	}
	old.must(helperRequest{Op: "stoprestart"})
	old.stop()
	// FRR notices the closed session at once; the route must survive it.
	if _, err := l.WaitRoute(t.Context(), vip, routeWait, func(r lab.Route, ok bool) bool { return ok && r.Paths[0].Stale }); err != nil {
		t.Fatalf("no stale route after a graceful-restart stop: %v", err)
	}
	time.Sleep(time.Second)
	r, ok, err := l.Route(t.Context(), vip)
	if err != nil || !ok || !slices.Equal(r.NextHops(), []netip.Addr{lab.RoutedHostAddr(1)}) {
		t.Fatalf("route during the restart: %+v, %v, %v", r, ok, err)
	}
	pingUntil(t, l, vip.Addr())

	cfg.Restarting = true
	next := startSpeaker(t, l.HostNS(1), cfg)
	next.announce(vip, Attrs{})
	if _, err := l.WaitRoute(t.Context(), vip, routeWait, func(r lab.Route, ok bool) bool {
		return ok && len(r.Paths) == 1 && !r.Paths[0].Stale && r.Paths[0].Valid
	}); err != nil {
		t.Fatalf("the restarted speaker did not refresh its route: %v", err)
	}
	next.waitPeer(lab.RoutedRouterAddr(1), routeWait, func(p PeerStatus) bool { return p.Up })

	// A plain stop: the CEASE makes FRR drop the route at once.
	next.stop()
	if _, err := l.WaitRoute(t.Context(), vip, 5*time.Second, func(_ lab.Route, ok bool) bool { return !ok }); err != nil {
		t.Fatalf("route kept after a plain stop: %v", err)
	}
}

// TestFRRDownPeerBacksOff: a router that refuses our OPEN is not redialled
// every 2 s for ever (GoBGP's own pace): each failed attempt pauses the
// peer longer, and the status says how many failed and when the next is.
func TestFRRDownPeerBacksOff(t *testing.T) {
	l := newRouted(t, 1, lab.RouterConfig{Neighbors: lab.HostNeighbors(1, 65099)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	host, router := lab.RoutedHostAddr(1), lab.RoutedRouterAddr(1)
	// Our connection attempts: SYNs from the host to the router's port.
	dump := l.RouterCommand(ctx, "tcpdump", "-i", "any", "-n", "-l", "-tt",
		fmt.Sprintf("src host %v and dst host %v and dst port 179 and tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn", host, router))
	out, err := dump.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dump.Start(); err != nil {
		t.Skipf("skipping: tcpdump: %v", err)
	}
	defer func() { cancel(); _ = dump.Wait() }()
	syns := make(chan time.Time, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			if sec, err := strconv.ParseFloat(f[0], 64); err == nil {
				syns <- time.Unix(0, int64(sec*1e9))
			}
		}
	}()
	time.Sleep(time.Second) // tcpdump listening

	sp := startSpeaker(t, l.HostNS(1), hostConfig(1))
	var at []time.Time
	var backingOff PeerStatus
	deadline := time.After(45 * time.Second)
	for len(at) < 3 {
		select {
		case s := <-syns:
			at = append(at, s)
		case <-time.After(500 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d connection attempts in 45s: %v", len(at), at)
		}
		for _, p := range sp.peers().Peers {
			if p.Address == router && !p.RetryAt.IsZero() && p.Failures >= 2 {
				backingOff = p
			}
		}
	}
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]).Round(100*time.Millisecond))
	}
	t.Logf("gaps between attempts: %v", gaps)
	for i, g := range gaps {
		if g < retryDelay(i+1) {
			t.Errorf("attempt %d came %v after the one before, want at least the pause of %v", i+2, g, retryDelay(i+1))
		}
	}
	if gaps[1] <= gaps[0] {
		t.Errorf("the gaps do not grow: %v", gaps)
	}
	if backingOff.Failures < 2 || backingOff.Up || backingOff.LastError == "" {
		t.Errorf("status while backing off: %+v", backingOff)
	}
}
