package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// seriesKey names the event-fed series of one instance (tracker "") or of
// one of its trackers.
type seriesKey struct {
	instance, tracker string
}

// keyState is what a scrape remembers of a key.
type keyState struct {
	// listed: the key was in a snapshot, so the daemon ran it.
	listed bool
	// absent counts consecutive snapshots without the key.
	absent int
}

// tracked records which instances and trackers have event-fed series, so
// that the series of those a reload removed are deleted instead of staying
// frozen: the snapshot says what exists, the events only add to it.
type tracked struct {
	mu   sync.Mutex
	keys map[seriesKey]*keyState
}

func newTracked() *tracked {
	return &tracked{keys: map[seriesKey]*keyState{}}
}

// add notes that key has event-fed series.
func (t *tracked) add(key seriesKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.keys[key]; !ok {
		t.keys[key] = &keyState{}
	}
}

// unlistedGrace is how many snapshots in a row may lack a key that no
// snapshot ever listed before its series are deleted: an event of an
// instance that a reload is adding can come before the snapshot lists it.
const unlistedGrace = 2

// prune takes the keys of one snapshot and returns the keys whose series
// are to be deleted now: those listed before and missing now (a reload
// removed them), and those never listed and missing from unlistedGrace
// snapshots in a row (events of an instance that was gone already).
func (t *tracked) prune(current map[seriesKey]bool) []seriesKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key := range current {
		st, ok := t.keys[key]
		if !ok {
			st = &keyState{}
			t.keys[key] = st
		}
		st.listed, st.absent = true, 0
	}
	var gone []seriesKey
	for key, st := range t.keys {
		if current[key] {
			continue
		}
		st.absent++
		if st.listed || st.absent >= unlistedGrace {
			gone = append(gone, key)
			delete(t.keys, key)
		}
	}
	return gone
}

// eventVecs are the metrics fed by events rather than read from the
// snapshot.
type eventVecs struct {
	transitions   *prometheus.CounterVec // instance, from, to
	conflicts     *prometheus.CounterVec // instance
	checks        *prometheus.HistogramVec
	checkFailures *prometheus.CounterVec // instance, tracker
}

func (v eventVecs) describe(ch chan<- *prometheus.Desc) {
	v.transitions.Describe(ch)
	v.conflicts.Describe(ch)
	v.checks.Describe(ch)
	v.checkFailures.Describe(ch)
}

func (v eventVecs) collect(ch chan<- prometheus.Metric) {
	v.transitions.Collect(ch)
	v.conflicts.Collect(ch)
	v.checks.Collect(ch)
	v.checkFailures.Collect(ch)
}

// delete removes the series of key: all of an instance's, or those of one
// of its trackers.
func (v eventVecs) delete(key seriesKey) {
	if key.tracker == "" {
		l := prometheus.Labels{labelInstance: key.instance}
		v.transitions.DeletePartialMatch(l)
		v.conflicts.DeletePartialMatch(l)
		v.checks.DeletePartialMatch(l)
		v.checkFailures.DeletePartialMatch(l)
		return
	}
	l := prometheus.Labels{labelInstance: key.instance, labelTracker: key.tracker}
	v.checks.Delete(l)
	v.checkFailures.Delete(l)
}
