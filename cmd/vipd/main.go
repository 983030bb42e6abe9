// Command vipd keeps a cluster's virtual IP on exactly one healthy host,
// elected with VRRPv3 (RFC 5798) among the hosts themselves.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/netif"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

// The real OS boundaries satisfy the daemon's interfaces.
var (
	_ daemon.Links      = (*netif.Manager)(nil)
	_ daemon.Announcer  = (*arp.Announcer)(nil)
	_ daemon.ARPMonitor = (*arp.Monitor)(nil)
)

// exitConfig is EX_CONFIG from sysexits.h: the unit file does not restart a
// daemon whose configuration is refused.
const exitConfig = 78

const usage = `usage: vipd <command> [flags]

commands:
  run      run the daemon in the foreground        [--config FILE]
  check    validate a configuration file           [--config FILE]
  status   state of every instance and why         [--json] [--socket PATH]
  history  the last 256 state changes with causes  [--json] [--socket PATH]
  drain    give the address away and keep it away  [--instance NAME|all] [--wait] [--timeout 30s] [--note TEXT]
  undrain  compete for the address again           [--instance NAME|all]
  reload   re-read the configuration (synchronous) [--socket PATH]
  cleanup  remove this host's VIPs after a crash   [--config FILE]
  version  print version, commit and Go version

The control commands find the socket in --socket, else in the configuration
(--config, default /etc/vipd/vipd.toml), else at /run/vipd/vipd.sock.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "run":
		return cmdRun(args, stderr)
	case "check":
		return cmdCheck(args, stdout, stderr)
	case "status", "history", "drain", "undrain", "reload":
		return cmdControl(cmd, args, stdout, stderr)
	case "cleanup":
		return cmdCleanup(args, stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, versionString())
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "vipd: unknown command %q\n%s", cmd, usage)
	return 2
}

func versionString() string {
	c := commit
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("vipd %s (commit %s, %s, %s/%s)", version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func configFlag(name string, stderr io.Writer) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("vipd "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", config.DefaultPath, "configuration file")
	return fs, path
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs, path := configFlag("check", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if _, err := config.Load(*path); err != nil {
		printConfigError(stderr, *path, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK\n", *path)
	return 0
}

func printConfigError(w io.Writer, path string, err error) {
	var cerr *config.Error
	if errors.As(err, &cerr) {
		for _, p := range cerr.Problems {
			fmt.Fprintln(w, p.String())
		}
		return
	}
	fmt.Fprintf(w, "%s: %v\n", path, err)
}
func cmdRun(args []string, stderr io.Writer) int {
	fs, path := configFlag("run", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return runDaemon(*path, stderr)
}
