package health

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Log attribute keys.
const (
	keyTracker      = "tracker"
	keyType         = "type"
	keyDetail       = "detail"
	keyWeight       = "weight"
	keyContribution = "contribution"
	keyStreak       = "consecutive"
)

// A Status is a snapshot of one tracker.
type Status struct {
	Name    string
	Type    Type
	Healthy bool
	// Detail is the last check's outcome. While a streak has not reached
	// fall (or rise) yet, it disagrees with Healthy.
	Detail string
	// Cause is the outcome of the check that made the last healthy<->failing
	// change; empty before the first.
	Cause string
	// Since is when Healthy last changed, or when the tracker was created.
	Since  time.Time
	Weight int
	// Contribution is what the tracker adds to the priority now.
	Contribution int
	// Streak counts the consecutive checks that disagree with Healthy.
	Streak       int
	LastCheck    time.Time // when the last check started
	LastDuration time.Duration
	Checks       uint64
	Failures     uint64 // failed checks, not changes
}

// contribution is what a tracker with weight adds to the priority: a
// positive weight while healthy, a negative one while failing. Weight 0
// never does; it demands Fault instead (see Effective).
func contribution(weight int, healthy bool) int {
	if weight > 0 && healthy || weight < 0 && !healthy {
		return weight
	}
	return 0
}

// A Tracker runs one Checker every interval and turns its results, through
// fall/rise hysteresis, into a healthy or failing state.
type Tracker struct {
	spec    Spec
	checker Checker
	log     *slog.Logger
	onCheck func(time.Duration, bool)

	mu sync.Mutex // guards st; Status reads it from other goroutines
	st Status
}

// An Option configures a Tracker.
type Option func(*Tracker)

// WithCheckObserver has f called after every completed check with its
// duration and outcome, from the goroutine running Run: a hook for a
// metrics histogram, so this package needs no metrics library. f must not
// block.
func WithCheckObserver(f func(d time.Duration, ok bool)) Option {
	return func(t *Tracker) { t.onCheck = f }
}

// WithInitialState starts the tracker healthy or failing as it was, with
// the cause and time of that state: a binary upgrade carries the trackers
// of the previous process over, so that a failing tracker does not come
// back healthy (and a sick Master advertise its full priority) until its
// first checks have run.
func WithInitialState(healthy bool, cause string, since time.Time) Option {
	return func(t *Tracker) {
		t.st.Healthy, t.st.Cause, t.st.Since = healthy, cause, since
		t.st.Detail = "carried over from the previous process"
		t.st.Contribution = contribution(t.spec.Weight, healthy)
	}
}

// NewTracker returns a tracker of c for the validated (and defaulted) s. It
// starts healthy; the package documentation says why.
func NewTracker(s Spec, c Checker, log *slog.Logger, opts ...Option) *Tracker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tracker{
		spec:    s,
		checker: c,
		log:     log.With(keyTracker, s.Name, keyType, s.Type.String()),
		st: Status{
			Name:         s.Name,
			Type:         s.Type,
			Healthy:      true,
			Detail:       "not checked yet",
			Since:        time.Now(),
			Weight:       s.Weight,
			Contribution: contribution(s.Weight, true),
		},
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Status returns the tracker's current state. It is safe to call from any
// goroutine.
func (t *Tracker) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.st
}

// Run checks now and then every interval until ctx ends, and sends the
// Status on changed whenever the tracker turns failing or healthy. It
// returns nil when ctx ends, which is its only way out. Call it once.
//
// A send waits for the receiver (or ctx): a change is never dropped, and
// no check runs while one is pending. Each change is a Status of its own:
// a pointer, so that a receiver selecting on many channels keeps 8 bytes
// for it on its stack, not the Status.
func (t *Tracker) Run(ctx context.Context, changed chan<- *Status) error {
	return t.RunFunc(ctx, func(st *Status) {
		select {
		case changed <- st:
		case <-ctx.Done():
		}
	})
}

// RunFunc is Run calling changed, which must not block for long, in
// place of sending on a channel.
func (t *Tracker) RunFunc(ctx context.Context, changed func(*Status)) error {
	tick := time.NewTicker(t.spec.Interval)
	defer tick.Stop()
	for {
		if st, flipped := t.checkOnce(ctx); flipped {
			changed(&st)
			if ctx.Err() != nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// checkOnce runs one check and applies it; it reports whether Healthy
// changed, with the new Status.
func (t *Tracker) checkOnce(ctx context.Context) (Status, bool) {
	start := time.Now()
	res := t.checker.Check(ctx)
	d := time.Since(start)
	if ctx.Err() != nil {
		// Cut short by shutdown: no evidence either way.
		return Status{}, false
	}
	if t.onCheck != nil {
		t.onCheck(d, res.OK)
	}

	t.mu.Lock()
	st := &t.st
	st.Checks++
	if !res.OK {
		st.Failures++
	}
	st.LastCheck, st.LastDuration, st.Detail = start, d, res.Detail
	flipped := false
	if res.OK == st.Healthy {
		st.Streak = 0
	} else {
		st.Streak++
		need := t.spec.Fall
		if !st.Healthy {
			need = t.spec.Rise
		}
		if st.Streak >= need {
			flipped = true
			st.Healthy, st.Cause, st.Since, st.Streak = res.OK, res.Detail, start.Add(d), 0
			st.Contribution = contribution(st.Weight, st.Healthy)
		}
	}
	snap := *st
	t.mu.Unlock()

	switch {
	case flipped && !snap.Healthy:
		t.log.Warn("tracker failing", keyDetail, res.Detail, keyStreak, t.spec.Fall,
			keyWeight, snap.Weight, keyContribution, snap.Contribution)
	case flipped:
		t.log.Info("tracker healthy again", keyDetail, res.Detail, keyStreak, t.spec.Rise,
			keyWeight, snap.Weight, keyContribution, snap.Contribution)
	case snap.Streak > 0:
		// Not a change yet, but the first sign of one.
		t.log.Debug("check disagrees with the tracker's state", keyDetail, res.Detail,
			keyStreak, snap.Streak, "healthy", snap.Healthy)
	}
	return snap, flipped
}
