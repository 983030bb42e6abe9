package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vipd := fs.String("vipd", "", "path of the vipd binary")
	keepalived := fs.String("keepalived", "", "path of keepalived (default: from PATH)")
	trials := fs.Int("trials", 10, "trials per daemon, interval and mode")
	intervals := fs.String("intervals", "1s,100ms,10ms", "advert intervals (10ms..40.95s, steps of 10ms)")
	modes := fs.String("modes", "cut,kill,graceful", "fault modes")
	daemons := fs.String("daemons", "", "daemons to compare (default: vipd,keepalived with --vipd, else keepalived)")
	steady := fs.Duration("steady", 60*time.Second, "healthy-group window for CPU and RSS per daemon and interval (0 skips it)")
	ipv6 := fs.Bool("ipv6", true, "also measure each daemon with an IPv6 VIP in an IPv6 lab (columns \"vipd ipv6\", \"keepalived ipv6\"; no steady window)")
	out := fs.String("out", "results", "directory for bench.json, bench.svg and bench.txt")
	verbose := fs.Bool("v", false, "debug logging from the lab")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	cfg := lab.BenchConfig{Trials: *trials, Steady: *steady, VipdBinary: *vipd, KeepalivedBinary: *keepalived, IPv6: *ipv6}
	dnames := *daemons
	if dnames == "" {
		dnames = "keepalived"
		if *vipd != "" {
			dnames = "vipd,keepalived"
		} else {
			fmt.Fprintln(stderr, "vipd-lab bench: no --vipd given: measuring keepalived only")
		}
	}
	var errs []error
	for _, s := range split(dnames) {
		k, err := lab.ParseDaemonKind(s)
		errs = append(errs, err)
		cfg.Daemons = append(cfg.Daemons, k)
	}
	for _, s := range split(*intervals) {
		d, err := time.ParseDuration(s)
		if err == nil && (d < lab.MinAdvertInterval || d > lab.MaxAdvertInterval || d%lab.MinAdvertInterval != 0) {
			err = fmt.Errorf("interval %v: want 10ms..40.95s in steps of 10ms", d)
		}
		errs = append(errs, err)
		cfg.Intervals = append(cfg.Intervals, d)
	}
	for _, s := range split(*modes) {
		m, err := lab.ParseMode(s)
		errs = append(errs, err)
		cfg.Modes = append(cfg.Modes, m)
	}
	if *trials < 1 {
		errs = append(errs, errors.New("--trials must be at least 1"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := preflight(cfg.Daemons, *vipd); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cfg.Progress = func(line string) { fmt.Fprintln(stderr, line) }
	fmt.Fprintf(stderr, "vipd-lab bench: %s; intervals %s; modes %s; %d trials each; steady window %v; IPv6 too: %v\n",
		dnames, *intervals, *modes, *trials, *steady, *ipv6)

	res, runErr := lab.RunBench(ctx, newLogger(stderr, *verbose), cfg)
	if res == nil {
		return runErr
	}
	// Whatever was measured is written, even after an interruption.
	var table strings.Builder
	fmt.Fprintf(&table, "vipd-lab bench, %s (kernel %s)\n", res.Started.Format(time.RFC3339), res.Kernel)
	for _, d := range res.Config.Daemons {
		fmt.Fprintf(&table, "  %s: %s\n", d, res.Versions[d])
	}
	fmt.Fprintln(&table)
	if err := res.WriteTable(&table); err != nil {
		return err
	}
	fmt.Fprint(stdout, table.String())
	jsonPath, svgPath, txtPath := filepath.Join(*out, "bench.json"), filepath.Join(*out, "bench.svg"), filepath.Join(*out, "bench.txt")
	errs = []error{res.WriteJSON(jsonPath), os.WriteFile(txtPath, []byte(table.String()), 0o644)}
	if f, err := os.Create(svgPath); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, res.WriteSVG(f), f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s, %s and %s\n", jsonPath, svgPath, txtPath)
	return runErr
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
