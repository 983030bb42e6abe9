package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/internal/lab"
)

// withUnicastSource sets unicast_source to each node's own address.
func withUnicastSource(peers map[int][]string, sources map[int]string) func(int, []byte) []byte {
	withPeers := withUnicastPeers(peers)
	return func(node int, cfg []byte) []byte {
		cfg = withPeers(node, cfg)
		return bytes.Replace(cfg, []byte("unicast_peers"), []byte(`unicast_source = "`+sources[node]+"\"\nunicast_peers"), 1)
	}
}

// Issue 10, defects 1 and 2 against the kernel: a reload of an unchanged
// file with unicast_source moves nothing, and a rolling change from
// unicast_peers to multicast reopens the socket in the group, so the two
// hosts still hear each other (one holder) and nobody changes state.
func TestLabReloadUnicastSourceAndToMulticast(t *testing.T) {
	needRoot(t)
	interval := 100 * time.Millisecond
	c := newCluster(t, interval, noDaemon, noDaemon)
	cfg := withUnicastSource(map[int][]string{1: {"198.51.100.12"}, 2: {"198.51.100.11"}},
		map[int]string{1: "198.51.100.11", 2: "198.51.100.12"})
	for i := 1; i <= 2; i++ {
		spec := c.spec(i)
		spec.Kind, spec.Binary = lab.Vipd, vipdBinary
		spec.Config = cfg
		c.kinds[i-1] = lab.Vipd
		c.startSpec(i, spec)
	}
	c.waitOnlyHolder(1)
	c.opWaitStatus(2, "n2 in BACKUP hearing n1", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11"
	})
	from := time.Now()
	hist1, hist2 := len(c.opHistory(1)), len(c.opHistory(2))

	// Defect 1: the same file again.
	if r := c.opCLI(1, "reload"); r.code != 0 || r.stdout != "reloaded: no changes\n" {
		t.Errorf("reload of an unchanged file: %+v", r)
	}
	time.Sleep(5 * lab.MasterDownInterval(100, interval))
	if moves := c.opVIPMoves(from); len(moves) != 0 {
		t.Errorf("the VIP moved on a reload of an unchanged file: %v", moves)
	}

	// Defect 2: to multicast, the Backup first, as a rolling change goes.
	for _, i := range []int{2, 1} {
		path := c.daemons[i].ConfigPath()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var kept [][]byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if !bytes.HasPrefix(line, []byte("unicast_")) {
				kept = append(kept, line)
			}
		}
		if err := os.WriteFile(path, bytes.Join(kept, []byte("\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := c.opCLI(i, "reload"); r.code != 0 || !bytes.Contains([]byte(r.stdout), []byte("unicast -> multicast")) {
			t.Errorf("n%d reload to multicast: %+v", i, r)
		}
	}
	time.Sleep(5 * lab.MasterDownInterval(100, interval))
	if s := c.mon.State(); s.OnlyHolder() != 1 {
		t.Errorf("holders %v after the change to multicast", s.Holders)
	}
	c.opWaitStatus(2, "n2 hearing n1 over multicast", func(st control.InstanceStatus) bool {
		return st.State == control.StateBackup && st.Master.Address.String() == "198.51.100.11" && time.Since(st.Master.LastSeen) < time.Second
	})
	if moves := c.opVIPMoves(from); len(moves) != 0 {
		t.Errorf("the VIP moved: %v", moves)
	}
	if n1, n2 := len(c.opHistory(1)), len(c.opHistory(2)); n1 != hist1 || n2 != hist2 {
		t.Errorf("state changes: n1 %d -> %d, n2 %d -> %d", hist1, n1, hist2, n2)
	}
}
