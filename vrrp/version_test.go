package vrrp

import (
	"errors"
	"testing"
	"time"
)

func testConfigV2(prio uint8, primary string) Config {
	c := testConfig(prio, primary)
	c.Version = Version2
	return c
}

func TestNewMachineRefusesBadV2Config(t *testing.T) {
	pass, _ := PasswordAuth("secret")
	tests := []struct {
		name string
		cfg  Config
	}{
		{"sub-second interval", func() Config {
			c := testConfigV2(100, "198.51.100.11")
			c.AdvertInterval = 100 * time.Millisecond
			return c
		}()},
		{"interval 1.5s", func() Config {
			c := testConfigV2(100, "198.51.100.11")
			c.AdvertInterval = 1500 * time.Millisecond
			return c
		}()},
		{"ipv6", func() Config { c := testConfig6(100, "fe80::1"); c.Version = Version2; return c }()},
		{"AH", func() Config { c := testConfigV2(100, "198.51.100.11"); c.Auth = Auth{Type: AuthAH}; return c }()},
		{"password with VRRPv3 alone", func() Config { c := testConfig(100, "198.51.100.11"); c.Auth = pass; return c }()},
		{"version 4", func() Config { c := testConfig(100, "198.51.100.11"); c.Version = 4; return c }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewMachine(tt.cfg, newFakeClock()); err == nil {
				t.Error("NewMachine accepted a bad config")
			}
		})
	}
}

// VRRPv2 carries up to 255 s, beyond VRRPv3's 40.95 s.
func TestV2LongInterval(t *testing.T) {
	c := testConfigV2(100, "198.51.100.11")
	c.AdvertInterval = 255 * time.Second
	m, _ := backupMachine(t, c)
	if got, want := m.MasterDownInterval(), 765*time.Second+609375*time.Microsecond; got != want {
		t.Errorf("Master_Down_Interval = %v, want %v", got, want)
	}
	c.AdvertInterval = 256 * time.Second
	if _, err := NewMachine(c, newFakeClock()); err == nil {
		t.Error("NewMachine took a VRRPv2 interval of 256s")
	}
}

// RFC 3768 section 6.1: Skew_Time is (256 - Priority) / 256 seconds whatever
// the interval, Master_Down_Interval three intervals plus that.
func TestV2Timers(t *testing.T) {
	c := testConfigV2(100, "198.51.100.11")
	c.AdvertInterval = 3 * time.Second
	m, _ := backupMachine(t, c)
	if got, want := m.SkewTime(), 609375*time.Microsecond; got != want {
		t.Errorf("Skew_Time = %v, want %v", got, want)
	}
	if got, want := m.MasterDownInterval(), 9*time.Second+609375*time.Microsecond; got != want {
		t.Errorf("Master_Down_Interval = %v, want %v", got, want)
	}
}

func TestReceiveAcrossVersions(t *testing.T) {
	pass, _ := PasswordAuth("secret")
	other, _ := PasswordAuth("other")
	v2 := func(prio uint8, interval time.Duration, auth Auth) *Advertisement {
		a := advert(prio, interval)
		a.Version, a.Auth = Version2, auth
		return a
	}
	v3 := func(prio uint8, interval time.Duration) *Advertisement {
		a := advert(prio, interval)
		a.Version = Version
		return a
	}
	tests := []struct {
		name    string
		cfg     func(*Config)
		adv     *Advertisement
		wantErr error
	}{
		{"v3 router drops v2", nil, v2(150, time.Second, Auth{}), DropVersion},
		{"v3 router accepts v2 while moving between versions", func(c *Config) { c.AcceptOtherVersion = true }, v2(150, time.Second, Auth{}), nil},
		{"v2 router drops v3", func(c *Config) { c.Version = Version2 }, v3(150, time.Second), DropVersion},
		{"v2 router accepts v3 while moving", func(c *Config) { c.Version, c.AcceptOtherVersion = Version2, true }, v3(150, time.Second), nil},
		{"v2 router accepts v2", func(c *Config) { c.Version = Version2 }, v2(150, time.Second, Auth{}), nil},
		{"v2 router, password expected, none sent", func(c *Config) { c.Version, c.Auth = Version2, pass }, v2(150, time.Second, Auth{}), DropAuth},
		{"v2 router, other password", func(c *Config) { c.Version, c.Auth = Version2, pass }, v2(150, time.Second, other), DropAuth},
		{"v2 router, our password", func(c *Config) { c.Version, c.Auth = Version2, pass }, v2(150, time.Second, pass), nil},
		{"v2 router, password sent, none expected", func(c *Config) { c.Version = Version2 }, v2(150, time.Second, pass), DropAuth},
		{"v3 router accepting v2 checks their password", func(c *Config) { c.Auth, c.AcceptOtherVersion = pass, true }, v2(150, time.Second, other), DropAuth},
		{"v3 router accepting v2 takes ours", func(c *Config) { c.Auth, c.AcceptOtherVersion = pass, true }, v2(150, time.Second, pass), nil},
		{"v2 router, v3 advert has no password to check", func(c *Config) { c.Version, c.Auth, c.AcceptOtherVersion = Version2, pass, true }, v3(150, time.Second), nil},
		{"v2 router, other interval", func(c *Config) { c.Version = Version2 }, v2(150, 2*time.Second, Auth{}), DropIntervalMismatch},
		{"v2 router, no authentication with stray data", func(c *Config) { c.Version = Version2 }, v2(150, time.Second, Auth{Data: [8]byte{1, 2}}), nil},
		{"v2 router, v3 advert of another interval", func(c *Config) { c.Version, c.AcceptOtherVersion = Version2, true }, v3(150, 100*time.Millisecond), DropIntervalMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			m, _ := backupMachine(t, cfg)
			_, err := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, tt.adv, nil)
			if !errors.Is(err, tt.wantErr) && err != tt.wantErr {
				t.Fatalf("ReceiveAdvert = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && m.Master().Addr != mustAddr("198.51.100.12") {
				t.Errorf("the Master followed is %v, want 198.51.100.12", m.Master().Addr)
			}
		})
	}
}

// A VRRPv3 Backup following a VRRPv2 Master times out on the Master's
// interval, translated from seconds (RFC 5798 section 8.4.2).
func TestV3BackupLearnsV2MastersInterval(t *testing.T) {
	cfg := testConfig(100, "198.51.100.11")
	cfg.AdvertInterval = 100 * time.Millisecond
	cfg.AcceptOtherVersion = true
	cfg.Peers = nil
	m, _ := backupMachine(t, cfg)
	a := advert(150, time.Second)
	a.Version = Version2
	for range 2 { // the first advert of an unknown host does not set it
		if _, err := m.ReceiveAdvert(mustAddr("198.51.100.12"), TTL, a, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.MasterAdverInterval(); got != time.Second {
		t.Errorf("Master_Adver_Interval = %v, want 1s", got)
	}
}

// keepalived's address owner (state MASTER, no priority: 255) is trusted
// when named, and only then, in a multicast group.
func TestAddressOwner(t *testing.T) {
	owner := mustAddr("198.51.100.12")
	for _, tt := range []struct {
		name    string
		owner   bool
		wantErr error
		want    State
	}{
		{"unknown owner dropped", false, DropUnknownOwner, StateMaster},
		{"configured owner preempts", true, nil, StateBackup},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfigV2(254, "198.51.100.11")
			if tt.owner {
				cfg.AddressOwner = owner
			}
			m, _ := masterMachine(t, cfg)
			a := advert(255, time.Second)
			a.Version = Version2
			_, err := m.ReceiveAdvert(owner, TTL, a, nil)
			if err != tt.wantErr {
				t.Fatalf("ReceiveAdvert = %v, want %v", err, tt.wantErr)
			}
			if s, _ := m.State(); s != tt.want {
				t.Errorf("state %v, want %v", s, tt.want)
			}
		})
	}
}
