package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The embedded demo config is what `make demo` runs: it must parse to issue
// 4's group.
func TestEmbeddedDemoConfig(t *testing.T) {
	c, err := loadDemoConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes != 3 || c.VRID != 51 || c.AdvertInterval != time.Second {
		t.Errorf("demo config = %+v", c)
	}
	if diff := cmp.Diff([]int{150, 100, 50}, c.Priorities); diff != "" {
		t.Errorf("priorities (-want +got):\n%s", diff)
	}
	if c.VIP.String() != "198.51.100.10/32" {
		t.Errorf("vip = %v", c.VIP)
	}
}

func TestDemoConfigRefusals(t *testing.T) {
	tests := map[string]string{
		"unknown key":     "nodes = 3\nvrid = 51\npriorities = [150,100,50]\nadvert_interval = \"1s\"\nvip = \"198.51.100.10/32\"\ncolour = \"red\"\n",
		"vip outside lab": "nodes = 3\nvrid = 51\npriorities = [150,100,50]\nadvert_interval = \"1s\"\nvip = \"192.0.2.10/32\"\n",
		"bad interval":    "nodes = 3\nvrid = 51\npriorities = [150,100,50]\nadvert_interval = \"15ms\"\nvip = \"198.51.100.10/32\"\n",
		"priority count":  "nodes = 3\nvrid = 51\npriorities = [150,100]\nadvert_interval = \"1s\"\nvip = \"198.51.100.10/32\"\n",
		"single node":     "nodes = 1\nvrid = 51\npriorities = [150]\nadvert_interval = \"1s\"\nvip = \"198.51.100.10/32\"\n",
		"syntax":          "nodes = \n",
	}
	for name, text := range tests {
		path := filepath.Join(t.TempDir(), "demo.toml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadDemoConfig(path); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error does not name the file: %v", name, err)
		}
	}
}
