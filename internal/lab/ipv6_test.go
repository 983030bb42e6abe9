package lab

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/config"
)

func TestIPv6AddressPlan(t *testing.T) {
	for _, c := range []struct {
		got  netip.Addr
		want string
	}{
		{hostAddr6(11), "2001:db8::11"}, {ClientAddr6(), "2001:db8::99"}, {StrangerAddr6(), "2001:db8::9"},
		{DefaultVIP6().Addr(), "2001:db8::10"},
	} {
		if c.got.String() != c.want {
			t.Errorf("got %v, want %s", c.got, c.want)
		}
		if !LANPrefix6().Contains(c.got) {
			t.Errorf("%v outside %v", c.got, LANPrefix6())
		}
	}
}

// The generated configs must stay ones the project's config package
// accepts, with the values the lab means.
func TestVipdConfigIPv6AndDualStackParse(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "vipd.sock")
	c, err := config.Parse("lab.toml", vipdConfig(1, IPv6GroupConfig(3, 100*time.Millisecond), sock, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Instances) != 1 || c.Instances[0].VIPs[0] != DefaultVIP6() || c.Instances[0].Priority != 150 {
		t.Errorf("IPv6 group parsed as %+v", c.Instances)
	}
	dual := DualStackGroupConfig(3, 100*time.Millisecond)
	dual.GARPProbe = "10s"
	b := vipdConfig(2, dual, sock, "")
	c, err = config.Parse("lab.toml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(c.Instances) != 2 {
		t.Fatalf("dual-stack: %d instances, want 2\n%s", len(c.Instances), b)
	}
	lead, fol := c.Instances[0], c.Instances[1]
	if lead.VIPs[0] != DefaultVIP() || lead.Priority != 100 || lead.Follow != "" {
		t.Errorf("leader parsed as %+v", lead)
	}
	if fol.VIPs[0] != DefaultVIP6() || fol.Follow != "lab" || fol.VRID != VRID || fol.Name != followerName {
		t.Errorf("follower parsed as %+v", fol)
	}
	if lead.GARP.Probe != 10*time.Second || fol.GARP.Probe != 10*time.Second {
		t.Errorf("garp.probe: leader %v, follower %v, want 10s each", lead.GARP.Probe, fol.GARP.Probe)
	}
}

func TestKeepalivedConfigIPv6(t *testing.T) {
	got := string(keepalivedConfig(1, IPv6GroupConfig(2, time.Second)))
	for _, want := range []string{"vrrp_version 3", "2001:db8::10/128 dev eth0", "priority 150"} {
		if !strings.Contains(got, want) {
			t.Errorf("keepalived config lacks %q:\n%s", want, got)
		}
	}
	got = string(keepalivedConfig(1, DualStackGroupConfig(2, time.Second)))
	for _, want := range []string{"198.51.100.10/32 dev eth0", "vrrp_instance lab6", "2001:db8::10/128 dev eth0", "vrrp_sync_group"} {
		if !strings.Contains(got, want) {
			t.Errorf("dual-stack keepalived config lacks %q:\n%s", want, got)
		}
	}
}

func TestGroupValidateIPv6(t *testing.T) {
	for _, g := range []GroupConfig{IPv6GroupConfig(3, time.Second), DualStackGroupConfig(3, time.Second)} {
		if err := g.Validate(); err != nil {
			t.Errorf("%v/%v: %v", g.VIP, g.VIP6, err)
		}
	}
	bad := map[string]func(*GroupConfig){
		"link-local VIP": func(g *GroupConfig) { g.VIP = netip.MustParsePrefix("fe80::10/128") },
		"IPv6 /64":       func(g *GroupConfig) { g.VIP = netip.MustParsePrefix("2001:db8::/64") },
		"two IPv6":       func(g *GroupConfig) { g.VIP = DefaultVIP6(); g.VIP6 = netip.MustParsePrefix("2001:db8::20/128") },
		"IPv4 follower":  func(g *GroupConfig) { g.VIP6 = netip.MustParsePrefix("198.51.100.20/32") },
	}
	for name, edit := range bad {
		g := DualStackGroupConfig(3, time.Second)
		edit(&g)
		if err := g.Validate(); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
