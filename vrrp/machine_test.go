package vrrp

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}
func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
func vips() []netip.Addr           { return []netip.Addr{mustAddr("198.51.100.10")} }
func testConfig(prio uint8, primary string) Config {
	return Config{
		Interface:          "eth0",
		VRID:               51,
		Priority:           prio,
		AdvertInterval:     time.Second,
		Preempt:            true,
		Addresses:          vips(),
		Primary:            mustAddr(primary),
		SplitBrainRecovery: true,
	}
}

// describe renders actions compactly so that tables read like the RFC.
func describe(as []Action) string {
	var parts []string
	for _, a := range as {
		switch a.Kind {
		case ActSendAdvert:
			parts = append(parts, fmt.Sprintf("send(%d)", a.Priority))
		case ActTakeAddresses:
			parts = append(parts, "take")
		case ActReleaseAddresses:
			parts = append(parts, "release")
		case ActAnnounce:
			parts = append(parts, "announce")
		case ActArmTimer:
			parts = append(parts, fmt.Sprintf("arm(%v,%v)", a.Timer, a.After))
		case ActStopTimer:
			parts = append(parts, fmt.Sprintf("stop(%v)", a.Timer))
		case ActTransition:
			parts = append(parts, fmt.Sprintf("%v->%v[%v]", a.Transition.From, a.Transition.To, a.Transition.Reason))
		case ActAddressMismatch:
			parts = append(parts, fmt.Sprintf("mismatch(%v)", a.Peer))
		case ActDownTimerMismatch:
			parts = append(parts, fmt.Sprintf("down_timer_mismatch(%v)", a.Peer))
		case ActForeignMaster:
			parts = append(parts, fmt.Sprintf("foreign_master(%v)", a.Peer))
		default:
			parts = append(parts, "?")
		}
	}
	return strings.Join(parts, " ")
}

func advert(prio uint8, interval time.Duration) *Advertisement {
	return &Advertisement{VRID: 51, Priority: prio, Interval: interval, Addresses: vips()}
}

// backupMachine returns a started machine in Backup.
func backupMachine(t *testing.T, cfg Config) (*Machine, *fakeClock) {
	t.Helper()
	clk := newFakeClock()
	m, err := NewMachine(cfg, clk)
	if err != nil {
		t.Fatal(err)
	}
	m.Start(true, nil)
	return m, clk
}

// masterMachine returns a machine that became Master after Master_Down_Interval.
func masterMachine(t *testing.T, cfg Config) (*Machine, *fakeClock) {
	t.Helper()
	m, clk := backupMachine(t, cfg)
	clk.advance(m.MasterDownInterval())
	m.TimerFired(TimerMasterDown, nil)
	if s, _ := m.State(); s != StateMaster {
		t.Fatalf("setup: state %v, want MASTER", s)
	}
	return m, clk
}

func TestStart(t *testing.T) {
	tests := []struct {
		name   string
		linkUp bool
		fault  string
		want   string
	}{
		{"link up", true, "", "release arm(master_down_timer,3.609375s) INITIALIZE->BACKUP[startup]"},
		{"link down", false, "", "release INITIALIZE->FAULT[link_down]"},
		{"fault demanded", true, "tracker api failing", "release INITIALIZE->FAULT[fault]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMachine(testConfig(100, "198.51.100.11"), newFakeClock())
			if err != nil {
				t.Fatal(err)
			}
			m.SetFault(tt.fault, nil)
			if got := describe(m.Start(tt.linkUp, nil)); got != tt.want {
				t.Errorf("Start:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNewMachineRefusesBadConfig(t *testing.T) {
	base := testConfig(100, "198.51.100.11")
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"vrid 0", func(c *Config) { c.VRID = 0 }},
		{"priority 0", func(c *Config) { c.Priority = 0 }},
		{"priority 255", func(c *Config) { c.Priority = 255 }},
		{"interval 5ms", func(c *Config) { c.AdvertInterval = 5 * time.Millisecond }},
		{"interval 15ms", func(c *Config) { c.AdvertInterval = 15 * time.Millisecond }},
		{"interval 41s", func(c *Config) { c.AdvertInterval = 41 * time.Second }},
		{"no addresses", func(c *Config) { c.Addresses = nil }},
		{"mixed family", func(c *Config) { c.Addresses = []netip.Addr{mustAddr("2001:db8::1")} }},
		{"no primary", func(c *Config) { c.Primary = netip.Addr{} }},
		{"negative delay", func(c *Config) { c.PreemptDelay = -time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.mod(&cfg)
			if _, err := NewMachine(cfg, newFakeClock()); err == nil {
				t.Error("NewMachine accepted a bad config")
			}
		})
	}
}

// TestBackup covers RFC 5798 section 6.4.2.
func TestBackup(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func(*Config)
		src     string
		advert  *Advertisement
		want    string
		wantMAI time.Duration
		// steady: another advert the same would only push the timer back.
		steady bool
	}{
		{
			name: "higher priority resets Master_Down_Timer", src: "198.51.100.12", advert: advert(150, time.Second),
			want: "arm(master_down_timer,3.609375s)", wantMAI: time.Second, steady: true,
		},
		{
			name: "equal priority is accepted", src: "198.51.100.9", advert: advert(100, time.Second),
			want: "arm(master_down_timer,3.609375s)", wantMAI: time.Second, steady: true,
		},
		{
			// A configured peer's at once; a host we did not know only
			// from its next advert (TestUnknownHosts). Priority 0 is in
			// TestPriorityZero: it needs a Master followed.
			name: "learns a peer's interval", cfg: func(c *Config) { c.Peers = []netip.Addr{mustAddr("198.51.100.12")} },
			src: "198.51.100.12", advert: advert(150, 2*time.Second),
			want: "arm(master_down_timer,7.21875s)", wantMAI: 2 * time.Second, steady: true,
		},
		{
			name: "lower priority with preempt is discarded", src: "198.51.100.12", advert: advert(50, time.Second),
			want: "", wantMAI: time.Second,
		},
		{
			name: "lower priority without preempt is accepted",
			cfg:  func(c *Config) { c.Preempt = false; c.Peers = []netip.Addr{mustAddr("198.51.100.12")} },
			src:  "198.51.100.12", advert: advert(50, 500*time.Millisecond),
			want: "arm(master_down_timer,1.804687s)", wantMAI: 500 * time.Millisecond, steady: true,
		},
		{
			name: "lower priority within the preempt delay is accepted", cfg: func(c *Config) { c.PreemptDelay = 10 * time.Second },
			src: "198.51.100.12", advert: advert(50, time.Second),
			want: "arm(master_down_timer,3.609375s)", wantMAI: time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			m, _ := backupMachine(t, cfg)
			out, err := m.ReceiveAdvert(mustAddr(tt.src), TTL, tt.advert, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Durations print truncated to the microsecond in the table.
			got := describe(out)
			got = strings.ReplaceAll(got, "1.8046875s", "1.804687s")
			if got != tt.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tt.want)
			}
			if s, _ := m.State(); s != StateBackup {
				t.Errorf("state %v, want BACKUP", s)
			}
			if master, steady := m.Steady(); steady != tt.steady || steady && master != mustAddr(tt.src) {
				t.Errorf("Steady() = %v, %v; want %v (%s)", master, steady, tt.steady, tt.src)
			}
			if m.MasterAdverInterval() != tt.wantMAI {
				t.Errorf("Master_Adver_Interval %v, want %v", m.MasterAdverInterval(), tt.wantMAI)
			}
		})
	}
}

func TestBackupMasterDown(t *testing.T) {
	m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
	if _, err := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(150, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	clk.advance(m.MasterDownInterval() - time.Nanosecond)
	if got := describe(m.TimerFired(TimerMasterDown, nil)); got != "" {
		t.Fatalf("timer fired early: %s", got)
	}
	clk.advance(time.Nanosecond)
	out := m.TimerFired(TimerMasterDown, nil)
	want := "send(100) take arm(adver_timer,1s) BACKUP->MASTER[master_down]"
	if got := describe(out); got != want {
		t.Fatalf("actions:\n got %s\nwant %s", got, want)
	}
	if got, want := out[len(out)-1].Transition.Cause, "no advert from 198.51.100.12 for 3.61s"; got != want {
		t.Errorf("cause %q, want %q", got, want)
	}
}

func TestCauses(t *testing.T) {
	t.Run("no master ever", func(t *testing.T) {
		m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
		clk.advance(m.MasterDownInterval())
		out := m.TimerFired(TimerMasterDown, nil)
		if got, want := out[len(out)-1].Transition.Cause, "no advert from any master for 3.61s"; got != want {
			t.Errorf("cause %q, want %q", got, want)
		}
	})
	t.Run("released", func(t *testing.T) {
		m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
		m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(150, time.Second), nil)
		m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(0, time.Second), nil)
		clk.advance(m.SkewTime())
		out := m.TimerFired(TimerMasterDown, nil)
		tr := out[len(out)-1].Transition
		if tr.Reason != ReasonMasterLeft || tr.Cause != "priority 0 from master 198.51.100.12: it is releasing" {
			t.Errorf("transition %+v", tr)
		}
	})
	t.Run("preempt", func(t *testing.T) {
		m, clk := backupMachine(t, testConfig(150, "198.51.100.11"))
		m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
		clk.advance(m.MasterDownInterval())
		out := m.TimerFired(TimerMasterDown, nil)
		tr := out[len(out)-1].Transition
		if tr.Reason != ReasonPreempt || tr.Cause != "preempting master 198.51.100.12: its priority 100 is lower than our 150" {
			t.Errorf("transition %+v", tr)
		}
	})
}

// TestMaster covers RFC 5798 section 6.4.3.
func TestMaster(t *testing.T) {
	tests := []struct {
		name      string
		recovery  bool
		src       string
		advert    *Advertisement
		want      string
		wantState State
		wantCause string
	}{
		{
			name: "adver timer", want: "send(100) arm(adver_timer,1s)", wantState: StateMaster,
		},
		{
			name: "priority 0 is answered at once", src: "198.51.100.12", advert: advert(0, time.Second),
			want: "send(100) arm(adver_timer,1s)", wantState: StateMaster,
		},
		{
			// Not a configured peer: its 2s is learnt from its next
			// advert, not this one (TestUnknownHosts).
			name: "higher priority: yield", src: "198.51.100.12", advert: advert(150, 2*time.Second),
			want:      "stop(adver_timer) release arm(master_down_timer,3.609375s) MASTER->BACKUP[higher_master]",
			wantState: StateBackup, wantCause: "higher priority 150 from 198.51.100.12",
		},
		{
			name: "higher priority with recovery: one last advert", recovery: true, src: "198.51.100.12", advert: advert(150, time.Second),
			want:      "send(100) stop(adver_timer) release arm(master_down_timer,3.609375s) MASTER->BACKUP[higher_master]",
			wantState: StateBackup,
		},
		{
			name: "equal priority, higher address: yield", src: "198.51.100.12", advert: advert(100, time.Second),
			want:      "stop(adver_timer) release arm(master_down_timer,3.609375s) MASTER->BACKUP[higher_master]",
			wantState: StateBackup, wantCause: "equal priority 100 from 198.51.100.12, a higher address than ours",
		},
		{
			name: "equal priority, lower address: discard", src: "198.51.100.9", advert: advert(100, time.Second),
			want: "", wantState: StateMaster,
		},
		{
			name: "lower priority: discard", src: "198.51.100.12", advert: advert(50, time.Second),
			want: "", wantState: StateMaster,
		},
		{
			name: "lower priority with recovery: answer and announce", recovery: true, src: "198.51.100.12", advert: advert(50, time.Second),
			want: "send(100) arm(adver_timer,1s) announce", wantState: StateMaster,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			cfg.SplitBrainRecovery = tt.recovery
			m, clk := masterMachine(t, cfg)
			var out []Action
			if tt.advert == nil {
				clk.advance(time.Second)
				out = m.TimerFired(TimerAdvert, nil)
			} else {
				clk.advance(300 * time.Millisecond)
				var err error
				if out, err = m.ReceiveAdvert(mustAddr(tt.src), TTL, tt.advert, nil); err != nil {
					t.Fatal(err)
				}
			}
			if got := describe(out); got != tt.want {
				t.Errorf("actions:\n got %s\nwant %s", got, tt.want)
			}
			if s, _ := m.State(); s != tt.wantState {
				t.Errorf("state %v, want %v", s, tt.wantState)
			}
			if tt.wantCause != "" {
				if got := out[len(out)-1].Transition.Cause; got != tt.wantCause {
					t.Errorf("cause %q, want %q", got, tt.wantCause)
				}
			}
		})
	}
}

func TestSplitBrainAnnounceIsRateLimited(t *testing.T) {
	m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
	var announces int
	for i := 0; i < 10; i++ {
		clk.advance(100 * time.Millisecond)
		out, _ := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(50, time.Second), nil)
		announces += strings.Count(describe(out), "announce")
	}
	if announces != 1 {
		t.Errorf("%d announcements in one second, want 1", announces)
	}
}

func TestShutdown(t *testing.T) {
	t.Run("master", func(t *testing.T) {
		m, _ := masterMachine(t, testConfig(100, "198.51.100.11"))
		want := "stop(adver_timer) send(0) release MASTER->INITIALIZE[shutdown]"
		if got := describe(m.Shutdown(nil)); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	})
	t.Run("backup", func(t *testing.T) {
		m, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
		want := "stop(master_down_timer) release BACKUP->INITIALIZE[shutdown]"
		if got := describe(m.Shutdown(nil)); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		if got := describe(m.TimerFired(TimerMasterDown, nil)); got != "" {
			t.Errorf("stopped machine acted on a timer: %s", got)
		}
	})
}

func TestLinkAndFault(t *testing.T) {
	t.Run("master link down: fault without advert", func(t *testing.T) {
		m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
		out := m.SetLink(false, nil)
		want := "stop(adver_timer) release MASTER->FAULT[link_down]"
		if got := describe(out); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		if got := out[len(out)-1].Transition.Cause; got != "interface eth0 down" {
			t.Errorf("cause %q", got)
		}
		// Down long enough for the Backups to take over (a short flap is
		// TestLinkFlap).
		clk.advance(3 * time.Second)
		want = "release arm(master_down_timer,3.609375s) FAULT->BACKUP[link_up]"
		if got := describe(m.SetLink(true, nil)); got != want {
			t.Errorf("link up: got %s\nwant %s", got, want)
		}
	})
	t.Run("master fault: graceful release", func(t *testing.T) {
		m, _ := masterMachine(t, testConfig(100, "198.51.100.11"))
		want := "stop(adver_timer) send(0) release MASTER->FAULT[fault]"
		if got := describe(m.SetFault("tracker api failing", nil)); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		// The link flapping while the fault holds must not leave Fault.
		m.SetLink(false, nil)
		if got := describe(m.SetLink(true, nil)); got != "" {
			t.Errorf("link up during fault: %s", got)
		}
		out := m.SetFault("", nil)
		if got := describe(out); got != "release arm(master_down_timer,3.609375s) FAULT->BACKUP[fault_cleared]" {
			t.Errorf("fault cleared: %s", got)
		}
	})
	t.Run("backup fault", func(t *testing.T) {
		m, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
		want := "stop(master_down_timer) release BACKUP->FAULT[fault]"
		if got := describe(m.SetFault("tracker api failing", nil)); got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
	})
}

func TestSetPriority(t *testing.T) {
	m, _ := masterMachine(t, testConfig(100, "198.51.100.11"))
	if got, want := describe(m.SetPriority(80, nil)), "send(80) arm(adver_timer,1s)"; got != want {
		t.Errorf("master: got %s want %s", got, want)
	}
	if got := describe(m.SetPriority(80, nil)); got != "" {
		t.Errorf("unchanged priority acted: %s", got)
	}
	b, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
	if got := describe(b.SetPriority(200, nil)); got != "" {
		t.Errorf("backup acted: %s", got)
	}
	if got, want := b.SkewTime(), 56*time.Second/256; got != want {
		t.Errorf("skew after priority change %v, want %v", got, want)
	}
}

func TestReceiveAdvertDrops(t *testing.T) {
	m, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
	tests := []struct {
		name string
		src  string
		ttl  int
		adv  *Advertisement
		want DropReason
	}{
		{"ttl 254", "198.51.100.12", 254, advert(150, time.Second), DropTTL},
		{"other vrid", "198.51.100.12", TTL, &Advertisement{VRID: 52, Priority: 150, Interval: time.Second, Addresses: vips()}, DropVRID},
		{"own advert", "198.51.100.11", TTL, advert(150, time.Second), DropOwnAdvert},
		{"ipv6 source", "2001:db8::1", TTL, advert(150, time.Second), DropFamily},
		{"other addresses", "198.51.100.12", TTL, &Advertisement{VRID: 51, Priority: 150, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.20")}}, DropAddressList},
		{"extra address", "198.51.100.12", TTL, &Advertisement{VRID: 51, Priority: 150, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10"), mustAddr("198.51.100.20")}}, DropAddressList},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := m.ReceiveAdvert(mustAddr(tt.src), tt.ttl, tt.adv, nil)
			if err != tt.want {
				t.Errorf("err %v, want %v", err, tt.want)
			}
			if len(out) != 0 {
				t.Errorf("dropped advert acted: %s", describe(out))
			}
		})
	}
}

func TestAddressOrderDoesNotMatter(t *testing.T) {
	cfg := testConfig(100, "198.51.100.11")
	cfg.Addresses = []netip.Addr{mustAddr("198.51.100.10"), mustAddr("198.51.100.20")}
	m, _ := backupMachine(t, cfg)
	adv := &Advertisement{VRID: 51, Priority: 150, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.20"), mustAddr("198.51.100.10")}}
	if _, err := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, adv, nil); err != nil {
		t.Errorf("reordered list refused: %v", err)
	}
}

func TestStaleTimerIgnored(t *testing.T) {
	m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
	clk.advance(2 * time.Second)
	m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(150, time.Second), nil)
	clk.advance(2 * time.Second) // past the first deadline, not the re-armed one
	if got := describe(m.TimerFired(TimerMasterDown, nil)); got != "" {
		t.Errorf("stale expiry acted: %s", got)
	}
	if got := describe(m.TimerFired(TimerAdvert, nil)); got != "" {
		t.Errorf("unarmed timer acted: %s", got)
	}
}

// A driver that lines up many groups' adverts fires the Master's advert
// timer early: it advertises then and counts the next interval from then,
// however early (a reload may have shortened the interval since). Never on
// probation after a freeze, and never a Backup's timer.
func TestMasterAdvertTimerMayFireEarly(t *testing.T) {
	m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
	if !m.AdvertMayBeEarly() {
		t.Fatal("a Master's advert may not be early")
	}
	clk.advance(300 * time.Millisecond)
	if got := describe(m.TimerFired(TimerAdvert, nil)); !strings.Contains(got, "send(") || !strings.HasSuffix(got, "arm(adver_timer,1s)") {
		t.Errorf("advert timer fired 700ms early: %s, want an advert and the timer armed for 1s", got)
	}
	if got, want := m.deadline[TimerAdvert], clk.now.Add(time.Second); !got.Equal(want) {
		t.Errorf("next advert due %v, want %v", got, want)
	}

	// Armed at 3 s, then reloaded to 1 s: an expiry 2.5 s early still sends.
	cfg := testConfig(150, "198.51.100.11")
	cfg.AdvertInterval = 3 * time.Second
	slow, sclk := masterMachine(t, cfg)
	cfg.AdvertInterval = time.Second
	if err := slow.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	sclk.advance(500 * time.Millisecond)
	if got := describe(slow.TimerFired(TimerAdvert, nil)); !strings.Contains(got, "send(") {
		t.Errorf("after a reload to 1s, the timer armed for 3s fired 2.5s early: %s, want an advert", got)
	}

	// Frozen 10 s: probation, one full interval of listening.
	frozen, fclk := masterMachine(t, testConfig(150, "198.51.100.11"))
	fclk.advance(10 * time.Second)
	frozen.TimerFired(TimerAdvert, nil)
	if frozen.AdvertMayBeEarly() {
		t.Error("on probation the advert may be early")
	}
	fclk.advance(300 * time.Millisecond)
	if got := describe(frozen.TimerFired(TimerAdvert, nil)); got != "" {
		t.Errorf("on probation, the timer fired 700ms early acted: %s", got)
	}

	b, bclk := backupMachine(t, testConfig(100, "198.51.100.11"))
	if b.AdvertMayBeEarly() {
		t.Error("a Backup's advert may be early")
	}
	bclk.advance(time.Second)
	if got := describe(b.TimerFired(TimerMasterDown, nil)); got != "" {
		t.Errorf("a Backup's Master_Down_Timer fired early acted: %s", got)
	}
}

func TestPreemptDelay(t *testing.T) {
	cfg := testConfig(150, "198.51.100.11")
	cfg.PreemptDelay = 10 * time.Second
	m, clk := backupMachine(t, cfg)
	var became time.Duration
	start := clk.now
	next := start
	// The lower-priority master advertises every second; the machine's own
	// timer fires when due.
	for clk.now.Sub(start) < time.Minute {
		due := m.deadline[TimerMasterDown]
		if !due.IsZero() && !due.After(next) {
			clk.now = due
			m.TimerFired(TimerMasterDown, nil)
			if s, _ := m.State(); s == StateMaster {
				became = clk.now.Sub(start)
				break
			}
			continue
		}
		clk.now = next
		m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
		next = next.Add(time.Second)
	}
	// The lower-priority master is first heard at 0s; adverts until 9s are
	// accepted, the one at 10s (delay elapsed) is discarded, so the
	// Master_Down_Timer armed at 9s runs out.
	want := 9*time.Second + 3*time.Second + 106*time.Second/256
	if became != want {
		t.Errorf("preempted after %v, want %v", became, want)
	}
}

func TestFrozenMasterYields(t *testing.T) {
	m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
	// Frozen for 10s: the adver timer fires 9s late.
	clk.advance(10 * time.Second)
	if got, want := describe(m.TimerFired(TimerAdvert, nil)), "arm(adver_timer,1s)"; got != want {
		t.Fatalf("late timer: got %s want %s (must stay silent)", got, want)
	}
	// The backup that took over meanwhile advertises.
	clk.advance(200 * time.Millisecond)
	out, err := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "stop(adver_timer) release arm(master_down_timer,3.4140625s) MASTER->BACKUP[frozen]"
	if got := describe(out); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// It does not preempt the router it yielded to.
	for i := 0; i < 10; i++ {
		clk.advance(time.Second)
		m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
		clk.advance(0)
	}
	if due := m.deadline[TimerMasterDown]; due.Sub(clk.now) != m.MasterDownInterval() {
		t.Errorf("yielded router's adverts were not accepted")
	}
}

// Both Backups may take over while the Master is frozen (the lab's VM
// stalled a 10 ms group's Master for 32 ms), and the lower one yields to
// the higher a moment later. Whichever the old Master hears first, it
// ends up following the higher, and an advert of the lower must not make
// it forget whom it yielded to and preempt the winner after all.
func TestFrozenMasterFollowsTheWinnerOfTheTakeover(t *testing.T) {
	higher, lower := mustAddr("198.51.100.12"), mustAddr("198.51.100.13")
	for _, c := range []struct {
		name   string
		first  netip.Addr
		second netip.Addr
	}{{"the higher heard first", higher, lower}, {"the lower heard first", lower, higher}} {
		t.Run(c.name, func(t *testing.T) {
			m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
			clk.advance(10 * time.Second)
			m.TimerFired(TimerAdvert, nil)
			prio := map[netip.Addr]uint8{higher: 100, lower: 50}
			for _, from := range []netip.Addr{c.first, c.second} {
				clk.advance(time.Millisecond)
				m.ReceiveAdvert(from, TTL, advert(prio[from], time.Second), nil)
				if s, _ := m.State(); s != StateBackup {
					t.Fatalf("state %v after the advert of %v, want BACKUP", s, from)
				}
			}
			for range 10 {
				clk.advance(time.Second)
				m.ReceiveAdvert(higher, TTL, advert(100, time.Second), nil)
			}
			if s, _ := m.State(); s != StateBackup {
				t.Fatalf("state %v, want BACKUP", s)
			}
			if due := m.deadline[TimerMasterDown]; due.Sub(clk.now) != m.MasterDownInterval() {
				t.Errorf("the winner's adverts are not accepted: it preempts the router that won the takeover")
			}
		})
	}
}

// A router above the one it yielded to becomes Master once that race is
// over: that is a new Master, and the usual rules apply to it.
func TestFrozenMasterPreemptsANewMaster(t *testing.T) {
	m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
	clk.advance(10 * time.Second)
	m.TimerFired(TimerAdvert, nil)
	clk.advance(200 * time.Millisecond)
	m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
	for range 5 {
		clk.advance(time.Second)
		m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
	}
	// .14 advertises every second; the machine's own timer fires when due.
	next := clk.now.Add(time.Second)
	for end := clk.now.Add(10 * time.Second); clk.now.Before(end); {
		if due := m.deadline[TimerMasterDown]; !due.IsZero() && !due.After(next) {
			clk.now = due
			m.TimerFired(TimerMasterDown, nil)
			if s, _ := m.State(); s == StateMaster {
				return
			}
			continue
		}
		clk.now = next
		m.ReceiveAdvert(mustAddr("198.51.100.14"), TTL, advert(120, time.Second), nil)
		next = next.Add(time.Second)
	}
	t.Errorf("it never preempted the new Master of lower priority")
}

func TestSilentWhileFrozen(t *testing.T) {
	m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
	if m.Silent() {
		t.Fatal("a Master on time is silent")
	}
	clk.advance(10 * time.Second) // frozen: the timer has not even fired yet
	if !m.Silent() {
		t.Error("an overdue Master is not silent")
	}
	m.TimerFired(TimerAdvert, nil) // probation
	if !m.Silent() {
		t.Error("a Master on probation is not silent")
	}
	clk.advance(time.Second)
	m.TimerFired(TimerAdvert, nil)
	if m.Silent() {
		t.Error("a Master that found nobody else is still silent")
	}
}

func TestFrozenMasterResumesWhenAlone(t *testing.T) {
	m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
	clk.advance(10 * time.Second)
	m.TimerFired(TimerAdvert, nil)
	clk.advance(time.Second)
	if got, want := describe(m.TimerFired(TimerAdvert, nil)), "send(150) arm(adver_timer,1s)"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
}

func TestFrozenMasterQueuedAdvertFirst(t *testing.T) {
	// The advert queued while frozen may be read before the timer fires.
	m, clk := masterMachine(t, testConfig(150, "198.51.100.11"))
	clk.advance(10 * time.Second)
	out, _ := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
	if s, _ := m.State(); s != StateBackup {
		t.Errorf("state %v after %s, want BACKUP", s, describe(out))
	}
}

func TestFrozenBackupListensAgain(t *testing.T) {
	m, clk := backupMachine(t, testConfig(100, "198.51.100.11"))
	m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(150, time.Second), nil)
	clk.advance(20 * time.Second)
	if got, want := describe(m.TimerFired(TimerMasterDown, nil)), "arm(master_down_timer,1.609375s)"; got != want {
		t.Fatalf("late master-down: got %s want %s", got, want)
	}
	clk.advance(100 * time.Millisecond)
	m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(150, time.Second), nil)
	if s, _ := m.State(); s != StateBackup {
		t.Errorf("state %v, want BACKUP", s)
	}
}

func TestResign(t *testing.T) {
	m, clk := masterMachine(t, testConfig(100, "198.51.100.11"))
	m.SetPriority(1, nil)
	want := "stop(adver_timer) send(0) release arm(master_down_timer,3.99609375s) MASTER->BACKUP[resigned]"
	if got := describe(m.Resign("drained by operator", nil)); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	// A peer takes over and is accepted even with a lower base priority.
	clk.advance(600 * time.Millisecond)
	out, _ := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(50, time.Second), nil)
	if got := describe(out); got != "arm(master_down_timer,3.99609375s)" {
		t.Errorf("peer advert: %s", got)
	}
	// Nobody takes over: the addresses come back after Master_Down_Interval.
	b, clk2 := masterMachine(t, testConfig(100, "198.51.100.11"))
	b.SetPriority(1, nil)
	b.Resign("drained by operator", nil)
	clk2.advance(b.MasterDownInterval())
	if got := describe(b.TimerFired(TimerMasterDown, nil)); !strings.HasSuffix(got, "BACKUP->MASTER[master_down]") {
		t.Errorf("unowned address not taken back: %s", got)
	}
	if got := describe(b.Resign("again", nil)); !strings.Contains(got, "resigned") {
		t.Errorf("resign as master: %s", got)
	}
	if got := describe(b.Resign("again", nil)); got != "" {
		t.Errorf("resign as backup acted: %s", got)
	}
}

func TestReconfigure(t *testing.T) {
	m, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
	cfg := m.Config()
	cfg.AdvertInterval = 2 * time.Second
	cfg.VRID = 99 // ignored: fixed for the machine's life
	if err := m.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	if m.Config().VRID != 51 || m.MasterDownInterval() != 2*mdi(100, time.Second) {
		t.Errorf("vrid %d, Master_Down_Interval %v", m.Config().VRID, m.MasterDownInterval())
	}
	cfg.AdvertInterval = 5 * time.Millisecond
	if err := m.Reconfigure(cfg); err == nil {
		t.Error("bad interval accepted")
	}
	if m.Config().AdvertInterval != 2*time.Second {
		t.Error("refused reconfiguration changed the machine")
	}
}

func TestResume(t *testing.T) {
	m, err := NewMachine(testConfig(100, "198.51.100.11"), newFakeClock())
	if err != nil {
		t.Fatal(err)
	}
	want := "send(100) take arm(adver_timer,1s) INITIALIZE->MASTER[resumed]"
	if got := describe(m.Resume(true, true, nil)); got != want {
		t.Errorf("master: got %s\nwant %s", got, want)
	}
	b, _ := NewMachine(testConfig(100, "198.51.100.11"), newFakeClock())
	if got := describe(b.Resume(true, false, nil)); !strings.HasSuffix(got, "INITIALIZE->BACKUP[startup]") {
		t.Errorf("backup: %s", got)
	}
	f, _ := NewMachine(testConfig(100, "198.51.100.11"), newFakeClock())
	if got := describe(f.Resume(false, true, nil)); !strings.HasSuffix(got, "INITIALIZE->FAULT[link_down]") {
		t.Errorf("link down: %s", got)
	}
}

func TestTakeoverGrace(t *testing.T) {
	cfg := testConfig(100, "198.51.100.11")
	cfg.TakeoverGrace = 3 * time.Millisecond
	m, clk := backupMachine(t, cfg)
	clk.advance(m.MasterDownInterval())
	want := "send(100) arm(takeover_timer,3ms) arm(adver_timer,1s)"
	if got := describe(m.TimerFired(TimerMasterDown, nil)); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	clk.advance(3 * time.Millisecond)
	if got := describe(m.TimerFired(TimerTakeover, nil)); got != "take BACKUP->MASTER[master_down]" {
		t.Errorf("takeover timer: %s", got)
	}
	// A competing Master heard within the grace: yield without ever taking.
	b, clk2 := backupMachine(t, cfg)
	clk2.advance(b.MasterDownInterval())
	b.TimerFired(TimerMasterDown, nil)
	clk2.advance(time.Millisecond)
	out, _ := b.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, advert(100, time.Second), nil)
	if got, want := describe(out), "stop(adver_timer) stop(takeover_timer) release arm(master_down_timer,3.609375s)"; got != want {
		t.Errorf("yield within the grace:\n got %s\nwant %s (no transition: the address never moved)", got, want)
	}
	if s, _ := b.State(); s != StateBackup {
		t.Errorf("state %v after losing the tie", s)
	}
	clk2.advance(10 * time.Millisecond)
	if got := describe(b.TimerFired(TimerTakeover, nil)); got != "" {
		t.Errorf("stopped takeover timer acted: %s", got)
	}
	bad := testConfig(100, "198.51.100.11")
	bad.TakeoverGrace = time.Second
	if _, err := NewMachine(bad, newFakeClock()); err == nil {
		t.Error("a grace as long as the interval was accepted")
	}
}

// A Master that said it leaves (priority 0) is not steady: its next advert
// matters at once, whatever it says.
func TestPriorityZeroIsNotSteady(t *testing.T) {
	m, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
	src := mustAddr("198.51.100.12")
	if _, err := m.ReceiveAdvert(src, TTL, advert(150, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Steady(); !ok {
		t.Fatal("not steady after the Master's advert")
	}
	if _, err := m.ReceiveAdvert(src, TTL, advert(0, time.Second), nil); err != nil {
		t.Fatal(err)
	}
	if master, ok := m.Steady(); ok {
		t.Errorf("steady (%v) after the Master's priority 0", master)
	}
}
