package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/internal/nstest"
	"github.com/vipd/vipd/netif"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// These tests run `vipd cleanup` against a veth pair in a private network
// namespace, with addresses from 198.51.100.0/24 only.

var cleanupVIP = netip.MustParsePrefix("198.51.100.10/32")

// cleanupLab is a namespace with one veth end named ifname, and a config
// whose one instance has cleanupVIP on it and its socket in a temporary
// directory.
type cleanupLab struct {
	t      *testing.T
	ns     netns.NsHandle
	h      *netlink.Handle
	link   netlink.Link
	config string
	socket string
}

func newCleanupLab(t *testing.T, ifname string) *cleanupLab {
	t.Helper()
	nstest.RequireRoot(t, "sudo go test -run TestCleanup ./cmd/vipd")
	ns := nstest.New(t)
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	if err := h.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: ifname}, PeerName: "peer0"}); err != nil {
		t.Fatalf("veth: %v", err)
	}
	l, err := h.LinkByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lab := &cleanupLab{t: t, ns: ns, h: h, link: l, socket: filepath.Join(dir, "vipd.sock")}
	lab.config = writeConfig(t, `[global]
socket = "`+lab.socket+`"

[[instance]]
name = "k8s-api"
interface = "`+ifname+`"
vrid = 51
priority = 150
vips = ["198.51.100.10"]
`)
	return lab
}

func (l *cleanupLab) add(p netip.Prefix, label string) {
	l.t.Helper()
	ipnet := &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
	if err := l.h.AddrAdd(l.link, &netlink.Addr{IPNet: ipnet, Label: label}); err != nil {
		l.t.Fatalf("adding %v label %q: %v", p, label, err)
	}
}

// label returns p's label on the link, and whether p is there at all.
func (l *cleanupLab) label(p netip.Prefix) (string, bool) {
	l.t.Helper()
	addrs, err := l.h.AddrList(l.link, netlink.FAMILY_V4)
	if err != nil {
		l.t.Fatal(err)
	}
	for _, a := range addrs {
		ones, _ := a.Mask.Size()
		if ip, ok := netip.AddrFromSlice(a.IP); ok && netip.PrefixFrom(ip.Unmap(), ones) == p {
			return a.Label, true
		}
	}
	return "", false
}

func (l *cleanupLab) writeHeld(held ...daemon.HeldVIP) {
	l.t.Helper()
	b, _ := json.Marshal(held)
	if err := os.WriteFile(filepath.Join(filepath.Dir(l.socket), "held.json"), b, 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// cleanup runs `vipd cleanup args...` with its netlink work in the lab.
func (l *cleanupLab) cleanup(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	c := &cli{stdout: &out, stderr: &errb, netOpts: []netif.Option{netif.WithNamespace(l.ns)}}
	code = c.run(append([]string{"cleanup"}, args...))
	return code, out.String(), errb.String()
}

func TestCleanupRemovesVipdsAddress(t *testing.T) {
	l := newCleanupLab(t, "vip0")
	l.add(cleanupVIP, "vip0:vip")
	code, out, errOut := l.cleanup("--config", l.config)
	if code != 0 || out != "k8s-api: removed 198.51.100.10/32 from vip0\n" || errOut != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, there := l.label(cleanupVIP); there {
		t.Error("vipd's address is still there")
	}
	// Nothing left: nothing said.
	if code, out, errOut := l.cleanup("--config", l.config); code != 0 || out != "" || errOut != "" {
		t.Errorf("second run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// Defect 9: cleanup removed an administrator's address equal to a VIP.
func TestCleanupKeepsOtherAddresses(t *testing.T) {
	for _, label := range []string{"vip0:admin", ""} {
		t.Run("label "+label, func(t *testing.T) {
			l := newCleanupLab(t, "vip0")
			l.add(cleanupVIP, label)
			code, out, errOut := l.cleanup("--config", l.config)
			if _, there := l.label(cleanupVIP); !there {
				t.Fatalf("cleanup removed an address vipd did not add (exit %d, stdout %q)", code, out)
			}
			shown := `label "vip0:admin"`
			if label == "" {
				shown = "no label"
			}
			if code != 0 || out != "" || !strings.Contains(errOut, "warning: kept 198.51.100.10/32 on vip0: it has "+shown+`, not vipd's "vip0:vip"`) {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// With no room for the label, only what the daemon listed as held goes.
func TestCleanupInterfaceWithoutRoomForTheLabel(t *testing.T) {
	const name = "vip-long-name01"
	l := newCleanupLab(t, name)
	l.add(cleanupVIP, "")
	l.writeHeld() // held nothing
	code, out, errOut := l.cleanup("--config", l.config)
	if _, there := l.label(cleanupVIP); !there || code != 0 || out != "" || !strings.Contains(errOut, "does not list it") {
		t.Fatalf("unlisted: present %v, exit %d, stdout %q, stderr %q", there, code, out, errOut)
	}
	l.writeHeld(daemon.HeldVIP{Interface: name, VIP: cleanupVIP})
	code, out, errOut = l.cleanup("--config", l.config)
	if _, there := l.label(cleanupVIP); there || code != 0 || out != "k8s-api: removed 198.51.100.10/32 from "+name+"\n" {
		t.Errorf("listed: present %v, exit %d, stdout %q, stderr %q", there, code, out, errOut)
	}
}

func TestCleanupRefusesWhileADaemonAnswers(t *testing.T) {
	l := newCleanupLab(t, "vip0")
	l.add(cleanupVIP, "vip0:vip")
	serveFakeOn(t, l.socket, &fakeDaemon{})
	code, out, errOut := l.cleanup("--config", l.config)
	if _, there := l.label(cleanupVIP); !there {
		t.Fatal("cleanup removed the address of a running daemon")
	}
	if code != 1 || out != "" || !strings.Contains(errOut, "a daemon is running (it answers on "+l.socket+")") || !strings.Contains(errOut, "--force") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = l.cleanup("--config", l.config, "--force")
	if _, there := l.label(cleanupVIP); there || code != 0 || !strings.Contains(out, "removed") {
		t.Errorf("--force: present %v, exit %d, stdout %q", there, code, out)
	}
}

// A broken configuration: the held file beside the socket given, and the
// daemon check on that socket.
func TestCleanupWithABrokenConfig(t *testing.T) {
	l := newCleanupLab(t, "vip0")
	l.add(cleanupVIP, "vip0:vip")
	other := netip.MustParsePrefix("198.51.100.11/32")
	l.add(other, "vip0:admin")
	l.writeHeld(daemon.HeldVIP{Interface: "vip0", VIP: cleanupVIP}, daemon.HeldVIP{Interface: "vip0", VIP: other})
	broken := writeConfig(t, "[[instance]\n")

	serveFakeOn(t, l.socket, &fakeDaemon{})
	if code, _, errOut := l.cleanup("--config", broken, "--socket", l.socket); code != 1 || !strings.Contains(errOut, "a daemon is running") {
		t.Errorf("with a daemon: exit %d, stderr %q", code, errOut)
	}
	if _, there := l.label(cleanupVIP); !there {
		t.Fatal("removed while a daemon answers")
	}

	dir := t.TempDir() // no daemon there; the held file moves with the socket
	l.socket = filepath.Join(dir, "vipd.sock")
	l.writeHeld(daemon.HeldVIP{Interface: "vip0", VIP: cleanupVIP}, daemon.HeldVIP{Interface: "vip0", VIP: other})
	code, out, errOut := l.cleanup("--config", broken, "--socket", l.socket)
	if code != 0 || out != "removed 198.51.100.10/32 from vip0 (listed in "+filepath.Join(dir, "held.json")+")\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, broken+":1:") || !strings.Contains(errOut, `kept 198.51.100.11/32 on vip0: it has label "vip0:admin"`) {
		t.Errorf("stderr lacks the config problem or the kept address:\n%s", errOut)
	}
	if _, there := l.label(cleanupVIP); there {
		t.Error("the held address is still there")
	}
	if _, there := l.label(other); !there {
		t.Error("the administrator's address went")
	}

	empty := t.TempDir()
	if code, _, errOut := l.cleanup("--config", broken, "--socket", filepath.Join(empty, "vipd.sock")); code != 1 || !strings.Contains(errOut, "nothing known to remove") {
		t.Errorf("no held file: exit %d, stderr %q", code, errOut)
	}
}
