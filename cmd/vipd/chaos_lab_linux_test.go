package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
)

// Two scenarios of the chaos suite (issue 11, `vipd-lab chaos`) as tests:
// the lab measures from outside (netlink address events in every node, the
// client's neighbour entry, a 1 ms ICMP prober) exactly as the suite does.

// runChaosScenario runs sc against vipd on three nodes and keeps the
// daemons' logs for a failure message.
func runChaosScenario(t *testing.T, sc lab.Scenario) lab.ChaosResult {
	t.Helper()
	needRoot(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := lab.RunScenario(ctx, slog.New(slog.DiscardHandler), lab.Options{Dir: dir}, sc,
		lab.DaemonSpec{Kind: lab.Vipd, Binary: vipdBinary, LogLevel: "debug"})
	t.Cleanup(func() {
		if t.Failed() {
			dumpChaosLogs(t, dir)
		}
	})
	if err != nil {
		t.Fatalf("%s: %v", sc.Name, err)
	}
	t.Logf("%s: %s", sc.Name, describeChaos(res))
	return res
}

func describeChaos(r lab.ChaosResult) string {
	f, w := r.Fault, r.Total
	return fmt.Sprintf("during the fault: client moves %d, vip moves %d, two holders %.0f ms, longest no holder %.0f ms; "+
		"in all: client moves %d, vip moves %d, no holder %.0f ms (longest %.0f ms), outage %.0f ms, lost %d; "+
		"end: holders %v, client on owner %v, settled %v, daemons alive %d/%d; notes %q",
		f.NeighMoves, f.AddressMoves, f.TwoHoldersMS, f.LongestNoHolderMS,
		w.NeighMoves, w.AddressMoves, w.NoHolderMS, w.LongestNoHolderMS, w.OutageMS, w.LostProbes,
		r.Holders, r.ClientOnOwner, r.Settled, r.DaemonsAlive, r.Daemons, r.Notes)
}

func dumpChaosLogs(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "n*-vipd.log"))
	for _, p := range logs {
		b, _ := os.ReadFile(p)
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		t.Logf("--- %s (tail) ---\n%s", filepath.Base(p), b)
	}
}

// A VRRP partition of the Master with L2 intact (a switch filtering
// multicast): both sides become Master, which VRRP cannot avoid, but the
// two must not fight over the client with gratuitous ARP. At most one move
// of the client during the partition (the split itself); after the heal
// exactly one owner, and the client on its MAC.
func TestChaosPartitionNoARPWar(t *testing.T) {
	const partition = 6 * time.Second
	res := runChaosScenario(t, lab.PartitionScenario(time.Second, partition))
	if res.Fault.NeighMoves > 1 {
		t.Errorf("the client's neighbour entry for the VIP changed MAC %d times in a %v partition, want at most 1 (%s)",
			res.Fault.NeighMoves, partition, describeChaos(res))
	}
	if !res.OneOwner || !res.ClientOnOwner {
		t.Errorf("after the heal: holders %v, client on the owner's MAC %v; want one owner with the client on it (%s)",
			res.Holders, res.ClientOnOwner, describeChaos(res))
	}
	if res.DaemonsAlive != res.Daemons {
		t.Errorf("%d of %d daemons alive after the partition", res.DaemonsAlive, res.Daemons)
	}
}

// Five 300 ms link flaps of the Master at 1 s adverts: the link returns
// long before any peer can time out (Master_Down_Interval 3.6 s), so the
// group has not changed and the Master must resume at once. A flap must
// cost the flap, not Master_Down_Interval.
func TestChaosShortFlapCostsTheFlap(t *testing.T) {
	const flap = 300 * time.Millisecond
	res := runChaosScenario(t, lab.FlapScenario("flap-short", time.Second, flap, 2*time.Second, 5))
	if limit := flap + 300*time.Millisecond; res.Total.LongestNoHolderMS >= float64(limit.Milliseconds()) {
		t.Errorf("the VIP had no holder for %.0f ms at a stretch after a %v flap, want under %v (Master_Down_Interval at 1 s is %v; %s)",
			res.Total.LongestNoHolderMS, flap, limit, lab.MasterDownInterval(150, time.Second).Round(time.Millisecond), describeChaos(res))
	}
	if !res.OneOwner || !res.ClientOnOwner {
		t.Errorf("after the flaps: holders %v, client on the owner's MAC %v; want one owner with the client on it", res.Holders, res.ClientOnOwner)
	}
}
