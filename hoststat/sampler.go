package hoststat

import (
	"sync"
	"time"
)

// Sampler takes Samples, keeping the last two /proc/stat readings (of
// Sample or Baseline) so that each Sample reports steal and iowait since
// the latest one at least MinSpan old. It is safe for concurrent use.
type Sampler struct {
	proc string // the proc file system's root, "/proc" on a real host
	now  func() time.Time

	mu   sync.Mutex
	stat statFile
	// prev is the latest reading, older the one before it.
	prev, older     CPUTimes
	prevAt, olderAt time.Time
	have            int // readings kept: 0, 1 or 2
	// last is the latest Sample, handed out again within Reuse.
	last    Sample
	hasLast bool
}

// Reuse is how long a Sample stands for the host: transitions in a burst
// (every group of a link taking over at a cut) share one reading instead
// of reading the pressure files and /proc/stat once each, on the
// takeover's path. Pressure averages over 10 s and shares over a second
// or more do not change within it.
const Reuse = 100 * time.Millisecond

// MinSpan is the shortest window a Sample's CPU shares cover when an
// older reading allows it: shares over a few milliseconds say nothing.
const MinSpan = time.Second

// NewSampler reads the host's /proc.
func NewSampler() *Sampler { return NewSamplerAt("/proc") }

// NewSamplerAt reads a proc tree at root (tests point it at testdata).
func NewSamplerAt(root string) *Sampler {
	return &Sampler{proc: root, now: time.Now, stat: newStatFile()}
}

// Sample reads the pressure and the CPU times. A missing or unsupported
// pressure file leaves PSI unavailable; an unreadable /proc/stat is an
// error, and the previous reading is kept for the next call.
func (s *Sampler) Sample() (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.now()
	if s.hasLast && at.Sub(s.last.At) < Reuse && !at.Before(s.last.At) {
		return s.last, nil
	}
	out := Sample{At: at, PSI: readPSI(s.proc)}
	cur, err := s.stat.readCPUTimes(s.proc)
	if err != nil {
		return out, err
	}
	defer func() { s.last, s.hasLast = out, true }()
	switch {
	case s.have == 2 && at.Sub(s.prevAt) < MinSpan:
		out.CPU, out.Span, out.HasCPU = cur.Since(s.older), at.Sub(s.olderAt), true
	case s.have > 0:
		out.CPU, out.Span, out.HasCPU = cur.Since(s.prev), at.Sub(s.prevAt), true
	}
	s.keep(cur, at)
	return out, nil
}

// Baseline reads only /proc/stat, for the CPU shares of the next Sample:
// the pressure files carry the kernel's own averages and need no baseline.
// A daemon calls it every few seconds so that a Sample at a transition
// covers the last seconds, not the time since the previous transition.
func (s *Sampler) Baseline() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.stat.readCPUTimes(s.proc)
	if err != nil {
		return err
	}
	s.keep(cur, s.now())
	return nil
}

func (s *Sampler) keep(cur CPUTimes, at time.Time) {
	s.older, s.olderAt = s.prev, s.prevAt
	s.prev, s.prevAt = cur, at
	s.have = min(s.have+1, 2)
}
