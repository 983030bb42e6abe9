package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/vipd/vipd/internal/lab"
)

const usage = `vipd-lab builds a LAN in network namespaces and measures VIP failover.

Usage:
  vipd-lab demo  [--vipd PATH] [--daemon vipd|keepalived] [--config FILE] [--interval D]
                 [--dual-stack=false] [--routed=false] [-v]
  vipd-lab bench [--vipd PATH] [--trials 10] [--intervals 1s,100ms,10ms] [--modes cut,kill,graceful]
                 [--daemons vipd,keepalived] [--steady 60s] [--out results] [-v]
  vipd-lab chaos [--vipd PATH] [--scenario NAME,...] [--daemons vipd,keepalived]
                 [--quick | --scale F] [--out results] [--list] [-v]
  vipd-lab scale [--vipd PATH] [--quick] [--groups 1,16,64,255] [--intervals 1s,100ms,10ms] [--daemons vipd,keepalived] [--window 60s] [--rounds 3] [--bench FILE] [--out results]
  vipd-lab bgp-bench [--vipd PATH] [--trials 3] [--faults graceful,link,silent] [--out results] [-v]
  vipd-lab migrate [--vipd PATH] [--interval 1s] [--settle 5s] [--out DIR] [-v]
                 replaces a keepalived (VRRPv2) group by vipd node by node, then moves it to VRRPv3
  vipd-lab clean   removes what labs of dead (e.g. SIGKILLed) vipd-lab runs left behind

All need root. Everything the lab makes (namespaces, bridge, veths, daemons,
the chaos suite's nftables table in the bridge's namespace) is removed on
exit, on Ctrl-C and on failure.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	// The first signal cancels the work and the deferred clean-up runs; later
	// ones are swallowed until then so a second Ctrl-C cannot cut it short.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// A closed output pipe (`vipd-lab demo | head`) must not kill us before
	// the clean-up; writes fail quietly instead.
	signal.Ignore(syscall.SIGPIPE)
	var err error
	switch args[0] {
	case "demo":
		err = runDemo(ctx, args[1:], stdout, stderr)
	case "bench":
		err = runBench(ctx, args[1:], stdout, stderr)
	case "chaos":
		err = runChaos(ctx, args[1:], stdout, stderr)
	case "scale":
		err = runScale(ctx, args[1:], stdout, stderr)
	case "bgp-bench":
		err = runBGPBench(ctx, args[1:], stdout, stderr)
	case "migrate":
		err = runMigrate(ctx, args[1:], stdout, stderr)
	case "clean":
		err = runClean(stdout)
	default:
		fmt.Fprintf(stderr, "vipd-lab: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "vipd-lab: interrupted; the lab was removed")
		return 130
	default:
		fmt.Fprintf(stderr, "vipd-lab: %v\n", err)
		return 1
	}
}

var errUsage = errors.New("usage")

// preflight says clearly what is missing before anything is built.
func preflight(kinds []lab.DaemonKind, vipd string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: the lab creates network namespaces, veth pairs and a bridge and opens raw sockets.\n" +
			"Run it as root, e.g. `sudo make demo` or `sudo go run ./cmd/vipd-lab demo`")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("iproute2's ip is missing: apt-get install iproute2")
	}
	for _, k := range kinds {
		switch k {
		case lab.Keepalived:
			if _, err := exec.LookPath("keepalived"); err != nil {
				return errors.New("keepalived is missing: apt-get install keepalived")
			}
		case lab.Vipd:
			if vipd == "" {
				return errors.New("vipd needs --vipd PATH (make builds it into bin/vipd)")
			}
			if _, err := os.Stat(vipd); err != nil {
				return fmt.Errorf("vipd binary: %w", err)
			}
		}
	}
	return nil
}

func newLogger(w io.Writer, verbose bool) *slog.Logger {
	if !verbose {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func runClean(stdout io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root")
	}
	removed, err := lab.CleanStale(nil)
	for _, n := range removed {
		fmt.Fprintf(stdout, "removed namespace %s\n", n)
	}
	if len(removed) == 0 && err == nil {
		fmt.Fprintln(stdout, "nothing left behind")
	}
	return err
}
