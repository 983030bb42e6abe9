package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// quickScale shrinks the long windows of --quick runs: 60 s of loss become 10 s.
const quickScale = 1.0 / 6

func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vipd := fs.String("vipd", "", "path of the vipd binary")
	keepalived := fs.String("keepalived", "", "path of keepalived (default: from PATH)")
	scenarios := fs.String("scenario", "", "scenarios to run, comma-separated; NAME* takes a family (default: all; see --list)")
	daemons := fs.String("daemons", "", "daemons to compare (default: vipd,keepalived with --vipd, else keepalived)")
	quick := fs.Bool("quick", false, "short windows (scale 1/6: 10 s of loss instead of 60 s)")
	scale := fs.Float64("scale", 0, "multiply the long windows (loss, starvation, pauses, flood) by this; overrides --quick")
	out := fs.String("out", "results", "directory for chaos.json and chaos.txt")
	list := fs.Bool("list", false, "list the scenarios and exit")
	verbose := fs.Bool("v", false, "debug logging from the lab")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	sc := 1.0
	if *quick {
		sc = quickScale
	}
	if *scale != 0 {
		if *scale < 0 {
			return errors.New("--scale must be positive")
		}
		sc = *scale
	}
	all := lab.Scenarios(sc)
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%v adverts\t%s\n", s.Name, s.Interval, s.Summary)
		}
		return tw.Flush()
	}
	picked, err := lab.SelectScenarios(all, split(*scenarios))
	if err != nil {
		return err
	}
	cfg := lab.ChaosConfig{Scenarios: picked, Scale: sc, Quick: *quick, VipdBinary: *vipd, KeepalivedBinary: *keepalived}
	dnames := *daemons
	if dnames == "" {
		dnames = "keepalived"
		if *vipd != "" {
			dnames = "vipd,keepalived"
		} else {
			fmt.Fprintln(stderr, "vipd-lab chaos: no --vipd given: measuring keepalived only")
		}
	}
	var errs []error
	for _, s := range split(dnames) {
		k, err := lab.ParseDaemonKind(s)
		errs = append(errs, err)
		cfg.Daemons = append(cfg.Daemons, k)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := preflight(cfg.Daemons, *vipd); err != nil {
		return err
	}
	for _, tool := range []struct{ bin, pkg string }{{"nft", "nftables"}, {"stress-ng", "stress-ng"}} {
		if _, err := exec.LookPath(tool.bin); err != nil {
			return fmt.Errorf("%s is missing: apt-get install %s", tool.bin, tool.pkg)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cfg.Progress = func(line string) { fmt.Fprintln(stderr, line) }
	names := make([]string, len(picked))
	for i, s := range picked {
		names[i] = s.Name
	}
	fmt.Fprintf(stderr, "vipd-lab chaos: %s; scale %.3g; scenarios %s\n", dnames, sc, strings.Join(names, ","))

	rep, runErr := lab.RunChaos(ctx, newLogger(stderr, *verbose), cfg)
	if rep == nil {
		return runErr
	}
	rep.Commit = gitCommit()
	var table strings.Builder
	fmt.Fprintf(&table, "vipd-lab chaos, %s (kernel %s, scale %.3g%s)\n", rep.Started.Format(time.RFC3339), rep.Kernel, sc, commitText(rep.Commit))
	for _, d := range cfg.Daemons {
		fmt.Fprintf(&table, "  %s: %s\n", d, rep.Versions[d.String()])
	}
	fmt.Fprintln(&table)
	if err := rep.WriteTable(&table); err != nil {
		return err
	}
	fmt.Fprint(stdout, table.String())
	jsonPath, txtPath := filepath.Join(*out, "chaos.json"), filepath.Join(*out, "chaos.txt")
	if err := errors.Join(rep.WriteJSON(jsonPath), os.WriteFile(txtPath, []byte(table.String()), 0o644)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nwrote %s and %s\n", jsonPath, txtPath)
	return runErr
}

// gitCommit names the source the run measured, when run from a checkout.
func gitCommit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func commitText(c string) string {
	if c == "" {
		return ""
	}
	return ", commit " + c
}
