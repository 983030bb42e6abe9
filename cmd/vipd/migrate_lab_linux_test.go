package main

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"testing"

	"github.com/vipd/vipd/internal/lab"
)

// Issue 17: a keepalived group at its stock VRRPv2 is replaced by vipd one
// node at a time with the configs vipd import-keepalived makes, Backups
// first and the Master last (killed, its VIP adopted), then moved to VRRPv3
// with one reload per node. The address never moves and never has two
// holders.
func TestLabRollingReplacementFromKeepalived(t *testing.T) {
	needRoot(t)
	if _, err := exec.LookPath("keepalived"); err != nil {
		t.Skip("skipping: keepalived is not installed (apt-get install keepalived; .ci/run does)")
	}
	res, err := lab.RunMigration(context.Background(), slog.New(slog.DiscardHandler), lab.MigrationOptions{Vipd: vipdBinary})
	var table bytes.Buffer
	_ = lab.WriteMigrationText(&table, res)
	t.Logf("rolling replacement:\n%s", table.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 6 {
		t.Fatalf("%d steps, want 3 replacements and 3 reloads", len(res.Steps))
	}
	for _, s := range res.Steps {
		if s.Moves != 0 || s.TwoHoldersS != 0 || s.Holder != 1 {
			t.Errorf("%s: %d moves, %.3fs with two holders, holder n%d; want none, none, n1", s.Name, s.Moves, s.TwoHoldersS, s.Holder)
		}
	}
}
