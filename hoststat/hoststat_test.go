package hoststat

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParsePressure(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Pressure
	}{
		{"kernel 5.10 cpu: no full line", fixture(t, "proc-5.10/pressure/cpu"), Pressure{Some: 1.25}},
		{"io with full", fixture(t, "proc-6.1/pressure/io"), Pressure{Some: 0.16, Full: 0.15, HasFull: true}},
		{"fields in another order", "some total=1 avg60=3 avg10=4.5 avg300=2\n", Pressure{Some: 4.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePressure(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ParsePressure (-want +got):\n%s", d)
			}
		})
	}
}

func TestParsePressureRejects(t *testing.T) {
	for _, text := range []string{
		"",
		"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"some avg60=0.00 total=0\n",
		"some avg10=abc\n",
		"some avg10=101.00\n",
		"some avg10=-1\n",
		"sum avg10=0.00\n",
	} {
		if p, err := ParsePressure(text); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParsePressure(%q) = %+v, %v; want ErrMalformed", text, p, err)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	got, err := ParseProcStat(fixture(t, "stat-a"))
	if err != nil {
		t.Fatal(err)
	}
	want := CPUTimes{Total: 25316 + 8360 + 88317 + 1063 + 276 + 35, IOWait: 1063, Steal: 35}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseProcStat (-want +got):\n%s", d)
	}
	old, err := ParseProcStat(fixture(t, "stat-2.6.10"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(CPUTimes{Total: 1170, IOWait: 20}, old); d != "" {
		t.Errorf("without a steal column (-want +got):\n%s", d)
	}
	for _, text := range []string{"", "cpu0 1 2 3 4 5\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n", "cpu 1 2 3 4 18446744073709551616\n", "cpu 1 2 -3 4 5\n"} {
		if _, err := ParseProcStat(text); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseProcStat(%q): %v, want ErrMalformed", text, err)
		}
		if _, err := parseProcStat([]byte(text)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseProcStat(%q) as bytes: %v, want ErrMalformed", text, err)
		}
	}
	// The daemon parses the bytes it read: the same answer.
	fromBytes, err := parseProcStat([]byte(fixture(t, "stat-a")))
	if err != nil || fromBytes != got {
		t.Errorf("from bytes: %+v, %v; want %+v", fromBytes, err, got)
	}
	// Tabs separate as spaces do; a line without a newline ends the text.
	if tabs, err := ParseProcStat("intr 5\ncpu\t1 2\t3 4 5 6 7 8 9 10"); err != nil || tabs != (CPUTimes{Total: 36, IOWait: 5, Steal: 8}) {
		t.Errorf("tabs and no newline: %+v, %v", tabs, err)
	}
}

func TestSince(t *testing.T) {
	a, _ := ParseProcStat(fixture(t, "stat-a"))
	b, _ := ParseProcStat(fixture(t, "stat-b"))
	got := b.Since(a)
	// 100 ticks of steal and 100 of iowait out of 1300.
	want := 100 * 100.0 / 1300
	if math.Abs(got.StealPct-want) > 1e-9 || math.Abs(got.IOWaitPct-want) > 1e-9 {
		t.Errorf("Since = %+v, want %.3f%% each", got, want)
	}
	if z := a.Since(a); z != (CPUShare{}) {
		t.Errorf("no time passed: %+v", z)
	}
	// iowait going backwards is a known kernel quirk: zero, not a huge number.
	back := b
	back.IOWait = a.IOWait - 10
	if got := back.Since(a); got.IOWaitPct != 0 {
		t.Errorf("iowait went backwards: %v%%", got.IOWaitPct)
	}
}

func sampler(t *testing.T, tree string) (*Sampler, string, *time.Time) {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", tree))); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)
	s := NewSamplerAt(root)
	s.now = func() time.Time { return now }
	return s, root, &now
}

func TestSampler(t *testing.T) {
	s, root, now := sampler(t, "proc-6.1")
	first, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if first.HasCPU {
		t.Errorf("first sample has CPU shares: %+v", first)
	}
	wantPSI := PSI{Available: true, CPU: Pressure{Some: 2.6, HasFull: true}, IO: Pressure{Some: 0.16, Full: 0.15, HasFull: true},
		Memory: Pressure{HasFull: true}}
	if d := cmp.Diff(wantPSI, first.PSI, cmp.AllowUnexported(PSI{})); d != "" {
		t.Errorf("PSI (-want +got):\n%s", d)
	}
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(fixture(t, "stat-b")), 0o644); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(1500 * time.Millisecond)
	second, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if !second.HasCPU || second.Span != 1500*time.Millisecond || math.Abs(second.CPU.StealPct-100*100.0/1300) > 1e-9 {
		t.Errorf("second sample: %+v", second)
	}
	if got, want := second.String(), "psi cpu=2.60/0.00 io=0.16/0.15 mem=0.00/0.00 steal=7.7% iowait=7.7% (1.5s)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// Unchanged counters: shares of zero since the previous call, not since the first.
	*now = now.Add(time.Second)
	third, _ := s.Sample()
	if third.CPU != (CPUShare{}) || third.Span != time.Second {
		t.Errorf("third sample, nothing ran: %+v", third)
	}
}

// A Baseline moves the window on without reading the pressure; a Sample
// just after one reaches back to the reading before it (MinSpan).
func TestSamplerBaseline(t *testing.T) {
	s, root, now := sampler(t, "proc-6.1")
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(fixture(t, "stat-b")), 0o644); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(5 * time.Second)
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(200 * time.Millisecond)
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasCPU || got.Span != 5200*time.Millisecond || got.CPU == (CPUShare{}) {
		t.Errorf("a sample 200ms after a baseline: %+v, want the 5.2s since the one before", got)
	}
	*now = now.Add(3 * time.Second)
	got, _ = s.Sample()
	if got.Span != 3*time.Second || got.CPU != (CPUShare{}) {
		t.Errorf("a sample 3s after the last: %+v, want nothing ran over 3s", got)
	}
	if err := os.Remove(filepath.Join(root, "stat")); err != nil {
		t.Fatal(err)
	}
	if err := s.Baseline(); err == nil {
		t.Error("Baseline without /proc/stat: no error")
	}
}

func TestSamplerWithoutPSI(t *testing.T) {
	s, _, _ := sampler(t, "proc-nopsi")
	got, err := s.Sample()
	if err != nil {
		t.Fatalf("a kernel without PSI is not an error: %v", err)
	}
	if got.PSI.Available {
		t.Errorf("PSI available: %+v", got.PSI)
	}
	if !strings.HasPrefix(got.String(), "psi not available (kernel without PSI) steal=? iowait=? (first sample)") {
		t.Errorf("String() = %q", got)
	}
}

func TestSamplerOldKernelCPUWithoutFull(t *testing.T) {
	s, _, _ := sampler(t, "proc-5.10")
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.String(), "psi cpu=1.25 io=0.50/0.25 mem=0.50/0.25") {
		t.Errorf("String() = %q", got)
	}
}

func TestSamplerStatMissing(t *testing.T) {
	s, root, now := sampler(t, "proc-6.1")
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "stat")); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(Reuse)
	if _, err := s.Sample(); err == nil {
		t.Error("no error without /proc/stat")
	}
}

func TestSamplerRealHost(t *testing.T) {
	s := NewSampler()
	if _, err := s.Sample(); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	time.Sleep(Reuse + 20*time.Millisecond)
	got, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasCPU || got.CPU.StealPct < 0 || got.CPU.StealPct > 100 || got.CPU.IOWaitPct < 0 || got.CPU.IOWaitPct > 100 {
		t.Errorf("host sample out of range: %+v", got)
	}
	t.Logf("host: %v", got)
}

// Transitions in a burst (255 groups taking over at a cut) share one
// reading: a Sample within Reuse of the last is that one, read again after.
func TestSamplerBurstSharesOneReading(t *testing.T) {
	s, root, now := sampler(t, "proc-6.1")
	if err := s.Baseline(); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(2 * time.Second)
	first, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(fixture(t, "stat-b")), 0o644); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(Reuse / 2)
	again, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("a sample %v after the last: %+v, want the same reading %+v", Reuse/2, again, first)
	}
	*now = now.Add(Reuse)
	fresh, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.CPU == first.CPU || !fresh.At.Equal(*now) {
		t.Errorf("a sample %v after the last: %+v, want a new reading", Reuse*3/2, fresh)
	}
}
