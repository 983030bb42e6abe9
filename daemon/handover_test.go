package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/hoststat"
	"github.com/vipd/vipd/vrrp"
)

// A failing tracker came back healthy after a re-exec upgrade: a sick
// Master advertised its full priority until fall checks had run again.
func TestUpgradeKeepsTrackerState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		sick := filepath.Join(t.TempDir(), "drain")
		if err := os.WriteFile(sick, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		ic := testInstance(150)
		ic.Tracks = []config.Track{{Name: "drain-switch", Type: "file", Path: sick, Weight: -50, Fall: 3, Rise: 3,
			Interval: time.Second, Timeout: 500 * time.Millisecond}}
		h := newFakeHost(lan, "198.51.100.11")
		old := startCfgNode(t, h, Options{}, ic)
		time.Sleep(10 * time.Second)
		if st := old.status("k8s-api"); st.Priority != 100 || st.State != vrrp.StateMaster {
			t.Fatalf("before the upgrade: priority %d, %v", st.Priority, st.State)
		}
		hand, err := old.d.Detach(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		old.stop(t)
		next := startCfgNode(t, h, Options{Handover: hand}, ic)
		synctest.Wait()
		for range 3 {
			st := next.status("k8s-api")
			if st.Priority != 100 || len(st.Trackers) != 1 || st.Trackers[0].Healthy {
				t.Fatalf("after the upgrade: priority %d, trackers %+v; want 100 and the tracker still failing", st.Priority, st.Trackers)
			}
			time.Sleep(700 * time.Millisecond)
		}
		if next.state() != vrrp.StateMaster {
			t.Errorf("state %v after the upgrade", next.state())
		}
	})
}

// Issue 11: every transition in the history records how starved the host
// was (pressure, steal) and how late the timer that made it fired.
func TestHistoryRecordsHostPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		env := h.env()
		sample := hoststat.Sample{PSI: hoststat.PSI{Available: true, CPU: hoststat.Pressure{Some: 42.5}}, HasCPU: true,
			CPU: hoststat.CPUShare{StealPct: 12.5}, Span: time.Second}
		env.HostStats = func() (hoststat.Sample, error) { return sample, nil }
		d, err := New(&config.Config{Instances: []config.Instance{testInstance(150)}}, slog.New(slog.DiscardHandler), env, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		time.Sleep(10 * time.Second)
		hist, _ := d.History(context.Background())
		cancel()
		<-done
		var master *control.Transition
		for i := range hist {
			if hist[i].To == control.StateMaster {
				master = &hist[i]
			}
		}
		if master == nil || master.Host == nil {
			t.Fatalf("history %+v: no host figures on the takeover", hist)
		}
		if !master.Host.PSI || master.Host.CPUSome != 42.5 || master.Host.StealPct != 12.5 {
			t.Errorf("host figures %+v", master.Host)
		}
	})
}

// Between transitions the host's CPU times are read every hostSampleEvery,
// riding on the adverts, and the pressure not at all.
func TestHostBaselineEveryFewSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lan := &fakeLAN{}
		h := newFakeHost(lan, "198.51.100.11")
		env := h.env()
		var samples, baselines atomic.Int32
		env.HostStats = func() (hoststat.Sample, error) { samples.Add(1); return hoststat.Sample{}, nil }
		env.HostBaseline = func() error { baselines.Add(1); return nil }
		d, err := New(&config.Config{Instances: []config.Instance{testInstance(150)}}, slog.New(slog.DiscardHandler), env, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		time.Sleep(10 * time.Second) // Master after its Master_Down_Interval
		s0, b0 := samples.Load(), baselines.Load()
		time.Sleep(60 * time.Second)
		s1, b1 := samples.Load(), baselines.Load()
		cancel()
		<-done
		if s := s1 - s0; s != 0 {
			t.Errorf("%d full samples in a steady minute, want none", s)
		}
		if b, want := b1-b0, int32(time.Minute/hostSampleEvery); b < want-1 || b > want+1 {
			t.Errorf("%d baselines in a minute, want about %d", b, want)
		}
	})
}

// Replacing a keepalived Master: its VIP is on the interface at start. With
// Options.Adopt the instance is Master at once and never removes it; a
// higher-priority Master already there still wins the election. Without
// it the leftover is released at start, as always.
func TestAdoptKeepsTheVIPFound(t *testing.T) {
	vip := testInstance(150).VIPs[0]
	for _, tt := range []struct {
		name      string
		adopt     bool
		other     bool // a Master of higher priority on the LAN
		wantStart vrrp.State
		wantEnd   vrrp.State
	}{
		{"adopted", true, false, vrrp.StateMaster, vrrp.StateMaster},
		{"without adopt the leftover is released", false, false, vrrp.StateBackup, vrrp.StateMaster},
		{"adopted, then a higher Master wins", true, true, vrrp.StateMaster, vrrp.StateBackup},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lan := &fakeLAN{}
				if tt.other {
					startCfgNode(t, newFakeHost(lan, "198.51.100.12"), Options{}, testInstance(200))
					time.Sleep(5 * time.Second)
				}
				h := newFakeHost(lan, "198.51.100.11")
				h.vips[vip] = true // left by the daemon being replaced
				n := startCfgNode(t, h, Options{Adopt: tt.adopt}, testInstance(150))
				synctest.Wait()
				if st, has := n.state(), h.hasVIP(vip); !tt.other && (st != tt.wantStart || has != (tt.wantStart == vrrp.StateMaster)) {
					t.Errorf("at start: state %v, VIP held %v; want %v", st, has, tt.wantStart)
				}
				removed := false
				for range 100 { // longer than any Master_Down_Interval
					time.Sleep(100 * time.Millisecond)
					removed = removed || !h.hasVIP(vip)
				}
				if st := n.state(); st != tt.wantEnd {
					t.Errorf("state %v, want %v", st, tt.wantEnd)
				}
				if tt.adopt && !tt.other && removed {
					t.Error("the adopted VIP was removed")
				}
				if want := tt.wantEnd == vrrp.StateMaster; h.hasVIP(vip) != want {
					t.Errorf("VIP held %v at the end, want %v", h.hasVIP(vip), want)
				}
			})
		})
	}
}
