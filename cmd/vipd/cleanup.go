package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/daemon"
	"github.com/vipd/vipd/netif"
)

// cleanupProbeTimeout bounds the question "is a daemon running?": a live
// daemon answers status at once.
const cleanupProbeTimeout = 2 * time.Second

func (c *cli) cleanupCmd() *cobra.Command {
	var f socketFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "cleanup [--config FILE] [--socket PATH] [--force]",
		Short: "remove this host's VIPs after a crash",
		Long: `Remove the VIPs this host's daemon added, after it stopped without releasing
them (SIGKILL, OOM, watchdog): systemd runs it after every stop
(ExecStopPost), so a dead daemon never leaves a second owner behind.

It removes the configuration's VIPs and those the daemon listed as held (in
held.json beside the control socket), and with a configuration that does not
load, those in held.json alone. It removes only addresses that carry vipd's
label, <interface>:vip; an address equal to a VIP with another label, or
none, is an administrator's and is kept with a warning. An interface whose
name is longer than 11 characters leaves no room for the label: there an
unlabelled address is removed only when held.json lists it.

It refuses while a daemon answers on the control socket (that daemon manages
its addresses), and when it cannot tell whether one does; --force removes
them all the same.`,
		Args:              noArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(*cobra.Command, []string) error {
			return c.cleanup(f, force)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove the addresses even while a daemon answers on the control socket")
	return cmd
}

// cleanupTarget is one address cleanup may remove.
type cleanupTarget struct {
	instance string // "" for one known only from the held file
	ifname   string
	vip      netip.Prefix
}

func (c *cli) cleanup(f socketFlags, force bool) error {
	stdout, stderr := c.stdout, c.stderr
	cfg, cfgErr := config.Load(f.config)
	socket := f.socket
	if socket == "" {
		socket = config.DefaultSocket
		if cfgErr == nil {
			socket = cfg.Global.Socket
		}
	}
	if !force {
		if err := noDaemonAnswers(socket); err != nil {
			fmt.Fprintf(stderr, "vipd cleanup: %v; not removing anything (--force removes the addresses all the same)\n", err)
			return exitError{exitFailure}
		}
	}

	// The daemon keeps the list beside its socket (see serve.go's heldFile).
	heldPath := filepath.Join(filepath.Dir(socket), "held.json")
	held, heldErr := daemon.ReadHeld(heldPath)
	if heldErr != nil && !errors.Is(heldErr, os.ErrNotExist) {
		fmt.Fprintf(stderr, "vipd cleanup: %v\n", heldErr)
	}

	var targets []cleanupTarget
	if cfgErr != nil {
		// A daemon killed while its file was broken must still not leave
		// a second owner: fall back to the list it kept of what it held.
		printConfigError(stderr, f.config, cfgErr)
		if heldErr != nil {
			fmt.Fprintf(stderr, "vipd cleanup: the configuration does not load and %s cannot be read: nothing known to remove\n", heldPath)
			return exitError{exitFailure}
		}
	} else {
		for _, in := range cfg.Instances {
			for _, v := range in.VIPs {
				link := in.Interface
				if in.Announce.BGPMode() {
					link = "lo" // the BGP modes keep their VIPs on the loopback
				}
				targets = append(targets, cleanupTarget{in.Name, link, v})
			}
		}
	}
	owned := make([]netif.OwnedAddr, 0, len(held))
	for _, h := range held {
		owned = append(owned, netif.OwnedAddr{Interface: h.Interface, Prefix: h.VIP})
		if !containsTarget(targets, h.Interface, h.VIP) {
			targets = append(targets, cleanupTarget{"", h.Interface, h.VIP})
		}
	}

	vips := make([]netip.Prefix, len(targets))
	for i, t := range targets {
		vips[i] = t.vip
	}
	// WithOwned: where an interface cannot carry vipd's label, only what
	// the daemon listed as held is known to be vipd's.
	opts := append([]netif.Option{netif.WithVIPs(vips...), netif.WithOwned(owned...)}, c.netOpts...)
	links, err := netif.New(slog.New(slog.DiscardHandler), opts...)
	if err != nil {
		fmt.Fprintf(stderr, "vipd cleanup: %v\n", err)
		return exitError{exitFailure}
	}
	defer links.Close()
	failed := false
	for _, t := range targets {
		who := t.instance + ": "
		if t.instance == "" {
			who = ""
		}
		had, err := links.HasVIP(t.ifname, t.vip)
		if errors.Is(err, netif.ErrNoLink) {
			continue // no interface, no address
		}
		if err == nil && had {
			err = links.RemoveVIP(t.ifname, t.vip)
		}
		var foreign *netif.ForeignAddressError
		switch {
		case errors.As(err, &foreign):
			hint := "an address vipd did not add"
			if foreign.Want == "" {
				hint = heldPath + " does not list it; if it is a stale VIP, remove it with ip addr del"
			}
			fmt.Fprintf(stderr, "vipd cleanup: %swarning: kept %s on %s: it %s (%s)\n", who, t.vip, t.ifname, foreign.Why(), hint)
		case err != nil:
			fmt.Fprintf(stderr, "vipd cleanup: %s%s on %s: %v\n", who, t.vip, t.ifname, err)
			failed = true
		case had && t.instance == "":
			fmt.Fprintf(stdout, "removed %s from %s (listed in %s)\n", t.vip, t.ifname, heldPath)
		case had:
			fmt.Fprintf(stdout, "%s: removed %s from %s\n", t.instance, t.vip, t.ifname)
		}
	}
	if failed {
		return exitError{exitFailure}
	}
	return nil
}

func containsTarget(ts []cleanupTarget, ifname string, vip netip.Prefix) bool {
	for _, t := range ts {
		if t.ifname == ifname && t.vip == vip {
			return true
		}
	}
	return false
}

// noDaemonAnswers returns nil when no daemon listens on socket, and why
// cleanup must not go on otherwise: a daemon answers, or the socket gives
// no sure answer (permission denied, no answer in time).
func noDaemonAnswers(socket string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupProbeTimeout)
	defer cancel()
	_, err := (&control.Client{Path: socket, Timeout: cleanupProbeTimeout}).Status(ctx)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		return nil
	case err == nil:
		return fmt.Errorf("a daemon is running (it answers on %s) and manages its addresses itself", socket)
	}
	return fmt.Errorf("cannot tell whether a daemon is running on %s: %v", socket, err)
}
