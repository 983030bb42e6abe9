package hoststat

import (
	"sync"
	"time"
)

// Sampler takes Samples, keeping the previous /proc/stat reading so that
// each Sample reports steal and iowait since the previous call. It is safe
// for concurrent use.
type Sampler struct {
	proc string // the proc file system's root, "/proc" on a real host
	now  func() time.Time

	mu       sync.Mutex
	prev     CPUTimes
	prevAt   time.Time
	havePrev bool
}

// NewSampler reads the host's /proc.
func NewSampler() *Sampler { return NewSamplerAt("/proc") }

// NewSamplerAt reads a proc tree at root (tests point it at testdata).
func NewSamplerAt(root string) *Sampler { return &Sampler{proc: root, now: time.Now} }

// Sample reads the pressure and the CPU times. A missing or unsupported
// pressure file leaves PSI unavailable; an unreadable /proc/stat is an
// error, and the previous reading is kept for the next call.
func (s *Sampler) Sample() (Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.now()
	out := Sample{At: at, PSI: readPSI(s.proc)}
	cur, err := readCPUTimes(s.proc)
	if err != nil {
		return out, err
	}
	if s.havePrev {
		out.CPU, out.Span, out.HasCPU = cur.Since(s.prev), at.Sub(s.prevAt), true
	}
	s.prev, s.prevAt, s.havePrev = cur, at, true
	return out, nil
}
