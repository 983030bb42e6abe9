package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// Interop at VRRPv2 (RFC 3768), keepalived's default vrrp_version: a
// mixed group with simple text authentication, in both directions, and
// keepalived's address owner at priority 255.

// v2Group is a VRRPv2 group with a password, at VRRPv2's shortest interval.
func v2Group(nodes int) lab.GroupConfig {
	g := lab.DefaultGroupConfig(nodes, time.Second)
	g.Version, g.AuthPass = 2, "secret12"
	return g
}

// keepalivedComplaint matches what keepalived logs about an advert it
// discards: a wrong password, checksum, interval or version.
var keepalivedComplaint = regexp.MustCompile(`(?i)(invalid|mismatch|bad |wrong|discard|ignoring)`)

func (c *cluster) keepalivedComplained(i int) []string {
	b, _ := os.ReadFile(c.daemons[i].LogPath())
	var bad []string
	for _, line := range bytes.Split(b, []byte("\n")) {
		if keepalivedComplaint.Match(line) {
			bad = append(bad, string(line))
		}
	}
	return bad
}

func TestInteropV2KeepalivedHigher(t *testing.T) {
	c := newClusterGroup(t, v2Group(2), lab.Keepalived, lab.Vipd)
	keepalivedHigherThanVipd(c, func() {
		// Status says which version this host and its peers speak.
		if sts, ok := c.statusOnce(2); !ok || len(sts) != 1 || sts[0].Version != 2 || sts[0].PeerChecksums["198.51.100.11"] != "vrrpv2" {
			t.Errorf("status %+v: want version 2 and keepalived's adverts seen as vrrpv2", sts)
		}
	})
}

func TestInteropV2VipdHigher(t *testing.T) {
	c := newClusterGroup(t, v2Group(2), lab.Vipd, lab.Keepalived)
	vipdHigherThanKeepalived(c)
	if bad := c.keepalivedComplained(2); len(bad) > 0 {
		t.Errorf("keepalived discarded vipd's VRRPv2 adverts:\n%s", strings.Join(bad, "\n"))
	}
}

// A password that differs is dropped as auth on both sides: each is Master
// of a group of one, as with two keepalived routers (RFC 3768 §7.1).
func TestInteropV2WrongPassword(t *testing.T) {
	c := newClusterGroup(t, v2Group(2), lab.Keepalived, noDaemon)
	spec := c.spec(2)
	spec.Kind, spec.Binary = lab.Vipd, vipdBinary
	spec.Config = func(_ int, cfg []byte) []byte {
		return bytes.Replace(cfg, []byte(`auth_pass = "secret12"`), []byte(`auth_pass = "other"`), 1)
	}
	c.kinds[1] = lab.Vipd
	c.startSpec(2, spec)
	if !c.waitLog(2, "advert dropped", "reason=auth") {
		t.Fatal("vipd did not drop keepalived's advert with another password as auth")
	}
}

// keepalived's address owner: state MASTER and no priority run at 255. vipd
// accepts that priority from the address_owner it names, follows it, takes
// over when it fails, and gives the address back when it returns.
func TestInteropV2KeepalivedAddressOwner(t *testing.T) {
	g := v2Group(2)
	c := newClusterGroup(t, g, noDaemon, noDaemon)
	owner := c.spec(1)
	owner.Kind = lab.Keepalived
	owner.Config = func(_ int, cfg []byte) []byte {
		cfg = regexp.MustCompile(`(?m)^\s*priority \d+\n`).ReplaceAll(cfg, nil)
		return bytes.Replace(cfg, []byte("state BACKUP"), []byte("state MASTER"), 1)
	}
	c.kinds[0] = lab.Keepalived
	c.startSpec(1, owner)
	c.waitOnlyHolder(1)
	c.waitFor("the owner advertising 255", 10*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.AdvertPriority == 255 })

	backup := c.spec(2)
	backup.Kind, backup.Binary = lab.Vipd, vipdBinary
	backup.Config = func(_ int, cfg []byte) []byte {
		return bytes.Replace(cfg, []byte("vrid = 51\n"), []byte("vrid = 51\naddress_owner = \"198.51.100.11\"\n"), 1)
	}
	c.kinds[1] = lab.Vipd
	c.startSpec(2, backup)
	if !c.waitLog(2, "to=BACKUP") {
		t.Fatal("vipd did not settle as backup")
	}
	// Longer than vipd's Master_Down_Interval: it must keep following.
	time.Sleep(5 * time.Second)
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Fatalf("holders %v beside the address owner", s.Holders)
	}
	if err := c.l.CutLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitFor("vipd holding the VIP", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })
	if err := c.l.RestoreLink(1); err != nil {
		t.Fatal(err)
	}
	c.waitOnlyHolder(1)
	if !c.waitLog(2, "from=MASTER", "to=BACKUP", "higher priority 255 from 198.51.100.11") {
		t.Error("vipd did not yield to the returning address owner")
	}
	if c.logHas(2, "reason=unknown_owner") {
		t.Error("vipd dropped the named address owner's priority 255")
	}
}

// FRR's vrrpd at version 2 (it has no authentication), in both directions:
// each side wins with the higher priority and takes over on the other's
// priority 0.
func frrV2Group() lab.GroupConfig {
	g := lab.DefaultGroupConfig(2, time.Second)
	g.Version = 2
	return g
}

func TestInteropV2FRRHigher(t *testing.T) {
	// Beyond vipd's Master_Down_Interval at VRRPv2's 1 s adverts.
	frrHigherThanVipd(newClusterGroup(t, frrV2Group(), noDaemon, lab.Vipd), 4*time.Second)
}

func TestInteropV2VipdHigherThanFRR(t *testing.T) {
	c := newClusterGroup(t, frrV2Group(), lab.Vipd, noDaemon)
	c.waitFor("vipd master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 1 && s.Holds(1) })
	startFRR(t, c, 2, 100)
	time.Sleep(5 * time.Second) // beyond FRR's Master_Down_Interval
	if n := c.mon.AdvertsFrom(2, time.Now().Add(-2*time.Second), time.Now()); n != 0 {
		t.Fatalf("FRR sent %d VRRPv2 adverts in 2s beside a higher-priority vipd", n)
	}
	if err := c.daemons[1].Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.waitFor("FRR advertising as master", 20*time.Second, func(s lab.State) bool { return s.Advertiser == 2 && s.AdvertPriority == 100 })
}
