package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Options shape a Lab. The zero value builds the 3-node lab of issue 4.
type Options struct {
	// Nodes is the number of node namespaces (default 3, at most MaxNodes).
	Nodes int
	// Dir holds generated configs, pid files, sockets and daemon logs. When
	// empty, New makes a temporary directory and Close removes it.
	Dir string
	// KeepDir keeps the temporary directory made for an empty Dir, so the logs
	// can be read after Close.
	KeepDir bool
	// Stranger adds a host that belongs to no group (198.51.100.9): the
	// source of floods and foreign claims, so the client stays a bystander
	// whose neighbour entry the lab can watch.
	Stranger bool
	// IPv6 gives every host an IPv6 address beside its IPv4 one
	// (2001:db8::11 for 198.51.100.11, see LANPrefix6) and waits for the
	// link-local addresses of eth0.
	IPv6 bool
	// DAD, with IPv6, keeps duplicate address detection on eth0 with this
	// many probes a second apart, so link-local addresses stay tentative
	// for about DAD seconds after the link comes up (and after each cut
	// link is restored), and New does not wait for them. 0 turns DAD off:
	// addresses are usable at once.
	DAD int
}

// Lab is a LAN in network namespaces: a bridge in a namespace of its own (so
// the host's networking is never touched), node namespaces n1..nN and a
// client namespace, each attached to the bridge by a veth whose inner end is
// eth0. Methods are safe for concurrent use; Close removes everything.
type Lab struct {
	log    *slog.Logger
	id     string
	dir    string
	ownDir bool

	bridge   *endpoint
	nodes    []*endpoint // nodes[0] is n1
	client   *endpoint
	stranger *endpoint // nil unless Options.Stranger
	ipv6     ipv6Options

	spawner *spawner

	mu      sync.Mutex
	daemons map[*Daemon]struct{}
	// watchers are monitors and probers still running; Close stops them
	// first, as a backstop for callers that did not.
	watchers map[any]func()
	closed   bool

	closeOnce sync.Once
	closeErr  error
}

// endpoint is one namespace of the lab and, for nodes and the client, the
// bridge port that connects it.
type endpoint struct {
	label string // n1, client, bridge
	name  string // namespace name, unique to the run
	ns    netns.NsHandle
	h     *netlink.Handle
	port  string // bridge-side veth name inside the bridge namespace
	addr  netip.Addr
	mac   net.HardwareAddr
	// addr6 and linkLocal are eth0's IPv6 addresses (Options.IPv6).
	addr6, linkLocal netip.Addr
}

const (
	bridgeName = "br0"
	// namePrefix starts every namespace name, followed by the owner's PID so
	// CleanStale can tell a crashed run's leftovers from a running lab.
	namePrefix = "vipdlab-"
)

// New builds the lab. ctx bounds the setup only; the lab lives until Close.
// On failure everything already made is removed again.
func New(ctx context.Context, log *slog.Logger, opts Options) (*Lab, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Nodes < 1 || opts.Nodes > MaxNodes {
		return nil, fmt.Errorf("lab: Nodes = %d, want 1..%d", opts.Nodes, MaxNodes)
	}
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	l := &Lab{
		log:      log,
		id:       fmt.Sprintf("%s%d-%s", namePrefix, os.Getpid(), hex.EncodeToString(rnd[:])),
		daemons:  make(map[*Daemon]struct{}),
		watchers: make(map[any]func()),
		dir:      opts.Dir,
	}
	if l.dir == "" {
		d, err := os.MkdirTemp("", l.id+"-")
		if err != nil {
			return nil, err
		}
		l.dir, l.ownDir = d, !opts.KeepDir
	} else if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	l.log = log.With("lab", l.id)
	l.spawner = newSpawner() // stopped by Close
	l.ipv6 = ipv6Options{on: opts.IPv6, dad: opts.DAD}
	err := l.build(ctx, opts.Nodes, opts.Stranger)
	if err == nil {
		err = l.waitLinkLocals(ctx)
	}
	if err != nil {
		if cerr := l.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("lab: build: %w", err)
	}
	l.log.Debug("lab ready", "dir", l.dir, "nodes", opts.Nodes)
	return l, nil
}

func (l *Lab) build(ctx context.Context, n int, stranger bool) error {
	var err error
	if l.bridge, err = l.newEndpoint("bridge"); err != nil {
		return err
	}
	bh := l.bridge.h
	off := false
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridgeName}, MulticastSnooping: &off}
	if err := bh.LinkAdd(br); err != nil {
		return fmt.Errorf("add bridge: %w", err)
	}
	if err := bh.LinkSetUp(br); err != nil {
		return fmt.Errorf("bridge up: %w", err)
	}
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := l.newEndpoint(fmt.Sprintf("n%d", i))
		if e != nil {
			l.nodes = append(l.nodes, e) // appended first so Close removes it
		}
		if err != nil {
			return err
		}
		e.addr = nodeAddr(i)
		e.mac = labMAC(byte(i))
		if err := l.attach(e, br); err != nil {
			return err
		}
	}
	if l.client, err = l.newEndpoint("client"); err != nil {
		return err // l.client, if made, is removed by Close
	}
	l.client.addr = ClientAddr()
	l.client.mac = labMAC(ClientHost)
	if err := l.attach(l.client, br); err != nil || !stranger {
		return err
	}
	if l.stranger, err = l.newEndpoint("x"); err != nil {
		return err
	}
	l.stranger.addr = StrangerAddr()
	l.stranger.mac = labMAC(StrangerHost)
	return l.attach(l.stranger, br)
}

func (l *Lab) newEndpoint(label string) (*endpoint, error) {
	e := &endpoint{label: label, name: l.id + "-" + label, ns: netns.None()}
	ns, err := addNamedNetns(e.name)
	if err != nil {
		return nil, err
	}
	e.ns = ns
	// From here on e is returned even with an error, so the caller records it
	// and Close deletes the namespace.
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

// attach creates the veth pair from the bridge namespace with its peer born
// as eth0 in e's namespace, so no interface ever appears in the host's.
func (l *Lab) attach(e *endpoint, br *netlink.Bridge) error {
	e.port = e.label
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: e.port, MasterIndex: br.Attrs().Index},
		PeerName:         "eth0",
		PeerHardwareAddr: e.mac,
		PeerNamespace:    netlink.NsFd(int(e.ns)),
	}
	if err := l.bridge.h.LinkAdd(veth); err != nil {
		return fmt.Errorf("add veth %s: %w", e.port, err)
	}
	if err := l.bridge.h.LinkSetUp(veth); err != nil {
		return fmt.Errorf("veth %s up: %w", e.port, err)
	}
	eth0, err := e.h.LinkByName("eth0")
	if err != nil {
		return fmt.Errorf("eth0 in %s: %w", e.name, err)
	}
	pfx := netip.PrefixFrom(e.addr, LANPrefix().Bits())
	if err := e.h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixIPNet(pfx)}); err != nil {
		return fmt.Errorf("address on %s: %w", e.name, err)
	}
	if err := l.setupIPv6(e, eth0); err != nil {
		return err
	}
	if err := e.h.LinkSetUp(eth0); err != nil {
		return fmt.Errorf("eth0 up in %s: %w", e.name, err)
	}
	return nil
}

// Close stops every daemon, ends any other process left in the lab's
// namespaces, deletes the namespaces (which removes the veths and the
// bridge) and the temporary directory. It is idempotent and safe to call from
// a signal path.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		ws := make([]func(), 0, len(l.watchers))
		for _, stop := range l.watchers {
			ws = append(ws, stop)
		}
		l.mu.Unlock()
		for _, stop := range ws {
			stop()
		}
		l.mu.Lock()
		ds := make([]*Daemon, 0, len(l.daemons))
		for d := range l.daemons {
			ds = append(ds, d)
		}
		l.mu.Unlock()
		var errs []error
		var wg sync.WaitGroup
		for _, d := range ds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.stop(shutdownGrace)
			}()
		}
		wg.Wait()
		l.spawner.stop()
		eps := append(append([]*endpoint{}, l.nodes...), l.client, l.stranger, l.bridge)
		for _, e := range eps {
			if e == nil {
				continue
			}
			if err := killNetnsProcs(e.ns); err != nil {
				errs = append(errs, err)
			}
		}
		for _, e := range eps {
			if e == nil {
				continue
			}
			if e.h != nil {
				e.h.Close()
			}
			if e.ns.IsOpen() {
				e.ns.Close()
			}
			if err := delNamedNetns(e.name); err != nil {
				errs = append(errs, err)
			}
		}
		if l.ownDir {
			if err := os.RemoveAll(l.dir); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
		l.log.Debug("lab removed", "err", l.closeErr)
	})
	return l.closeErr
}

// ID is the run's unique name; every namespace name starts with it.
func (l *Lab) ID() string { return l.id }

// Dir is the directory with generated configs and daemon logs.
func (l *Lab) Dir() string { return l.dir }

// Nodes is the number of node namespaces.
func (l *Lab) Nodes() int { return len(l.nodes) }

func (l *Lab) node(i int) *endpoint {
	if i < 1 || i > len(l.nodes) {
		panic(fmt.Sprintf("lab: node %d out of range 1..%d", i, len(l.nodes)))
	}
	return l.nodes[i-1]
}

// NodeNS is the name of node i's namespace (1-based), as `ip netns` knows it.
func (l *Lab) NodeNS(i int) string { return l.node(i).name }

// ClientNS is the name of the client namespace.
func (l *Lab) ClientNS() string { return l.client.name }

// BridgeNS is the name of the namespace that holds the bridge.
func (l *Lab) BridgeNS() string { return l.bridge.name }

// HasStranger reports whether the lab was built with Options.Stranger.
func (l *Lab) HasStranger() bool { return l.stranger != nil }

// StrangerNetns is a handle on the stranger's namespace, owned by the lab;
// it panics when the lab has no stranger.
func (l *Lab) StrangerNetns() netns.NsHandle { return l.mustStranger().ns }

// StrangerMAC is the stranger's eth0 hardware address.
func (l *Lab) StrangerMAC() net.HardwareAddr { return l.mustStranger().mac }

func (l *Lab) mustStranger() *endpoint {
	if l.stranger == nil {
		panic("lab: built without Options.Stranger")
	}
	return l.stranger
}

// NodeNetns is a handle on node i's namespace, owned by the lab and valid
// until Close; do not close it.
func (l *Lab) NodeNetns(i int) netns.NsHandle { return l.node(i).ns }

// ClientNetns is a handle on the client namespace, owned by the lab.
func (l *Lab) ClientNetns() netns.NsHandle { return l.client.ns }

// NodeHandle is a netlink handle working in node i's namespace, owned by
// the lab.
func (l *Lab) NodeHandle(i int) *netlink.Handle { return l.node(i).h }

// ClientHandle is a netlink handle working in the client namespace.
func (l *Lab) ClientHandle() *netlink.Handle { return l.client.h }

// NodeAddr is node i's eth0 address.
func (l *Lab) NodeAddr(i int) netip.Addr { return l.node(i).addr }

// NodeMAC is node i's eth0 hardware address (fixed per node for readable
// output; labs never share a bridge, so they cannot collide).
func (l *Lab) NodeMAC(i int) net.HardwareAddr { return l.node(i).mac }

// NodeByMAC maps a hardware address to its node, or 0.
func (l *Lab) NodeByMAC(mac net.HardwareAddr) int {
	for i, e := range l.nodes {
		if string(e.mac) == string(mac) {
			return i + 1
		}
	}
	return 0
}

// NodeByAddr maps an eth0 address to its node, or 0.
func (l *Lab) NodeByAddr(a netip.Addr) int {
	for i, e := range l.nodes {
		if e.addr == a.Unmap() {
			return i + 1
		}
	}
	if a.Is6() && !a.Is4In6() {
		return l.nodeByAddr6(a)
	}
	return 0
}

// NodeCommand returns a command that runs name inside node i's namespace
// through `ip netns exec`.
func (l *Lab) NodeCommand(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	return netnsCommand(ctx, l.node(i).name, name, args...)
}

// ClientCommand returns a command that runs inside the client namespace.
func (l *Lab) ClientCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return netnsCommand(ctx, l.client.name, name, args...)
}

func netnsCommand(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// RunInNetns runs fn on an OS thread inside ns (for example to open a socket
// there); the thread is discarded afterwards.
func RunInNetns(ns netns.NsHandle, fn func() error) error { return inNetns(ns, fn) }

// CutLink sets node i's bridge port down: its eth0 loses carrier and the node
// vanishes from the LAN, as if its cable were pulled.
func (l *Lab) CutLink(i int) error { return l.setPort(i, false) }

// RestoreLink undoes CutLink.
func (l *Lab) RestoreLink(i int) error { return l.setPort(i, true) }

func (l *Lab) setPort(i int, up bool) error {
	e := l.node(i)
	link, err := l.bridge.h.LinkByName(e.port)
	if err != nil {
		return fmt.Errorf("lab: port of n%d: %w", i, err)
	}
	if up {
		err = l.bridge.h.LinkSetUp(link)
	} else {
		err = l.bridge.h.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("lab: set port of n%d up=%v: %w", i, up, err)
	}
	return nil
}

// NodeHasAddr reports whether node i has a on any interface.
func (l *Lab) NodeHasAddr(i int, a netip.Addr) (bool, error) {
	addrs, err := l.node(i).h.AddrList(nil, addrFamily(a))
	if err != nil {
		return false, err
	}
	for _, ad := range addrs {
		if ip, ok := netip.AddrFromSlice(ad.IP); ok && ip.Unmap() == a {
			return true, nil
		}
	}
	return false, nil
}

// RemoveNodeAddr deletes the VIP prefix p from node i's eth0 if present, e.g.
// the address a SIGKILLed daemon left behind.
func (l *Lab) RemoveNodeAddr(i int, p netip.Prefix) error {
	h := l.node(i).h
	eth0, err := h.LinkByName("eth0")
	if err != nil {
		return err
	}
	err = h.AddrDel(eth0, &netlink.Addr{IPNet: prefixIPNet(p)})
	// EADDRNOTAVAIL: already gone, which is what we want (API-NOTES).
	if err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
		return fmt.Errorf("lab: remove %s from n%d: %w", p, i, err)
	}
	return nil
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// track registers a running watcher's stop function; it returns false once
// the lab is closed.
func (l *Lab) track(key any, stop func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.watchers[key] = stop
	return true
}

func (l *Lab) untrack(key any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.watchers, key)
}
