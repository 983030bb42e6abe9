// Command vipd keeps a cluster's virtual IP on exactly one healthy host,
// elected with VRRPv3 (RFC 5798) among the hosts themselves.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/vipd/vipd/arp"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/netif"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = ""
)

// processStart is when this binary started running. A re-exec upgrade keeps
// the PID but starts here again, which is what `vipd status` should show.
var processStart = time.Now()

// The real OS boundaries satisfy the daemon's interfaces.
var (
	_ daemon.Links      = (*netif.Manager)(nil)
	_ daemon.Announcer  = (*arp.Announcer)(nil)
	_ daemon.ARPMonitor = (*arp.Monitor)(nil)
)

// Exit codes. 78 is EX_CONFIG from sysexits.h: the unit file does not
// restart a daemon whose configuration is refused.
const (
	exitFailure    = 1
	exitUsage      = 2
	exitNotRunning = 3
	exitConfig     = 78
)

const exitCodes = `Exit status:
  0   success
  1   failure: a refused check or change, a drain --wait that left the
      address with this host, a cleanup that could not remove an address
  2   usage error: an unknown command, flag or argument
  3   no daemon answers on the control socket
  78  run: the configuration is refused (EX_CONFIG)
`

func main() {
	noHeapProfile()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// cli is one invocation's surroundings; tests replace what they need.
type cli struct {
	stdout, stderr io.Writer
	// netOpts are added to every netif.New, e.g. to work in a test's
	// network namespace.
	netOpts []netif.Option
}

// exitError ends a command with code, its message already printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a command line that does not make sense; the command's
// usage follows the message.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout, stderr io.Writer) int {
	return (&cli{stdout: stdout, stderr: stderr}).run(args)
}

func (c *cli) run(args []string) int {
	root := c.rootCmd()
	// A nil slice would make cobra read os.Args.
	root.SetArgs(append([]string{}, singleDashCompat(args)...))
	cmd, err := root.ExecuteC()
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.code
	}
	// Anything else is cobra's or ours about the command line.
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(c.stderr, "%s: %v\n\n%s", cmd.CommandPath(), err, cmd.UsageString())
	return exitUsage
}

// longFlags are the long flags of every command. The standard flag package
// that vipd used before accepted them after one dash (-config); cobra reads
// one dash as short flags, so those spellings are rewritten.
var longFlags = []string{"config", "socket", "json", "instance", "wait", "timeout", "note", "force", "help", "version", "adopt"}

func singleDashCompat(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' {
			name, _, _ := strings.Cut(a[1:], "=")
			for _, f := range longFlags {
				if name == f {
					a = "-" + a
					break
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func (c *cli) rootCmd() *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:   "vipd",
		Short: "keep a virtual IP on exactly one healthy host (VRRPv3)",
		Long: `vipd keeps a cluster's virtual IP on exactly one healthy host, elected with
VRRPv3 (RFC 5798) among the hosts themselves.

The control commands (status, history, drain, undrain, reload) find the
daemon's socket in --socket, else in the configuration (--config, default
` + config.DefaultPath + `), else at ` + config.DefaultSocket + `.

` + exitCodes,
		Example: `  vipd check /etc/vipd/vipd.toml
  vipd status
  vipd drain --instance k8s-api --wait --note "kernel upgrade"
  vipd completion bash > /etc/bash_completion.d/vipd`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				fmt.Fprintln(c.stdout, versionString())
				return nil
			}
			return usageError{"a command is needed"}
		},
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "print the version (as vipd version does)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.SetHelpCommand(helpCmd(root))
	root.AddCommand(c.runCmd(), c.checkCmd(), c.cleanupCmd(), c.importKeepalivedCmd(), c.versionCmd())
	root.AddCommand(c.controlCmds()...)
	// cobra's completion command, made now so that a shell it does not
	// know is a usage error rather than its help.
	root.InitDefaultCompletionCmd()
	if comp, _, err := root.Find([]string{"completion"}); err == nil && comp != root {
		comp.Args = func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Sprintf("unknown shell %q: bash, zsh, fish or powershell", args[0])}
			}
			return nil
		}
		comp.RunE = func(*cobra.Command, []string) error {
			return usageError{"name a shell: bash, zsh, fish or powershell"}
		}
	}
	return root
}

// helpCmd is `vipd help [COMMAND]`; unlike cobra's own, an unknown command
// is a usage error rather than the general help.
func helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "help about any command",
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			var names []string
			if len(args) == 0 {
				for _, sub := range root.Commands() {
					if sub.IsAvailableCommand() {
						names = append(names, sub.Name()+"\t"+sub.Short)
					}
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || target == nil || len(rest) > 0 {
				return usageError{fmt.Sprintf("no help for %q: not a command", strings.Join(args, " "))}
			}
			return target.Help()
		},
	}
}

// noArgs refuses positional arguments: a word the command would ignore
// must not look accepted.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if !cmd.HasParent() {
			return usageError{fmt.Sprintf("unknown command %q", args[0])}
		}
		return usageError{fmt.Sprintf("unexpected argument %q", args[0])}
	}
	return nil
}

func configFlag(cmd *cobra.Command, path *string, usage string) {
	cmd.Flags().StringVar(path, "config", config.DefaultPath, usage)
	cmd.MarkFlagFilename("config", "toml")
}

func (c *cli) runCmd() *cobra.Command {
	var path string
	var adopt bool
	cmd := &cobra.Command{
		Use:   "run [--config FILE] [--adopt]",
		Short: "run the daemon in the foreground",
		Long: `Run the daemon in the foreground until SIGTERM or SIGINT; SIGHUP re-reads the
configuration. A configuration that does not load exits 78 (EX_CONFIG).

--adopt (or a file named adopt in the state directory, removed as it is
read) makes each instance whose VIPs are all on its interface already start
as Master and keep them: how the Master of a keepalived group is replaced
without moving its address (keepalived killed with SIGKILL, which leaves
them; see "Migrating from keepalived" in the README).`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if code := runDaemon(path, adopt, c.stderr); code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	configFlag(cmd, &path, "configuration file")
	cmd.Flags().BoolVar(&adopt, "adopt", false, "keep VIPs already on their interfaces: start those instances as Master")
	return cmd
}

func (c *cli) checkCmd() *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [FILE | --config FILE]",
		Short: "validate a configuration file",
		Long: `Validate a configuration file (default ` + config.DefaultPath + `) and print
every problem as FILE:LINE: message, or FILE: OK. With --json, print
{"file", "ok", "problems": [{"file", "line", "message"}]} on stdout.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return usageError{fmt.Sprintf("unexpected argument %q: check takes one file", args[1])}
			case len(args) == 1 && cmd.Flags().Changed("config"):
				return usageError{fmt.Sprintf("both --config %s and %s: name the file once", path, args[0])}
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"toml"}, cobra.ShellCompDirectiveFilterFileExt
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				path = args[0]
			}
			return c.check(path, asJSON)
		},
	}
	configFlag(cmd, &path, "configuration file (or name it as the argument)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// checkResult is `vipd check --json`.
type checkResult struct {
	File     string        `json:"file"`
	OK       bool          `json:"ok"`
	Problems []problemJSON `json:"problems"`
}

type problemJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (c *cli) check(path string, asJSON bool) error {
	_, err := config.Load(path)
	if !asJSON {
		if err != nil {
			printConfigError(c.stderr, path, err)
			return exitError{exitFailure}
		}
		fmt.Fprintf(c.stdout, "%s: OK\n", path)
		return nil
	}
	res := checkResult{File: path, OK: err == nil, Problems: []problemJSON{}}
	var cerr *config.Error
	switch {
	case errors.As(err, &cerr):
		for _, p := range cerr.Problems {
			res.Problems = append(res.Problems, problemJSON{File: p.File, Line: p.Line, Message: p.Message})
		}
	case err != nil:
		res.Problems = append(res.Problems, problemJSON{File: path, Message: err.Error()})
	}
	if werr := writeJSON(c.stdout, res); werr != nil {
		fmt.Fprintf(c.stderr, "vipd check: %v\n", werr)
		return exitError{exitFailure}
	}
	if err != nil {
		return exitError{exitFailure}
	}
	return nil
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func commitString() string {
	if commit != "" {
		return commit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

func versionString() string {
	c := commitString()
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("vipd %s (commit %s, %s, %s/%s)", version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// daemonInfo is what the control socket tells about this process: after
// an upgrade the binary on disk and the one running may differ.
func daemonInfo() control.DaemonInfo {
	return control.DaemonInfo{
		Version:   version,
		Commit:    commitString(),
		GoVersion: runtime.Version(),
		PID:       os.Getpid(),
		StartedAt: processStart,
	}
}
