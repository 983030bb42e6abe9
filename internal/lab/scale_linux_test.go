package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScaleShort runs the scale measurement end to end on a small case:
// vipd only, 16 groups on one interface for 10 s, then the link cut of the
// master. It asserts that everything was measured, not how fast.
func TestScaleShort(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("-short: the scale run takes about 40 s")
	}
	bin := os.Getenv("VIPD_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "vipd")
		if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/vipd").CombinedOutput(); err != nil {
			t.Fatalf("go build ../../cmd/vipd: %v\n%s", err, out)
		}
	}
	const groups = 16
	cfg := ScaleConfig{
		Daemons: []DaemonKind{Vipd}, Groups: []int{groups}, Window: 10 * time.Second,
		Failover: true, VipdBinary: bin, Progress: func(s string) { t.Log(s) },
	}
	res, err := RunScale(t.Context(), testLog(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Windows) != 1 {
		t.Fatalf("%d windows, want 1: %+v", len(res.Windows), res.Windows)
	}
	w := res.Windows[0]
	if w.Error != "" || !w.Stable || w.Groups != groups || len(w.Nodes) != 3 {
		t.Fatalf("window: %+v", w)
	}
	if w.WindowS < 9 {
		t.Errorf("window lasted %.1f s, want about 10", w.WindowS)
	}
	masters := 0
	for _, n := range w.Nodes {
		// Every vipd sends or receives 16 adverts a second: it ran.
		if n.CPUMS <= 0 || n.Runs <= 0 || n.RSSMiB <= 0 || n.PeakRSSMiB < n.RSSMiB || n.Procs != 1 {
			t.Errorf("n%d: %+v", n.Node, n)
		}
		if n.Role == "master" {
			masters++
		}
	}
	if masters != 1 {
		t.Errorf("%d masters in %+v", masters, w.Nodes)
	}
	if len(res.Failovers) != 1 {
		t.Fatalf("%d failovers, want 1", len(res.Failovers))
	}
	f := res.Failovers[0]
	if f.Error != "" || f.TakenOver != groups || len(f.ExcessMS) != groups {
		t.Fatalf("failover: %+v", f)
	}
	if len(f.AdvertExcessMS) != groups {
		t.Errorf("%d groups' first adverts of the new master, want %d", len(f.AdvertExcessMS), groups)
	}
	for k, ex := range append(f.ExcessMS, f.AdvertExcessMS...) {
		// A takeover before the bound would break RFC 5798 §6.4.2; a few
		// ms of slack cover the stamps of two namespaces.
		if ex < -5 {
			t.Errorf("group %d taken over %.3f ms before its Master_Down_Interval", k+1, -ex)
		}
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	for _, want := range []string{"cpu per node, 16 groups @1s", "failover of 16 groups @1s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table has no %q row", want)
		}
	}
}
