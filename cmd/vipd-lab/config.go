package main

import (
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/vipd/vipd/internal/lab"
)

//go:embed demo.toml
var defaultDemoConfig string

// demoConfig is the demo's group, decoded from TOML.
type demoConfig struct {
	Nodes          int           `toml:"nodes"`
	VRID           int           `toml:"vrid"`
	Priorities     []int         `toml:"priorities"`
	AdvertInterval time.Duration `toml:"advert_interval"`
	VIP            netip.Prefix  `toml:"vip"`
}

// loadDemoConfig reads path, or the embedded default when path is empty.
func loadDemoConfig(path string) (demoConfig, error) {
	text, name := defaultDemoConfig, "embedded demo.toml"
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return demoConfig{}, err
		}
		text, name = string(b), path
	}
	var c demoConfig
	md, err := toml.Decode(text, &c)
	if err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return c, fmt.Errorf("%s: unknown keys: %s", name, strings.Join(keys, ", "))
	}
	if err := c.validate(); err != nil {
		return c, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

func (c demoConfig) validate() error {
	var errs []error
	if c.Nodes < 2 || c.Nodes > lab.MaxNodes {
		errs = append(errs, fmt.Errorf("nodes = %d: want 2..%d (a failover needs a backup)", c.Nodes, lab.MaxNodes))
	}
	if len(c.Priorities) != c.Nodes {
		errs = append(errs, fmt.Errorf("%d priorities for %d nodes", len(c.Priorities), c.Nodes))
	}
	// The lab sends traffic only inside its own LAN.
	if !c.VIP.IsValid() || !lab.LANPrefix().Contains(c.VIP.Addr()) {
		errs = append(errs, fmt.Errorf("vip %v: must be inside %v", c.VIP, lab.LANPrefix()))
	}
	if err := c.group().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c demoConfig) group() lab.GroupConfig {
	g := lab.DefaultGroupConfig(c.Nodes, c.AdvertInterval)
	g.VRID, g.Priorities, g.VIP = c.VRID, c.Priorities, c.VIP
	return g
}
