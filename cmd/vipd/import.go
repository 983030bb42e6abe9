package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/cobra"
	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/keepalived"
)

func (c *cli) importKeepalivedCmd() *cobra.Command {
	var (
		output, configID string
		allowPartial     bool
		owners           []string
	)
	cmd := &cobra.Command{
		Use:   "import-keepalived [--output FILE] [--allow-partial] [--address-owner ADDR] [--config-id ID] FILE",
		Short: "convert a keepalived.conf into a vipd.toml",
		Long: `Read a keepalived.conf, with the files it includes, and write the vipd.toml
that does the same to standard output (or --output FILE). Every table names
the keepalived block it comes from, and NOTE comments say where vipd behaves
differently. What cannot be converted (LVS virtual_server blocks, routes,
track_file, ...) and the notes are printed on standard error, one
FILE:LINE: message a line.

Exit status: 0 when everything was converted; 1 when something was not (the
output is still written with --allow-partial, and then the status is 0), when
the file cannot be read, or when the output fails vipd check (a converter
bug); 2 for a usage error.`,
		Example: `  vipd import-keepalived /etc/keepalived/keepalived.conf > vipd.toml
  vipd import-keepalived --allow-partial --output /etc/vipd/vipd.toml /etc/keepalived/keepalived.conf
  vipd import-keepalived --address-owner 198.51.100.11 keepalived.conf`,
		Args: func(_ *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usageError{"name the keepalived.conf to convert"}
			case 1:
				return nil
			}
			return usageError{fmt.Sprintf("unexpected argument %q: import-keepalived converts one file", args[1])}
		},
		RunE: func(_ *cobra.Command, args []string) error {
			opts := keepalived.Options{}
			seen := map[bool]bool{}
			for _, s := range owners {
				a, err := netip.ParseAddr(s)
				if err != nil || a.Zone() != "" {
					return usageError{fmt.Sprintf("--address-owner %q is not an IPv4 or IPv6 address", s)}
				}
				if seen[a.Is6()] {
					return usageError{"--address-owner: give at most one address per family"}
				}
				seen[a.Is6()] = true
				opts.AddressOwners = append(opts.AddressOwners, a)
			}
			return c.importKeepalived(args[0], output, configID, allowPartial, opts)
		},
	}
	cmd.Flags().StringVar(&output, "output", "", "write the vipd.toml to FILE instead of standard output")
	cmd.Flags().BoolVar(&allowPartial, "allow-partial", false, "exit 0 even when something could not be converted")
	cmd.Flags().StringSliceVar(&owners, "address-owner", nil, "the address of a keepalived address owner (priority 255) the instances accept; one per family")
	cmd.Flags().StringVar(&configID, "config-id", "", "decide keepalived's conditional lines (@ID) as keepalived -i ID would")
	cmd.MarkFlagFilename("output", "toml")
	return cmd
}

func (c *cli) importKeepalived(path, output, configID string, allowPartial bool, opts keepalived.Options) error {
	kcfg, err := keepalived.ParseFile(path, keepalived.ParseOptions{ConfigID: configID})
	if err != nil {
		fmt.Fprintf(c.stderr, "vipd import-keepalived: %v\n", err)
		return exitError{exitFailure}
	}
	res := keepalived.Convert(kcfg, opts)
	for _, it := range res.Items {
		fmt.Fprintln(c.stderr, it.String())
	}
	if res.Instances == 0 {
		fmt.Fprintf(c.stderr, "vipd import-keepalived: %s: no vrrp_instance could be converted; nothing written\n", path)
		return exitError{exitFailure}
	}
	// The converter promises a file vipd accepts; one it refuses is its bug,
	// and is not written where the daemon would read it.
	name := output
	if name == "" {
		name = "vipd.toml"
	}
	if _, err := config.Parse(name, res.TOML); err != nil {
		fmt.Fprintf(c.stderr, "vipd import-keepalived: a converter bug: the output fails vipd check; please report it with the keepalived.conf:\n")
		var cerr *config.Error
		if errors.As(err, &cerr) {
			for _, p := range cerr.Problems {
				fmt.Fprintf(c.stderr, "  %s\n", p)
			}
		} else {
			fmt.Fprintf(c.stderr, "  %v\n", err)
		}
		return exitError{exitFailure}
	}
	if output == "" {
		if _, err := c.stdout.Write(res.TOML); err != nil {
			fmt.Fprintf(c.stderr, "vipd import-keepalived: %v\n", err)
			return exitError{exitFailure}
		}
	} else if err := os.WriteFile(output, res.TOML, 0o644); err != nil {
		fmt.Fprintf(c.stderr, "vipd import-keepalived: %v\n", err)
		return exitError{exitFailure}
	}
	if res.Unconverted() {
		if allowPartial {
			fmt.Fprintf(c.stderr, "vipd import-keepalived: %s: converted in part (--allow-partial): the items marked \"not converted\" above are missing from the output\n", path)
			return nil
		}
		fmt.Fprintf(c.stderr, "vipd import-keepalived: %s: not everything could be converted (see \"not converted\" above); the output is written, but review it, or pass --allow-partial to accept it\n", path)
		return exitError{exitFailure}
	}
	return nil
}
