package vrrp

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Tests of what one unauthenticated advert may do (issue 10, defects 4 and
// 7): address lists that differ, priority 0 and 255, learnt intervals, and
// answers to lower-priority Masters.

const (
	master12  = "198.51.100.12" // the Master the Backup follows
	other13   = "198.51.100.13" // another router of the group
	outsider  = "198.51.100.66" // a host outside the group
	slowestIv = MaxAdvertInterval
)

func otherVIPs(prio uint8) *Advertisement {
	return &Advertisement{VRID: 51, Priority: prio, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10"), mustAddr("198.51.100.20")}}
}

// following returns a Backup that follows master12 at priority 150.
func following(t *testing.T, cfg Config) (*Machine, *fakeClock) {
	t.Helper()
	m, clk := backupMachine(t, cfg)
	if _, err := m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	clk.advance(500 * time.Millisecond)
	return m, clk
}

func TestAddressListMismatch(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func(*Config)
		follow  bool // the Backup follows master12
		src     string
		adv     *Advertisement
		want    string
		wantErr error
	}{
		{name: "from the Master we follow: accepted and reported", follow: true, src: master12, adv: otherVIPs(150),
			want: "mismatch(198.51.100.12) arm(master_down_timer,3.609375s)"},
		{name: "lower priority from the Master we follow: reported, preempted as usual", follow: true, src: master12, adv: otherVIPs(50),
			want: "mismatch(198.51.100.12)"},
		{name: "from another router: a collision", follow: true, src: other13, adv: otherVIPs(150), wantErr: DropAddressList},
		{name: "before any Master: a collision", src: master12, adv: otherVIPs(150), wantErr: DropAddressList},
		{name: "priority 255 from a configured peer", cfg: func(c *Config) { c.Peers = []netip.Addr{mustAddr(other13)} },
			follow: true, src: other13, adv: otherVIPs(255), want: "mismatch(198.51.100.13) arm(master_down_timer,3.609375s)"},
		{name: "priority 255 from an unknown host: a collision", follow: true, src: outsider, adv: otherVIPs(255), wantErr: DropAddressList},
		{name: "priority 255 from anyone when trusted", cfg: func(c *Config) { c.TrustUnknownMasters = true },
			follow: true, src: outsider, adv: otherVIPs(255), want: "mismatch(198.51.100.66) arm(master_down_timer,3.609375s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			var m *Machine
			if tt.follow {
				m, _ = following(t, cfg)
			} else {
				m, _ = backupMachine(t, cfg)
			}
			out, err := m.ReceiveAdvert(mustAddr(tt.src), TTL, tt.adv, nil)
			if err != tt.wantErr {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if got := describe(out); got != tt.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestAddressListMismatchIsRateLimited(t *testing.T) {
	m, clk := following(t, testConfig(100, "198.51.100.11"))
	reports := 0
	for range 10 {
		out, err := m.ReceiveAdvert(mustAddr(master12), TTL, otherVIPs(150), nil)
		if err != nil {
			t.Fatal(err)
		}
		reports += strings.Count(describe(out), "mismatch(")
		clk.advance(time.Second)
	}
	// Adverts at 0s..9s; Master_Down_Interval 3.61s: reports at 0s, 4s, 8s.
	if reports != 3 {
		t.Errorf("%d reports in 10 adverts, want 3 (one per Master_Down_Interval)", reports)
	}
}

func TestPriorityZero(t *testing.T) {
	tests := []struct {
		name    string
		follow  bool
		src     string
		want    string
		wantErr error
	}{
		{name: "from the Master we follow: Skew_Time", follow: true, src: master12, want: "arm(master_down_timer,609.375ms)"},
		{name: "from another router: dropped", follow: true, src: other13, wantErr: DropZeroNotMaster},
		{name: "before any Master: dropped", src: master12, wantErr: DropZeroNotMaster},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m *Machine
			if tt.follow {
				m, _ = following(t, testConfig(100, "198.51.100.11"))
			} else {
				m, _ = backupMachine(t, testConfig(100, "198.51.100.11"))
			}
			out, err := m.ReceiveAdvert(mustAddr(tt.src), TTL, advert(0, time.Second), nil)
			if err != tt.wantErr {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if got := describe(out); got != tt.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// A Master preempted by a higher one may send one more advert before it
// hears the preempting one; a Backup that heard both within an interval
// follows the one that wins their election, so that the winner's release
// (a graceful stop right after it preempted) is not dropped as a stranger's.
func TestPriorityZeroFromPreemptingMasterAfterTheOldOnesLastAdvert(t *testing.T) {
	m, clk := backupMachine(t, testConfig(50, "198.51.100.11"))
	if _, err := m.ReceiveAdvert(mustAddr(other13), TTL, advert(100, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	clk.advance(700 * time.Millisecond)
	if _, err := m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, time.Second), nil); err != nil {
		t.Fatal(err) // master12 preempts other13
	}
	clk.advance(time.Millisecond)
	out, err := m.ReceiveAdvert(mustAddr(other13), TTL, advert(100, time.Second), nil)
	if err != nil {
		t.Fatal(err) // other13's timer fired before it heard master12
	}
	if got, want := describe(out), "arm(master_down_timer,3.8046875s)"; got != want {
		t.Errorf("the old Master's last advert: got %s, want %s", got, want)
	}
	if m.master.Addr != mustAddr(master12) {
		t.Errorf("follows %v, want %v, which wins against it", m.master.Addr, master12)
	}
	clk.advance(time.Millisecond)
	out, err = m.ReceiveAdvert(mustAddr(master12), TTL, advert(0, time.Second), nil)
	if err != nil {
		t.Fatalf("master12's release: %v, want Skew_Time", err)
	}
	if got, want := describe(out), "arm(master_down_timer,804.6875ms)"; got != want {
		t.Errorf("master12's release: got %s, want %s", got, want)
	}
	// A Master heard longer than an interval ago is not the one to follow:
	// a lower router that advertises after that took over.
	clk.advance(1100 * time.Millisecond)
	m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, time.Second), nil)
	clk.advance(1100 * time.Millisecond)
	m.ReceiveAdvert(mustAddr(other13), TTL, advert(100, time.Second), nil)
	clk.advance(time.Millisecond)
	if _, err := m.ReceiveAdvert(mustAddr(other13), TTL, advert(0, time.Second), nil); err != nil {
		t.Errorf("release of the Master that took over: %v", err)
	}
}

// takeoverAfter feeds m a priority-0 advert from src every 300ms after the
// Master went silent and returns when m became Master.
func takeoverAfter(t *testing.T, m *Machine, clk *fakeClock, src string) time.Duration {
	t.Helper()
	start := clk.now
	next := start
	for clk.now.Sub(start) < time.Minute {
		if due := m.deadline[TimerMasterDown]; !due.IsZero() && !due.After(next) {
			clk.now = due
			m.TimerFired(TimerMasterDown, nil)
			if s, _ := m.State(); s == StateMaster {
				return clk.now.Sub(start)
			}
			continue
		}
		clk.now = next
		m.ReceiveAdvert(mustAddr(src), TTL, advert(0, time.Second), nil)
		next = next.Add(300 * time.Millisecond)
	}
	t.Fatal("no takeover in a minute")
	return 0
}

func TestPriorityZeroStreamDoesNotHoldOffTakeover(t *testing.T) {
	t.Run("from another router", func(t *testing.T) {
		m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
		m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, time.Second), nil)
		// master12 dies now; other13 sends priority 0 every 300ms.
		if got, want := takeoverAfter(t, m, clk, other13), mdi(100, time.Second); got != want {
			t.Errorf("took over %v after the Master's last advert, want Master_Down_Interval %v", got, want)
		}
	})
	t.Run("from the Master's own address", func(t *testing.T) {
		m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
		m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, time.Second), nil)
		// Further priority-0 adverts never push the takeover later.
		if got, want := takeoverAfter(t, m, clk, master12), skew(100, time.Second); got != want {
			t.Errorf("took over %v after the first priority 0, want Skew_Time %v", got, want)
		}
	})
}

func TestUnknownHosts(t *testing.T) {
	peers := func(c *Config) { c.Peers = []netip.Addr{mustAddr(master12), mustAddr(other13)} }
	trust := func(c *Config) { c.TrustUnknownMasters = true }
	tests := []struct {
		name      string
		cfg       func(*Config)
		master    bool // start as Master, else as a Backup following master12
		src       string
		adv       *Advertisement
		want      string
		wantErr   error
		wantState State
		wantMAI   time.Duration
	}{
		{name: "master: priority 255 from an unknown host is dropped", master: true, src: outsider, adv: advert(255, slowestIv),
			wantErr: DropUnknownOwner, wantState: StateMaster, wantMAI: time.Second},
		{name: "master: priority 255 from a peer", cfg: peers, master: true, src: other13, adv: advert(255, 2*time.Second),
			want: "send(100) stop(adver_timer) release arm(master_down_timer,7.21875s) MASTER->BACKUP[higher_master]", wantState: StateBackup, wantMAI: 2 * time.Second},
		{name: "master: priority 255 from anyone, trusted", cfg: trust, master: true, src: outsider, adv: advert(255, 2*time.Second),
			want: "send(100) stop(adver_timer) release arm(master_down_timer,7.21875s) MASTER->BACKUP[higher_master]", wantState: StateBackup, wantMAI: 2 * time.Second},
		{name: "master: yields to an unknown host, keeps its own interval", master: true, src: outsider, adv: advert(200, slowestIv),
			want: "send(100) stop(adver_timer) release arm(master_down_timer,3.609375s) MASTER->BACKUP[higher_master]", wantState: StateBackup, wantMAI: time.Second},
		{name: "backup: priority 255 from the Master we follow", src: master12, adv: advert(255, 2*time.Second),
			want: "arm(master_down_timer,7.21875s)", wantState: StateBackup, wantMAI: 2 * time.Second},
		{name: "backup: priority 255 from an unknown host is dropped", src: outsider, adv: advert(255, slowestIv),
			wantErr: DropUnknownOwner, wantState: StateBackup, wantMAI: time.Second},
		{name: "backup: a new Master's interval is not learnt from its first advert", src: other13, adv: advert(200, slowestIv),
			want: "arm(master_down_timer,3.609375s)", wantState: StateBackup, wantMAI: time.Second},
		{name: "backup: a peer's interval is learnt at once", cfg: peers, src: other13, adv: advert(200, 2*time.Second),
			want: "arm(master_down_timer,7.21875s)", wantState: StateBackup, wantMAI: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			var m *Machine
			if tt.master {
				m, _ = masterMachine(t, cfg)
			} else {
				m, _ = following(t, cfg)
			}
			out, err := m.ReceiveAdvert(mustAddr(tt.src), TTL, tt.adv, nil)
			if err != tt.wantErr {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if got := describe(out); got != tt.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tt.want)
			}
			if s, _ := m.State(); s != tt.wantState {
				t.Errorf("state %v, want %v", s, tt.wantState)
			}
			if got := m.MasterAdverInterval(); got != tt.wantMAI {
				t.Errorf("Master_Adver_Interval %v, want %v", got, tt.wantMAI)
			}
		})
	}
}

func TestNewMasterIntervalLearntFromItsNextAdvert(t *testing.T) {
	m, clk := following(t, testConfig(100, "198.51.100.11"))
	m.ReceiveAdvert(mustAddr(other13), TTL, advert(200, 2*time.Second), nil)
	if got := m.MasterAdverInterval(); got != time.Second {
		t.Fatalf("learnt %v from a new Master's first advert", got)
	}
	clk.advance(2 * time.Second)
	out, _ := m.ReceiveAdvert(mustAddr(other13), TTL, advert(200, 2*time.Second), nil)
	if got, want := describe(out), "arm(master_down_timer,7.21875s)"; got != want {
		t.Errorf("second advert: got %s want %s", got, want)
	}
}

func TestMasterAnswersAreRateLimited(t *testing.T) {
	for _, prio := range []uint8{50, 0} {
		m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
		sent := 0
		for range 10 {
			clk.advance(100 * time.Millisecond)
			out, err := m.ReceiveAdvert(mustAddr(other13), TTL, advert(prio, time.Second), nil)
			if err != nil {
				t.Fatal(err)
			}
			sent += strings.Count(describe(out), "send(")
		}
		if sent != 1 {
			t.Errorf("priority %d: %d answers to 10 adverts in one second, want 1", prio, sent)
		}
	}
}

func TestLinkFlap(t *testing.T) {
	tests := []struct {
		name  string
		down  time.Duration // after the last advert, which was sent at 0
		flap  time.Duration
		fault string // demanded during the flap
		want  string
	}{
		{name: "short flap: resume as Master", down: 500 * time.Millisecond, flap: 300 * time.Millisecond,
			want: "send(100) take arm(adver_timer,1s) FAULT->MASTER[link_returned]"},
		{name: "just under 3 intervals since the last advert", down: 900 * time.Millisecond, flap: 2099 * time.Millisecond,
			want: "send(100) take arm(adver_timer,1s) FAULT->MASTER[link_returned]"},
		{name: "3 intervals: a peer may have timed out", down: 900 * time.Millisecond, flap: 2100 * time.Millisecond,
			want: "release arm(master_down_timer,3.609375s) FAULT->BACKUP[link_up]"},
		{name: "fault still demanded", down: 500 * time.Millisecond, flap: 300 * time.Millisecond, fault: "tracker api failing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
			clk.advance(tt.down)
			m.SetLink(false, nil)
			m.SetFault(tt.fault, nil)
			clk.advance(tt.flap)
			out := m.SetLink(true, nil)
			if got := describe(out); got != tt.want {
				t.Fatalf("link up:\n got %s\nwant %s", got, tt.want)
			}
			if len(out) > 0 && out[len(out)-1].Transition.Reason == ReasonLinkFlap {
				if cause := out[len(out)-1].Transition.Cause; !strings.Contains(cause, "eth0") {
					t.Errorf("cause %q does not name the interface", cause)
				}
			}
		})
	}
	t.Run("backup: normal rules", func(t *testing.T) {
		m, clk := following(t, testConfig(100, "198.51.100.11"))
		m.SetLink(false, nil)
		clk.advance(300 * time.Millisecond)
		if got, want := describe(m.SetLink(true, nil)), "release arm(master_down_timer,3.609375s) FAULT->BACKUP[link_up]"; got != want {
			t.Errorf("got %s want %s", got, want)
		}
	})
	t.Run("a Backup since: its next flap is a Backup's", func(t *testing.T) {
		m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
		m.SetLink(false, nil)
		m.SetFault("tracker api failing", nil)
		m.SetLink(true, nil)  // stays in Fault
		m.SetFault("", nil)   // Backup
		m.SetLink(false, nil) // a Backup's flap
		clk.advance(300 * time.Millisecond)
		if got := describe(m.SetLink(true, nil)); !strings.HasSuffix(got, "FAULT->BACKUP[link_up]") {
			t.Errorf("a Backup resumed an old term as Master: %s", got)
		}
	})
	t.Run("stopped meanwhile", func(t *testing.T) {
		m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
		m.SetLink(false, nil)
		m.Shutdown(nil)
		m.Start(false, nil)
		clk.advance(300 * time.Millisecond)
		if got := describe(m.SetLink(true, nil)); !strings.HasSuffix(got, "FAULT->BACKUP[link_up]") {
			t.Errorf("a restarted machine resumed an old term: %s", got)
		}
	})
}

func TestMasterDownAdverts(t *testing.T) {
	cfg := testConfig(100, "198.51.100.11")
	cfg.MasterDownAdverts = 5
	m, _ := backupMachine(t, cfg)
	if got, want := m.MasterDownInterval(), 5*time.Second+skew(100, time.Second); got != want {
		t.Errorf("Master_Down_Interval %v, want 5 intervals + Skew_Time = %v", got, want)
	}
	for _, n := range []int{1, 2, 11} {
		bad := testConfig(100, "198.51.100.11")
		bad.MasterDownAdverts = n
		if _, err := NewMachine(bad, newFakeClock()); err == nil {
			t.Errorf("master down adverts %d accepted", n)
		}
	}
	def, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
	if got, want := def.MasterDownInterval(), mdi(100, time.Second); got != want {
		t.Errorf("default Master_Down_Interval %v, want RFC %v", got, want)
	}
}

func TestDownTimerMismatchWarning(t *testing.T) {
	tests := []struct {
		name    string
		adverts int
		silence time.Duration // of master12 when other13 advertises as Master
		want    string
	}{
		{"peer took over after 3.7 intervals, we wait 5", 5, 3700 * time.Millisecond,
			"down_timer_mismatch(198.51.100.13) arm(master_down_timer,5.609375s)"},
		{"peer preempted while the Master spoke", 5, 1500 * time.Millisecond, "arm(master_down_timer,5.609375s)"},
		{"we wait 3 adverts too: nothing to say", 3, 3500 * time.Millisecond, "arm(master_down_timer,3.609375s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			cfg.MasterDownAdverts = tt.adverts
			cfg.Peers = []netip.Addr{mustAddr(master12), mustAddr(other13)}
			m, clk := backupMachine(t, cfg)
			m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, time.Second), nil)
			clk.advance(tt.silence)
			out, err := m.ReceiveAdvert(mustAddr(other13), TTL, advert(120, time.Second), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(out); got != tt.want {
				t.Errorf("got %s\nwant %s", got, tt.want)
			}
			for _, a := range out {
				if a.Kind == ActDownTimerMismatch && !strings.Contains(a.Detail, "master_down_adverts") {
					t.Errorf("detail %q does not name the setting", a.Detail)
				}
			}
		})
	}
}

func TestSlowMasterOnlyOneEarlyTakeover(t *testing.T) {
	// A Master advertising every 5s, a Backup configured for 1s, multicast:
	// the Backup does not learn 5s from the first advert, so it times out
	// before the second; when it yields it learns it, and stays Backup.
	m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
	start := clk.now
	next := start
	takeovers := 0
	for clk.now.Sub(start) < time.Minute {
		if due := m.deadline[TimerMasterDown]; !due.IsZero() && due.Before(next) {
			clk.now = due
			if out := describe(m.TimerFired(TimerMasterDown, nil)); strings.Contains(out, "->MASTER") {
				takeovers++
			}
			continue
		}
		clk.now = next
		m.ReceiveAdvert(mustAddr(master12), TTL, advert(150, 5*time.Second), nil)
		next = next.Add(5 * time.Second)
	}
	if takeovers != 1 {
		t.Errorf("%d takeovers in a minute beside a slower Master, want 1", takeovers)
	}
	if s, _ := m.State(); s != StateBackup || m.MasterAdverInterval() != 5*time.Second {
		t.Errorf("state %v, Master_Adver_Interval %v; want BACKUP and 5s", s, m.MasterAdverInterval())
	}
}
