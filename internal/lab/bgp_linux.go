package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The routed lab (issue 14): no shared L2 segment. A router namespace runs
// FRR's zebra and bgpd and has one point-to-point link per host, each a /30
// of its own from 198.51.100.0/24, and one to a client namespace
// (203.0.113.0/30). Hosts announce VIPs from 192.0.2.0/24, kept on their
// loopback, over BGP; the client reaches them only through the router.
//
//	host hN eth0 198.51.100.(4N-2)/30 ── rN 198.51.100.(4N-3)/30 ┐
//	                                                            router (AS 65000)
//	client eth0 203.0.113.2/30 ─────────── rc 203.0.113.1/30 ──┘

// RouterASN is the router's AS in the routed lab unless set otherwise.
const RouterASN = 65000

// frrDir is where Debian installs FRR's daemons.
const frrDir = "/usr/lib/frr"

// ErrNoFRR is returned by NewRouted when FRR's zebra, bgpd or vtysh, or its
// user, is missing.
var ErrNoFRR = errors.New("lab: FRR is not installed (apt-get install frr): need zebra and bgpd in " + frrDir + ", vtysh and the frr user")

// RoutedOptions shape a RoutedLab.
type RoutedOptions struct {
	Hosts int // host namespaces h1..hN, default 3, at most 60
	// Dir holds FRR's config, sockets and logs; when empty a temporary
	// directory is made, and removed by Close unless KeepDir.
	Dir     string
	KeepDir bool
}

// RoutedLab is the routed topology; Close removes it.
type RoutedLab struct {
	log    *slog.Logger
	id     string
	dir    string
	ownDir bool

	router *endpoint
	hosts  []*endpoint
	client *endpoint

	frr []*frrDaemon // started by StartRouter: zebra, bgpd
}

type frrDaemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// maxRoutedHosts keeps the hosts' /30s inside 198.51.100.0/24.
const maxRoutedHosts = 60

// RoutedHostAddr is host i's address on its link to the router.
func RoutedHostAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(4*i - 2)}) }

// RoutedRouterAddr is the router's address on its link to host i.
func RoutedRouterAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(4*i - 3)}) }

// RoutedClientAddr is the client's address; RoutedClientGateway the
// router's on the client's link.
func RoutedClientAddr() netip.Addr    { return netip.MustParseAddr("203.0.113.2") }
func RoutedClientGateway() netip.Addr { return netip.MustParseAddr("203.0.113.1") }

// RoutedVIP is a VIP for the routed lab, from 192.0.2.0/24.
func RoutedVIP() netip.Prefix { return netip.MustParsePrefix("192.0.2.10/32") }

// The IPv6 side of the same links: host i's link is 2001:db8:0:i::/64, the
// router ::1, the host ::2; the client's is 2001:db8:0:ff::/64.
func RoutedHostAddr6(i int) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, byte(i), 15: 2})
}
func RoutedRouterAddr6(i int) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, byte(i), 15: 1})
}
func RoutedClientAddr6() netip.Addr    { return RoutedHostAddr6(0xff) }
func RoutedClientGateway6() netip.Addr { return RoutedRouterAddr6(0xff) }

// RoutedVIP6 is an IPv6 VIP for the routed lab.
func RoutedVIP6() netip.Prefix { return netip.MustParsePrefix("2001:db8:ffff::10/128") }

// NewRouted builds the routed lab (without starting FRR: see StartRouter).
// ctx bounds the setup only. On failure everything made is removed again.
func NewRouted(ctx context.Context, log *slog.Logger, opts RoutedOptions) (*RoutedLab, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Hosts == 0 {
		opts.Hosts = 3
	}
	if opts.Hosts < 1 || opts.Hosts > maxRoutedHosts {
		return nil, fmt.Errorf("lab: Hosts = %d, want 1..%d", opts.Hosts, maxRoutedHosts)
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if err := frrPresent(); err != nil {
		return nil, err
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	l := &RoutedLab{id: fmt.Sprintf("%s%d-%s", namePrefix, os.Getpid(), hex.EncodeToString(rnd[:])), dir: opts.Dir}
	l.log = log.With("lab", l.id)
	if l.dir == "" {
		d, err := os.MkdirTemp("", l.id+"-")
		if err != nil {
			return nil, err
		}
		l.dir, l.ownDir = d, !opts.KeepDir
	} else if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	if err := l.build(ctx, opts.Hosts); err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("lab: build routed: %w", err)
	}
	return l, nil
}

func frrPresent() error {
	for _, b := range []string{"zebra", "bgpd"} {
		if _, err := os.Stat(filepath.Join(frrDir, b)); err != nil {
			return ErrNoFRR
		}
	}
	if _, err := exec.LookPath("vtysh"); err != nil {
		return ErrNoFRR
	}
	if _, err := user.Lookup("frr"); err != nil {
		return ErrNoFRR
	}
	return nil
}

func (l *RoutedLab) build(ctx context.Context, n int) error {
	var err error
	if l.router, err = l.newEndpoint("router"); err != nil {
		return err
	}
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := l.newEndpoint(fmt.Sprintf("h%d", i))
		if e != nil {
			l.hosts = append(l.hosts, e) // first, so Close removes it
		}
		if err != nil {
			return err
		}
		e.addr = RoutedHostAddr(i)
		if err := l.link(e, fmt.Sprintf("r%d", i), RoutedRouterAddr(i), e.addr, RoutedRouterAddr6(i), RoutedHostAddr6(i)); err != nil {
			return err
		}
	}
	if l.client, err = l.newEndpoint("client"); err != nil {
		return err
	}
	l.client.addr = RoutedClientAddr()
	if err := l.link(l.client, "rc", RoutedClientGateway(), l.client.addr, RoutedClientGateway6(), RoutedClientAddr6()); err != nil {
		return err
	}
	// The router forwards; the hosts answer the client from their loopback
	// VIP, so reverse-path filtering must not judge by the link.
	return runCmd(ctx, "ip", "netns", "exec", l.router.name, "sysctl", "-q", "-w",
		"net.ipv4.ip_forward=1", "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0", "net.ipv6.conf.all.forwarding=1")
}

func (l *RoutedLab) newEndpoint(label string) (*endpoint, error) {
	e := &endpoint{label: label, name: l.id + "-" + label}
	ns, err := addNamedNetns(e.name)
	if err != nil {
		return nil, err
	}
	e.ns = ns
	if e.h, err = netlink.NewHandleAt(ns); err != nil {
		return e, fmt.Errorf("netlink handle in %s: %w", e.name, err)
	}
	lo, err := e.h.LinkByName("lo")
	if err == nil {
		err = e.h.LinkSetUp(lo)
	}
	if err != nil {
		return e, fmt.Errorf("lo up in %s: %w", e.name, err)
	}
	return e, nil
}

// link connects e to the router with a /30 and a /64: port in the
// router's namespace with routerAddr and routerAddr6, eth0 in e's with addr
// and addr6 and default routes via the router. The IPv6 addresses skip
// duplicate address detection, so they are usable at once.
func (l *RoutedLab) link(e *endpoint, port string, routerAddr, addr, routerAddr6, addr6 netip.Addr) error {
	e.port = port
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port}, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(e.ns))}
	rh := l.router.h
	if err := rh.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s: %w", port, err)
	}
	if err := rh.AddrAdd(veth, &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(routerAddr, 30))}); err != nil {
		return fmt.Errorf("address on %s: %w", port, err)
	}
	if err := rh.AddrAdd(veth, &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(routerAddr6, 64)), Flags: unix.IFA_F_NODAD}); err != nil {
		return fmt.Errorf("IPv6 address on %s: %w", port, err)
	}
	if err := rh.LinkSetUp(veth); err != nil {
		return fmt.Errorf("%s up: %w", port, err)
	}
	eth0, err := e.h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("eth0 in %s: %w", e.name, err)
	}
	if err := e.h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(addr, 30))}); err != nil {
		return fmt.Errorf("address on %s: %w", e.name, err)
	}
	if err := e.h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixIPNet(netip.PrefixFrom(addr6, 64)), Flags: unix.IFA_F_NODAD}); err != nil {
		return fmt.Errorf("IPv6 address on %s: %w", e.name, err)
	}
	if err := e.h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("eth0 up in %s: %w", e.name, err)
	}
	for _, gw := range []netip.Addr{routerAddr, routerAddr6} {
		if err := e.h.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gw.AsSlice()}); err != nil {
			return fmt.Errorf("default route via %s in %s: %w", gw, e.name, err)
		}
	}
	return nil
}

// ID is the run's unique name; every namespace name starts with it.
func (l *RoutedLab) ID() string { return l.id }

// Dir holds FRR's files.
func (l *RoutedLab) Dir() string { return l.dir }

// Hosts is the number of host namespaces.
func (l *RoutedLab) Hosts() int { return len(l.hosts) }

func (l *RoutedLab) host(i int) *endpoint {
	if i < 1 || i > len(l.hosts) {
		panic(fmt.Sprintf("lab: host %d out of range 1..%d", i, len(l.hosts)))
	}
	return l.hosts[i-1]
}

// HostNS is the name of host i's namespace (1-based).
func (l *RoutedLab) HostNS(i int) string { return l.host(i).name }

// RouterNS and ClientNS name the router's and the client's namespaces.
func (l *RoutedLab) RouterNS() string { return l.router.name }
func (l *RoutedLab) ClientNS() string { return l.client.name }

// HostCommand, RouterCommand and ClientCommand run a program inside a
// namespace of the lab.
func (l *RoutedLab) HostCommand(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	return netnsCommand(ctx, l.host(i).name, name, args...)
}
func (l *RoutedLab) RouterCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return netnsCommand(ctx, l.router.name, name, args...)
}
func (l *RoutedLab) ClientCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return netnsCommand(ctx, l.client.name, name, args...)
}

// AddLoopbackVIP puts vip on host i's lo, as vipd does in the BGP modes.
func (l *RoutedLab) AddLoopbackVIP(i int, vip netip.Prefix) error {
	h := l.host(i).h
	lo, err := h.LinkByName("lo")
	if err != nil {
		return err
	}
	if err := h.AddrReplace(lo, &netlink.Addr{IPNet: prefixIPNet(vip)}); err != nil {
		return fmt.Errorf("lab: %s on lo of h%d: %w", vip, i, err)
	}
	return nil
}

// SetLinkUp sets the router's end of host i's link up or down (the host
// sees its carrier go).
func (l *RoutedLab) SetLinkUp(i int, up bool) error {
	rh := l.router.h
	link, err := rh.LinkByName(l.host(i).port)
	if err != nil {
		return err
	}
	if up {
		return rh.LinkSetUp(link)
	}
	return rh.LinkSetDown(link)
}

// RouterNeighbor is one neighbour of the router's bgpd.
type RouterNeighbor struct {
	Address  netip.Addr
	ASN      uint32
	Password string // TCP-MD5, "" for none
	BFD      bool
}

// RouterConfig is the router's BGP setup.
type RouterConfig struct {
	ASN       uint32 // default RouterASN
	Neighbors []RouterNeighbor
	// MaximumPaths is the ECMP width for IPv4 and IPv6 unicast (default 8).
	MaximumPaths int
	// BFD starts FRR's bfdd beside bgpd, for neighbours with BFD set.
	BFD bool
}

// HostNeighbors lists hosts 1..n as eBGP neighbours in AS asn.
func HostNeighbors(n int, asn uint32) []RouterNeighbor {
	ns := make([]RouterNeighbor, n)
	for i := range ns {
		ns[i] = RouterNeighbor{Address: RoutedHostAddr(i + 1), ASN: asn}
	}
	return ns
}

// HostNeighbors6 lists hosts 1..n by their IPv6 addresses.
func HostNeighbors6(n int, asn uint32) []RouterNeighbor {
	ns := make([]RouterNeighbor, n)
	for i := range ns {
		ns[i] = RouterNeighbor{Address: RoutedHostAddr6(i + 1), ASN: asn}
	}
	return ns
}

// bgpdConf renders c as bgpd's config file. eBGP without policies is
// allowed (FRR follows RFC 8212 otherwise), hosts announce from several
// ASNs as equal paths, and the timers are short so a test sees sessions
// come and go in seconds. An IPv6 neighbour carries ipv6-unicast only.
func (c RouterConfig) bgpdConf() string {
	if c.ASN == 0 {
		c.ASN = RouterASN
	}
	if c.MaximumPaths == 0 {
		c.MaximumPaths = 8
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hostname router\ndebug bgp neighbor-events\nrouter bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp network import-check\n bgp bestpath as-path multipath-relax\n timers bgp 3 9\n", c.ASN, RoutedClientGateway())
	for _, n := range c.Neighbors {
		b.WriteString(neighborLines(n))
	}
	fmt.Fprintf(&b, " address-family ipv4 unicast\n  maximum-paths %d\n", c.MaximumPaths)
	for _, n := range c.Neighbors {
		if n.Address.Is6() {
			fmt.Fprintf(&b, "  no neighbor %s activate\n", n.Address)
		}
	}
	fmt.Fprintf(&b, " exit-address-family\n address-family ipv6 unicast\n  maximum-paths %d\n", c.MaximumPaths)
	for _, n := range c.Neighbors {
		if n.Address.Is6() {
			fmt.Fprintf(&b, "  neighbor %s activate\n", n.Address)
		}
	}
	b.WriteString(" exit-address-family\n")
	return b.String()
}

func neighborLines(n RouterNeighbor) string {
	var b strings.Builder
	fmt.Fprintf(&b, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.Address, n.ASN, n.Address)
	if n.Password != "" {
		fmt.Fprintf(&b, " neighbor %s password %s\n", n.Address, n.Password)
	}
	if n.BFD {
		fmt.Fprintf(&b, " neighbor %s bfd\n", n.Address)
	}
	return b.String()
}

// StartRouter starts zebra and bgpd in the router namespace, each with its
// own sockets in Dir (FRR runs as user frr, so Dir is given to it), and
// waits until bgpd answers on its vty socket.
func (l *RoutedLab) StartRouter(ctx context.Context, c RouterConfig) error {
	if len(l.frr) > 0 {
		return errors.New("lab: router already started")
	}
	u, err := user.Lookup("frr")
	if err != nil {
		return ErrNoFRR
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	files := map[string]string{"zebra.conf": "hostname router\n", "bgpd.conf": c.bgpdConf(), "bfdd.conf": "hostname router\n"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(l.dir, name), []byte(body), 0o644); err != nil {
			return err
		}
		if err := os.Chown(filepath.Join(l.dir, name), uid, gid); err != nil {
			return err
		}
	}
	if err := os.Chmod(l.dir, 0o755); err != nil {
		return err
	}
	if err := os.Chown(l.dir, uid, gid); err != nil {
		return err
	}
	if err := l.startFRR("zebra"); err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(l.dir, "zserv.api"))
		return err == nil
	}); err != nil {
		return fmt.Errorf("lab: zebra did not create its socket: %w", err)
	}
	if c.BFD {
		if _, err := os.Stat(filepath.Join(frrDir, "bfdd")); err != nil {
			return ErrNoFRR
		}
		if err := l.startFRR("bfdd", "--bfdctl", filepath.Join(l.dir, "bfdd.sock")); err != nil {
			return err
		}
	}
	if err := l.startFRR("bgpd"); err != nil {
		return err
	}
	if err := waitFor(ctx, 10*time.Second, func() bool {
		_, err := l.Vtysh(ctx, "show bgp summary json")
		return err == nil
	}); err != nil {
		return fmt.Errorf("lab: bgpd does not answer: %w", err)
	}
	return nil
}

func (l *RoutedLab) startFRR(daemon string, extra ...string) error {
	args := []string{"netns", "exec", l.router.name, filepath.Join(frrDir, daemon), "-P", "0",
		"-z", filepath.Join(l.dir, "zserv.api"), "--vty_socket", l.dir,
		"-f", filepath.Join(l.dir, daemon+".conf"), "-i", filepath.Join(l.dir, daemon+".pid"),
		"--log", "file:" + filepath.Join(l.dir, daemon+".log"), "--log-level", "debug"}
	cmd := exec.Command("ip", append(args, extra...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("lab: start %s: %w", daemon, err)
	}
	d := &frrDaemon{name: daemon, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.done)
	}()
	l.frr = append(l.frr, d)
	return nil
}

// RouterLog returns an FRR daemon's log ("bgpd", "zebra").
func (l *RoutedLab) RouterLog(daemon string) string {
	b, _ := os.ReadFile(filepath.Join(l.dir, daemon+".log"))
	return string(b)
}

// Vtysh runs vtysh commands against the router's daemons (through their
// vty sockets in Dir); each command is one -c.
func (l *RoutedLab) Vtysh(ctx context.Context, cmds ...string) ([]byte, error) {
	args := []string{"--vty_socket", l.dir}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out, err := exec.CommandContext(ctx, "vtysh", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("vtysh %q: %w: %s", cmds, err, out)
	}
	return out, nil
}

// ConfigureRouter applies configuration lines under "router bgp ASN" at
// run time, e.g. "neighbor 198.51.100.2 remote-as 65001".
func (l *RoutedLab) ConfigureRouter(ctx context.Context, asn uint32, lines ...string) error {
	if asn == 0 {
		asn = RouterASN
	}
	cmds := append([]string{"configure terminal", fmt.Sprintf("router bgp %d", asn)}, lines...)
	_, err := l.Vtysh(ctx, cmds...)
	return err
}

// AddRouterNeighbor adds a neighbour to the running router.
func (l *RoutedLab) AddRouterNeighbor(ctx context.Context, asn uint32, n RouterNeighbor) error {
	return l.ConfigureRouter(ctx, asn, strings.Split(strings.TrimSpace(neighborLines(n)), "\n")...)
}

// RoutePath is one path of a route in the router's BGP table.
type RoutePath struct {
	NextHop     netip.Addr
	Peer        netip.Addr // the neighbour it came from
	Valid, Best bool
	Multipath   bool
	Stale       bool     // kept for a peer in graceful restart (RFC 4724)
	Communities []string // as FRR writes them: "65000:100", "graceful-shutdown"
	MED         *uint32
}

// Route is a prefix in the router's BGP table.
type Route struct {
	Prefix netip.Prefix
	Paths  []RoutePath
}

// NextHops lists the next hops of the route's valid paths, sorted.
func (r Route) NextHops() []netip.Addr {
	var nhs []netip.Addr
	for _, p := range r.Paths {
		if p.Valid {
			nhs = append(nhs, p.NextHop)
		}
	}
	slices.SortFunc(nhs, netip.Addr.Compare)
	return nhs
}

// frrRouteJSON is the part of `show ip bgp PREFIX json` used here.
type frrRouteJSON struct {
	Prefix string `json:"prefix"`
	Paths  []struct {
		Valid     bool `json:"valid"`
		Multipath bool `json:"multipath"`
		Stale     bool `json:"stale"`
		Bestpath  *struct {
			Overall bool `json:"overall"`
		} `json:"bestpath"`
		Community *struct {
			String string `json:"string"`
		} `json:"community"`
		MED      *uint32 `json:"metric"`
		Nexthops []struct {
			IP string `json:"ip"`
		} `json:"nexthops"`
		Peer struct {
			PeerID string `json:"peerId"`
		} `json:"peer"`
	} `json:"paths"`
}

// Route reads prefix from the router's BGP table; ok is false when the
// table has no path for it.
func (l *RoutedLab) Route(ctx context.Context, prefix netip.Prefix) (Route, bool, error) {
	afi := "ipv4"
	if prefix.Addr().Is6() {
		afi = "ipv6"
	}
	out, err := l.Vtysh(ctx, "show bgp "+afi+" unicast "+prefix.String()+" json")
	if err != nil {
		return Route{}, false, err
	}
	return parseFRRRoute(out, prefix)
}

func parseFRRRoute(out []byte, prefix netip.Prefix) (Route, bool, error) {
	var j frrRouteJSON
	if err := json.Unmarshal(out, &j); err != nil {
		return Route{}, false, fmt.Errorf("lab: show ip bgp %s: %w: %s", prefix, err, out)
	}
	r := Route{Prefix: prefix}
	for _, p := range j.Paths {
		rp := RoutePath{Valid: p.Valid, Multipath: p.Multipath, Stale: p.Stale, Best: p.Bestpath != nil && p.Bestpath.Overall, MED: p.MED}
		if len(p.Nexthops) > 0 {
			rp.NextHop, _ = netip.ParseAddr(p.Nexthops[0].IP)
		}
		rp.Peer, _ = netip.ParseAddr(p.Peer.PeerID)
		if p.Community != nil {
			rp.Communities = strings.Fields(p.Community.String)
		}
		r.Paths = append(r.Paths, rp)
	}
	return r, len(r.Paths) > 0, nil
}

// WaitRoute polls the router's table until cond holds for prefix's route
// (ok false: no path), or timeout.
func (l *RoutedLab) WaitRoute(ctx context.Context, prefix netip.Prefix, timeout time.Duration, cond func(r Route, ok bool) bool) (Route, error) {
	var (
		last    Route
		lastErr error
	)
	err := waitFor(ctx, timeout, func() bool {
		r, ok, err := l.Route(ctx, prefix)
		last, lastErr = r, err
		return err == nil && cond(r, ok)
	})
	if err != nil {
		return last, fmt.Errorf("lab: route %s: %w (last: %+v, %v)", prefix, err, last, lastErr)
	}
	return last, nil
}

// WaitNextHops waits until the valid paths of prefix have exactly the
// next hops want (none: the route is gone).
func (l *RoutedLab) WaitNextHops(ctx context.Context, prefix netip.Prefix, timeout time.Duration, want ...netip.Addr) (Route, error) {
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	return l.WaitRoute(ctx, prefix, timeout, func(r Route, ok bool) bool { return slices.Equal(r.NextHops(), want) })
}

// KernelNextHops lists the gateways of the router's kernel route to
// prefix, as zebra installed it (several for ECMP), sorted.
func (l *RoutedLab) KernelNextHops(prefix netip.Prefix) ([]netip.Addr, error) {
	routes, err := l.router.h.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Dst: prefixIPNet(prefix)}, netlink.RT_FILTER_DST)
	if err != nil {
		return nil, err
	}
	var nhs []netip.Addr
	for _, r := range routes {
		if a, ok := netip.AddrFromSlice(r.Gw); ok {
			nhs = append(nhs, a.Unmap())
		}
		for _, nh := range r.MultiPath {
			if a, ok := netip.AddrFromSlice(nh.Gw); ok {
				nhs = append(nhs, a.Unmap())
			}
		}
	}
	slices.SortFunc(nhs, netip.Addr.Compare)
	return nhs, nil
}

// Close stops FRR, ends anything else in the lab's namespaces and deletes
// them and the temporary directory. It is idempotent.
func (l *RoutedLab) Close() error {
	var errs []error
	for _, d := range slices.Backward(l.frr) {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	}
	l.frr = nil
	eps := append([]*endpoint{l.router, l.client}, l.hosts...)
	for _, e := range eps {
		if e != nil {
			if err := killNetnsProcs(e.ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, e := range eps {
		if e == nil {
			continue
		}
		if e.h != nil {
			e.h.Close()
			e.h = nil
		}
		if e.ns.IsOpen() {
			e.ns.Close()
		}
		if err := delNamedNetns(e.name); err != nil {
			errs = append(errs, err)
		}
	}
	l.router, l.client, l.hosts = nil, nil, nil
	if l.ownDir && l.dir != "" {
		if err := os.RemoveAll(l.dir); err != nil {
			errs = append(errs, err)
		}
		l.dir = ""
	}
	return errors.Join(errs...)
}

// waitFor polls cond every 50ms until it holds, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s: %w", timeout, ctx.Err())
		case <-t.C:
		}
	}
}

func runCmd(ctx context.Context, name string, args ...string) error {
	if out, err := exec.CommandContext(ctx, name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
