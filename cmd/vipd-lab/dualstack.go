package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// runDualStackScene is the demo's second scene: the same group, dual-stack
// in an IPv6 lab — the IPv4 VIP leads, the IPv6 VIP follows it on the same
// VRID — through a cut and a graceful stop, showing that the two addresses
// move together. vipd only: keepalived's counterpart (a sync group) is not
// part of the lab's tests.
func runDualStackScene(ctx context.Context, cfg demoConfig, vipdBin string, tl *timeline, stdout, stderr io.Writer, verbose, keep bool) error {
	g := cfg.group()
	g.VIP6 = lab.DefaultVIP6()
	fmt.Fprintf(stdout, "\nvipd-lab demo, dual-stack: vipd on %d nodes, VRID %d; %v leads, %v follows it (follow = \"lab\")\n",
		cfg.Nodes, g.VRID, g.VIP.Addr(), g.VIP6.Addr())
	l, err := lab.New(ctx, newLogger(stderr, verbose), lab.Options{Nodes: cfg.Nodes, KeepDir: keep, IPv6: true})
	if err != nil {
		return err
	}
	defer func() {
		tl.now("deleting namespaces %s-*", l.ID())
		if err := l.Close(); err != nil {
			tl.now("clean-up error: %v", err)
			return
		}
		tl.now("dual-stack lab removed")
		if keep {
			fmt.Fprintf(stdout, "logs and configs kept in %s\n", l.Dir())
		}
	}()
	var nodes []string
	for i := 1; i <= l.Nodes(); i++ {
		nodes = append(nodes, fmt.Sprintf("n%d %v %v", i, l.NodeAddr(i), l.NodeAddr6(i)))
	}
	tl.now("dual-stack lab up: %s; client %v %v", strings.Join(nodes, ", "), lab.ClientAddr(), l.ClientIPv6())

	m6, err := l.Watch(ctx, g.VIP6.Addr(), g.VRID, func(e lab.Event) {
		if e.Kind != lab.AdvertChanged {
			tl.at(e.At, "  [IPv6] %s", e.Describe())
		}
	})
	if err != nil {
		return err
	}
	defer m6.Close()
	spec := lab.DaemonSpec{Kind: lab.Vipd, Binary: vipdBin, Group: g,
		OnLine: func(node int, at time.Time, line string) {
			if stateLine.MatchString(line) {
				tl.at(at, "  n%d vipd: %s", node, logPrefix.ReplaceAllString(strings.TrimSpace(line), ""))
			}
		}}
	grp, err := l.StartGroup(ctx, spec, func(e lab.Event) {
		if e.Kind != lab.AdvertChanged {
			tl.at(e.At, "  [IPv4] %s", e.Describe())
		}
	})
	if err != nil {
		return err
	}
	defer grp.Close()
	grp.OnPhase = func(at time.Time, text string) { tl.at(at, "%s", text) }
	master, err := grp.WaitStable(ctx, 0)
	if err != nil {
		return err
	}
	if err := waitIPv6On(ctx, m6, master); err != nil {
		return err
	}
	tl.now("ELECTION: n%d holds both %v and %v", master, g.VIP.Addr(), g.VIP6.Addr())
	if err := showClientBoth(ctx, l, g, tl); err != nil {
		return err
	}
	for _, mode := range []lab.Mode{lab.Cut, lab.Graceful} {
		fmt.Fprintln(stdout)
		from := time.Now()
		r, err := grp.Trial(ctx, mode, 1)
		if err != nil {
			return err
		}
		report(tl, mode, r)
		v4, ok4 := firstAdded(grp.Monitor(), r.NewMaster, from)
		v6, ok6 := firstAdded(m6, r.NewMaster, from)
		if !ok4 || !ok6 {
			return fmt.Errorf("dual-stack %s: n%d took IPv4 %v, IPv6 %v", mode, r.NewMaster, ok4, ok6)
		}
		tl.now("RESULT %s, dual-stack: n%d took the IPv6 VIP %+.1f ms after the IPv4 one: the pair moved together", mode, r.NewMaster, float64(v6.Sub(v4).Microseconds())/1000)
		// The trial restored the group; the IPv6 VIP is back with the master.
		m := grp.Monitor().State().OnlyHolder()
		if err := waitIPv6On(ctx, m6, m); err != nil {
			return err
		}
		tl.now("both VIPs on n%d again", m)
	}
	fmt.Fprintln(stdout)
	tl.now("stopping the daemons (backups first, so nothing moves)")
	return grp.Close()
}

// waitIPv6On waits until node i alone holds the IPv6 VIP.
func waitIPv6On(ctx context.Context, m *lab.Monitor, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := m.Wait(ctx, 10*time.Millisecond, func(s lab.State) bool { return s.OnlyHolder() == i })
	if err != nil {
		return fmt.Errorf("the IPv6 VIP did not follow to n%d (holders %v): %w", i, s.Holders, err)
	}
	return nil
}

// firstAdded is when node took m's VIP first at or after from.
func firstAdded(m *lab.Monitor, node int, from time.Time) (time.Time, bool) {
	for _, e := range m.Events(from, time.Time{}) {
		if e.Kind == lab.VIPAdded && e.Node == node {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// showClientBoth probes both VIPs for a second from the client.
func showClientBoth(ctx context.Context, l *lab.Lab, g lab.GroupConfig, tl *timeline) error {
	var ps []*lab.Prober
	defer func() {
		for _, p := range ps {
			p.Stop()
		}
	}()
	for _, vip := range []netip.Addr{g.VIP.Addr(), g.VIP6.Addr()} {
		p, err := l.StartProber(ctx, vip, time.Millisecond)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	from := time.Now()
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	for k, vip := range []netip.Addr{g.VIP.Addr(), g.VIP6.Addr()} {
		tl.now("CLIENT: %d of %d probes to %v answered in 1 s", len(ps[k].Answers(from, time.Time{})), ps[k].Sent(), vip)
	}
	return nil
}
