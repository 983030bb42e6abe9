package vrrp

import (
	"errors"
	"net/netip"
	"path/filepath"
	"testing"
	"time"
)

func vips6() []netip.Addr { return []netip.Addr{mustAddr("2001:db8::10")} }

// testConfig6 is testConfig for an IPv6 multicast instance.
func testConfig6(prio uint8, primary string) Config {
	cfg := testConfig(prio, primary)
	cfg.Addresses = vips6()
	return cfg
}

func advert6(prio uint8) *Advertisement {
	return &Advertisement{VRID: 51, Priority: prio, Interval: time.Second, Addresses: vips6()}
}

func TestNewMachineIPv6Config(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"link-local primary", func(c *Config) {}, true},
		{"link-local primary with zone", func(c *Config) { c.Primary = mustAddr("fe80::1%eth0") }, true},
		{"global primary, multicast", func(c *Config) { c.Primary = mustAddr("2001:db8::1") }, false},
		{"global primary, unicast", func(c *Config) {
			c.Primary, c.Peers = mustAddr("2001:db8::1"), []netip.Addr{mustAddr("2001:db8::2")}
		}, true},
		{"ipv4 address in an ipv6 instance", func(c *Config) { c.Addresses = vips() }, false},
		{"ipv4-mapped address", func(c *Config) { c.Addresses = []netip.Addr{mustAddr("::ffff:198.51.100.10")} }, false},
		{"ipv4 peer", func(c *Config) { c.Peers = []netip.Addr{mustAddr("198.51.100.12")} }, false},
		{"ipv4-mapped primary", func(c *Config) { c.Primary = mustAddr("::ffff:198.51.100.11") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig6(100, "fe80::1")
			tt.mod(&cfg)
			_, err := NewMachine(cfg, newFakeClock())
			if (err == nil) != tt.ok {
				t.Errorf("NewMachine: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestReceiveAdvertIPv6Drops(t *testing.T) {
	m, _ := backupMachine(t, testConfig6(100, "fe80::1"))
	tests := []struct {
		name string
		src  string
		ttl  int
		adv  *Advertisement
		want error
	}{
		{"hop limit 254", "fe80::2", 254, advert6(150), DropTTL},
		{"hop limit 1", "fe80::2", 1, advert6(150), DropTTL},
		{"global source", "2001:db8::2", TTL, advert6(150), DropSourceNotLinkLocal},
		{"ipv4 source", "198.51.100.12", TTL, advert6(150), DropFamily},
		{"ipv4-mapped source", "::ffff:198.51.100.12", TTL, advert6(150), DropFamily},
		{"own advert", "fe80::1", TTL, advert6(150), DropOwnAdvert},
		{"own advert with zone", "fe80::1%eth0", TTL, advert6(150), DropOwnAdvert},
		{"ipv4 address list", "fe80::2", TTL, advert(150, time.Second), DropAddressList},
		{"accepted", "fe80::2", TTL, advert6(150), nil},
		{"accepted with zone", "fe80::3%eth0", TTL, advert6(150), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.ReceiveAdvert(mustAddr(tt.src), tt.ttl, tt.adv, nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
		})
	}
	// An IPv4 instance drops an IPv6 advert for its family, not its source.
	m4, _ := backupMachine(t, testConfig(100, "198.51.100.11"))
	if _, err := m4.ReceiveAdvert(mustAddr("fe80::2"), TTL, advert6(150), nil); err != DropFamily {
		t.Errorf("IPv4 instance, IPv6 advert: %v, want %v", err, DropFamily)
	}
}

// TestIPv6TieBreak: equal priorities are decided by the link-local source
// addresses compared as unsigned 128-bit integers (RFC 5798 section 6.4.3),
// whatever their zones.
func TestIPv6TieBreak(t *testing.T) {
	tests := []struct {
		primary, src string
		yield        bool
	}{
		{"fe80::1", "fe80::2", true},
		{"fe80::2", "fe80::1", false},
		{"fe80::ffff", "fe80::1:0", true},                     // compared as numbers, not as text
		{"fe80::ffff:ffff:ffff", "fe80::8000:0:0:1", true},    // the top bit of the interface identifier
		{"fe80::8000:0:0:1", "fe80::ffff:ffff:ffff", false},   // ... and the other way round
		{"fe80::100:0:0:0", "fe80::ff:ffff:ffff:ffff", false}, // the high groups decide
		{"fe80::1", "fe80::2%eth0", true},
		{"fe80::2%eth0", "fe80::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.primary+" vs "+tt.src, func(t *testing.T) {
			m, clk := masterMachine(t, testConfig6(100, tt.primary))
			clk.advance(300 * time.Millisecond)
			if _, err := m.ReceiveAdvert(mustAddr(tt.src), TTL, advert6(100), nil); err != nil {
				t.Fatal(err)
			}
			s, _ := m.State()
			if got := s == StateBackup; got != tt.yield {
				t.Errorf("state %v, want yield=%v", s, tt.yield)
			}
		})
	}
}

// TestUnicastTTLRange: a unicast instance accepts the configured range, a
// multicast one only 255, and the range defaults to 255..255.
func TestUnicastTTLRange(t *testing.T) {
	peer := "198.51.100.12"
	unicast := func(lo, hi uint8) func(*Config) {
		return func(c *Config) {
			c.Peers = []netip.Addr{mustAddr(peer)}
			c.UnicastMinTTL, c.UnicastMaxTTL = lo, hi
		}
	}
	tests := []struct {
		name string
		mod  func(*Config)
		ttl  int
		want error
	}{
		{"multicast 255", func(*Config) {}, 255, nil},
		{"multicast 254", func(*Config) {}, 254, DropTTL},
		{"unicast default 255", unicast(0, 0), 255, nil},
		{"unicast default 254", unicast(0, 0), 254, DropTTL},
		{"unicast 250..255: 255", unicast(250, 255), 255, nil},
		{"unicast 250..255: 250", unicast(250, 255), 250, nil},
		{"unicast 250..255: 249", unicast(250, 255), 249, DropTTL},
		{"unicast 250..254: 255", unicast(250, 254), 255, DropTTL},
		{"unicast 1..255: 1", unicast(1, 255), 1, nil},
		{"unicast 1..255: 0", unicast(1, 255), 0, DropTTL},
		{"unicast 1..255: 256", unicast(1, 255), 256, DropTTL},
		{"unicast min only: 253..255", unicast(253, 0), 253, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			tt.mod(&cfg)
			m, _ := backupMachine(t, cfg)
			_, err := m.ReceiveAdvert(mustAddr(peer), tt.ttl, advert(150, time.Second), nil)
			if !errors.Is(err, tt.want) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
		})
	}
}

func TestUnicastTTLRangeRefused(t *testing.T) {
	tests := []struct {
		name   string
		peers  bool
		lo, hi uint8
	}{
		{"range on multicast", false, 250, 255},
		{"max below 255 on multicast", false, 0, 254},
		{"empty range", true, 254, 250},
		{"max only, below the default min", true, 0, 250},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(100, "198.51.100.11")
			if tt.peers {
				cfg.Peers = []netip.Addr{mustAddr("198.51.100.12")}
			}
			cfg.UnicastMinTTL, cfg.UnicastMaxTTL = tt.lo, tt.hi
			if _, err := NewMachine(cfg, newFakeClock()); err == nil {
				t.Error("NewMachine accepted the range")
			}
		})
	}
}

// TestChecksumForms: Decode accepts both IPv4 forms and says which it saw;
// over IPv6 only the pseudo-header verifies and Append refuses the other.
func TestChecksumForms(t *testing.T) {
	adv := Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: []netip.Addr{mustAddr("198.51.100.10")}}
	for _, form := range ChecksumForms() {
		t.Run(form.String(), func(t *testing.T) {
			a := adv
			a.Checksum = form
			b, err := a.Append(nil, src4, GroupIPv4)
			if err != nil {
				t.Fatal(err)
			}
			var got Advertisement
			if err := got.Decode(b, src4, GroupIPv4); err != nil {
				t.Fatal(err)
			}
			if got.Checksum != form {
				t.Errorf("decoded form %v, want %v", got.Checksum, form)
			}
			// Only the pseudo-header form depends on the addresses.
			err = got.Decode(b, src4, mustAddr("198.51.100.12"))
			if form == ChecksumPseudoHeader && err != DropChecksum || form == ChecksumNoPseudoHeader && err != nil {
				t.Errorf("decoded with another destination: %v", err)
			}
		})
	}
	a := Advertisement{VRID: 51, Priority: 100, Interval: time.Second, Addresses: vips6(), Checksum: ChecksumNoPseudoHeader}
	if b, err := a.Append([]byte{1}, src6, GroupIPv6); err == nil || len(b) != 1 {
		t.Errorf("Append of an IPv6 advert without the pseudo-header: %v, %d bytes", err, len(b))
	}
	a.Checksum = numChecksumForms
	if _, err := a.Append(nil, src4, GroupIPv4); err == nil {
		t.Error("Append accepted an invalid checksum form")
	}
	// An IPv6 packet whose checksum leaves out the pseudo-header is bad.
	a.Checksum = ChecksumPseudoHeader
	b, err := a.Append(nil, src6, GroupIPv6)
	if err != nil {
		t.Fatal(err)
	}
	b[6], b[7] = 0, 0
	c := checksum(b, src6, GroupIPv6, ChecksumNoPseudoHeader)
	b[6], b[7] = byte(c>>8), byte(c)
	var got Advertisement
	if err := got.Decode(b, src6, GroupIPv6); err != DropChecksum {
		t.Errorf("IPv6 advert without the pseudo-header: %v, want %v", err, DropChecksum)
	}
	if ChecksumForm(9).String() != "invalid" {
		t.Error("out-of-range form not invalid")
	}
}

// TestGoldenIPv6AdvertsAccepted: what keepalived and FRR send over IPv6
// passes the receiver's checks of an IPv6 machine (hop limit, link-local
// source) and acts on the election: our Master, priority 100 from fe80::1,
// yields to each sender (a higher priority, or the same from a higher
// link-local address) and answers a priority 0.
func TestGoldenIPv6AdvertsAccepted(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*-ipv6-*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no IPv6 golden adverts: %v", err)
	}
	for _, f := range files {
		g := readGolden(t, f)
		t.Run(g.file, func(t *testing.T) {
			var a Advertisement
			if err := a.Decode(g.payload, g.src, g.dst); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig6(100, "fe80::1")
			cfg.Addresses = append([]netip.Addr(nil), a.Addresses...)
			cfg.SplitBrainRecovery = false // no last advert when yielding
			m, clk := masterMachine(t, cfg)
			clk.advance(300 * time.Millisecond)
			out, err := m.ReceiveAdvert(g.src, g.ttl, &a, nil)
			if err != nil {
				t.Fatalf("ReceiveAdvert: %v", err)
			}
			want, wantActs := StateBackup, "stop(adver_timer) release arm(master_down_timer,3.609375s) MASTER->BACKUP[higher_master]"
			if a.Priority == 0 {
				want, wantActs = StateMaster, "send(100) arm(adver_timer,1s)"
			}
			if s, _ := m.State(); s != want || describe(out) != wantActs {
				t.Errorf("state %v after %s, want %v after %s", s, describe(out), want, wantActs)
			}
		})
	}
}
