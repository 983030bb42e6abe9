package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"
)

// Speaker is one BGP speaker: the sessions to the configured peers and the
// VIPs announced on them. Announce, Withdraw and GracefulShutdown change
// the desired set of routes, which Run advertises; they may be called
// before Run (the routes go out once it starts) and while it runs.
type Speaker struct {
	log *slog.Logger

	// opMu serialises changes: the config, the desired routes and the
	// server's peers and paths change together under it.
	opMu    sync.Mutex
	cfg     Config
	desired map[netip.Prefix]Attrs
	srv     atomic.Pointer[server.BgpServer] // non-nil while Run serves
	running atomic.Bool
	// keepRoutes makes Run end the sessions without a NOTIFICATION.
	keepRoutes atomic.Bool

	stMu  sync.Mutex
	peers map[netip.Addr]*peerState // keyed like cfg.Peers
	// retryKick wakes superviseRetries when a peer asks for a pause.
	retryKick chan struct{}
}

// peerState is what the speaker knows of a session beyond GoBGP's config.
type peerState struct {
	state     bgp.FSMState
	known     bool // a state was reported since the peer was added
	password  bool // TCP-MD5 in use: a silent peer may be a password mismatch
	since     time.Time
	lastError string
	// The back-off (backoff.go): consecutive failed attempts, a pause
	// asked for, and when the paused peer is tried again (zero: not
	// paused).
	failures    int
	pauseWanted bool
	retryAt     time.Time
}

// PeerStatus describes one session.
type PeerStatus struct {
	Address netip.Addr
	ASN     uint32
	// State is the BGP FSM state (RFC 4271 section 8.2.2): idle, connect,
	// active, opensent, openconfirm or established; "stopped" while the
	// speaker does not run.
	State string
	Up    bool      // established
	Since time.Time // of the last change of Up; zero before the first
	// PrefixesSent is how many routes the peer was sent and holds.
	PrefixesSent int
	// LastError is why the session last went down or could not be opened,
	// kept after it recovers; "" when nothing failed yet.
	LastError string
	// Failures counts the attempts that failed since the session was
	// last established; RetryAt is when a peer paused after one is tried
	// again (zero while GoBGP is trying).
	Failures int
	RetryAt  time.Time
}

// New checks cfg and returns a speaker that is not yet running; log
// receives the speaker's own lines and GoBGP's warnings.
func New(cfg Config, log *slog.Logger) (*Speaker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bgp: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Speaker{log: log, cfg: cloneConfig(cfg), desired: map[netip.Prefix]Attrs{}, peers: map[netip.Addr]*peerState{},
		retryKick: make(chan struct{}, 1)}
	for _, p := range cfg.Peers {
		s.peers[p.Address] = &peerState{password: p.Password != ""}
	}
	return s, nil
}

func cloneConfig(c Config) Config {
	c.Peers = slices.Clone(c.Peers)
	return c
}

// Run starts the speaker, opens the sessions, advertises the desired
// routes and serves until ctx ends. It then closes every session (the
// peers drop the routes at once) and returns once GoBGP has stopped. It
// returns nil when ctx ended, an error when GoBGP could not start.
func (s *Speaker) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("bgp: Run is already running")
	}
	defer s.running.Store(false)

	// GoBGP logs a failed connect attempt at debug level only; the hook
	// turns it into the peer's LastError, so the level must let it through.
	lvl := new(slog.LevelVar)
	lvl.Set(slog.LevelDebug)
	srv := server.NewBgpServer(server.LoggerOption(slog.New(&gobgpHandler{next: s.log.Handler(), onFailure: s.failedOutsideSession}), lvl))
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve()
	}()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	var supervised sync.WaitGroup
	defer func() {
		s.opMu.Lock()
		s.srv.Store(nil)
		s.opMu.Unlock()
		stopWatch()
		supervised.Wait() // its calls need the server still serving
		if s.keepRoutes.Load() {
			// No NOTIFICATION: routers that negotiated graceful restart
			// keep the routes for the restart time. Stop then only ends
			// BFD (its own StopBgp fails: already stopped).
			if err := srv.StopBgp(context.Background(), &api.StopBgpRequest{AllowGracefulRestart: true}); err != nil {
				s.log.Warn("bgp graceful-restart stop", "err", err)
			}
		}
		srv.Stop() // closes the sessions with a CEASE
		<-served
		s.stMu.Lock()
		for _, st := range s.peers {
			if st.state == bgp.BGP_FSM_ESTABLISHED {
				st.since = time.Now()
			}
			st.state, st.known = bgp.BGP_FSM_IDLE, false
			st.failures, st.pauseWanted, st.retryAt = 0, false, time.Time{}
		}
		s.stMu.Unlock()
	}()

	if err := s.start(ctx, srv, watchCtx); err != nil {
		return err
	}
	supervised.Go(func() { s.superviseRetries(watchCtx, srv) })
	<-ctx.Done()
	return nil
}

// StopForRestart makes Run, when its context ends, close the sessions
// without a NOTIFICATION, for a re-exec: routers that negotiated graceful
// restart (Config.GracefulRestartTime) keep the routes until the new
// process, with Config.Restarting, announces them again. Without graceful
// restart it changes nothing: the routers drop the routes.
func (s *Speaker) StopForRestart() { s.keepRoutes.Store(true) }

// start configures a served GoBGP: global settings, the import policy,
// the peer watch, the peers and the desired routes. StartBgp goes through
// the server's loop, so once it returns Serve runs and Stop will end it.
func (s *Speaker) start(ctx context.Context, srv *server.BgpServer, watchCtx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	port := int32(-1) // GoBGP: no listener
	if s.cfg.ListenPort > 0 {
		port = int32(s.cfg.ListenPort)
	}
	if err := srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: s.cfg.ASN, RouterId: s.cfg.RouterID.String(), ListenPort: port,
	}}); err != nil {
		return fmt.Errorf("bgp: start: %w", err)
	}
	// vipd originates only: whatever the routers send is dropped on arrival.
	// GoBGP's global import policy sees local paths too, so those are let in.
	const policy = "vipd-originate-only"
	if err := srv.AddPolicy(ctx, &api.AddPolicyRequest{Policy: &api.Policy{Name: policy, Statements: []*api.Statement{{
		Name:       policy + "-local",
		Conditions: &api.Conditions{RouteType: api.Conditions_ROUTE_TYPE_LOCAL},
		Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT},
	}}}}); err != nil {
		return fmt.Errorf("bgp: import policy: %w", err)
	}
	if err := srv.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
		Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT,
		Policies: []*api.Policy{{Name: policy}}, DefaultAction: api.RouteAction_ROUTE_ACTION_REJECT,
	}}); err != nil {
		return fmt.Errorf("bgp: import policy: %w", err)
	}
	if err := srv.WatchEvent(watchCtx, server.WatchEventMessageCallbacks{OnPeerUpdate: s.peerEvent}, server.WatchPeer()); err != nil {
		return fmt.Errorf("bgp: watch peers: %w", err)
	}
	for _, p := range s.cfg.Peers {
		if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: s.apiPeer(p)}); err != nil {
			return fmt.Errorf("bgp: add peer %s: %w", p.Address, err)
		}
	}
	for _, vip := range slices.SortedFunc(maps.Keys(s.desired), netip.Prefix.Compare) {
		if err := addPath(srv, vip, s.desired[vip]); err != nil {
			return err
		}
	}
	s.srv.Store(srv)
	s.log.Info("bgp speaker started", "asn", s.cfg.ASN, "router_id", s.cfg.RouterID, "peers", len(s.cfg.Peers), "listen_port", s.cfg.ListenPort)
	return nil
}

// apiPeer is apiPeer with the speaker's graceful-restart settings; s.cfg
// is read under opMu.
func (s *Speaker) apiPeer(p Peer) *api.Peer {
	ap := apiPeer(p)
	if t := s.cfg.GracefulRestartTime; t > 0 {
		ap.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: uint32(t / time.Second), LocalRestarting: s.cfg.Restarting}
		for _, af := range ap.AfiSafis {
			af.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
	}
	return ap
}

// apiPeer is GoBGP's form of a peer: the families of its address only
// (an IPv4 session carries the IPv4 VIPs, whose next hop is this end of it).
func apiPeer(p Peer) *api.Peer {
	p = p.withDefaults()
	afi := api.Family_AFI_IP
	if p.Address.Is6() {
		afi = api.Family_AFI_IP6
	}
	ap := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: p.Address.String(), PeerAsn: p.ASN, AuthPassword: p.Password},
		Timers: &api.Timers{Config: &api.TimersConfig{
			HoldTime:          uint64(p.HoldTime / time.Second),
			KeepaliveInterval: uint64(p.KeepaliveInterval / time.Second),
			ConnectRetry:      uint64(connectRetry / time.Second),
			// After a reset of our own (BFD down), not GoBGP's 30s.
			IdleHoldTimeAfterReset: uint64(connectRetry / time.Second),
		}},
		AfiSafis: []*api.AfiSafi{{Config: &api.AfiSafiConfig{
			Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true,
		}}},
	}
	if p.MultihopTTL > 1 {
		ap.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.MultihopTTL)}
	}
	if p.BFD {
		ap.Bfd = &api.BfdPeerConfig{
			Enabled: true, Port: bfdPort,
			DesiredMinimumTxInterval: uint32(bfdInterval / time.Microsecond),
			RequiredMinimumReceive:   uint32(bfdInterval / time.Microsecond),
			DetectionMultiplier:      bfdMultiplier,
		}
	}
	return ap
}

// path builds the route for vip: origin IGP, next hop unspecified, which
// GoBGP replaces with the session's local address (next hop self).
func path(vip netip.Prefix, attrs Attrs) (*apiutil.Path, error) {
	if !HostRoute(vip) {
		return nil, fmt.Errorf("bgp: %v is not a host route (/32 or /128)", vip)
	}
	nlri, err := bgp.NewIPAddrPrefix(vip)
	if err != nil {
		return nil, fmt.Errorf("bgp: %v: %w", vip, err)
	}
	family := bgp.RF_IPv4_UC
	var nh bgp.PathAttributeInterface
	if vip.Addr().Is4() {
		nh, err = bgp.NewPathAttributeNextHop(netip.IPv4Unspecified())
	} else {
		family = bgp.RF_IPv6_UC
		nh, err = bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, netip.IPv6Unspecified())
	}
	if err != nil {
		return nil, fmt.Errorf("bgp: next hop of %v: %w", vip, err)
	}
	pattrs := []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP), nh}
	if attrs.MED != nil {
		pattrs = append(pattrs, bgp.NewPathAttributeMultiExitDisc(*attrs.MED))
	}
	if len(attrs.Communities) > 0 {
		pattrs = append(pattrs, bgp.NewPathAttributeCommunities(slices.Clone(attrs.Communities)))
	}
	return &apiutil.Path{Family: family, Nlri: nlri, Attrs: pattrs}, nil
}

func addPath(srv *server.BgpServer, vip netip.Prefix, attrs Attrs) error {
	p, err := path(vip, attrs)
	if err != nil {
		return err
	}
	if _, err := srv.AddPath(apiutil.AddPathRequest{Paths: []*apiutil.Path{p}}); err != nil {
		return fmt.Errorf("bgp: announce %v: %w", vip, err)
	}
	return nil
}

// Announce advertises vip, a /32 or /128, with next hop self to every peer
// of its family, or replaces the attributes it was announced with. The
// route stays announced across session resets until Withdraw.
func (s *Speaker) Announce(ctx context.Context, vip netip.Prefix, attrs Attrs) error {
	if _, err := path(vip, attrs); err != nil {
		return err
	}
	attrs.Communities = slices.Clone(attrs.Communities)
	if attrs.MED != nil {
		med := *attrs.MED
		attrs.MED = &med
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if srv := s.srv.Load(); srv != nil {
		if err := addPath(srv, vip, attrs); err != nil {
			return err
		}
	}
	_, had := s.desired[vip]
	s.desired[vip] = attrs
	if !had {
		s.log.Info("bgp announce", "vip", vip, "communities", communityStrings(attrs.Communities), "med", medText(attrs.MED))
	}
	return nil
}

// GracefulShutdown re-announces vip with the GRACEFUL_SHUTDOWN community
// (RFC 8326) added to its attributes, so that routers move traffic to
// other paths before the withdraw that the caller sends after its drain
// time. vip must be announced.
func (s *Speaker) GracefulShutdown(ctx context.Context, vip netip.Prefix) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	attrs, ok := s.desired[vip]
	if !ok {
		return fmt.Errorf("bgp: graceful shutdown of %v: not announced", vip)
	}
	if !slices.Contains(attrs.Communities, CommunityGracefulShutdown) {
		attrs.Communities = append(slices.Clone(attrs.Communities), CommunityGracefulShutdown)
	}
	if srv := s.srv.Load(); srv != nil {
		if err := addPath(srv, vip, attrs); err != nil {
			return err
		}
	}
	s.desired[vip] = attrs
	s.log.Info("bgp graceful shutdown", "vip", vip)
	return nil
}

// Withdraw stops announcing vip; withdrawing a VIP not announced does
// nothing.
func (s *Speaker) Withdraw(ctx context.Context, vip netip.Prefix) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	attrs, ok := s.desired[vip]
	if !ok {
		return nil
	}
	if srv := s.srv.Load(); srv != nil {
		p, err := path(vip, attrs)
		if err != nil {
			return err
		}
		if err := srv.DeletePath(apiutil.DeletePathRequest{Paths: []*apiutil.Path{p}}); err != nil {
			return fmt.Errorf("bgp: withdraw %v: %w", vip, err)
		}
	}
	delete(s.desired, vip)
	s.log.Info("bgp withdraw", "vip", vip)
	return nil
}

// Announced lists the VIPs announced (or to be once Run starts), sorted.
func (s *Speaker) Announced() []netip.Prefix {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	return slices.SortedFunc(maps.Keys(s.desired), netip.Prefix.Compare)
}

// Reconfigure applies cfg to the running (or not yet running) speaker:
// peers that are new are added, peers that are gone are removed, and a peer
// whose settings changed is replaced (only its session restarts). Other
// sessions are not touched. A changed ASN, router ID, listen port or
// graceful-restart time returns ErrGlobalChanged and changes nothing;
// cfg.Restarting is ignored.
func (s *Speaker) Reconfigure(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("bgp: %w", err)
	}
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if cfg.ASN != s.cfg.ASN || cfg.RouterID != s.cfg.RouterID || cfg.ListenPort != s.cfg.ListenPort || cfg.GracefulRestartTime != s.cfg.GracefulRestartTime {
		return ErrGlobalChanged
	}
	cfg.Restarting = s.cfg.Restarting
	old := map[netip.Addr]Peer{}
	for _, p := range s.cfg.Peers {
		old[p.Address] = p
	}
	next := map[netip.Addr]Peer{}
	for _, p := range cfg.Peers {
		next[p.Address] = p
	}
	srv := s.srv.Load()
	var errs []error
	applied := cloneConfig(s.cfg)
	applied.Peers = applied.Peers[:0]
	// Removals first, then changes and additions, in config order.
	for _, p := range s.cfg.Peers {
		if _, keep := next[p.Address]; keep {
			continue
		}
		if err := s.deletePeer(ctx, srv, p.Address); err != nil {
			errs = append(errs, err)
			applied.Peers = append(applied.Peers, p)
			continue
		}
		s.log.Info("bgp peer removed", "peer", p.Address)
	}
	for _, p := range cfg.Peers {
		was, existed := old[p.Address]
		switch {
		case existed && was == p:
			applied.Peers = append(applied.Peers, p)
			continue
		case existed:
			if err := s.deletePeer(ctx, srv, p.Address); err != nil {
				errs = append(errs, err)
				applied.Peers = append(applied.Peers, was)
				continue
			}
		}
		s.stMu.Lock()
		s.peers[p.Address] = &peerState{password: p.Password != ""}
		s.stMu.Unlock()
		if srv != nil {
			if err := srv.AddPeer(ctx, &api.AddPeerRequest{Peer: s.apiPeer(p)}); err != nil {
				errs = append(errs, fmt.Errorf("bgp: add peer %s: %w", p.Address, err))
				s.stMu.Lock()
				delete(s.peers, p.Address)
				s.stMu.Unlock()
				continue
			}
		}
		applied.Peers = append(applied.Peers, p)
		if existed {
			s.log.Info("bgp peer changed", "peer", p.Address, "asn", p.ASN)
		} else {
			s.log.Info("bgp peer added", "peer", p.Address, "asn", p.ASN)
		}
	}
	s.cfg = applied
	return errors.Join(errs...)
}

func (s *Speaker) deletePeer(ctx context.Context, srv *server.BgpServer, a netip.Addr) error {
	if srv != nil {
		if err := srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: a.String()}); err != nil {
			return fmt.Errorf("bgp: remove peer %s: %w", a, err)
		}
	}
	s.stMu.Lock()
	delete(s.peers, a)
	s.stMu.Unlock()
	return nil
}

// Established reports whether at least one session is established: the
// daemon's readiness in the BGP modes.
func (s *Speaker) Established() bool {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	for _, st := range s.peers {
		if st.known && st.state == bgp.BGP_FSM_ESTABLISHED {
			return true
		}
	}
	return false
}

// Peers describes every configured peer, in config order.
func (s *Speaker) Peers() []PeerStatus {
	s.opMu.Lock()
	peers := slices.Clone(s.cfg.Peers)
	s.opMu.Unlock()

	sent := map[string]int{}
	if srv := s.srv.Load(); srv != nil {
		// A stopped server answers at once with an error, so this cannot hang.
		_ = srv.ListPeer(context.Background(), &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
			n := 0
			for _, af := range p.GetAfiSafis() {
				n += int(af.GetState().GetAdvertised())
			}
			sent[p.GetConf().GetNeighborAddress()] = n
		})
	}
	running := s.srv.Load() != nil
	s.stMu.Lock()
	defer s.stMu.Unlock()
	out := make([]PeerStatus, 0, len(peers))
	for _, p := range peers {
		ps := PeerStatus{Address: p.Address, ASN: p.ASN, State: "stopped"}
		if st, ok := s.peers[p.Address]; ok {
			ps.Since, ps.LastError = st.since, st.lastError
			ps.Failures, ps.RetryAt = st.failures, st.retryAt
			if running {
				ps.State = stateName(st.state)
				ps.Up = st.known && st.state == bgp.BGP_FSM_ESTABLISHED
			}
		}
		if ps.Up {
			ps.PrefixesSent = sent[p.Address.String()]
		}
		out = append(out, ps)
	}
	return out
}

// peerEvent records a session's state change reported by GoBGP.
func (s *Speaker) peerEvent(ev *apiutil.WatchEventMessage_PeerEvent, at time.Time) {
	if ev.Type != apiutil.PEER_EVENT_STATE {
		return
	}
	a := ev.Peer.State.NeighborAddress
	if !a.IsValid() {
		a = ev.Peer.Conf.NeighborAddress
	}
	s.stMu.Lock()
	st, ok := s.peers[a]
	if !ok {
		s.stMu.Unlock()
		return // removed meanwhile
	}
	from, fromKnown := st.state, st.known
	to := ev.Peer.State.SessionState
	st.state, st.known = to, true
	wasUp, up := fromKnown && from == bgp.BGP_FSM_ESTABLISHED, to == bgp.BGP_FSM_ESTABLISHED
	reason, failed := disconnectText(ev.Peer.State)
	if wasUp != up || st.since.IsZero() {
		st.since = at
	}
	if failed {
		st.lastError = reason
	}
	switch {
	case up:
		// A pause already under way (retryAt set: its admin down is on
		// its way) still ends at its time, or the peer stays disabled.
		st.failures, st.pauseWanted = 0, false
	case failed && !wasUp:
		// An attempt that never reached Established; a session that
		// was up is redialled at once.
		s.attemptFailed(st)
	}
	s.stMu.Unlock()

	if fromKnown && from == to {
		return
	}
	args := []any{"peer", a, "asn", ev.Peer.State.PeerASN, "from", stateName(from), "to", stateName(to)}
	if reason != "" {
		args = append(args, "reason", reason)
	}
	switch {
	case up:
		s.log.Info("bgp peer established", args...)
	case wasUp:
		s.log.Warn("bgp peer down", args...)
	case failed:
		s.log.Warn("bgp peer session failed, retrying", args...)
	default:
		s.log.Debug("bgp peer state", args...)
	}
}

// failedOutsideSession records a failure GoBGP reported in its log (see
// gobgpHandler.onFailure); an attempt ends in a pause unless the session
// is up. A line is logged when the error changes, not at every retry.
func (s *Speaker) failedOutsideSession(peer, what string, attempt bool) {
	a, err := netip.ParseAddr(peer)
	if err != nil {
		return
	}
	s.stMu.Lock()
	st, ok := s.peers[a]
	if ok && st.password && strings.HasPrefix(what, "connect:") && strings.HasSuffix(what, "i/o timeout") {
		// Linux drops segments whose TCP-MD5 signature is wrong or
		// missing without a word, so a mismatch looks like this.
		what += " (the peer does not answer: check the TCP-MD5 password on both sides)"
	}
	if strings.Contains(what, "bad peer as") {
		what += " (the peer's OPEN carries another AS than its asn here)"
	}
	changed := ok && st.lastError != what
	if changed {
		st.lastError = what
	}
	if ok && attempt && st.state != bgp.BGP_FSM_ESTABLISHED {
		s.attemptFailed(st)
	}
	s.stMu.Unlock()
	if changed {
		s.log.Warn("bgp peer session failed, retrying with back-off", "peer", a, "reason", what)
	}
}

// disconnectText says why GoBGP changed a session's state, and whether
// that was a failure worth reporting (not a timer moving the FSM on, or a
// message that brought it further).
func disconnectText(st apiutil.PeerState) (reason string, failed bool) {
	reason = st.DisconnectMessage
	if reason == "" && st.DisconnectReason != api.PeerState_DISCONNECT_REASON_UNSPECIFIED {
		reason = st.DisconnectReason.String()
	}
	if st.DisconnectReason == api.PeerState_DISCONNECT_REASON_INVALID_MSG && st.SessionState == bgp.BGP_FSM_IDLE {
		// GoBGP does not pass on the NOTIFICATION a peer sends instead
		// of its OPEN, the usual answer to an OPEN it refuses.
		reason += " (the peer ended the session during the OPEN exchange: it probably refused our OPEN; check its neighbor config for this host's address and asn)"
	}
	switch st.DisconnectReason {
	case api.PeerState_DISCONNECT_REASON_HOLD_TIMER_EXPIRED,
		api.PeerState_DISCONNECT_REASON_NOTIFICATION_SENT,
		api.PeerState_DISCONNECT_REASON_NOTIFICATION_RECEIVED,
		api.PeerState_DISCONNECT_REASON_READ_FAILED,
		api.PeerState_DISCONNECT_REASON_WRITE_FAILED,
		api.PeerState_DISCONNECT_REASON_BAD_PEER_AS,
		api.PeerState_DISCONNECT_REASON_INVALID_MSG,
		api.PeerState_DISCONNECT_REASON_HARD_RESET,
		api.PeerState_DISCONNECT_REASON_RESTART_TIMER_EXPIRED:
		failed = true
	}
	return reason, failed
}

func stateName(s bgp.FSMState) string {
	switch s {
	case bgp.BGP_FSM_IDLE:
		return "idle"
	case bgp.BGP_FSM_CONNECT:
		return "connect"
	case bgp.BGP_FSM_ACTIVE:
		return "active"
	case bgp.BGP_FSM_OPENSENT:
		return "opensent"
	case bgp.BGP_FSM_OPENCONFIRM:
		return "openconfirm"
	case bgp.BGP_FSM_ESTABLISHED:
		return "established"
	}
	return "unknown"
}

// FormatCommunity writes a community as ASN:VALUE.
func FormatCommunity(c uint32) string {
	return strconv.FormatUint(uint64(c>>16), 10) + ":" + strconv.FormatUint(uint64(c&0xffff), 10)
}

func communityStrings(cs []uint32) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = FormatCommunity(c)
	}
	return out
}

func medText(m *uint32) string {
	if m == nil {
		return "none"
	}
	return strconv.FormatUint(uint64(*m), 10)
}
