package bgp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

var (
	routerA = netip.MustParseAddr("198.51.100.1")
	routerB = netip.MustParseAddr("198.51.100.5")
	vip4    = netip.MustParsePrefix("192.0.2.10/32")
	vip6    = netip.MustParsePrefix("2001:db8::10/128")
)

func validConfig() Config {
	return Config{ASN: 65001, RouterID: netip.MustParseAddr("192.0.2.1"), Peers: []Peer{{Address: routerA, ASN: 65000}}}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // in the error; "" for valid
	}{
		{"valid", func(*Config) {}, ""},
		{"ASN 0", func(c *Config) { c.ASN = 0 }, "asn: 0 is reserved"},
		{"AS_TRANS", func(c *Config) { c.Peers[0].ASN = 23456 }, "AS_TRANS"},
		{"IPv6 router ID", func(c *Config) { c.RouterID = netip.MustParseAddr("2001:db8::1") }, "router_id"},
		{"no router ID", func(c *Config) { c.RouterID = netip.Addr{} }, "router_id"},
		{"listen port", func(c *Config) { c.ListenPort = 70000 }, "listen_port"},
		{"peer twice", func(c *Config) { c.Peers = append(c.Peers, c.Peers[0]) }, "listed twice"},
		{"multicast peer", func(c *Config) { c.Peers[0].Address = netip.MustParseAddr("224.0.0.5") }, "unicast"},
		{"zoned peer", func(c *Config) { c.Peers[0].Address = netip.MustParseAddr("fe80::1%eth0") }, "link-local"},
		{"short hold time", func(c *Config) { c.Peers[0].HoldTime = 2 * time.Second }, "hold_time"},
		{"fractional hold time", func(c *Config) { c.Peers[0].HoldTime = 3500 * time.Millisecond }, "hold_time"},
		{"keepalive above a third", func(c *Config) { c.Peers[0].HoldTime, c.Peers[0].KeepaliveInterval = 9*time.Second, 4*time.Second }, "keepalive_interval"},
		{"long password", func(c *Config) { c.Peers[0].Password = strings.Repeat("x", 81) }, "80 bytes"},
		{"default keepalive follows a short hold time", func(c *Config) { c.Peers[0].HoldTime = 3 * time.Second }, ""},
		{"graceful restart", func(c *Config) { c.GracefulRestartTime, c.Restarting = 2*time.Minute, true }, ""},
		{"fractional restart time", func(c *Config) { c.GracefulRestartTime = 1500 * time.Millisecond }, "graceful_restart_time"},
		{"restart time above 12 bits", func(c *Config) { c.GracefulRestartTime = 4096 * time.Second }, "graceful_restart_time"},
		{"restarting without graceful restart", func(c *Config) { c.Restarting = true }, "restarting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error about %q", err, tt.want)
			}
		})
	}
}

func TestHostRoute(t *testing.T) {
	for s, want := range map[string]bool{
		"192.0.2.10/32": true, "2001:db8::1/128": true, "192.0.2.0/24": false, "2001:db8::/64": false, "::ffff:192.0.2.1/128": false,
	} {
		if got := HostRoute(netip.MustParsePrefix(s)); got != want {
			t.Errorf("HostRoute(%s) = %v, want %v", s, got, want)
		}
	}
	if HostRoute(netip.Prefix{}) {
		t.Error("HostRoute(zero) = true")
	}
}

// TestPath: the route vipd sends, attribute by attribute.
func TestPath(t *testing.T) {
	med := uint32(10)
	p, err := path(vip4, Attrs{Communities: []uint32{65000<<16 | 100}, MED: &med})
	if err != nil {
		t.Fatal(err)
	}
	if p.Family != bgp.RF_IPv4_UC || p.Nlri.String() != "192.0.2.10/32" {
		t.Errorf("family %v, NLRI %v", p.Family, p.Nlri)
	}
	types := map[bgp.BGPAttrType]bgp.PathAttributeInterface{}
	for _, a := range p.Attrs {
		types[a.GetType()] = a
	}
	if nh, ok := types[bgp.BGP_ATTR_TYPE_NEXT_HOP].(*bgp.PathAttributeNextHop); !ok || !nh.Value.IsUnspecified() {
		t.Errorf("next hop %v: want 0.0.0.0, which GoBGP replaces with the session's address", types[bgp.BGP_ATTR_TYPE_NEXT_HOP])
	}
	if o, ok := types[bgp.BGP_ATTR_TYPE_ORIGIN].(*bgp.PathAttributeOrigin); !ok || o.Value != bgp.BGP_ORIGIN_ATTR_TYPE_IGP {
		t.Errorf("origin %v, want IGP", types[bgp.BGP_ATTR_TYPE_ORIGIN])
	}
	if m, ok := types[bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC].(*bgp.PathAttributeMultiExitDisc); !ok || m.Value != 10 {
		t.Errorf("MED %v, want 10", types[bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC])
	}
	if c, ok := types[bgp.BGP_ATTR_TYPE_COMMUNITIES].(*bgp.PathAttributeCommunities); !ok || !slices.Equal(c.Value, []uint32{65000<<16 | 100}) {
		t.Errorf("communities %v", types[bgp.BGP_ATTR_TYPE_COMMUNITIES])
	}

	p, err = path(vip6, Attrs{})
	if err != nil {
		t.Fatal(err)
	}
	var mp *bgp.PathAttributeMpReachNLRI
	for _, a := range p.Attrs {
		if m, ok := a.(*bgp.PathAttributeMpReachNLRI); ok {
			mp = m
		}
		if a.GetType() == bgp.BGP_ATTR_TYPE_MULTI_EXIT_DISC || a.GetType() == bgp.BGP_ATTR_TYPE_COMMUNITIES {
			t.Errorf("unasked attribute %v", a)
		}
	}
	if p.Family != bgp.RF_IPv6_UC || mp == nil || !mp.Nexthop.IsUnspecified() || !mp.Nexthop.Is6() {
		t.Errorf("IPv6 path: family %v, MP_REACH %v", p.Family, mp)
	}
	if _, err := path(netip.MustParsePrefix("192.0.2.0/24"), Attrs{}); err == nil {
		t.Error("a /24 was accepted")
	}
}

func TestAPIPeer(t *testing.T) {
	p := apiPeer(Peer{Address: netip.MustParseAddr("2001:db8::1"), ASN: 65000, Password: "pw", MultihopTTL: 3, BFD: true})
	if p.Conf.AuthPassword != "pw" || p.Conf.PeerAsn != 65000 || p.Timers.Config.HoldTime != 9 || p.Timers.Config.KeepaliveInterval != 3 {
		t.Errorf("conf %+v, timers %+v", p.Conf, p.Timers.Config)
	}
	if f := p.AfiSafis[0].Config.Family; len(p.AfiSafis) != 1 || f.Afi != api.Family_AFI_IP6 || f.Safi != api.Family_SAFI_UNICAST {
		t.Errorf("families %v, want ipv6-unicast only", p.AfiSafis)
	}
	if !p.EbgpMultihop.GetEnabled() || p.EbgpMultihop.MultihopTtl != 3 || !p.Bfd.GetEnabled() {
		t.Errorf("multihop %v, bfd %v", p.EbgpMultihop, p.Bfd)
	}
	if p := apiPeer(Peer{Address: routerA, ASN: 65000, MultihopTTL: 1}); p.EbgpMultihop != nil || p.Bfd != nil || p.AfiSafis[0].Config.Family.Afi != api.Family_AFI_IP {
		t.Errorf("a link peer: multihop %v, bfd %v, family %v", p.EbgpMultihop, p.Bfd, p.AfiSafis[0].Config.Family)
	}
}

func TestAPIPeerGracefulRestart(t *testing.T) {
	cfg := validConfig()
	cfg.GracefulRestartTime, cfg.Restarting = 2*time.Minute, true
	s, _ := newTestSpeaker(t, cfg)
	p := s.apiPeer(cfg.Peers[0])
	if gr := p.GracefulRestart; gr == nil || !gr.Enabled || gr.RestartTime != 120 || !gr.LocalRestarting {
		t.Errorf("graceful restart %+v", p.GracefulRestart)
	}
	if !p.AfiSafis[0].GetMpGracefulRestart().GetConfig().GetEnabled() {
		t.Error("the family does not offer graceful restart (no Forwarding State bit)")
	}
	s, _ = newTestSpeaker(t, validConfig())
	if p := s.apiPeer(cfg.Peers[0]); p.GracefulRestart != nil || p.AfiSafis[0].MpGracefulRestart != nil {
		t.Errorf("graceful restart offered while off: %+v", p.GracefulRestart)
	}
}

func newTestSpeaker(t *testing.T, cfg Config) (*Speaker, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	s, err := New(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return s, &buf
}

func peerEvent(a netip.Addr, st bgp.FSMState, reason api.PeerState_DisconnectReason, msg string) *apiutil.WatchEventMessage_PeerEvent {
	return &apiutil.WatchEventMessage_PeerEvent{Type: apiutil.PEER_EVENT_STATE, Peer: apiutil.Peer{
		State: apiutil.PeerState{NeighborAddress: a, PeerASN: 65000, SessionState: st, DisconnectReason: reason, DisconnectMessage: msg},
	}}
}

// TestPeerEvents: the status follows GoBGP's events; only failures become
// LastError; each change is logged once.
func TestPeerEvents(t *testing.T) {
	s, logs := newTestSpeaker(t, validConfig())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ACTIVE, api.PeerState_DISCONNECT_REASON_IDLE_TIMER_EXPIRED, "idle-hold-timer-expired"), t0)
	if s.Established() || s.peers[routerA].lastError != "" {
		t.Fatalf("after active: established %v, last error %q", s.Established(), s.peers[routerA].lastError)
	}
	up := t0.Add(time.Second)
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ESTABLISHED, api.PeerState_DISCONNECT_REASON_UNSPECIFIED, "open-msg-negotiated"), up)
	if !s.Established() || !s.peers[routerA].since.Equal(up) {
		t.Fatalf("after established: %v since %v", s.Established(), s.peers[routerA].since)
	}
	down := up.Add(time.Minute)
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_IDLE, api.PeerState_DISCONNECT_REASON_HOLD_TIMER_EXPIRED, "hold-timer-expired"), down)
	st := s.peers[routerA]
	if s.Established() || st.lastError != "hold-timer-expired" || !st.since.Equal(down) {
		t.Errorf("after hold timer: established %v, %+v", s.Established(), st)
	}
	// Not a failure: the last one stays.
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ACTIVE, api.PeerState_DISCONNECT_REASON_IDLE_TIMER_EXPIRED, "idle-hold-timer-expired"), down.Add(time.Second))
	if st.lastError != "hold-timer-expired" {
		t.Errorf("LastError = %q, want the hold timer kept", st.lastError)
	}
	// Events for peers that are not configured are ignored.
	s.peerEvent(peerEvent(routerB, bgp.BGP_FSM_ESTABLISHED, 0, ""), down)
	if s.Established() {
		t.Error("an unknown peer made the speaker established")
	}
	out := logs.String()
	for _, want := range []string{`msg="bgp peer established" peer=198.51.100.1`, `level=WARN msg="bgp peer down" peer=198.51.100.1 asn=65000 from=established to=idle reason=hold-timer-expired`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}

	// Failures outside a session: logged when they change, not per retry.
	logs.Reset()
	for range 3 {
		s.failedOutsideSession("198.51.100.1", "connect: dial tcp 198.51.100.1:179: connect: connection refused", true)
	}
	if n := strings.Count(logs.String(), "retrying"); n != 1 {
		t.Errorf("%d log lines for three identical failures, want 1:\n%s", n, logs)
	}
	if got := s.Peers()[0]; got.LastError != "connect: dial tcp 198.51.100.1:179: connect: connection refused" || got.State != "stopped" || got.Up {
		t.Errorf("Peers() = %+v", got)
	}
}

func TestGoBGPHandler(t *testing.T) {
	var buf bytes.Buffer
	var got []string
	h := &gobgpHandler{next: slog.NewTextHandler(&buf, nil), onFailure: func(p, what string, attempt bool) { got = append(got, fmt.Sprint(p, " ", what, " ", attempt)) }}
	log := slog.New(h).With(slog.String("Topic", "Peer"), slog.String("Key", "198.51.100.1"))
	log.Debug("failed to connect", slog.String("Error", "dial tcp: i/o timeout"))
	log.Info("sent notification", slog.String("State", "BGP_FSM_ACTIVE"), slog.Int("Code", 2), slog.Int("Subcode", 2))
	log.Debug("try to connect")
	log.Warn("something odd")
	slog.New(h).Debug("failed to connect", slog.String("Error", "no peer key"))
	want := []string{"198.51.100.1 connect: dial tcp: i/o timeout true", "198.51.100.1 sent NOTIFICATION code 2(open) subcode 2(bad peer as) true"}
	if !slices.Equal(got, want) {
		t.Errorf("failures %q, want %q", got, want)
	}
	if out := buf.String(); strings.Contains(out, "try to connect") || strings.Contains(out, "sent notification") || !strings.Contains(out, "something odd") {
		t.Errorf("forwarded:\n%s\nwant GoBGP's warnings only", out)
	}
}

// TestSpeakerLifecycle: routes wanted before Run are kept, Run ends with
// its context and leaves no goroutine behind, and the global settings
// cannot change in place. No peer, no listener: nothing touches the network.
func TestSpeakerLifecycle(t *testing.T) {
	before := runtime.NumGoroutine()
	cfg := validConfig()
	cfg.Peers = nil
	s, _ := newTestSpeaker(t, cfg)
	ctx := t.Context()
	if err := s.Announce(ctx, vip4, Attrs{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Announce(ctx, netip.MustParsePrefix("192.0.2.0/24"), Attrs{}); err == nil {
		t.Error("Announce of a /24 succeeded")
	}
	if err := s.GracefulShutdown(ctx, vip6); err == nil {
		t.Error("GracefulShutdown of a VIP not announced succeeded")
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.srv.Load() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Run did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Run(ctx); err == nil {
		t.Error("a second Run succeeded")
	}
	if err := s.Announce(ctx, vip6, Attrs{}); err != nil {
		t.Fatal(err)
	}
	if err := s.GracefulShutdown(ctx, vip4); err != nil {
		t.Fatal(err)
	}
	if got := s.Announced(); !slices.Equal(got, []netip.Prefix{vip4, vip6}) {
		t.Errorf("Announced() = %v", got)
	}
	if !slices.Contains(s.desired[vip4].Communities, CommunityGracefulShutdown) {
		t.Errorf("attributes after GracefulShutdown: %+v", s.desired[vip4])
	}
	if err := s.Withdraw(ctx, vip4); err != nil {
		t.Fatal(err)
	}
	if err := s.Withdraw(ctx, vip4); err != nil {
		t.Errorf("a second Withdraw: %v", err)
	}
	other := cfg
	other.ASN = 65002
	if err := s.Reconfigure(ctx, other); !errors.Is(err, ErrGlobalChanged) {
		t.Errorf("Reconfigure of the ASN = %v, want ErrGlobalChanged", err)
	}
	if s.Established() {
		t.Error("Established() with no peer")
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	for n := runtime.NumGoroutine(); n > before; n = runtime.NumGoroutine() {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := s.Announced(); !slices.Equal(got, []netip.Prefix{vip6}) {
		t.Errorf("after Run: Announced() = %v, want the desired set kept", got)
	}

	// Peers change while stopped too.
	cfg.Peers = []Peer{{Address: routerA, ASN: 65000}, {Address: routerB, ASN: 65000}}
	if err := s.Reconfigure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if ps := s.Peers(); len(ps) != 2 || ps[1].Address != routerB || ps[0].State != "stopped" {
		t.Errorf("Peers() = %+v", ps)
	}
}
