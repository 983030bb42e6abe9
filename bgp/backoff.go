package bgp

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/server"
)

// A peer that is down is retried with a growing pause. GoBGP on its own
// redials a refused peer every ConnectRetry and one that refuses our OPEN
// every 2 s, for ever, and the router logs every attempt. After each
// failed attempt the speaker pauses the peer (GoBGP's admin down: it
// neither dials nor accepts) for retryDelay, then lets GoBGP try again; a
// session that comes up clears the count. The cap bounds how long a
// router that comes back waits for us, since it cannot reach us while the
// peer is paused.
const maxRetryDelay = 30 * time.Second

// retryDelay is the pause after the given number of consecutive failed
// attempts: connectRetry, doubled each time, at most maxRetryDelay.
func retryDelay(failures int) time.Duration {
	d := connectRetry
	for i := 1; i < failures && d < maxRetryDelay; i++ {
		d *= 2
	}
	return min(d, maxRetryDelay)
}

// attemptFailed counts a failed attempt to open the session with st and
// asks for a pause; s.stMu is held. One attempt may be reported twice (a
// log line and a state change): a pause already asked for or running
// absorbs it.
func (s *Speaker) attemptFailed(st *peerState) {
	if st.pauseWanted || !st.retryAt.IsZero() {
		return
	}
	st.failures++
	st.pauseWanted = true
	select {
	case s.retryKick <- struct{}{}:
	default:
	}
}

// superviseRetries pauses and resumes peers as attemptFailed asks, until
// ctx ends. It runs outside GoBGP's goroutines: the failures are reported
// from inside them, where a call into the server would deadlock.
func (s *Speaker) superviseRetries(ctx context.Context, srv *server.BgpServer) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.retryKick:
		case <-t.C:
		}
		now := time.Now()
		pause, resume, next := s.retryWork(now)
		for _, a := range pause {
			if err := srv.DisablePeer(ctx, &api.DisablePeerRequest{Address: a.String()}); err != nil {
				s.log.Debug("bgp peer pause", "peer", a, "err", err)
			}
		}
		for _, a := range resume {
			if err := srv.EnablePeer(ctx, &api.EnablePeerRequest{Address: a.String()}); err != nil {
				s.log.Debug("bgp peer resume", "peer", a, "err", err)
			}
		}
		t.Stop()
		if !next.IsZero() {
			t.Reset(next.Sub(now))
		}
	}
}

// retryWork decides, at now, which peers to pause and which to resume, and
// when to look again (zero: nothing is waiting).
func (s *Speaker) retryWork(now time.Time) (pause, resume []netip.Addr, next time.Time) {
	s.stMu.Lock()
	defer s.stMu.Unlock()
	for a, st := range s.peers {
		if st.pauseWanted {
			st.pauseWanted = false
			d := retryDelay(st.failures)
			st.retryAt = now.Add(d)
			pause = append(pause, a)
			lvl := slog.LevelInfo
			if retryDelay(st.failures-1) == maxRetryDelay {
				lvl = slog.LevelDebug // said once the pause stopped growing
			}
			s.log.Log(context.Background(), lvl, "bgp peer down: pausing before the next attempt", "peer", a, "failures", st.failures, "retry_in", d)
		}
		if st.retryAt.IsZero() {
			continue
		}
		if !now.Before(st.retryAt) {
			st.retryAt = time.Time{}
			resume = append(resume, a)
			continue
		}
		if next.IsZero() || st.retryAt.Before(next) {
			next = st.retryAt
		}
	}
	return pause, resume, next
}
