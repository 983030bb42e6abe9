package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/internal/lab"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Issue 5 in the lab: every node runs vipd with an http tracker on a fake
// /readyz that the test serves inside the node's namespace and switches
// between ok, 401, failing and slow. The configuration is the stable-owner
// pattern of packaging/vipd.toml: equal base priorities, a tracker of
// weight -50, a preempt delay. Tests assert outcomes (who holds the VIP, how
// many moves, what is reported) and log the measured times.

// The trackers' timing, shared by every test.
const (
	readyzAddr    = "127.0.0.1:6443"
	trackInterval = 500 * time.Millisecond
	trackTimeout  = 300 * time.Millisecond
	trackFall     = 3
	trackRise     = 2
	// preemptDelay covers the spread between nodes whose trackers fail (or
	// recover) together: each checks on its own phase, so they flip up to
	// an interval or so apart. Without it, a Backup that is briefly higher
	// than a Master whose tracker failed first would preempt it.
	preemptDelay = 3 * time.Second
	// slowAnswer is how long a slow /readyz takes: well over the timeout.
	slowAnswer = 2 * time.Second
)

// readyMode is what a fake /readyz answers.
type readyMode int32

const (
	_            readyMode = iota // invalid zero value
	readyOK                       // 200
	readyFail                     // 500 with a Kubernetes-style body
	readySlow                     // 200 after slowAnswer: longer than the tracker's timeout
	readyNoCreds                  // 401, as an API server refusing anonymous requests
)

func (m readyMode) String() string {
	switch m {
	case readyOK:
		return "ok"
	case readyFail:
		return "failing"
	case readySlow:
		return "slow"
	case readyNoCreds:
		return "401"
	}
	return "readyMode(" + strconv.Itoa(int(m)) + ")"
}

// readyz is one node's fake API server health endpoint.
type readyz struct {
	mode atomic.Int32
	hits atomic.Uint64
}

func (r *readyz) set(m readyMode) { r.mode.Store(int32(m)) }

func (r *readyz) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.hits.Add(1)
	switch readyMode(r.mode.Load()) {
	case readyOK:
		fmt.Fprintln(w, "ok")
	case readyNoCreds:
		http.Error(w, `{"kind":"Status","status":"Failure","reason":"Unauthorized","code":401}`, http.StatusUnauthorized)
	case readyFail:
		http.Error(w, "[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
	case readySlow:
		t := time.NewTimer(slowAnswer)
		defer t.Stop()
		select {
		case <-req.Context().Done(): // the tracker gave up
			return
		case <-t.C:
		}
		fmt.Fprintln(w, "ok")
	default:
		http.Error(w, "bad mode", http.StatusTeapot)
	}
}

// serveReadyz listens on 127.0.0.1:6443 inside node i's namespace (the
// socket stays there) and serves a readyz in mode ok until the test ends.
func serveReadyz(t *testing.T, l *lab.Lab, i int) *readyz {
	t.Helper()
	r := &readyz{}
	r.set(readyOK)
	var ln net.Listener
	err := lab.RunInNetns(l.NodeNetns(i), func() error {
		var err error
		ln, err = net.Listen("tcp", readyzAddr)
		return err
	})
	if err != nil {
		t.Fatalf("n%d: /readyz listener: %v", i, err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return r
}

// apiserverTrack is the http tracker of the stable-owner pattern.
func apiserverTrack(weight int) string {
	return fmt.Sprintf(`
[[instance.track]]
name = "apiserver"
type = "http"
url = "http://%s/readyz"
ok_status = [200, 401]
weight = %d
fall = %d
rise = %d
interval = %q
timeout = %q
`, readyzAddr, weight, trackFall, trackRise, trackInterval, trackTimeout)
}

// delayKeys are the instance keys of the pattern beside the generated ones.
var delayKeys = fmt.Sprintf("preempt_delay = %q\n", preemptDelay)

// nodeConfig is what a test adds to the lab's generated vipd config.
type nodeConfig struct {
	keys   string // plain [[instance]] keys
	garp   string // [instance.garp] keys beside repeat and interval
	tracks string // [[instance.track]] tables, appended after [instance.garp]
	vip    string // replaces the lab's VIP when set
}

// healthCluster is a cluster whose nodes each have a fake /readyz; the
// daemons are started by the test with its own config.
type healthCluster struct {
	*cluster
	readyz  []*readyz // readyz[i] is node i's; [0] unused
	sockets []string  // control sockets, from the generated configs
}

func newHealthCluster(t *testing.T, nodes int, interval time.Duration) *healthCluster {
	t.Helper()
	c := newCluster(t, interval, make([]lab.DaemonKind, nodes)...) // no daemon yet
	for i := range c.group.Priorities {
		c.group.Priorities[i] = 100 // the stable-owner pattern
	}
	h := &healthCluster{cluster: c, readyz: make([]*readyz, nodes+1), sockets: make([]string, nodes+1)}
	for i := 1; i <= nodes; i++ {
		h.readyz[i] = serveReadyz(t, c.l, i)
	}
	return h
}

func (h *healthCluster) startNode(i int, nc nodeConfig) {
	h.t.Helper()
	h.kinds[i-1] = lab.Vipd
	spec := h.spec(i)
	spec.Config = func(_ int, cfg []byte) []byte {
		replace := func(old, new string) {
			if !bytes.Contains(cfg, []byte(old)) {
				h.t.Fatalf("n%d: the generated config has no %q:\n%s", i, old, cfg)
			}
			cfg = bytes.Replace(cfg, []byte(old), []byte(new), 1)
		}
		if nc.vip != "" {
			replace(`vips = ["`+h.group.VIP.String()+`"]`, `vips = ["`+nc.vip+`"]`)
		}
		replace("\n[instance.garp]", nc.keys+"\n[instance.garp]")
		for line := range strings.Lines(string(cfg)) {
			if v, ok := strings.CutPrefix(line, "socket = "); ok {
				h.sockets[i], _ = strconv.Unquote(strings.TrimSpace(v))
			}
		}
		// The generated config ends with [instance.garp].
		return append(append(cfg, nc.garp...), nc.tracks...)
	}
	h.startSpec(i, spec)
	if h.sockets[i] == "" {
		// An empty path would reach the host's own daemon, if any.
		h.t.Fatalf("n%d: no control socket in the generated config", i)
	}
}

// startWithMaster starts n1 alone, waits for it to hold the VIP, then
// starts the others with the same config: with equal priorities they stay
// Backups, which makes n1 the Master of every test that follows.
func (h *healthCluster) startWithMaster(nc nodeConfig) {
	h.t.Helper()
	h.startNode(1, nc)
	h.waitOnlyHolder(1)
	for i := 2; i < len(h.readyz); i++ {
		h.startNode(i, nc)
	}
	for i := 2; i < len(h.readyz); i++ {
		h.waitStatus(i, "BACKUP following n1", 20*time.Second, func(st control.InstanceStatus) bool {
			return st.State == control.StateBackup && st.Master.Address == h.l.NodeAddr(1)
		})
	}
	if s := h.mon.State(); s.OnlyHolder() != 1 {
		h.t.Fatalf("holders %v after the Backups started", s.Holders)
	}
}

// status is node i's only instance as `vipd status --json` shows it.
func (h *healthCluster) status(i int) (control.InstanceStatus, error) {
	c := control.Client{Path: h.sockets[i], Timeout: 5 * time.Second}
	sts, err := c.Status(context.Background())
	if err != nil {
		return control.InstanceStatus{}, err
	}
	if len(sts) != 1 {
		return control.InstanceStatus{}, fmt.Errorf("%d instances in status, want 1", len(sts))
	}
	return sts[0], nil
}

func (h *healthCluster) mustStatus(i int) control.InstanceStatus {
	h.t.Helper()
	st, err := h.status(i)
	if err != nil {
		h.t.Fatalf("n%d status: %v", i, err)
	}
	return st
}

// waitStatus polls node i's status until cond holds.
func (h *healthCluster) waitStatus(i int, what string, timeout time.Duration, cond func(control.InstanceStatus) bool) control.InstanceStatus {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := h.status(i)
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("n%d: waiting for %s: status %s (err %v)", i, what, describeStatus(st), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describeStatus(st control.InstanceStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "state %s, priority %d/%d, master %v", st.State, st.Priority.Effective, st.Priority.Base, st.Master.Address)
	for _, tr := range st.Trackers {
		fmt.Fprintf(&b, ", tracker %s healthy=%v (%s) checks %d failures %d", tr.Name, tr.Healthy, tr.Detail, tr.Checks, tr.Failures)
	}
	if len(st.Warnings) > 0 {
		fmt.Fprintf(&b, ", warnings %q", st.Warnings)
	}
	return b.String()
}

// masterEntries are node i's transitions to MASTER at or after since, from
// its history (`vipd history`).
func (h *healthCluster) masterEntries(i int, since time.Time) []control.Transition {
	h.t.Helper()
	c := control.Client{Path: h.sockets[i], Timeout: 5 * time.Second}
	ts, err := c.History(context.Background())
	if err != nil {
		h.t.Fatalf("n%d history: %v", i, err)
	}
	var out []control.Transition
	for _, tr := range ts {
		if tr.To == control.StateMaster && !tr.At.Before(since) {
			out = append(out, tr)
		}
	}
	return out
}

// masterCount counts the transitions to MASTER of every running node since.
func (h *healthCluster) masterCount(since time.Time) (int, string) {
	h.t.Helper()
	n := 0
	var who []string
	for i := 1; i < len(h.readyz); i++ {
		if h.daemons[i] == nil {
			continue
		}
		for _, tr := range h.masterEntries(i, since) {
			n++
			who = append(who, fmt.Sprintf("n%d at %s (%s: %s)", i, tr.At.Format("15:04:05.000"), tr.Reason, tr.Cause))
		}
	}
	return n, strings.Join(who, "; ")
}

// arrivals are the VIP's appearances on nodes at or after since.
func arrivals(m *lab.Monitor, since time.Time) []lab.Event {
	var out []lab.Event
	for _, e := range m.Events(since, time.Time{}) {
		if e.Kind == lab.VIPAdded {
			out = append(out, e)
		}
	}
	return out
}

// timeline renders the monitor's events since from, for the test log.
func timeline(m *lab.Monitor, from time.Time) string {
	var b strings.Builder
	for _, e := range m.Events(from, time.Time{}) {
		if e.Kind == lab.AdvertChanged {
			continue // one line per priority change of every node: noise here
		}
		fmt.Fprintf(&b, "\n  +%v %s", e.At.Sub(from).Round(time.Millisecond), e.Describe())
	}
	return b.String()
}

// logLine is the first line of node i's output at or after since that
// contains every part.
func (h *healthCluster) logLine(i int, since time.Time, parts ...string) (lab.LogLine, bool) {
	for _, ln := range h.daemons[i].Lines(since) {
		ok := true
		for _, p := range parts {
			if !strings.Contains(ln.Text, p) {
				ok = false
				break
			}
		}
		if ok {
			return ln, true
		}
	}
	return lab.LogLine{}, false
}

// waitLine waits for logLine.
func (h *healthCluster) waitLine(i int, since time.Time, timeout time.Duration, parts ...string) lab.LogLine {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if ln, ok := h.logLine(i, since, parts...); ok {
			return ln
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("n%d: no log line with %q within %v", i, parts, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// masterDown is Master_Down_Interval of a Backup of priority prio
// listening to a Master that advertises every interval (RFC 5798 §6.1).
func masterDown(interval time.Duration, prio int) time.Duration {
	return 3*interval + time.Duration(256-prio)*interval/256
}

func TestLabHealthMasterFailsMovesOnce(t *testing.T) {
	h := newHealthCluster(t, 3, time.Second)
	nc := nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50)}
	h.startWithMaster(nc)
	// n2's API server refuses anonymous requests: 401 is healthy.
	h.readyz[2].set(readyNoCreds)
	h.waitStatus(2, "the 401 tracker checked and healthy", 10*time.Second, func(st control.InstanceStatus) bool {
		return len(st.Trackers) == 1 && st.Trackers[0].Healthy && strings.Contains(st.Trackers[0].Detail, "401 Unauthorized")
	})

	failAt := time.Now()
	h.readyz[1].set(readyFail)
	bound := trackFall*trackInterval + preemptDelay + masterDown(time.Second, 100)
	h.waitFor("a healthy node alone holding the VIP", 4*bound, func(s lab.State) bool {
		return s.OnlyHolder() == 2 || s.OnlyHolder() == 3
	})
	failing := h.waitLine(1, failAt, 5*time.Second, "tracker failing", "apiserver")
	arr := arrivals(h.mon, failAt)
	if len(arr) == 0 {
		t.Fatal("no VIP arrival recorded")
	}
	t.Logf("master's /readyz failing: n1's tracker failed after %v (fall %d x %v), the VIP on n%d after %v (bound fall x interval + preempt_delay + Master_Down_Interval = %v)",
		failing.At.Sub(failAt).Round(time.Millisecond), trackFall, trackInterval, arr[0].Node,
		arr[0].At.Sub(failAt).Round(time.Millisecond), bound)
	st := h.mustStatus(1)
	if st.Priority.Effective != 50 || len(st.Priority.Parts) != 1 || st.Priority.Parts[0].Healthy {
		t.Errorf("n1 status: %s; want effective priority 50 from the failing tracker", describeStatus(st))
	}

	// Settle, then n1's API recovers: equal priorities, so no move back.
	time.Sleep(2 * time.Second)
	winner := h.mon.State().OnlyHolder()
	if winner != 2 && winner != 3 {
		t.Fatalf("holders %v after the takeover settled, want n2 or n3 alone", h.mon.State().Holders)
	}
	recoverAt := time.Now()
	h.readyz[1].set(readyOK)
	healthy := h.waitLine(1, recoverAt, 10*time.Second, "tracker healthy again", "apiserver")
	t.Logf("n1's tracker healthy again %v after /readyz recovered (rise %d x %v)",
		healthy.At.Sub(recoverAt).Round(time.Millisecond), trackRise, trackInterval)
	// Long enough for any preemption: preempt_delay + Master_Down_Interval.
	time.Sleep(preemptDelay + masterDown(time.Second, 100) + time.Second)
	if got := h.mon.State(); got.OnlyHolder() != winner {
		t.Errorf("holders %v after n1 recovered, want n%d alone", got.Holders, winner)
	}
	n, who := h.masterCount(failAt)
	t.Logf("moves after the master's failure and recovery: %d MASTER transitions (%s), %d VIP arrivals;%s",
		n, who, len(arrivals(h.mon, failAt)), timeline(h.mon, failAt))
	if n != 1 {
		// Seen when both Backups, of equal priority and armed by the same
		// advert, preempt at the same instant: the lower address yields
		// to the higher within a millisecond, but the VIP has moved twice.
		t.Errorf("%d transitions to MASTER (%s), want exactly 1", n, who)
	}
	if a := arrivals(h.mon, failAt); len(a) != 1 {
		t.Errorf("the VIP arrived %d times on a node, want once", len(a))
	}
}

// sleepUntil sleeps until t (at once if t has passed).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// waitMon is cluster.waitFor for a second monitor.
func waitMon(t *testing.T, m *lab.Monitor, what string, timeout time.Duration, cond func(lab.State) bool) lab.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, err := m.Wait(ctx, 10*time.Millisecond, cond)
	if err != nil {
		t.Fatalf("waiting for %s: %v (holders %v)", what, err, s.Holders)
	}
	return s
}

func TestLabHealthAllSlowDoesNotMove(t *testing.T) {
	h := newHealthCluster(t, 3, time.Second)
	h.startWithMaster(nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50)})
	settled := time.Now()

	// 15 s of answers slower than the timeout on every node, then 15 s of
	// failures: 30 s in which no API server is healthy.
	for i := 1; i <= 3; i++ {
		h.readyz[i].set(readySlow)
	}
	var first, last time.Duration
	for i := 1; i <= 3; i++ {
		ln := h.waitLine(i, settled, 15*time.Second, "priority changed", "to=50")
		d := ln.At.Sub(settled)
		if i == 1 || d < first {
			first = d
		}
		last = max(last, d)
		t.Logf("all slow: n%d's tracker failed after %v", i, d.Round(time.Millisecond))
	}
	t.Logf("all slow: spread between the first and the last node's tracker failing: %v (preempt_delay %v)",
		(last - first).Round(time.Millisecond), preemptDelay)
	for i := 1; i <= 3; i++ {
		st := h.mustStatus(i)
		if st.Priority.Effective != 50 || len(st.Trackers) != 1 || st.Trackers[0].Healthy ||
			!strings.Contains(st.Trackers[0].Detail, "timeout after "+trackTimeout.String()) {
			t.Errorf("n%d while slow: %s; want priority 50 and a tracker failing by timeout", i, describeStatus(st))
		}
	}
	sleepUntil(settled.Add(15 * time.Second))
	for i := 1; i <= 3; i++ {
		h.readyz[i].set(readyFail)
	}
	sleepUntil(settled.Add(30 * time.Second))
	for i := 1; i <= 3; i++ {
		st := h.mustStatus(i)
		if st.Priority.Effective != 50 || len(st.Trackers) != 1 || st.Trackers[0].Healthy ||
			!strings.Contains(st.Trackers[0].Detail, "500 Internal Server Error") {
			t.Errorf("n%d while failing: %s; want priority 50 and a tracker failing with 500", i, describeStatus(st))
		}
		t.Logf("n%d after 30 s unhealthy: %d checks, %d failed", i, st.Trackers[0].Checks, st.Trackers[0].Failures)
	}
	if s := h.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v after 30 s of every /readyz unhealthy, want n1 alone", s.Holders)
	}

	// Everyone recovers, again at slightly different times.
	recoverAt := time.Now()
	for i := 1; i <= 3; i++ {
		h.readyz[i].set(readyOK)
	}
	for i := 1; i <= 3; i++ {
		h.waitLine(i, recoverAt, 10*time.Second, "priority changed", "to=100")
	}
	time.Sleep(3 * time.Second)
	n, who := h.masterCount(settled)
	var vipEvents []lab.Event
	for _, e := range h.mon.Events(settled, time.Time{}) {
		if e.Kind == lab.VIPAdded || e.Kind == lab.VIPRemoved {
			vipEvents = append(vipEvents, e)
		}
	}
	t.Logf("all slow or failing for 30 s, then recovered: %d MASTER transitions, %d VIP events", n, len(vipEvents))
	if n != 0 || len(vipEvents) != 0 {
		t.Errorf("the VIP moved: %d transitions to MASTER (%s);%s", n, who, timeline(h.mon, settled))
	}
	if s := h.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v at the end, want n1 alone", s.Holders)
	}
}

func TestLabHealthPreferredReturnsAfterPreemptDelay(t *testing.T) {
	h := newHealthCluster(t, 2, time.Second)
	h.group.Priorities = []int{150, 100}
	// 150 - 60 = 90: below the healthy peer's 100 (-50 would only tie).
	h.startNode(1, nodeConfig{keys: delayKeys, tracks: apiserverTrack(-60)})
	h.waitOnlyHolder(1)
	h.startNode(2, nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50)})
	h.waitStatus(2, "BACKUP following n1", 20*time.Second, func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address == h.l.NodeAddr(1)
	})

	failAt := time.Now()
	h.readyz[1].set(readyFail)
	h.waitOnlyHolder(2)
	away := arrivals(h.mon, failAt)
	t.Logf("preferred node's /readyz failing: the VIP on n2 after %v (bound %v)", away[0].At.Sub(failAt).Round(time.Millisecond),
		trackFall*trackInterval+preemptDelay+masterDown(time.Second, 100))

	time.Sleep(time.Second)
	recoverAt := time.Now()
	h.readyz[1].set(readyOK)
	raised := h.waitLine(1, recoverAt, 10*time.Second, "priority changed", "to=150")
	h.waitFor("n1 alone holding the VIP again", 30*time.Second, func(s lab.State) bool { return s.OnlyHolder() == 1 })
	back := arrivals(h.mon, recoverAt)
	if len(back) != 1 || back[0].Node != 1 {
		t.Fatalf("VIP arrivals after the recovery: %v, want n1 once", back)
	}
	waited := back[0].At.Sub(raised.At)
	t.Logf("preferred node healthy again: priority back to 150 %v after /readyz recovered, the VIP back %v later (preempt_delay %v, Master_Down_Interval %v)",
		raised.At.Sub(recoverAt).Round(time.Millisecond), waited.Round(time.Millisecond), preemptDelay, masterDown(time.Second, 150))
	if waited < preemptDelay {
		t.Errorf("n1 took the VIP back %v after its priority rose, before preempt_delay %v", waited, preemptDelay)
	}
	if !h.waitLog(1, "to=MASTER", "reason=preempt", "preempting master 198.51.100.12") {
		t.Error("n1's takeover is not a preemption of n2")
	}
	if n, who := h.masterCount(failAt); n != 2 {
		t.Errorf("%d transitions to MASTER (%s), want 2: away and back", n, who)
	}
}

func TestLabHealthDrainFile(t *testing.T) {
	h := newHealthCluster(t, 2, time.Second)
	drain := func(i int) string { return filepath.Join(h.l.Dir(), lab.NodeName(i), "drain") }
	config := func(i int) nodeConfig {
		return nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50) + fmt.Sprintf(`
[[instance.track]]
name = "drain"
type = "file"
path = %q
weight = 0
fall = 1
interval = %q
`, drain(i), trackInterval)}
	}
	h.startNode(1, config(1))
	h.waitOnlyHolder(1)
	h.startNode(2, config(2))
	h.waitStatus(2, "BACKUP following n1", 20*time.Second, func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address == h.l.NodeAddr(1)
	})
	h.pingUntil(5 * time.Second)

	touchAt := time.Now()
	if err := os.WriteFile(drain(1), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitOnlyHolder(2)
	fault := h.waitLine(1, touchAt, 5*time.Second, "to=FAULT", "tracker drain failing", drain(1)+" exists")
	if !h.waitLog(2, "to=MASTER", "reason=master_left", "priority 0 from master 198.51.100.11") {
		t.Error("n2 did not take over on n1's priority 0: not a graceful handover")
	}
	moved := arrivals(h.mon, touchAt)
	h.pingUntil(5 * time.Second)
	t.Logf("drain file: n1 in FAULT %v after the touch, the VIP on n2 %v after it, duplicate ownership %v",
		fault.At.Sub(touchAt).Round(time.Millisecond), moved[0].At.Sub(touchAt).Round(time.Millisecond),
		h.mon.DuplicateTime(touchAt, time.Now()))
	if st := h.mustStatus(1); st.State != control.StateFault {
		t.Errorf("n1 while drained: %s", describeStatus(st))
	}

	removeAt := time.Now()
	if err := os.Remove(drain(1)); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(1, "BACKUP after the drain file went", 10*time.Second, func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup
	})
	time.Sleep(preemptDelay + masterDown(time.Second, 100) + time.Second)
	if s := h.mon.State(); s.OnlyHolder() != 2 {
		t.Errorf("holders %v after the drain file went, want n2 alone", s.Holders)
	}
	if a := arrivals(h.mon, removeAt); len(a) != 0 {
		t.Errorf("the VIP moved back after the drain file went:%s", timeline(h.mon, removeAt))
	}
	if n, who := h.masterCount(touchAt); n != 1 {
		t.Errorf("%d transitions to MASTER (%s), want 1", n, who)
	}
}

func TestLabHealthFrozenMaster(t *testing.T) {
	// garp.refresh re-announces the VIP every second while Master, for
	// networks that forget neighbour entries. It also means that a frozen
	// Master always resumes with an announcement overdue: it must stay
	// silent until it knows whether someone took over.
	h := newHealthCluster(t, 2, time.Second)
	h.startWithMaster(nodeConfig{keys: delayKeys, garp: "refresh = \"1s\"\n", tracks: apiserverTrack(-50)})
	h.pingUntil(5 * time.Second)
	h.waitFor("the client on n1", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })

	stopAt := time.Now()
	if err := h.daemons[1].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the lab's SIGTERM must find a running process.
	t.Cleanup(func() { h.daemons[1].Signal(syscall.SIGCONT) })
	h.waitFor("n2 taking over from the frozen n1", 20*time.Second, func(s lab.State) bool { return s.Holds(2) })
	took := arrivals(h.mon, stopAt)[0].At.Sub(stopAt)
	h.waitFor("the client on n2", 10*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	sleepUntil(stopAt.Add(10 * time.Second))
	contAt := time.Now()
	if err := h.daemons[1].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	h.waitOnlyHolder(2)
	released := h.mon.State().At
	for _, e := range h.mon.Events(contAt, time.Time{}) {
		if e.Kind == lab.VIPRemoved && e.Node == 1 {
			released = e.At
			break
		}
	}
	yield := h.waitLine(1, contAt, 5*time.Second, "to=BACKUP", "reason=frozen")
	_, cause, _ := strings.Cut(yield.Text, "cause=")
	time.Sleep(3 * time.Second)
	h.pingUntil(5 * time.Second)
	h.waitFor("the client on n2", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 2 })
	end := time.Now()
	t.Logf("SIGSTOP 10 s: n2 took over after %v; duplicate ownership %v while n1 was frozen (its kernel keeps the address), %v after SIGCONT (bound: one advert interval, 1s); n1 released %v after SIGCONT (cause %s)",
		took.Round(time.Millisecond), h.mon.DuplicateTime(stopAt, contAt).Round(time.Millisecond),
		h.mon.DuplicateTime(contAt, end).Round(time.Millisecond), released.Sub(contAt).Round(time.Millisecond), cause)
	if s := h.mon.State(); s.OnlyHolder() != 2 {
		t.Errorf("holders %v at the end, want n2 alone", s.Holders)
	}
	if a := arrivals(h.mon, stopAt); len(a) != 1 {
		t.Errorf("the VIP arrived %d times since SIGSTOP, want once (n2's takeover):%s", len(a), timeline(h.mon, stopAt))
	}
	if n, who := h.masterCount(stopAt); n != 1 {
		t.Errorf("%d transitions to MASTER since SIGSTOP (%s), want 1", n, who)
	}
	// Only a gratuitous ARP from n1 moves the client's entry to n1's MAC.
	for _, e := range h.mon.Events(contAt, end) {
		if e.Kind == lab.NeighChanged && e.Node == 1 {
			t.Errorf("n1 announced the VIP after SIGCONT, before yielding: the client followed it %v after SIGCONT and n1 then released the address "+
				"(a frozen Master must stay silent until it has heard who took over);%s", e.At.Sub(contAt).Round(time.Microsecond), timeline(h.mon, contAt))
			break
		}
	}
}

func TestLabHealthExecTrackerHangs(t *testing.T) {
	h := newHealthCluster(t, 1, time.Second)
	h.startNode(1, nodeConfig{tracks: fmt.Sprintf(`
[[instance.track]]
name = "hang"
type = "exec"
command = ["/bin/sleep", "100"]
fall = %d
interval = %q
timeout = %q
`, trackFall, trackInterval, trackTimeout)})
	st := h.waitStatus(1, "the hanging exec tracker failing", 20*time.Second, func(st control.InstanceStatus) bool {
		return len(st.Trackers) == 1 && !st.Trackers[0].Healthy
	})
	tr := st.Trackers[0]
	if !strings.Contains(tr.Detail, "killed after timeout "+trackTimeout.String()) || st.Priority.Effective != 50 {
		t.Errorf("status: %s; want the tracker killed after %v and priority 50", describeStatus(st), trackTimeout)
	}
	before := tr.Checks

	// Watch the node's processes for a few cycles: at most one sleep at a
	// time (the running check), no zombie child of vipd that outlives a
	// check.
	nsIno, err := netnsInode(h.l.NodeNetns(1))
	if err != nil {
		t.Fatal(err)
	}
	vipd := h.daemons[1].PID()
	zombies := map[int]time.Time{}
	maxSleeps, samples, ours := 0, 0, 0
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		samples++
		sleeps := 0
		for _, p := range procsInNetns(nsIno) {
			if p.comm == "sleep" {
				sleeps++
				if p.ppid == vipd {
					ours++
				}
			}
			if p.ppid == vipd && p.state == 'Z' {
				if first, ok := zombies[p.pid]; !ok {
					zombies[p.pid] = time.Now()
				} else if time.Since(first) > trackInterval {
					t.Errorf("zombie %d (%s), child of vipd, for %v", p.pid, p.comm, time.Since(first).Round(time.Millisecond))
				}
			}
		}
		maxSleeps = max(maxSleeps, sleeps)
	}
	if ours == 0 {
		t.Fatalf("no sleep child of vipd (pid %d) seen in %d samples: the process checks would prove nothing", vipd, samples)
	}
	if maxSleeps > 1 {
		t.Errorf("%d sleep processes at once in n1's namespace: killed checks are left running", maxSleeps)
	}
	st = h.mustStatus(1)
	tr = st.Trackers[0]
	if tr.Checks < before+4 || tr.Failures != tr.Checks {
		t.Errorf("tracker after the sampling: %d checks (%d before), %d failures; want every check run and failed", tr.Checks, before, tr.Failures)
	}
	t.Logf("hanging exec tracker: %d checks, %d failed, last one killed after %v (%s); at most %d sleep at once over %d samples, %d brief zombies seen",
		tr.Checks, tr.Failures, time.Duration(tr.LastDuration).Round(time.Millisecond), tr.Detail, maxSleeps, samples, len(zombies))
}

type proc struct {
	pid, ppid int
	comm      string
	state     byte
}

// netnsInode identifies a network namespace as /proc/PID/ns/net does.
func netnsInode(ns netns.NsHandle) (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Fstat(int(ns), &st)
	return st, err
}

// procsInNetns lists the processes whose network namespace is ns.
func procsInNetns(ns unix.Stat_t) []proc {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat("/proc/"+e.Name()+"/ns/net", &st) != nil || st.Dev != ns.Dev || st.Ino != ns.Ino {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// comm may hold spaces and parentheses: fields follow the last ')'.
		open, closing := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(string(b[closing+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, proc{pid: pid, ppid: ppid, comm: string(b[open+1 : closing]), state: f[0][0]})
	}
	return out
}

// dialARP opens a packet socket on node i's eth0 that sends gratuitous ARP
// with the node's MAC.
func dialARP(t *testing.T, l *lab.Lab, i int) *arp.Announcer {
	t.Helper()
	var ann *arp.Announcer
	err := lab.RunInNetns(l.NodeNetns(i), func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		ann, err = arp.Dial(ifi)
		return err
	})
	if err != nil {
		t.Fatalf("n%d's ARP socket: %v", i, err)
	}
	t.Cleanup(func() { ann.Close() })
	return ann
}

// waitNeighQuiet waits, without sending anything from the client, for its
// neighbour entry for the VIP to point at node i after the moment after.
func (h *healthCluster) waitNeighQuiet(i int, after time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err := h.mon.Wait(ctx, 10*time.Millisecond, func(s lab.State) bool {
		return s.NeighNode == i && time.Now().After(after)
	})
	return err
}

func TestLabHealthForeignARPOwner(t *testing.T) {
	// n1 runs vipd; n2 is a foreign host with no daemon. One gratuitous
	// ARP after a takeover keeps the Master quiet afterwards, so that every
	// announcement below answers a claim.
	h := newHealthCluster(t, 2, time.Second)
	h.group.GARPRepeat = 1
	h.startNode(1, nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50)})
	h.waitOnlyHolder(1)
	h.pingUntil(5 * time.Second)
	h.waitFor("the client on n1", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })
	vip := h.group.VIP
	start := time.Now()

	// A passive second owner: n2 has the address and answers ARP for it.
	// The Master's once-a-second probe finds it.
	mac2 := h.l.NodeMAC(2).String()
	h.nodeCmd(2, "ip", "addr", "add", vip.String(), "dev", "eth0")
	found := h.waitLine(1, start, 5*time.Second, "another host claims our virtual address", "foreign_mac="+mac2)
	st := h.waitStatus(1, "a warning about n2", 5*time.Second, func(st control.InstanceStatus) bool {
		return slices.ContainsFunc(st.Warnings, func(w string) bool {
			return strings.Contains(w, "a second host claims "+vip.Addr().String()+" from "+mac2)
		})
	})
	if st.State != control.StateMaster {
		t.Errorf("n1 after the claim: %s", describeStatus(st))
	}
	// A client that asks now hears both owners; it must end up on the
	// Master.
	flushAt := time.Now()
	if out, err := h.l.ClientCommand(context.Background(), "ip", "neigh", "flush", "to", vip.Addr().String()).CombinedOutput(); err != nil {
		t.Fatalf("flush the client's entry: %v: %s", err, out)
	}
	h.pingUntil(5 * time.Second)
	onMaster := h.waitFor("the client on n1 beside a passive second owner", 15*time.Second, func(s lab.State) bool {
		h.ping()
		return s.NeighNode == 1
	})
	t.Logf("passive foreign owner (n2, %s): reported after %v (probe every 1s); client on the Master %v after its entry was flushed;%s",
		mac2, found.At.Sub(start).Round(time.Millisecond), onMaster.At.Sub(flushAt).Round(time.Millisecond), timeline(h.mon, flushAt))
	// And it stays there while it keeps talking to the VIP.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		h.pingUntil(5 * time.Second)
		time.Sleep(200 * time.Millisecond)
	}
	if s := h.mon.State(); s.NeighNode != 1 {
		t.Errorf("the client's entry for the VIP points at n%d (%v), want the Master n1;%s", s.NeighNode, s.NeighMAC, timeline(h.mon, flushAt))
	}
	if n, who := h.masterCount(start); n != 0 {
		t.Errorf("n1 changed state: %s", who)
	}
	if st := h.mustStatus(1); st.State != control.StateMaster || !st.VIPsHeld {
		t.Errorf("n1 at the end: %s", describeStatus(st))
	}
}

func TestLabHealthForeignGARPBurst(t *testing.T) {
	// n2, with no daemon and without the address, sends a burst of
	// gratuitous ARP for the VIP, a frame every 40ms, as a host taking an
	// address over does. Every frame moves the client to n2; the Master's
	// answer must come after the last one, so that the client ends up on
	// the Master with no traffic of its own: n2 never answers for the
	// address afterwards, so nothing else would move the client back.
	h := newHealthCluster(t, 2, time.Second)
	h.group.GARPRepeat = 1
	h.startNode(1, nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50)})
	h.waitOnlyHolder(1)
	h.pingUntil(5 * time.Second)
	h.waitFor("the client on n1", 5*time.Second, func(s lab.State) bool { return s.NeighNode == 1 })
	time.Sleep(time.Second)
	mac2 := h.l.NodeMAC(2).String()
	ann := dialARP(t, h.l, 2)
	burstAt := time.Now()
	const frames, spacing = 3, 40 * time.Millisecond
	for range frames {
		if err := ann.Announce(h.group.VIP.Addr()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(spacing)
	}
	found := h.waitLine(1, burstAt, 5*time.Second, "another host claims our virtual address", "foreign_mac="+mac2)
	err := h.waitNeighQuiet(1, burstAt.Add(frames*spacing+100*time.Millisecond), 5*time.Second)
	t.Logf("burst of %d gratuitous ARPs %v apart from n2 (%s): reported after %v; the client's entry:%s",
		frames, spacing, mac2, found.At.Sub(burstAt).Round(time.Microsecond), timeline(h.mon, burstAt))
	if err != nil {
		t.Errorf("the client's entry for the VIP is left on n2 after its burst: the Master's answers are rate-limited by dropping "+
			"(daemon/instance.go onClaim, conflictAnswerEvery), so the last claim got none (%v)", err)
	}
	// With traffic the client finds the Master in any case, through its
	// own neighbour probes.
	h.waitFor("the client on n1 after n2's burst", 30*time.Second, func(s lab.State) bool {
		h.ping()
		return s.NeighNode == 1
	})
	if st := h.mustStatus(1); st.State != control.StateMaster || !st.VIPsHeld {
		t.Errorf("n1 at the end: %s", describeStatus(st))
	}
}

func TestLabHealthVRIDCollision(t *testing.T) {
	// Group A (n1, n2) holds 198.51.100.10, group B (n3, n4) 198.51.100.20,
	// both with VRID 51 on the same bridge.
	h := newHealthCluster(t, 4, time.Second)
	h.group.Priorities = []int{150, 100, 150, 100}
	vipB := netip.MustParsePrefix("198.51.100.20/32")
	monB, err := h.l.Watch(context.Background(), vipB.Addr(), h.group.VRID, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(monB.Close)
	start := time.Now()
	for i := 1; i <= 4; i++ {
		nc := nodeConfig{keys: delayKeys, tracks: apiserverTrack(-50)}
		if i >= 3 {
			nc.vip = vipB.String()
		}
		h.startNode(i, nc)
	}
	h.waitOnlyHolder(1)
	waitMon(t, monB, "n3 alone holding group B's VIP", 20*time.Second, func(s lab.State) bool { return s.OnlyHolder() == 3 })
	settled := time.Now()
	// Each side hears the other's Master.
	other := map[int]string{1: "198.51.100.13", 2: "198.51.100.13", 3: "198.51.100.11", 4: "198.51.100.11"}
	for i := 1; i <= 4; i++ {
		ln := h.waitLine(i, start, 10*time.Second, "another group uses this VRID", "source="+other[i], "reason=address_list")
		st := h.waitStatus(i, "the collision in status", 10*time.Second, func(st control.InstanceStatus) bool {
			return st.Counters.Drops["address_list"] > 0 && slices.ContainsFunc(st.Warnings, func(w string) bool {
				return strings.Contains(w, "VRID collision: "+other[i])
			})
		})
		t.Logf("n%d reported the collision %v after its start; %d adverts dropped for address_list so far",
			i, ln.At.Sub(h.daemons[i].Started()).Round(time.Millisecond), st.Counters.Drops["address_list"])
	}
	time.Sleep(5 * time.Second)
	if s := h.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("group A holders %v, want n1 alone", s.Holders)
	}
	if s := monB.State(); s.OnlyHolder() != 3 {
		t.Errorf("group B holders %v, want n3 alone", s.Holders)
	}
	for _, m := range []*lab.Monitor{h.mon, monB} {
		if a := arrivals(m, settled); len(a) != 0 {
			t.Errorf("a VIP moved after the groups settled:%s", timeline(m, settled))
		}
	}
	if n, who := h.masterCount(settled); n != 0 {
		t.Errorf("%d transitions to MASTER after the groups settled: %s", n, who)
	}
	for i := 1; i <= 4; i++ {
		st := h.mustStatus(i)
		t.Logf("n%d after %v: %s, %d adverts dropped for address_list", i, time.Since(settled).Round(time.Second), st.State, st.Counters.Drops["address_list"])
	}
}
