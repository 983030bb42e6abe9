package daemon

import (
	"context"
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

	"github.com/vipd/vipd/bgp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/vrrp"
)

// fakeSpeaker records what the daemon asks of BGP, in one log shared with
// the host's address changes, so that tests can check the order.
type fakeSpeaker struct {
	mu     sync.Mutex
	log    *[]string
	routes map[netip.Prefix]bool
	up     bool
}

func (s *fakeSpeaker) note(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.log = append(*s.log, what)
}

func (s *fakeSpeaker) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (s *fakeSpeaker) Announce(_ context.Context, vip netip.Prefix, _ bgp.Attrs) error {
	s.note("announce " + vip.String())
	s.mu.Lock()
	s.routes[vip] = true
	s.mu.Unlock()
	return nil
}
func (s *fakeSpeaker) GracefulShutdown(_ context.Context, vip netip.Prefix) error {
	s.note("gshut " + vip.String())
	return nil
}
func (s *fakeSpeaker) Withdraw(_ context.Context, vip netip.Prefix) error {
	s.note("withdraw " + vip.String())
	s.mu.Lock()
	delete(s.routes, vip)
	s.mu.Unlock()
	return nil
}
func (s *fakeSpeaker) Established() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up
}
func (s *fakeSpeaker) Peers() []bgp.PeerStatus                       { return nil }
func (s *fakeSpeaker) Reconfigure(context.Context, bgp.Config) error { return nil }
func (s *fakeSpeaker) StopForRestart()                               { s.note("stop for restart") }
func (s *fakeSpeaker) announced(vip netip.Prefix) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.routes[vip]
}
func (s *fakeSpeaker) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(*s.log)
}

// loggingLinks notes address removals in the speaker's log.
type loggingLinks struct {
	*fakeHost
	s *fakeSpeaker
}

func (l loggingLinks) RemoveVIP(ifname string, vip netip.Prefix) error {
	if l.holds(vip) {
		l.s.note("remove " + vip.String() + " from " + ifname)
	}
	return l.fakeHost.RemoveVIP(ifname, vip)
}

var testBGP = &config.BGP{ASN: 65001, RouterID: netip.MustParseAddr("198.51.100.1"),
	Peers: []config.BGPPeer{{Address: netip.MustParseAddr("203.0.113.1"), ASN: 65000}}}

func startBGPNode(t *testing.T, lan *fakeLAN, addr string, ics ...config.Instance) (*node, *fakeSpeaker) {
	t.Helper()
	h := newFakeHost(lan, addr)
	var log []string
	sp := &fakeSpeaker{log: &log, routes: map[netip.Prefix]bool{}, up: true}
	env := h.env()
	env.Links = loggingLinks{h, sp}
	env.NewSpeaker = func(bgp.Config, *slog.Logger) (RouteSpeaker, error) { return sp, nil }
	return startConfig(t, h, env, &config.Config{BGP: testBGP, Instances: ics}), sp
}

func bgpInstance(prio uint8) config.Instance {
	ic := testInstance(prio)
	ic.Announce = config.AnnounceBGP
	ic.BGP = config.InstanceBGP{GracefulShutdownTime: 2 * time.Second}
	return ic
}

// Issue 14, election mode: only the Master announces; it withdraws before
// the address goes; a planned stop announces GRACEFUL_SHUTDOWN first.
func TestBGPElectionOnlyTheMasterAnnounces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		n1, s1 := startBGPNode(t, lan, "198.51.100.11", bgpInstance(150))
		n2, s2 := startBGPNode(t, lan, "198.51.100.12", bgpInstance(100))
		time.Sleep(10 * time.Second)
		if !s1.announced(testVIP) || s2.announced(testVIP) {
			t.Fatalf("after the election: n1 announces %v, n2 %v", s1.announced(testVIP), s2.announced(testVIP))
		}
		if !n1.host.holds(testVIP) || n2.host.holds(testVIP) {
			t.Fatal("the VIP is not on the Master's lo alone")
		}
		if got := n1.d.Snapshot()[0].Routes; len(got) != 1 || got[0] != testVIP {
			t.Errorf("status routes %v", got)
		}
		// A link cut: the route is withdrawn before the address is removed.
		n1.host.setCarrier(false)
		time.Sleep(5 * time.Second)
		ev := strings.Join(s1.events(), "; ")
		if w, r := strings.Index(ev, "withdraw "), strings.Index(ev, "remove "); w < 0 || r < 0 || w > r {
			t.Errorf("n1 on the cut: %s; want the withdraw before the removal", ev)
		}
		if !s2.announced(testVIP) {
			t.Error("n2 does not announce after taking over")
		}
		if c := n2.d.Snapshot()[0].LastChange.Cause; !strings.Contains(c, "route announced") {
			t.Errorf("n2's history does not name the announcement: %q", c)
		}
		if c := n1.d.Snapshot()[0].LastChange.Cause; !strings.Contains(c, "route withdrawn") {
			t.Errorf("n1's history does not name the withdraw: %q", c)
		}
		n1.host.setCarrier(true)
		time.Sleep(10 * time.Second)
		if !s1.announced(testVIP) || s2.announced(testVIP) {
			t.Fatalf("after n1's return: n1 %v, n2 %v", s1.announced(testVIP), s2.announced(testVIP))
		}
		// A graceful stop: GRACEFUL_SHUTDOWN, then the withdraw once n2 has
		// taken over and the drain time passed, then the address.
		mark := len(s1.events())
		n1.cancel()
		<-n1.done
		n1.done <- nil
		ev = strings.Join(s1.events()[mark:], "; ")
		g, w, r := strings.Index(ev, "gshut "), strings.Index(ev, "withdraw "), strings.Index(ev, "remove ")
		if g < 0 || w < g || r < w {
			t.Errorf("n1's graceful stop: %s; want gshut, withdraw, remove", ev)
		}
		if !s2.announced(testVIP) {
			t.Error("n2 does not announce after n1's stop")
		}
	})
}

// Issue 14, anycast: every healthy host announces; a failing tracker
// withdraws this host's route; recovery announces it again.
func TestBGPAnycastFollowsHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		sick := filepath.Join(t.TempDir(), "sick")
		ic := config.Instance{Name: "api-anycast", Announce: config.AnnounceBGPAnycast, Priority: 100, AdvertInterval: time.Second,
			VIPs: []netip.Prefix{testVIP}, BGP: config.InstanceBGP{GracefulShutdownTime: time.Second},
			Tracks: []config.Track{{Name: "api", Type: "file", Path: sick, Weight: 0, Fall: 2, Rise: 2, Interval: time.Second, Timeout: 500 * time.Millisecond}}}
		n1, s1 := startBGPNode(t, lan, "198.51.100.11", ic)
		n2, s2 := startBGPNode(t, lan, "198.51.100.12", ic)
		time.Sleep(2 * time.Second)
		if !s1.announced(testVIP) || !s2.announced(testVIP) || !n1.host.holds(testVIP) || !n2.host.holds(testVIP) {
			t.Fatalf("healthy hosts: announce %v %v, hold %v %v", s1.announced(testVIP), s2.announced(testVIP), n1.host.holds(testVIP), n2.host.holds(testVIP))
		}
		if st := n1.d.Snapshot()[0]; st.State != vrrp.StateMaster {
			t.Errorf("n1 state %v while announcing", st.State)
		}
		// The check fails (both hosts' trackers read the same file here,
		// so every host fails: no host announces, as documented): after
		// fall checks each announces GRACEFUL_SHUTDOWN, and withdraws once
		// graceful_shutdown_time has let the routers move the flows.
		mark := len(s1.events())
		if err := os.WriteFile(sick, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * time.Second)
		if ev := strings.Join(s1.events()[mark:], "; "); !strings.HasPrefix(ev, "gshut ") || !strings.Contains(ev, "withdraw ") {
			t.Errorf("a failing tracker: events %q; want GRACEFUL_SHUTDOWN, then the withdraw", ev)
		}
		st := n1.d.Snapshot()[0]
		if s1.announced(testVIP) || st.State != vrrp.StateFault || !strings.Contains(st.LastChange.Cause, "withdrawn") {
			t.Errorf("a failing tracker: announced %v, state %v (%q)", s1.announced(testVIP), st.State, st.LastChange.Cause)
		}
		if s2.announced(testVIP) {
			t.Error("every host fails, yet n2 still announces")
		}
		os.Remove(sick)
		time.Sleep(3 * time.Second)
		if !s2.announced(testVIP) {
			t.Error("n2 does not announce again after recovery")
		}
		if !s1.announced(testVIP) || n1.d.Snapshot()[0].State != vrrp.StateMaster {
			t.Errorf("after recovery: announced %v, state %v", s1.announced(testVIP), n1.d.Snapshot()[0].State)
		}
		// A graceful stop: GRACEFUL_SHUTDOWN for the drain time, then the
		// withdraw, then the address.
		mark = len(s1.events())
		n1.cancel()
		<-n1.done
		n1.done <- nil
		ev := strings.Join(s1.events()[mark:], "; ")
		g, w, r := strings.Index(ev, "gshut "), strings.Index(ev, "withdraw "), strings.Index(ev, "remove ")
		if g < 0 || w < g || r < w {
			t.Errorf("anycast stop: %s", ev)
		}
	})
}
