package lab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultDuplicatePattern matches a log line in which a daemon reports that
// another host still answers for its VIP (kill mode).
const DefaultDuplicatePattern = `(?i)(duplicate|conflict|second owner|other owner|another (host|owner))`

// Group is one VRRP group: a daemon on every node of a lab, watched by a
// Monitor. A Group is driven by one goroutine at a time.
type Group struct {
	lab  *Lab
	spec DaemonSpec
	log  *slog.Logger
	mon  *Monitor

	daemons []*Daemon // daemons[i-1]; nil while node i has none
	cut     []bool

	// DuplicatePattern decides SecondOwnerReported in kill trials.
	DuplicatePattern *regexp.Regexp
	// ProbePeriod is the client prober's period (default 1 ms).
	ProbePeriod time.Duration
	// OnPhase, if set, is told as a trial passes its steps (for a timeline).
	OnPhase func(at time.Time, phase string)
}

// StartGroup starts a Monitor and then spec's daemon on every node.
// onEvent is passed to Watch. Close stops it all.
func (l *Lab) StartGroup(ctx context.Context, spec DaemonSpec, onEvent func(Event)) (*Group, error) {
	if err := spec.Group.Validate(); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if len(spec.Group.Priorities) != l.Nodes() {
		return nil, fmt.Errorf("lab: %d priorities for %d nodes", len(spec.Group.Priorities), l.Nodes())
	}
	mon, err := l.Watch(ctx, spec.Group.VIP.Addr(), spec.Group.VRID, onEvent)
	if err != nil {
		return nil, err
	}
	g := &Group{
		lab: l, spec: spec, mon: mon, log: l.log.With("daemon", spec.Kind, "interval", spec.Group.Interval),
		daemons: make([]*Daemon, l.Nodes()), cut: make([]bool, l.Nodes()),
		DuplicatePattern: regexp.MustCompile(DefaultDuplicatePattern), ProbePeriod: time.Millisecond,
	}
	for i := 1; i <= l.Nodes(); i++ {
		if err := g.Start(i); err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// Monitor is the group's monitor.
func (g *Group) Monitor() *Monitor { return g.mon }

// Spec is the spec the group's daemons run with.
func (g *Group) Spec() DaemonSpec { return g.spec }

// Daemon is node i's daemon, nil if it has none.
func (g *Group) Daemon(i int) *Daemon { return g.daemons[i-1] }

// Start starts node i's daemon (again).
func (g *Group) Start(i int) error {
	if d := g.daemons[i-1]; d != nil {
		select {
		case <-d.Done():
		default:
			return fmt.Errorf("lab: n%d already runs %s", i, d.Kind())
		}
	}
	d, err := g.lab.StartDaemon(i, g.spec)
	if err != nil {
		return err
	}
	g.daemons[i-1] = d
	return nil
}

// Close stops every daemon with SIGTERM, restores cut links, removes
// left-over VIPs and stops the monitor: the group is torn down fully.
func (g *Group) Close() error {
	var errs []error
	// Backups first, together, then the highest priority: a backup that
	// leaves moves nothing, so the group winds down without a cascade of
	// takeovers (keepalived takes about a second to exit, so in parallel).
	order := make([]int, 0, len(g.daemons))
	for i, d := range g.daemons {
		if d != nil {
			order = append(order, i+1)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return g.spec.Group.Priority(a) - g.spec.Group.Priority(b) })
	stopAll := func(nodes []int) {
		var wg sync.WaitGroup
		for _, i := range nodes {
			wg.Go(func() { g.daemons[i-1].stop(shutdownGrace) })
		}
		wg.Wait()
		for _, i := range nodes {
			g.daemons[i-1] = nil
		}
	}
	if len(order) > 0 {
		stopAll(order[:len(order)-1])
		stopAll(order[len(order)-1:])
	}
	for i := 1; i <= g.lab.Nodes(); i++ {
		if g.cut[i-1] {
			errs = append(errs, g.lab.RestoreLink(i))
			g.cut[i-1] = false
		}
		errs = append(errs, g.lab.RemoveNodeAddr(i, g.spec.Group.VIP))
	}
	g.mon.Close()
	return errors.Join(errs...)
}

func (g *Group) healthy(i int) bool {
	d := g.daemons[i-1]
	if d == nil || g.cut[i-1] {
		return false
	}
	select {
	case <-d.Done():
		return false
	default:
		return true
	}
}

// expectedMaster is the healthy node with the highest priority (ties go to
// the lower node number here; the lab never configures ties).
func (g *Group) expectedMaster(except int) int {
	best := 0
	for i := 1; i <= g.lab.Nodes(); i++ {
		if i == except || !g.healthy(i) {
			continue
		}
		if best == 0 || g.spec.Group.Priority(i) > g.spec.Group.Priority(best) {
			best = i
		}
	}
	return best
}

// StableHold is how long a group must look settled to count as stable: three
// advert intervals (a backup's timer would have fired by then) plus 200 ms.
func (g *Group) StableHold() time.Duration { return 3*g.spec.Group.Interval + 200*time.Millisecond }

// WaitStable waits until the expected master alone holds the VIP, alone
// advertises, and nothing changed for StableHold. It gives up after timeout
// (0: 10 advert intervals + 15 s).
func (g *Group) WaitStable(ctx context.Context, timeout time.Duration) (int, error) {
	want := g.expectedMaster(0)
	if want == 0 {
		return 0, errors.New("lab: no healthy node")
	}
	iv := g.spec.Group.Interval
	if timeout == 0 {
		timeout = 10*iv + 15*time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hold := g.StableHold()
	_, err := g.mon.Wait(ctx, 10*time.Millisecond, func(s State) bool {
		if s.OnlyHolder() != want {
			return false
		}
		from := s.At.Add(-hold)
		for _, e := range g.mon.Events(from, time.Time{}) {
			if e.Kind == VIPAdded || e.Kind == VIPRemoved {
				return false
			}
		}
		for i := 1; i <= g.lab.Nodes(); i++ {
			if i != want && g.mon.AdvertsFrom(i, from, s.At) > 0 {
				return false
			}
		}
		return g.mon.AdvertsFrom(want, s.At.Add(-2*iv-50*time.Millisecond), s.At) > 0
	})
	if err != nil {
		s := g.mon.State()
		var dead []string
		for i, d := range g.daemons {
			if d == nil {
				continue
			}
			select {
			case <-d.Done():
				dead = append(dead, fmt.Sprintf("n%d's %s exited (%s; log %s)", i+1, d.Kind(), exitText(d.Err()), d.LogPath()))
			default:
			}
		}
		return 0, fmt.Errorf("lab: %s group not stable within %v (want n%d alone; holders %v, last advertiser n%d%s): %w",
			g.spec.Kind, timeout, want, s.Holders, s.Advertiser, strings.Join(append([]string{""}, dead...), "; "), err)
	}
	return want, nil
}

// Fault injects mode into node i. It returns when the fault took effect
// (the netlink or kill call returned: on a busy machine that call alone can
// take tens of ms, and an advert sent meanwhile is not the fault's) and how
// long the call took.
func (g *Group) Fault(mode Mode, i int) (time.Time, time.Duration, error) {
	d := g.daemons[i-1]
	start := time.Now()
	var err error
	switch mode {
	case Cut:
		err = g.lab.CutLink(i)
		if err == nil {
			g.cut[i-1] = true
		}
	case Kill:
		if d == nil {
			return start, 0, fmt.Errorf("lab: n%d has no daemon", i)
		}
		err = d.Kill()
	case Graceful:
		if d == nil {
			return start, 0, fmt.Errorf("lab: n%d has no daemon", i)
		}
		err = d.Signal(syscall.SIGTERM)
	default:
		err = fmt.Errorf("lab: unknown mode %v", mode)
	}
	t0 := time.Now()
	return t0, t0.Sub(start), err
}

// Restore undoes a fault on node i: the link comes back, or the daemon is
// started again after removing the VIP a killed daemon left behind (as
// keepalived would do itself at its next start).
func (g *Group) Restore(mode Mode, i int) error {
	if mode == Cut {
		if err := g.lab.RestoreLink(i); err != nil {
			return err
		}
		g.cut[i-1] = false
		return nil
	}
	if d := g.daemons[i-1]; d != nil {
		select {
		case <-d.Done():
		case <-time.After(shutdownGrace):
			d.stop(shutdownGrace)
		}
	}
	if err := g.lab.RemoveNodeAddr(i, g.spec.Group.VIP); err != nil {
		return err
	}
	return g.Start(i)
}

// Trial runs one fault trial on a stable group and restores it: probe the
// VIP from the client, fault the master, wait for the takeover and the
// client's recovery, restore, wait until stable again, then measure.
func (g *Group) Trial(ctx context.Context, mode Mode, n int) (TrialResult, error) {
	iv := g.spec.Group.Interval
	res := TrialResult{Daemon: g.spec.Kind.String(), Mode: mode.String(), IntervalMS: ms(iv), Trial: n,
		NeighMS: -1, NeighAfterTakeoverMS: -1}
	fail := func(err error) (TrialResult, error) {
		res.Error = err.Error()
		return res, err
	}
	old, err := g.WaitStable(ctx, 0)
	if err != nil {
		return fail(err)
	}
	res.OldMaster = old
	vip := g.spec.Group.VIP.Addr()
	p, err := g.lab.StartProber(ctx, vip, g.ProbePeriod)
	if err != nil {
		return fail(err)
	}
	defer p.Stop()

	// Warm up: the client must be talking to the master before the fault
	// (a gratuitous ARP only updates an existing entry).
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = g.mon.Wait(wctx, 5*time.Millisecond, func(s State) bool {
		return s.NeighNode == old && p.Flowing(100*time.Millisecond, 20*time.Millisecond)
	})
	cancel()
	if err != nil {
		s := g.mon.State()
		return fail(fmt.Errorf("lab: client does not reach the VIP on n%d before the fault (neighbour n%d, last answer %v ago): %w",
			old, s.NeighNode, time.Since(p.LastAnswer()).Round(time.Millisecond), err))
	}

	g.phase(time.Now(), faultText(mode, old, g.spec.Kind))
	t0, call, err := g.Fault(mode, old)
	res.FaultCallMS = ms(call)
	if err != nil {
		return fail(err)
	}
	g.log.Debug("fault", "mode", mode, "node", NodeName(old))
	restored := false
	defer func() {
		if !restored {
			_ = g.Restore(mode, old)
		}
	}()

	lowest := 255
	for _, pr := range g.spec.Group.Priorities {
		lowest = min(lowest, pr)
	}
	tctx, cancel := context.WithTimeout(ctx, 3*MasterDownInterval(lowest, iv)+5*time.Second)
	defer cancel()
	_, err = g.mon.Wait(tctx, 5*time.Millisecond, func(s State) bool {
		for _, h := range s.Holders {
			if h != old {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fail(fmt.Errorf("lab: no takeover after %s of n%d: %w", mode, old, err))
	}
	var takeoverAt time.Time
	for _, e := range g.mon.Events(t0, time.Time{}) {
		if e.Kind == VIPAdded && e.Node != old {
			takeoverAt, res.NewMaster = e.At, e.Node
			break
		}
	}
	g.phase(takeoverAt, fmt.Sprintf("TAKEOVER: n%d holds the VIP %.1f ms after the fault", res.NewMaster, ms(takeoverAt.Sub(t0))))
	// Recovery: the client is answered again (for kill also: its entry has
	// moved to the new master, or a generous deadline passed).
	_, err = g.mon.Wait(tctx, 5*time.Millisecond, func(s State) bool {
		if p.AnsweredSince(takeoverAt) < 20 || !p.Flowing(10*time.Millisecond, 10*time.Millisecond) {
			return false
		}
		return mode != Kill || s.NeighNode == res.NewMaster || s.At.Sub(takeoverAt) > max(2*time.Second, 5*iv)
	})
	if err != nil {
		return fail(fmt.Errorf("lab: client not answered again after takeover by n%d: %w", res.NewMaster, err))
	}
	if gap := p.LongestGap(t0.Add(-50*time.Millisecond), time.Now()); gap.Len > 0 {
		g.phase(gap.Before.Recv, fmt.Sprintf("client answered again (longest silence so far %.1f ms)", ms(gap.Len)))
	}
	// Settle, still probing: a late second owner or a flap would show here.
	settle := takeoverAt.Add(max(3*iv, 300*time.Millisecond))
	select {
	case <-time.After(time.Until(settle)):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	end := time.Now()
	p.Stop()

	gap := p.LongestGap(t0.Add(-50*time.Millisecond), end)
	res.OutageMS = ms(gap.Len)
	res.ProbeStallMS = ms(p.LongestSendGap(t0.Add(-50*time.Millisecond), end))
	res.TakeoverMS = ms(takeoverAt.Sub(t0))
	res.DuplicateMS = ms(g.mon.DuplicateTime(t0, end))
	res.ProbesSent, res.ProbesAnswered = p.Sent(), len(p.Answers(time.Time{}, time.Time{}))
	newPrio := g.spec.Group.Priority(res.NewMaster)
	res.NewPriority = newPrio
	var since time.Duration
	if mode != Graceful {
		if at, _, ok := g.mon.LastAdvert(old, takeoverAt); ok {
			since = t0.Sub(at)
		}
	}
	res.SinceAdvertMS = ms(since)
	bound := TheoreticalBound(mode, newPrio, iv, since)
	res.BoundMS = ms(bound)
	res.ExcessMS = res.OutageMS - res.BoundMS
	res.TakeoverExcessMS = res.TakeoverMS - res.BoundMS
	for _, e := range g.mon.Events(t0, time.Time{}) {
		if e.Kind == NeighChanged && e.Node == res.NewMaster {
			res.NeighMS = ms(e.At.Sub(t0))
			res.NeighAfterTakeoverMS = ms(e.At.Sub(takeoverAt))
			break
		}
	}
	if mode == Graceful {
		// From the start of the kill call: the daemon may answer SIGTERM
		// before the call has returned to us.
		for _, e := range g.mon.Events(t0.Add(-call), time.Time{}) {
			if e.Kind == AdvertChanged && e.Node == old && e.Priority == 0 {
				res.ReleaseMS = ms(e.At.Sub(t0))
				break
			}
		}
		d := g.daemons[old-1]
		select {
		case <-d.Done():
			code := exitCode(d.Err())
			res.ExitCode = &code
		case <-time.After(shutdownGrace):
		}
	}
	if mode == Kill {
		rep := false
		if d := g.daemons[res.NewMaster-1]; d != nil && g.DuplicatePattern != nil {
			for _, l := range d.Lines(t0) {
				if g.DuplicatePattern.MatchString(l.Text) {
					rep = true
					break
				}
			}
		}
		res.SecondOwnerReported = &rep
	}

	tr := time.Now()
	restored = true
	g.phase(tr, restoreText(mode, old, g.spec.Kind))
	if err := g.Restore(mode, old); err != nil {
		return fail(fmt.Errorf("lab: restore n%d: %w", old, err))
	}
	m, err := g.WaitStable(ctx, 0)
	if err != nil {
		return fail(fmt.Errorf("lab: after restore: %w", err))
	}
	g.phase(time.Now(), fmt.Sprintf("group stable again: n%d alone holds the VIP and advertises", m))
	res.RestoreDuplicateMS = ms(g.mon.DuplicateTime(tr, time.Now()))
	return res, nil
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

func (g *Group) phase(at time.Time, text string) {
	if g.OnPhase != nil {
		g.OnPhase(at, text)
	}
}

func faultText(mode Mode, i int, k DaemonKind) string {
	switch mode {
	case Cut:
		return fmt.Sprintf("FAULT: cutting n%d's link (its eth0 loses carrier)", i)
	case Kill:
		return fmt.Sprintf("FAULT: SIGKILL to n%d's %s (its VIP stays behind)", i, k)
	case Graceful:
		return fmt.Sprintf("FAULT: SIGTERM to n%d's %s (graceful release)", i, k)
	}
	return "FAULT: " + mode.String()
}

func restoreText(mode Mode, i int, k DaemonKind) string {
	switch mode {
	case Cut:
		return fmt.Sprintf("restoring n%d's link", i)
	case Kill:
		return fmt.Sprintf("removing the VIP the killed daemon left on n%d and starting %s there again", i, k)
	}
	return fmt.Sprintf("starting %s on n%d again", k, i)
}
