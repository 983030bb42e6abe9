package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
)

// cmdControl runs a command against a running daemon's control socket.
func cmdControl(cmd string, args []string, stdout, stderr io.Writer) (code int) {
	fs := flag.NewFlagSet("vipd "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	socket := fs.String("socket", "", "control socket (default: from the configuration, else "+config.DefaultSocket+")")
	cfgPath := fs.String("config", config.DefaultPath, "configuration file, to find the socket")
	asJSON := fs.Bool("json", false, "print JSON, stable for scripts")
	var instance, note string
	var wait bool
	var timeout time.Duration
	if cmd == "drain" || cmd == "undrain" {
		fs.StringVar(&instance, "instance", "all", "instance name, or all")
	}
	if cmd == "drain" {
		fs.BoolVar(&wait, "wait", false, "return once another host has taken over (or say that none did)")
		fs.DurationVar(&timeout, "timeout", control.DefaultDrainTimeout, "how long --wait waits")
		fs.StringVar(&note, "note", "", "why, shown in status (a ticket, a name)")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vipd %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return 2
	}
	if instance == "all" {
		instance = ""
	}
	path := *socket
	if path == "" {
		path = config.DefaultSocket
		if cfg, err := config.Load(*cfgPath); err == nil {
			path = cfg.Global.Socket
		}
	}
	c := &control.Client{Path: path}
	ctx := context.Background()
	var (
		result any
		render func(io.Writer)
		err    error
	)
	switch cmd {
	case "status":
		var sts []control.InstanceStatus
		sts, err = c.Status(ctx)
		result, render = sts, func(w io.Writer) { control.RenderStatus(w, sts, time.Now()) }
	case "history":
		var ts []control.Transition
		ts, err = c.History(ctx)
		result, render = ts, func(w io.Writer) { control.RenderHistory(w, ts) }
	case "drain":
		var res control.DrainResult
		res, err = c.Drain(ctx, control.DrainRequest{Instance: instance, Wait: wait, Timeout: control.Duration(timeout), Note: note})
		result, render = res, func(w io.Writer) { control.RenderDrain(w, res) }
		if err == nil && res.Warning != "" && wait {
			// `vipd drain --wait && reboot` must not reboot a host that
			// still holds the address. The table already shows the warning.
			defer func() { code = 1 }()
		}
	case "undrain":
		var res control.DrainResult
		res, err = c.Undrain(ctx, instance)
		result, render = res, func(w io.Writer) { control.RenderDrain(w, res) }
	case "reload":
		var res control.ReloadResult
		res, err = c.Reload(ctx)
		result, render = res, func(w io.Writer) { control.RenderReload(w, res) }
		if err != nil && len(res.Problems) > 0 {
			if *asJSON {
				// Scripts read the problems where they read a result.
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				enc.Encode(res)
			} else {
				control.RenderReload(stderr, res)
			}
			return 1
		}
	}
	if err != nil {
		if errors.Is(err, control.ErrNotRunning) {
			fmt.Fprintf(stderr, "vipd %s: no daemon answers on %s: %v\n", cmd, path, err)
			return 1
		}
		fmt.Fprintf(stderr, "vipd %s: %v\n", cmd, err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(result); err != nil {
			fmt.Fprintf(stderr, "vipd %s: %v\n", cmd, err)
			return 1
		}
		return 0
	}
	render(stdout)
	return 0
}
