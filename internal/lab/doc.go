// Package lab builds a LAN in network namespaces and measures how a VRRPv3
// (RFC 5798) group keeps a virtual IP reachable when its master fails. It
// runs either vipd or keepalived on every node, with the same VRID,
// priorities and advert interval, so the two can be compared in one run on
// one machine (issue 4).
//
// # Topology
//
// New builds, under names unique to the run (vipdlab-PID-RANDOM-*):
//
//	bridge namespace: br0 ── n1 ── n2 ── n3 ── client   (bridge-side veths)
//	node namespaces:  eth0 198.51.100.11/24, .12, .13   (MAC 02:76:6c:00:00:0N)
//	client namespace: eth0 198.51.100.99/24
//	stranger (Options.Stranger): eth0 198.51.100.9/24, in no group
//
// The bridge lives in a namespace of its own, so the host's networking is
// never touched, and only 198.51.100.0/24 (TEST-NET-2) is used. Close (also
// on failure inside New) stops the daemons, kills anything still inside the
// namespaces and deletes them; it is idempotent. CleanStale removes what a
// SIGKILLed run left.
//
// # Using it in a test
//
//	l, err := lab.New(ctx, log, lab.Options{Nodes: 3})
//	defer l.Close()
//	g := lab.DefaultGroupConfig(3, 100*time.Millisecond)  // VRID 51, 150/100/50, VIP .10/32
//	mon, err := l.Watch(ctx, g.VIP.Addr(), g.VRID, nil)    // address, neighbour, advert events
//	d, err := l.StartDaemon(1, lab.DaemonSpec{Kind: lab.Vipd, Binary: bin, Group: g})
//	s, err := mon.Wait(ctx, 10*time.Millisecond, func(s lab.State) bool { return s.OnlyHolder() == 1 })
//	l.CutLink(1); l.RestoreLink(1)                         // the node's eth0 loses carrier
//	d.Signal(syscall.SIGTERM); d.Kill()                    // graceful stop; crash (VIP stays)
//	out, err := l.ClientCommand(ctx, "ping", "-c1", "198.51.100.10").CombinedOutput()
//	lab.RunInNetns(l.NodeNetns(2), func() error { ... })  // open a socket in n2
//
// StartDaemon writes the daemon's config into the lab's directory (vipd:
// TOML with a per-node control socket; keepalived: vrrp_version 3, every
// node starting as BACKUP), starts it through `ip netns exec` in its own
// process group with stdout and stderr in Daemon.LogPath, and the lab stops
// it on Close. DaemonSpec.Config can rewrite the generated config.
//
// # Measuring
//
// StartGroup starts a daemon on every node plus a Monitor; Group.Trial
// injects a fault into the master (Cut, Kill or Graceful) and measures, from
// the client and from the hosts:
//
//   - outage: the longest gap between answered ICMP echoes that a Prober in
//     the client namespace sends to the VIP every millisecond;
//   - takeover: fault → the new owner's RTM_NEWADDR for the VIP (netlink
//     subscription in each node namespace, not polling);
//   - duplicate ownership: total time two nodes held the VIP at once;
//   - the client's neighbour entry moving to the new master (netlink
//     neighbour events in the client namespace);
//   - the theoretical VRRPv3 bound: Master_Down_Interval of the new master's
//     priority minus the time since the old master's last advert (captured
//     with a raw protocol-112 socket in the client namespace) for cut and
//     kill, Skew_Time for graceful; and the excess over it.
//
// It then restores the group (link up, or the daemon started again after the
// VIP a killed daemon left behind is removed) and waits until it is stable.
// RunBench repeats this for every daemon, interval and mode, adds a steady
// window for CPU time and peak RSS, and BenchResult writes a table, JSON and
// an SVG chart. Times are the lab's receive times, so they carry a few tens
// of microseconds of scheduling noise; ProbeStallMS shows when the machine
// stalled the lab itself. Tests log these numbers; they never assert speed.
//
// # Faults (the chaos suite, issue 11)
//
// A Filter is an nftables table (bridge family, named after the lab's ID)
// in the bridge's namespace: LossTowards drops a share of the adverts
// towards a node, Partition drops adverts between a node and the rest both
// ways while ARP and IP flow, Heal flushes the rules. The stranger sends
// floods of malformed and foreign VRRP packets (Flood, FloodFrames) and
// claims the VIP by gratuitous ARP (ClaimByARP); Daemon.SignalGroup freezes
// a daemon. RunScenario runs one Scenario against one daemon kind in a
// fresh lab and returns a ChaosResult: moves of the address and of the
// client's neighbour entry, time with two and with no holders, the
// client's longest outage and lost probes, the state at the end and the
// daemons' CPU; RunChaos runs the suite (Scenarios) for several kinds.
//
// # IPv6 and dual-stack (issue 13)
//
// Options.IPv6 adds 2001:db8::/64 beside the IPv4 LAN (2001:db8::11 for
// 198.51.100.11, the client 2001:db8::99) and waits for each eth0's
// link-local address (NodeLinkLocal); Options.DAD keeps duplicate address
// detection on, so link-locals stay tentative for about DAD seconds after
// the link comes up (WatchLinkLocals records when each left that state).
// A GroupConfig with an IPv6 VIP (IPv6GroupConfig) makes an IPv6 group; one
// with VIP6 set as well (DualStackGroupConfig) makes vipd run an IPv4
// instance "lab" and an IPv6 instance "lab6" that follows it (keepalived: a
// sync group). Watch and StartProber follow the VIP's family (adverts from
// ff02::12, ICMPv6 echo, the client's IPv6 neighbour entry); for a
// dual-stack group watch each VIP with its own Monitor. Filter's
// DropIPv6Adverts and DropIPv4Adverts cut one family's adverts, and
// SetTTLFrom rewrites a node's IPv4 TTL as routers would.
package lab
