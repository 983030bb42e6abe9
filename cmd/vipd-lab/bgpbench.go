package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// bgp-bench: the client's outage when the Master of an announce = "bgp"
// group goes, in the routed lab, beside the ARP mode's figures of bench.

// The faults: a graceful stop, the link's carrier lost (the router sees its
// interface go down), and a silent cut (nftables drops everything on the
// link in the router: a dead host or a broken path, where only the hold
// timer or BFD can tell).
const (
	faultGraceful = "graceful"
	faultLink     = "link"
	faultSilent   = "silent"
)

var (
	defaultTimers = peerTimers{}
	shortTimers   = peerTimers{HoldTime: "3s", Keepalive: "1s"}
	bfdTimers     = peerTimers{BFD: true}
)

// bgpScenario is one row of the table.
type bgpScenario struct {
	Fault  string
	Timers peerTimers
}

func (s bgpScenario) name() string {
	switch s.Fault {
	case faultGraceful:
		return "graceful stop (SIGTERM), " + s.Timers.String()
	case faultLink:
		return "link down, " + s.Timers.String()
	default:
		return "silent cut, " + s.Timers.String()
	}
}

// bgpTrial is one measured failover.
type bgpTrial struct {
	Scenario string `json:"scenario"`
	Fault    string `json:"fault"`
	HoldTime string `json:"hold_time"`
	BFD      bool   `json:"bfd"`
	Trial    int    `json:"trial"`
	// OutageMS is the client's longest silence around the fault; RouteMS
	// when the old Master's path left the valid paths in FRR's table
	// (polled every 20 ms).
	OutageMS float64 `json:"outage_ms"`
	RouteMS  float64 `json:"route_moved_ms"`
	Lost     int     `json:"probes_lost"`
	Sent     int     `json:"probes_sent"`
	Error    string  `json:"error,omitempty"`
}

type bgpStat struct {
	Scenario string  `json:"scenario"`
	N        int     `json:"n"`
	Median   float64 `json:"median_ms"`
	Min      float64 `json:"min_ms"`
	Max      float64 `json:"max_ms"`
	RouteMed float64 `json:"route_moved_median_ms"`
}

// arpRef is a vipd ARP-mode outage row of bench.json, for comparison.
type arpRef struct {
	Mode       string  `json:"mode"`
	IntervalMS float64 `json:"interval_ms"`
	N          int     `json:"n"`
	Median     float64 `json:"median_ms"`
	Min        float64 `json:"min_ms"`
	Max        float64 `json:"max_ms"`
}

type bgpBenchResult struct {
	Started       time.Time  `json:"started"`
	Finished      time.Time  `json:"finished"`
	Vipd          string     `json:"vipd"`
	ProbeMS       float64    `json:"probe_period_ms"`
	AdvertMS      float64    `json:"advert_interval_ms"`
	GracefulMS    float64    `json:"graceful_shutdown_time_ms"`
	Summary       []bgpStat  `json:"summary"`
	Trials        []bgpTrial `json:"trials"`
	ARPFrom       string     `json:"arp_from,omitempty"`
	ARPFromRun    time.Time  `json:"arp_from_run,omitzero"`
	ARPReferences []arpRef   `json:"arp,omitempty"`
}

func runBGPBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bgp-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vipd := fs.String("vipd", "", "path of the vipd binary")
	trials := fs.Int("trials", 3, "trials per scenario")
	faults := fs.String("faults", "graceful,link,silent", "faults: graceful (SIGTERM), link (carrier down), silent (nftables drop on the link)")
	out := fs.String("out", "results", "directory for bgp-bench.json and bgp-bench.txt; its bench.json, if any, gives the ARP figures")
	verbose := fs.Bool("v", false, "debug logging from the lab")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	want := split(*faults)
	for _, f := range want {
		if f != faultGraceful && f != faultLink && f != faultSilent {
			return fmt.Errorf("fault %q: want graceful, link or silent", f)
		}
	}
	if *trials < 1 {
		return errors.New("--trials must be at least 1")
	}
	if err := preflight([]lab.DaemonKind{lab.Vipd}, *vipd); err != nil {
		return err
	}
	if slices.Contains(want, faultSilent) {
		if _, err := exec.LookPath("nft"); err != nil {
			return errors.New("the silent cut needs nft: apt-get install nftables")
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	// One lab per timer setting; its scenarios in the order of the table.
	var plan []struct {
		timers peerTimers
		faults []string
	}
	for _, t := range []peerTimers{defaultTimers, shortTimers, bfdTimers} {
		var fs []string
		for _, f := range want {
			if f != faultGraceful || t == defaultTimers {
				fs = append(fs, f)
			}
		}
		if len(fs) > 0 {
			plan = append(plan, struct {
				timers peerTimers
				faults []string
			}{t, fs})
		}
	}
	res := &bgpBenchResult{Started: time.Now().UTC(), ProbeMS: 1, AdvertMS: 100, GracefulMS: 1000}
	if v, err := exec.Command(*vipd, "version").CombinedOutput(); err == nil {
		res.Vipd = strings.TrimSpace(string(v))
	}
	fmt.Fprintf(stderr, "vipd-lab bgp-bench: announce = \"bgp\", 3 hosts, adverts 100ms, graceful_shutdown_time 1s; faults %s; %d trials each\n", *faults, *trials)
	var runErr error
	for _, p := range plan {
		if runErr = benchTimers(ctx, *vipd, p.timers, p.faults, *trials, res, *verbose, stderr); runErr != nil {
			break
		}
	}
	res.Finished = time.Now().UTC()
	res.summarize()
	res.loadARP(filepath.Join(*out, "bench.json"))
	var table strings.Builder
	res.writeTable(&table)
	fmt.Fprint(stdout, table.String())
	jsonPath, txtPath := filepath.Join(*out, "bgp-bench.json"), filepath.Join(*out, "bgp-bench.txt")
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := errors.Join(os.WriteFile(jsonPath, append(b, '\n'), 0o644), os.WriteFile(txtPath, []byte(table.String()), 0o644)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", jsonPath, txtPath)
	return runErr
}

// benchTimers runs the faults' trials in one routed lab with the given
// session timers. A trial that fails is recorded with its error and the
// lab is given up (its state is unknown).
func benchTimers(ctx context.Context, bin string, timers peerTimers, faults []string, trials int, res *bgpBenchResult, verbose bool, stderr io.Writer) error {
	c, err := newRoutedCluster(ctx, bin, timers, verbose, false, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := c.l.StartProber(ctx, lab.RoutedVIP().Addr(), time.Millisecond)
	if err != nil {
		return err
	}
	defer p.Stop()
	for _, f := range faults {
		s := bgpScenario{Fault: f, Timers: timers}
		for k := 1; k <= trials; k++ {
			t, err := c.trial(ctx, p, f)
			t.Scenario, t.Fault, t.HoldTime, t.BFD, t.Trial = s.name(), f, timers.HoldTime, timers.BFD, k
			if t.HoldTime == "" {
				t.HoldTime = "9s"
			}
			if err != nil {
				t.Error = err.Error()
			}
			res.Trials = append(res.Trials, t)
			fmt.Fprintf(stderr, "  %s, trial %d: outage %.1f ms, route moved after %.1f ms %s\n", s.name(), k, t.OutageMS, t.RouteMS, t.Error)
			if err != nil {
				return fmt.Errorf("%s, trial %d: %w", s.name(), k, err)
			}
		}
	}
	return nil
}

// trial waits for h1 to be the settled Master with the client answered,
// applies the fault to h1, measures until h2's path carries the client
// again, and restores h1.
func (c *routedCluster) trial(ctx context.Context, p *lab.Prober, fault string) (bgpTrial, error) {
	var t bgpTrial
	if err := c.waitMaster(ctx, 1, 2*time.Second); err != nil {
		return t, err
	}
	if err := waitCond(ctx, 10*time.Second, func() bool { return p.Flowing(500*time.Millisecond, 20*time.Millisecond) }); err != nil {
		return t, fmt.Errorf("the client does not reach the VIP before the fault: %w", err)
	}
	t0 := time.Now()
	var stopped chan struct{}
	switch fault {
	case faultGraceful:
		stopped = make(chan struct{})
		go func() { c.hosts[1].stop(); close(stopped) }()
	case faultLink:
		if err := c.l.SetLinkUp(1, false); err != nil {
			return t, err
		}
	case faultSilent:
		if err := c.silence(ctx, 1, true); err != nil {
			return t, err
		}
	}
	h1 := lab.RoutedHostAddr(1)
	err := waitCond(ctx, 40*time.Second, func() bool {
		r, ok, err := c.l.Route(ctx, lab.RoutedVIP())
		nhs := r.NextHops()
		return err == nil && ok && len(nhs) > 0 && !slices.Contains(nhs, h1)
	})
	t.RouteMS = msSince(t0)
	if err == nil {
		err = waitCond(ctx, 20*time.Second, func() bool { return p.Flowing(300*time.Millisecond, 20*time.Millisecond) })
		if err != nil {
			err = fmt.Errorf("the client does not reach the VIP after the move: %w", err)
		}
	} else {
		err = fmt.Errorf("h1's path still in FRR's table: %w", err)
	}
	end := time.Now()
	t.OutageMS = float64(p.LongestGap(t0.Add(-100*time.Millisecond), end).Len.Microseconds()) / 1000
	t.Lost, t.Sent = p.Lost(t0, end.Add(-100*time.Millisecond))
	// Restore h1, which then preempts h2 again (waited for by the next
	// trial).
	var rerr error
	switch fault {
	case faultGraceful:
		<-stopped
		rerr = c.start(1)
	case faultLink:
		rerr = c.l.SetLinkUp(1, true)
	case faultSilent:
		rerr = c.silence(ctx, 1, false)
	}
	return t, errors.Join(err, rerr)
}

// silence drops (on) or passes again (off) every packet on host i's link
// in the router's namespace, both ways and through it. The table lives in
// the router's namespace and goes with it.
func (c *routedCluster) silence(ctx context.Context, i int, on bool) error {
	const table = "vipdlab_silent"
	port := fmt.Sprintf("r%d", i) // the router's end of host i's link, as lab.NewRouted names it
	script := fmt.Sprintf("delete table inet %s\n", table)
	if on {
		script = fmt.Sprintf(`add table inet %[1]s
add chain inet %[1]s cut_in { type filter hook input priority -10; policy accept; }
add chain inet %[1]s cut_out { type filter hook output priority -10; policy accept; }
add chain inet %[1]s cut_through { type filter hook forward priority -10; policy accept; }
add rule inet %[1]s cut_in iifname %[2]q drop
add rule inet %[1]s cut_out oifname %[2]q drop
add rule inet %[1]s cut_through iifname %[2]q drop
add rule inet %[1]s cut_through oifname %[2]q drop
`, table, port)
	}
	cmd := c.l.RouterCommand(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in the router: %w: %s", err, out)
	}
	return nil
}

func waitCond(ctx context.Context, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

func (r *bgpBenchResult) summarize() {
	var names []string
	for _, t := range r.Trials {
		if !slices.Contains(names, t.Scenario) {
			names = append(names, t.Scenario)
		}
	}
	for _, n := range names {
		var out, route []float64
		for _, t := range r.Trials {
			if t.Scenario == n && t.Error == "" {
				out, route = append(out, t.OutageMS), append(route, t.RouteMS)
			}
		}
		s := bgpStat{Scenario: n, N: len(out)}
		if len(out) > 0 {
			slices.Sort(out)
			s.Median, s.Min, s.Max, s.RouteMed = median(out), out[0], out[len(out)-1], median(route)
		}
		r.Summary = append(r.Summary, s)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// loadARP takes vipd's ARP-mode outages (cut, graceful) from a bench.json
// written earlier (make bench runs bench first); none when there is none.
func (r *bgpBenchResult) loadARP(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var br lab.BenchResult
	if json.Unmarshal(b, &br) != nil {
		return
	}
	for _, row := range br.Rows() {
		st, ok := row.ByDaemon["vipd"]
		if row.Metric != "outage" || (row.Mode != "cut" && row.Mode != "graceful") || !ok || st.N == 0 {
			continue
		}
		r.ARPReferences = append(r.ARPReferences, arpRef{Mode: row.Mode, IntervalMS: row.IntervalMS, N: st.N, Median: st.Median, Min: st.Min, Max: st.Max})
	}
	if len(r.ARPReferences) > 0 {
		r.ARPFrom, r.ARPFromRun = path, br.Started
	}
}

func (r *bgpBenchResult) writeTable(w io.Writer) {
	fmt.Fprintf(w, "vipd-lab bgp-bench, %s: announce = \"bgp\", 3 hosts behind FRR's bgpd, adverts 100ms, graceful_shutdown_time 1s, probes every 1 ms\n", r.Started.Format(time.RFC3339))
	if r.Vipd != "" {
		fmt.Fprintf(w, "  vipd: %s\n", r.Vipd)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BGP failover (Master h1 -> h2)\ttrials\tclient outage median [min..max] ms\tFRR route moved, median ms")
	for _, s := range r.Summary {
		if s.N == 0 {
			fmt.Fprintf(tw, "%s\t0\tfailed\t\n", s.Scenario)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f [%.1f..%.1f]\t%.1f\n", s.Scenario, s.N, s.Median, s.Min, s.Max, s.RouteMed)
	}
	_ = tw.Flush()
	if len(r.ARPReferences) == 0 {
		fmt.Fprintln(w, "\nARP mode: no bench.json beside these results (make bench runs it first)")
		return
	}
	fmt.Fprintf(w, "\nARP mode, vipd, from %s (run %s):\n", r.ARPFrom, r.ARPFromRun.Format(time.RFC3339))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tadvert interval\ttrials\tclient outage median [min..max] ms")
	for _, a := range r.ARPReferences {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f [%.1f..%.1f]\n", a.Mode, time.Duration(a.IntervalMS*float64(time.Millisecond)), a.N, a.Median, a.Min, a.Max)
	}
	_ = tw.Flush()
}
