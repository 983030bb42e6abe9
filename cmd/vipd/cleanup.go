package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/netif"
)

// cmdCleanup removes this host's VIPs from their interfaces: systemd runs it
// after the daemon stopped (ExecStopPost), so a daemon killed without
// releasing (SIGKILL, OOM, watchdog) never leaves a second owner behind. It
// refuses while a daemon answers on the control socket.
func cmdCleanup(args []string, stdout, stderr io.Writer) int {
	fs, path := configFlag("cleanup", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		// A daemon killed while its file was broken must still not leave a
		// second owner: fall back to the list it kept of what it held.
		printConfigError(stderr, *path, err)
		return cleanupHeld(filepath.Join(filepath.Dir(config.DefaultSocket), "held.json"), stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := (&control.Client{Path: cfg.Global.Socket, Timeout: 2 * time.Second}).Status(ctx); err == nil {
		fmt.Fprintf(stderr, "vipd cleanup: a daemon is running (it answers on %s); it manages its addresses itself\n", cfg.Global.Socket)
		return 1
	}
	links, err := netif.New(slog.New(slog.DiscardHandler), netif.WithVIPs(allVIPs(cfg)...))
	if err != nil {
		fmt.Fprintf(stderr, "vipd cleanup: %v\n", err)
		return 1
	}
	defer links.Close()
	code := 0
	for _, in := range cfg.Instances {
		for _, v := range in.VIPs {
			had, err := links.HasVIP(in.Interface, v)
			if errors.Is(err, netif.ErrNoLink) {
				continue // no interface, no address
			}
			if err == nil && had {
				err = links.RemoveVIP(in.Interface, v)
			}
			switch {
			case err != nil:
				fmt.Fprintf(stderr, "vipd cleanup: %s: %s on %s: %v\n", in.Name, v, in.Interface, err)
				code = 1
			case had:
				fmt.Fprintf(stdout, "%s: removed %s from %s\n", in.Name, v, in.Interface)
			}
		}
	}
	return code
}

// cleanupHeld removes the addresses a daemon recorded as held in file.
func cleanupHeld(file string, stdout, stderr io.Writer) int {
	held, err := daemon.ReadHeld(file)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "vipd cleanup: the configuration does not load and %s does not exist: nothing known to remove\n", file)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "vipd cleanup: %v\n", err)
		return 1
	}
	links, err := netif.New(slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Fprintf(stderr, "vipd cleanup: %v\n", err)
		return 1
	}
	defer links.Close()
	code := 0
	for _, h := range held {
		if err := links.RemoveVIP(h.Interface, h.VIP); err != nil {
			fmt.Fprintf(stderr, "vipd cleanup: %s on %s: %v\n", h.VIP, h.Interface, err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "removed %s from %s (from %s)\n", h.VIP, h.Interface, file)
	}
	return code
}
