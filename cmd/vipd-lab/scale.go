package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// What --quick changes, unless the flag is given too.
const (
	quickWindow = 10 * time.Second
	quickGroups = "1,64"
	quickTrials = 1
)

func runScale(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vipd := fs.String("vipd", "", "path of the vipd binary")
	keepalived := fs.String("keepalived", "", "path of keepalived (default: from PATH)")
	daemons := fs.String("daemons", "", "daemons to compare (default: vipd,keepalived with --vipd, else keepalived)")
	intervals := fs.String("intervals", "1s,100ms,10ms", "advert intervals of the one-group rows")
	groups := fs.String("groups", "1,16,64,255", "group counts on one interface (1..255)")
	groupsInterval := fs.Duration("groups-interval", time.Second, "advert interval of the N-groups, ARP-load and wake-up rows")
	window := fs.Duration("window", 60*time.Second, "steady window per configuration")
	rounds := fs.Int("rounds", 3, "pairs of labs, each built anew, measuring each one-group interval's quiet window")
	arpRate := fs.Int("arp-rate", 2000, "background ARP requests a second for the ARP-load row (0 skips it)")
	trials := fs.Int("trials", 3, "link cuts per daemon and interval for takeover - bound (0 skips them)")
	bench := fs.String("bench", "", "reuse the cut trials of this bench.json (from `vipd-lab bench`) instead of running --trials")
	failover := fs.Bool("failover", true, "cut the master of the largest group count and time every group's takeover")
	perf := fs.Bool("perf", true, "count context switches with perf stat beside the wake-up window, when perf can")
	quick := fs.Bool("quick", false, fmt.Sprintf("short run: --window %v, --groups %s, --trials %d, --rounds 1 (each unless given)", quickWindow, quickGroups, quickTrials))
	out := fs.String("out", "results", "directory for scale.json and scale.txt")
	garpProbe := fs.String("vipd-garp-probe", "", "vipd's garp.probe in every lab, e.g. 0s (no routine probes: only at a takeover and while standing down); default: vipd's own")
	logs := fs.Bool("logs", true, "keep every daemon's log in scale-logs under --out (emptied first)")
	verbose := fs.Bool("v", false, "debug logging from the lab")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vipd-lab scale: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		if !set["window"] {
			*window = quickWindow
		}
		if !set["groups"] {
			*groups = quickGroups
		}
		if !set["trials"] {
			*trials = quickTrials
		}
		if !set["rounds"] {
			*rounds = 1
		}
	}
	cfg := lab.ScaleConfig{GroupsInterval: *groupsInterval, Window: *window, Rounds: *rounds, ARPRate: *arpRate, Trials: *trials,
		Failover: *failover, Perf: *perf, VipdBinary: *vipd, KeepalivedBinary: *keepalived, VipdGARPProbe: *garpProbe}
	dnames := *daemons
	if dnames == "" {
		dnames = "keepalived"
		if *vipd != "" {
			dnames = "vipd,keepalived"
		} else {
			fmt.Fprintln(stderr, "vipd-lab scale: no --vipd given: measuring keepalived only")
		}
	}
	var errs []error
	for _, s := range split(dnames) {
		k, err := lab.ParseDaemonKind(s)
		errs = append(errs, err)
		cfg.Daemons = append(cfg.Daemons, k)
	}
	ivs, err := parseIntervals(*intervals)
	errs = append(errs, err)
	cfg.Intervals = ivs
	if _, err := parseIntervals(groupsInterval.String()); err != nil {
		errs = append(errs, fmt.Errorf("--groups-interval: %w", err))
	}
	cfg.Groups, err = parseGroups(*groups)
	errs = append(errs, err)
	if *window < time.Second {
		errs = append(errs, fmt.Errorf("--window %v: want at least 1s", *window))
	}
	if *arpRate < 0 || *trials < 0 {
		errs = append(errs, errors.New("--arp-rate and --trials must not be negative"))
	}
	if *rounds < 1 {
		errs = append(errs, fmt.Errorf("--rounds %d: want at least 1", *rounds))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if *bench != "" {
		trials, err := readBenchTrials(*bench)
		if err != nil {
			return err
		}
		cfg.BenchTrials = trials
	}
	if err := preflight(cfg.Daemons, *vipd); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	if *logs {
		// Logs are appended as labs close: a run starts with none.
		cfg.LogDir = filepath.Join(*out, "scale-logs")
		if err := os.RemoveAll(cfg.LogDir); err != nil {
			return err
		}
		if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
			return err
		}
	}
	cfg.Progress = func(line string) { fmt.Fprintln(stderr, line) }
	fmt.Fprintf(stderr, "vipd-lab scale: %s; intervals %s (%d rounds); groups %s @%v; window %v; ARP %d/s; %s\n",
		dnames, *intervals, *rounds, *groups, *groupsInterval, *window, *arpRate, takeoverText(*bench, *trials))

	res, runErr := lab.RunScale(ctx, newLogger(stderr, *verbose), cfg)
	if res == nil {
		return runErr
	}
	res.Commit = gitCommit()
	// Whatever was measured is written, even after an interruption.
	var table strings.Builder
	fmt.Fprintf(&table, "vipd-lab scale, %s (kernel %s, %d cores%s; window %v)\n",
		res.Started.Format(time.RFC3339), res.Kernel, res.CPUs, commitText(res.Commit), *window)
	for _, d := range res.Config.Daemons {
		fmt.Fprintf(&table, "  %s: %s\n", d, res.Versions[d])
	}
	fmt.Fprintln(&table, "  per node: mean over the 3 nodes [min..max]; cpu is scheduler time of all the daemon's processes")
	if p := res.Config.VipdGARPProbe; p != "" {
		fmt.Fprintf(&table, "  vipd with garp.probe = %q (not its default, a probe for a second owner every second)\n", p)
	}
	if res.Config.Rounds > 1 {
		fmt.Fprintf(&table, "  one group: %d rounds, each a vipd lab and a keepalived lab built anew and measured at once; the cells pool them\n", res.Config.Rounds)
	}
	fmt.Fprintln(&table)
	if err := res.WriteTable(&table); err != nil {
		return err
	}
	fmt.Fprint(stdout, table.String())
	jsonPath, txtPath := filepath.Join(*out, "scale.json"), filepath.Join(*out, "scale.txt")
	if err := errors.Join(res.WriteJSON(jsonPath), os.WriteFile(txtPath, []byte(table.String()), 0o644)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", jsonPath, txtPath)
	return runErr
}

func takeoverText(bench string, trials int) string {
	if bench != "" {
		return "cut trials from " + bench
	}
	return fmt.Sprintf("%d cut trials per daemon and interval", trials)
}

func parseIntervals(s string) ([]time.Duration, error) {
	var out []time.Duration
	var errs []error
	for _, f := range split(s) {
		d, err := time.ParseDuration(f)
		if err == nil && (d < lab.MinAdvertInterval || d > lab.MaxAdvertInterval || d%lab.MinAdvertInterval != 0) {
			err = fmt.Errorf("interval %v: want 10ms..40.95s in steps of 10ms", d)
		}
		errs = append(errs, err)
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

func parseGroups(s string) ([]int, error) {
	var out []int
	var errs []error
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > lab.MaxGroups {
			errs = append(errs, fmt.Errorf("--groups %q: want counts of 1..%d", f, lab.MaxGroups))
			continue
		}
		out = append(out, n)
	}
	return out, errors.Join(errs...)
}

// readBenchTrials reads the trials of a bench.json.
func readBenchTrials(path string) ([]lab.TrialResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--bench: %w", err)
	}
	var br lab.BenchResult
	if err := json.Unmarshal(b, &br); err != nil {
		return nil, fmt.Errorf("--bench %s: %w", path, err)
	}
	if br.Trials == nil {
		br.Trials = []lab.TrialResult{} // reused, even if empty: no trials are run
	}
	return br.Trials, nil
}
