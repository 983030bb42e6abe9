package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
)

// socketFlags are the flags that find a daemon's control socket.
type socketFlags struct {
	socket, config string
}

func (f *socketFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.socket, "socket", "", "control socket (default: from the configuration, else "+config.DefaultSocket+")")
	cmd.MarkFlagFilename("socket")
	configFlag(cmd, &f.config, "configuration file, to find the socket")
}

// path is --socket, else the configuration's socket, else the default.
func (f *socketFlags) path() string {
	if f.socket != "" {
		return f.socket
	}
	if cfg, err := config.Load(f.config); err == nil {
		return cfg.Global.Socket
	}
	return config.DefaultSocket
}

// controlError is what --json prints when a control command fails.
type controlError struct {
	Error string `json:"error"`
	// Kind is not_running (nothing answers on the socket: exit 3),
	// refused (the daemon answered no) or failed (the exchange broke).
	Kind     string   `json:"kind"`
	Socket   string   `json:"socket"`
	Problems []string `json:"problems,omitempty"`
}

// controlCmds are the commands that talk to a running daemon.
func (c *cli) controlCmds() []*cobra.Command {
	return []*cobra.Command{
		c.controlCmd("status", "state of every instance and why", `Show the state of every instance: who is Master, the priority and what moved
it, the addresses, the trackers, and the last cause of a change. The first
line names the running daemon's version and when it started (after an
upgrade it may differ from the binary on disk). --json prints the list of
instances, stable for scripts.`, nil),
		c.controlCmd("history", "the last 256 state changes with causes", `Show the daemon's last 256 state changes, oldest first, each with its cause.`, nil),
		c.controlCmd("drain", "give the address away and keep it away", `Make this host give its addresses away (priority 0, then the lowest
priority) and stay away until undrain, across restarts. With --wait, return
once another host has taken over; exit 1 if none did within --timeout.`, func(cmd *cobra.Command, o *controlOpts) {
			o.instanceFlag(cmd, c)
			cmd.Flags().BoolVar(&o.wait, "wait", false, "return once another host has taken over (or say that none did)")
			cmd.Flags().DurationVar(&o.timeout, "timeout", control.DefaultDrainTimeout, "how long --wait waits")
			cmd.Flags().StringVar(&o.note, "note", "", fmt.Sprintf("why, shown in status (a ticket, a name; printable, at most %d bytes)", control.MaxNoteLen))
		}),
		c.controlCmd("undrain", "compete for the address again", `Let drained instances compete for their addresses again.`, func(cmd *cobra.Command, o *controlOpts) {
			o.instanceFlag(cmd, c)
		}),
		c.controlCmd("reload", "re-read the configuration (synchronous)", `Make the daemon re-read its configuration and say what changed. A refused
file changes nothing and exits 1 with every problem. When the binary on disk
was replaced (a package upgrade), the daemon re-executes it in place.`, nil),
	}
}

// controlOpts are one control command's flags.
type controlOpts struct {
	socketFlags
	asJSON   bool
	instance string
	wait     bool
	timeout  time.Duration
	note     string
}

func (o *controlOpts) instanceFlag(cmd *cobra.Command, c *cli) {
	cmd.Flags().StringVar(&o.instance, "instance", "all", "instance name, or all")
	cmd.RegisterFlagCompletionFunc("instance", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		names := []string{"all"}
		if cfg, err := config.Load(o.config); err == nil {
			for _, in := range cfg.Instances {
				names = append(names, in.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

func (c *cli) controlCmd(name, short, long string, flags func(*cobra.Command, *controlOpts)) *cobra.Command {
	o := &controlOpts{}
	cmd := &cobra.Command{
		Use:               name + " [flags]",
		Short:             short,
		Long:              long,
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(*cobra.Command, []string) error {
			return c.control(name, o)
		},
	}
	o.add(cmd)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print JSON, stable for scripts")
	if flags != nil {
		flags(cmd, o)
	}
	return cmd
}

// control runs a command against a running daemon's control socket.
func (c *cli) control(cmd string, o *controlOpts) (err error) {
	stdout, stderr := c.stdout, c.stderr
	if err := control.CheckNote(o.note); err != nil {
		return usageError{"--note: " + err.Error()}
	}
	instance := o.instance
	if instance == "all" {
		instance = ""
	}
	path := o.path()
	client := &control.Client{Path: path}
	ctx := context.Background()
	var (
		result any
		render func(io.Writer)
	)
	switch cmd {
	case "status":
		var sts []control.InstanceStatus
		var info *control.DaemonInfo
		sts, info, err = client.StatusWithDaemon(ctx)
		// The JSON stays the list of instances that scripts read; the
		// daemon's own version is in `vipd version --json`.
		result, render = sts, func(w io.Writer) {
			now := time.Now()
			if info != nil {
				control.RenderDaemon(w, *info, now)
			}
			control.RenderStatus(w, sts, now)
		}
	case "history":
		var ts []control.Transition
		ts, err = client.History(ctx)
		result, render = ts, func(w io.Writer) { control.RenderHistory(w, ts) }
	case "drain":
		var res control.DrainResult
		res, err = client.Drain(ctx, control.DrainRequest{Instance: instance, Wait: o.wait, Timeout: control.Duration(o.timeout), Note: o.note})
		result, render = res, func(w io.Writer) { control.RenderDrain(w, res) }
		if err == nil && res.Warning != "" && o.wait {
			// `vipd drain --wait && reboot` must not reboot a host that
			// still holds the address. The table already shows the warning.
			defer func() {
				if err == nil {
					err = exitError{exitFailure}
				}
			}()
		}
	case "undrain":
		var res control.DrainResult
		res, err = client.Undrain(ctx, instance)
		result, render = res, func(w io.Writer) { control.RenderDrain(w, res) }
	case "reload":
		var res control.ReloadResult
		res, err = client.Reload(ctx)
		result, render = res, func(w io.Writer) { control.RenderReload(w, res) }
		if err != nil && len(res.Problems) > 0 {
			if o.asJSON {
				// Scripts read the problems where they read a result.
				writeJSON(stdout, res)
			} else {
				control.RenderReload(stderr, res)
			}
			return exitError{exitFailure}
		}
	}
	if err != nil {
		return c.controlFailed(cmd, path, err, o.asJSON)
	}
	if o.asJSON {
		if err := writeJSON(stdout, result); err != nil {
			fmt.Fprintf(stderr, "vipd %s: %v\n", cmd, err)
			return exitError{exitFailure}
		}
		return nil
	}
	render(stdout)
	return nil
}

// controlFailed reports a failed exchange: on stderr, and with --json as
// an object on stdout for the script that reads it.
func (c *cli) controlFailed(cmd, path string, err error, asJSON bool) error {
	ce := controlError{Error: err.Error(), Kind: "failed", Socket: path}
	code := exitFailure
	var refused *control.Error
	switch {
	case errors.Is(err, control.ErrNotRunning):
		ce.Kind, code = "not_running", exitNotRunning
		fmt.Fprintf(c.stderr, "vipd %s: no daemon answers on %s: %v\n", cmd, path, err)
	case errors.As(err, &refused):
		ce.Kind, ce.Error, ce.Problems = "refused", refused.Message, refused.Problems
		fmt.Fprintf(c.stderr, "vipd %s: %v\n", cmd, err)
	default:
		fmt.Fprintf(c.stderr, "vipd %s: %v\n", cmd, err)
	}
	if asJSON {
		writeJSON(c.stdout, ce)
	}
	return exitError{code}
}

// versionInfo is `vipd version --json`.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// Daemon is the running daemon's word on itself, when one answers.
	Daemon *control.DaemonInfo `json:"daemon,omitempty"`
}

// daemonProbeTimeout bounds how long version waits for a daemon: it
// answers at once unless wedged, and version must not hang.
const daemonProbeTimeout = 2 * time.Second

func (c *cli) versionCmd() *cobra.Command {
	var f socketFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "print version, commit and Go version",
		Long: `Print this binary's version, commit and Go version, and the running
daemon's when one answers on the control socket: after an upgrade the two
may differ until the daemon re-executes the new binary (systemctl reload).`,
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(*cobra.Command, []string) error {
			v := versionInfo{Version: version, Commit: commitString(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
			client := &control.Client{Path: f.path(), Timeout: daemonProbeTimeout}
			if _, info, err := client.StatusWithDaemon(context.Background()); err == nil {
				v.Daemon = info
			}
			if asJSON {
				if err := writeJSON(c.stdout, v); err != nil {
					fmt.Fprintf(c.stderr, "vipd version: %v\n", err)
					return exitError{exitFailure}
				}
				return nil
			}
			fmt.Fprintln(c.stdout, versionString())
			if v.Daemon != nil {
				control.RenderDaemon(c.stdout, *v.Daemon, time.Now())
			}
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
