package vrrp

import (
	"strings"
	"testing"
	"time"
)

// A follower (dual-stack: the IPv6 instance that follows the IPv4 one) is
// Master exactly while its leader is, whatever its own adverts say.
func TestFollowerFollowsItsLeaderOnly(t *testing.T) {
	cfg := testConfig(100, "198.51.100.11")
	cfg.Follower = true
	m, clk := backupMachine(t, cfg)

	// Its own Master_Down_Timer never makes it Master.
	clk.advance(10 * time.Second)
	if got := describe(m.TimerFired(TimerMasterDown, nil)); got != "" {
		t.Errorf("master down as a follower: %s", got)
	}
	if st, _ := m.State(); st != StateBackup {
		t.Fatalf("state %v", st)
	}

	// The leader became Master: at once.
	got := describe(m.SetLeader(true, "k8s-api-v4 (MASTER: no advert from 198.51.100.12 for 3.61s)", nil))
	if !strings.HasPrefix(got, "send(100)") || !strings.Contains(got, "BACKUP->MASTER[leader]") && !strings.Contains(got, "arm(takeover") {
		t.Errorf("leader Master: %s", got)
	}
	clk.advance(time.Millisecond)
	m.TimerFired(TimerTakeover, nil)
	if st, _ := m.State(); st != StateMaster {
		t.Fatalf("state %v after the leader became Master", st)
	}

	// Another host claims Master on our VRID (its leader thinks it is
	// Master too): reported, not followed; once per Master_Down_Interval.
	peer := mustAddr("198.51.100.12")
	out, err := m.ReceiveAdvert(peer, TTL, advert(200, time.Second), nil)
	if err != nil || describe(out) != "foreign_master(198.51.100.12)" {
		t.Errorf("a higher Master as a follower: %s, %v", describe(out), err)
	}
	if out, _ = m.ReceiveAdvert(peer, TTL, advert(200, time.Second), nil); describe(out) != "" {
		t.Errorf("reported twice: %s", describe(out))
	}
	if st, _ := m.State(); st != StateMaster {
		t.Errorf("the follower yielded: %v", st)
	}

	// The leader is no longer Master: priority 0 and release.
	if got := describe(m.SetLeader(false, "k8s-api-v4 (BACKUP)", nil)); got != "stop(adver_timer) send(0) release MASTER->BACKUP[leader]" {
		t.Errorf("leader Backup: %s", got)
	}
}

func TestFollowerBackFromFaultFollowsAMasterLeader(t *testing.T) {
	cfg := testConfig(100, "198.51.100.11")
	cfg.Follower = true
	m, clk := backupMachine(t, cfg)
	m.SetLink(false, nil)
	m.SetLeader(true, "k8s-api-v4", nil)
	if st, _ := m.State(); st != StateFault {
		t.Fatalf("state %v with the link down", st)
	}
	out := m.SetLink(true, nil)
	if !strings.Contains(describe(out), "send(100)") {
		t.Errorf("link up with the leader Master: %s", describe(out))
	}
	clk.advance(time.Millisecond)
	m.TimerFired(TimerTakeover, nil)
	if st, _ := m.State(); st != StateMaster {
		t.Errorf("state %v", st)
	}
}
