package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/internal/lab"
)

// The configs the routed scenes give vipd must pass vipd's own parser with
// the session timers each scenario measures.
func TestRoutedConfigParses(t *testing.T) {
	for _, tc := range []struct {
		timers     peerTimers
		hold, keep time.Duration
	}{
		{defaultTimers, 9 * time.Second, 3 * time.Second},
		{shortTimers, 3 * time.Second, time.Second},
		{bfdTimers, 9 * time.Second, 3 * time.Second},
	} {
		c := &routedCluster{dir: t.TempDir(), timers: tc.timers, hosts: make([]*routedHost, 4)}
		for i := 1; i <= 3; i++ {
			cfg, err := config.Parse("h.toml", []byte(c.config(i)))
			if err != nil {
				t.Fatalf("%v, h%d: %v\n%s", tc.timers, i, err, c.config(i))
			}
			p := cfg.BGP.Peers[0]
			if p.Address != lab.RoutedRouterAddr(i) || p.HoldTime != tc.hold || p.KeepaliveInterval != tc.keep || p.BFD != tc.timers.BFD {
				t.Errorf("%v, h%d: peer %+v", tc.timers, i, p)
			}
			in := cfg.Instances[0]
			if slices.Contains(in.UnicastPeers, lab.RoutedHostAddr(i)) || len(in.UnicastPeers) != 2 || in.UnicastMinTTL != 250 {
				t.Errorf("h%d: unicast peers %v, min TTL %d", i, in.UnicastPeers, in.UnicastMinTTL)
			}
		}
	}
}

func TestBGPBenchSummary(t *testing.T) {
	r := &bgpBenchResult{Trials: []bgpTrial{
		{Scenario: "a", OutageMS: 30, RouteMS: 3},
		{Scenario: "a", OutageMS: 10, RouteMS: 1},
		{Scenario: "a", OutageMS: 20, RouteMS: 2},
		{Scenario: "a", OutageMS: 999, Error: "failed"},
		{Scenario: "b", Error: "failed"},
	}}
	r.summarize()
	want := []bgpStat{{Scenario: "a", N: 3, Median: 20, Min: 10, Max: 30, RouteMed: 2}, {Scenario: "b"}}
	if !slices.Equal(r.Summary, want) {
		t.Errorf("summary %+v, want %+v", r.Summary, want)
	}
	var b strings.Builder
	r.writeTable(&b)
	if !strings.Contains(b.String(), "20.0 [10.0..30.0]") || !strings.Contains(b.String(), "failed") {
		t.Errorf("table:\n%s", b.String())
	}
}
