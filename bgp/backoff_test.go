package bgp

import (
	"log/slog"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
)

func TestRetryDelayGrowsToItsCap(t *testing.T) {
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, retryDelay(n))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
}

// Each failed attempt pauses the peer a little longer; a failure reported
// twice (log line and state change) or while paused counts once; a session
// that comes up starts the count again.
func TestBackoffPausesAndResumes(t *testing.T) {
	s, _ := newTestSpeaker(t, validConfig())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	refused := "connect: dial tcp 198.51.100.1:179: connect: connection refused"

	now := t0
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second} {
		s.failedOutsideSession(routerA.String(), refused, true)
		s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_IDLE, api.PeerState_DISCONNECT_REASON_NOTIFICATION_RECEIVED, "notification-received"), now)
		pause, resume, next := s.retryWork(now)
		if !slices.Equal(pause, []netip.Addr{routerA}) || len(resume) != 0 || next.Sub(now) != want {
			t.Fatalf("failure %d: pause %v resume %v next %v; want a pause of %v", i+1, pause, resume, next.Sub(now), want)
		}
		// Failures while paused (the router dialling us) do not count.
		s.failedOutsideSession(routerA.String(), refused, true)
		if p, _, _ := s.retryWork(now.Add(time.Second)); len(p) != 0 {
			t.Fatalf("failure %d: paused again while paused", i+1)
		}
		if ps := s.Peers()[0]; ps.Failures != i+1 || !ps.RetryAt.Equal(next) {
			t.Errorf("failure %d: Peers() = %+v", i+1, ps)
		}
		now = next
		if _, resume, _ := s.retryWork(now); !slices.Equal(resume, []netip.Addr{routerA}) {
			t.Fatalf("failure %d: not resumed at %v", i+1, now)
		}
	}
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ESTABLISHED, api.PeerState_DISCONNECT_REASON_UNSPECIFIED, ""), now)
	if ps := s.Peers()[0]; ps.Failures != 0 || !ps.RetryAt.IsZero() {
		t.Errorf("after established: %+v", ps)
	}
	// A session that was up and fails is redialled at once, not paused.
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_IDLE, api.PeerState_DISCONNECT_REASON_HOLD_TIMER_EXPIRED, "hold-timer-expired"), now)
	if pause, _, _ := s.retryWork(now); len(pause) != 0 {
		t.Errorf("a session that went down was paused: %v", pause)
	}
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_IDLE, api.PeerState_DISCONNECT_REASON_NOTIFICATION_RECEIVED, "notification-received"), now)
	if _, _, next := s.retryWork(now); next.Sub(now) != 5*time.Second {
		t.Errorf("first failure after a session: pause %v, want 5s", next.Sub(now))
	}
}

// A session that comes up while the peer is paused (the pause's admin down
// still on its way) must not leave the peer disabled for ever: the pause
// ends at its time as planned. And our own reset of an established session
// (BFD down) is no failed attempt.
func TestBackoffSessionUpWhilePaused(t *testing.T) {
	s, _ := newTestSpeaker(t, validConfig())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.failedOutsideSession(routerA.String(), "connect: dial tcp 198.51.100.1:179: connect: connection refused", true)
	pause, _, next := s.retryWork(t0)
	if len(pause) != 1 {
		t.Fatalf("pause %v", pause)
	}
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ESTABLISHED, api.PeerState_DISCONNECT_REASON_UNSPECIFIED, ""), t0)
	if _, resume, _ := s.retryWork(next); !slices.Equal(resume, []netip.Addr{routerA}) {
		t.Fatalf("a peer that came up while paused is not resumed: %v", resume)
	}
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ESTABLISHED, api.PeerState_DISCONNECT_REASON_UNSPECIFIED, ""), next)
	s.peerEvent(peerEvent(routerA, bgp.BGP_FSM_ACTIVE, api.PeerState_DISCONNECT_REASON_IDLE_TIMER_EXPIRED, "idle-hold-timer-expired"), next)
	s.failedOutsideSession(routerA.String(), "sent NOTIFICATION code 6(cease) subcode 4(administrative reset)", false)
	if pause, _, _ := s.retryWork(next.Add(time.Second)); len(pause) != 0 {
		t.Errorf("our own reset of an established session paused the peer: %v", pause)
	}
}

// GoBGP's outgoing connection fails on its own, with no state change of
// the session: a router's NOTIFICATION that overtakes its OPEN gets an FSM
// error back (seen in CI: GoBGP redialled 2 s later, unpaused), so does no
// OPEN in time, and a refused OPEN. Each is a failed attempt while the
// session waits; the same NOTIFICATION while the session comes up on the
// router's connection (OpenSent, OpenConfirm) or is up is not, nor is a
// cease.
func TestBackoffCountsNotificationsOfTheOutgoingConnection(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		session    bgp.FSMState
		code, sub  int
		wantPaused bool
	}{
		{bgp.BGP_FSM_ACTIVE, 5, 1, true},
		{bgp.BGP_FSM_CONNECT, 4, 0, true},
		{bgp.BGP_FSM_ACTIVE, 2, 2, true},
		{bgp.BGP_FSM_ACTIVE, 6, 4, false},
		{bgp.BGP_FSM_OPENSENT, 5, 1, false},
		{bgp.BGP_FSM_OPENCONFIRM, 5, 1, false},
		{bgp.BGP_FSM_ESTABLISHED, 3, 1, false},
	} {
		s, _ := newTestSpeaker(t, validConfig())
		s.peerEvent(peerEvent(routerA, c.session, api.PeerState_DISCONNECT_REASON_UNSPECIFIED, ""), t0)
		h := &gobgpHandler{next: slog.DiscardHandler, onFailure: s.failedOutsideSession}
		slog.New(h).With(slog.String(gobgpKeyAttr, routerA.String())).Info(gobgpSentNotif,
			slog.String(gobgpStateAttr, c.session.String()), slog.Int(gobgpCodeAttr, c.code), slog.Int(gobgpSubcodeAttr, c.sub))
		if pause, _, _ := s.retryWork(t0); (len(pause) == 1) != c.wantPaused {
			t.Errorf("NOTIFICATION %d/%d sent in %v: paused %v, want %v", c.code, c.sub, c.session, pause, c.wantPaused)
		}
	}
}
