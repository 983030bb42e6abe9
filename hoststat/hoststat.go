package hoststat

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"
)

// Pressure is one resource's pressure stall information: the share, in
// percent, of the last 10 seconds in which some (or, for Full, all)
// non-idle tasks were stalled on it.
type Pressure struct {
	Some float64
	// Full is absent from /proc/pressure/cpu on kernels before 5.13.
	Full    float64
	HasFull bool
}

// PSI is the host's pressure on CPU, IO and memory.
type PSI struct {
	// Available is false on a kernel without PSI; the other fields are zero.
	Available   bool
	CPU, IO     Pressure
	Memory      Pressure
	unavailable string // why not, for String
}

// ErrMalformed wraps every parse error.
var ErrMalformed = errors.New("hoststat: malformed")

// ParsePressure parses a /proc/pressure/* file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// and returns the avg10 values. A "some" line is required.
func ParsePressure(text string) (Pressure, error) {
	var p Pressure
	hasSome := false
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		kind := f[0]
		if kind != "some" && kind != "full" {
			return Pressure{}, fmt.Errorf("%w pressure line %q", ErrMalformed, strings.TrimSpace(line))
		}
		v, err := avg10(f[1:])
		if err != nil {
			return Pressure{}, fmt.Errorf("%w pressure line %q: %v", ErrMalformed, strings.TrimSpace(line), err)
		}
		if kind == "some" {
			p.Some, hasSome = v, true
		} else {
			p.Full, p.HasFull = v, true
		}
	}
	if !hasSome {
		return Pressure{}, fmt.Errorf("%w pressure: no \"some\" line", ErrMalformed)
	}
	return p, nil
}

func avg10(fields []string) (float64, error) {
	for _, kv := range fields {
		if v, ok := strings.CutPrefix(kv, "avg10="); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 || x > 100 {
				return 0, fmt.Errorf("avg10 %q", v)
			}
			return x, nil
		}
	}
	return 0, errors.New("no avg10")
}

// CPUTimes are the host's aggregate CPU times from /proc/stat's "cpu"
// line, in clock ticks (USER_HZ).
type CPUTimes struct {
	// Total is user+nice+system+idle+iowait+irq+softirq+steal (guest time is
	// already inside user and nice).
	Total  uint64
	IOWait uint64
	Steal  uint64
}

// ParseProcStat reads the aggregate "cpu" line of /proc/stat. Kernels
// before 2.6.11 have no steal column: it reads as zero.
func ParseProcStat(text string) (CPUTimes, error) { return parseProcStat(text) }

// parseProcStat is ParseProcStat on the file's text as read: the daemon
// reads /proc/stat every few seconds, and parsing it allocates nothing
// (no string of the whole file, no slice of its fields).
func parseProcStat[T ~string | ~[]byte](text T) (CPUTimes, error) {
	for len(text) > 0 {
		line := text
		if i := indexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = text[:0]
		}
		name, rest := nextField(line)
		if string(name) != "cpu" {
			continue
		}
		var v [8]uint64
		n := 0
		for field := range 8 {
			var f T
			if f, rest = nextField(rest); len(f) == 0 {
				break
			}
			x, ok := parseUint(f)
			if !ok {
				return CPUTimes{}, fmt.Errorf("%w /proc/stat cpu field %d %q", ErrMalformed, field+1, string(f))
			}
			v[field], n = x, field+1
		}
		if n < 5 {
			return CPUTimes{}, fmt.Errorf("%w /proc/stat cpu line: %d fields", ErrMalformed, n)
		}
		var t CPUTimes
		for _, x := range v {
			t.Total += x
		}
		t.IOWait, t.Steal = v[4], v[7]
		return t, nil
	}
	return CPUTimes{}, fmt.Errorf("%w /proc/stat: no aggregate cpu line", ErrMalformed)
}

func indexByte[T ~string | ~[]byte](s T, c byte) int {
	for i := range len(s) {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// nextField splits off s's first field, separated by spaces or tabs.
func nextField[T ~string | ~[]byte](s T) (field, rest T) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	j := i
	for j < len(s) && s[j] != ' ' && s[j] != '\t' {
		j++
	}
	return s[i:j], s[j:]
}

// parseUint parses a decimal counter; false: not one, or past 64 bits.
func parseUint[T ~string | ~[]byte](s T) (uint64, bool) {
	if len(s) == 0 {
		return 0, false
	}
	var x uint64
	for i := range len(s) {
		d := s[i] - '0'
		if d > 9 || x > (math.MaxUint64-uint64(d))/10 {
			return 0, false
		}
		x = x*10 + uint64(d)
	}
	return x, true
}

// CPUShare is the share of CPU time stolen and spent in IO wait between two
// readings, in percent.
type CPUShare struct {
	StealPct  float64
	IOWaitPct float64
}

// Since is the share of cur's time since prev. Counters that went
// backwards (iowait can, on some kernels) count as zero.
func (cur CPUTimes) Since(prev CPUTimes) CPUShare {
	total := delta(cur.Total, prev.Total)
	if total == 0 {
		return CPUShare{}
	}
	pct := func(d uint64) float64 { return 100 * float64(d) / float64(total) }
	return CPUShare{StealPct: pct(delta(cur.Steal, prev.Steal)), IOWaitPct: pct(delta(cur.IOWait, prev.IOWait))}
}

func delta(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// Sample is the host's state at one moment.
type Sample struct {
	At  time.Time
	PSI PSI
	// CPU is the steal and iowait share since the previous sample of the
	// same Sampler, over Span; HasCPU is false for a Sampler's first sample.
	CPU    CPUShare
	Span   time.Duration
	HasCPU bool
}

// String renders the sample for a log line, e.g.
// "psi cpu=2.60 io=0.16/0.16 mem=0.00/0.00 steal=0.0% iowait=1.2% (1.5s)";
// each pressure is some/full avg10 (cpu without full on older kernels).
func (s Sample) String() string {
	var b strings.Builder
	if s.PSI.Available {
		fmt.Fprintf(&b, "psi cpu=%s io=%s mem=%s", s.PSI.CPU, s.PSI.IO, s.PSI.Memory)
	} else {
		b.WriteString("psi not available")
		if s.PSI.unavailable != "" {
			b.WriteString(" (" + s.PSI.unavailable + ")")
		}
	}
	if s.HasCPU {
		fmt.Fprintf(&b, " steal=%.1f%% iowait=%.1f%% (%s)", s.CPU.StealPct, s.CPU.IOWaitPct, s.Span.Round(time.Millisecond))
	} else {
		b.WriteString(" steal=? iowait=? (first sample)")
	}
	return b.String()
}

// String is "some/full", or "some" without a full line.
func (p Pressure) String() string {
	if p.HasFull {
		return fmt.Sprintf("%.2f/%.2f", p.Some, p.Full)
	}
	return fmt.Sprintf("%.2f", p.Some)
}

// LogValue groups the sample's figures as slog attributes.
func (s Sample) LogValue() slog.Value {
	var as []slog.Attr
	if s.PSI.Available {
		as = append(as,
			slog.Float64("psi_cpu_some", s.PSI.CPU.Some), slog.Float64("psi_io_some", s.PSI.IO.Some),
			slog.Float64("psi_io_full", s.PSI.IO.Full), slog.Float64("psi_mem_some", s.PSI.Memory.Some),
			slog.Float64("psi_mem_full", s.PSI.Memory.Full))
	} else {
		as = append(as, slog.String("psi", "not available"))
	}
	if s.HasCPU {
		as = append(as, slog.Float64("steal_pct", s.CPU.StealPct), slog.Float64("iowait_pct", s.CPU.IOWaitPct),
			slog.Duration("span", s.Span))
	}
	return slog.GroupValue(as...)
}
