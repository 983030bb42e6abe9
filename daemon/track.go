package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/vipd/vipd/config"
	"github.com/vipd/vipd/health"
	"github.com/vipd/vipd/vrrp"
)

// trackerSet is an instance's running health trackers.
type trackerSet struct {
	trackers []*health.Tracker
	specs    []config.Track
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// CheckTrackers prepares every tracker of cfg without running one, and
// returns what the config package could not see (a CA file that does not
// load, an exec program that is missing) as problems with their lines.
func CheckTrackers(cfg *config.Config) *config.Error {
	var problems []config.Problem
	for _, ic := range cfg.Instances {
		for _, tr := range ic.Tracks {
			if _, err := newTracker(tr, nil, nil); err != nil {
				problems = append(problems, config.Problem{File: cfg.Path, Line: tr.Line,
					Message: fmt.Sprintf("instance %q: track %q: %v", ic.Name, tr.Name, err)})
			}
		}
	}
	if problems == nil {
		return nil
	}
	return &config.Error{Problems: problems}
}

func newTracker(tr config.Track, log *slog.Logger, opts []health.Option) (*health.Tracker, error) {
	typ, err := health.ParseType(tr.Type)
	if err != nil {
		return nil, err
	}
	spec := health.Spec{
		Name: tr.Name, Type: typ, Weight: tr.Weight, Fall: tr.Fall, Rise: tr.Rise,
		Interval: tr.Interval, Timeout: tr.Timeout,
		URL: tr.URL, OKStatus: tr.OKStatus, CAFile: tr.CAFile, CertFile: tr.CertFile, KeyFile: tr.KeyFile,
		InsecureSkipVerify: tr.InsecureSkipVerify,
		Command:            tr.Command, Path: tr.Path, Interface: tr.Interface,
	}.WithDefaults()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	checker, err := health.NewChecker(spec)
	if err != nil {
		return nil, err
	}
	return health.NewTracker(spec, checker, log, opts...), nil
}

// buildTrackers checks every tracker's configuration and prepares its
// checker; nothing runs yet. Problems the config package cannot see (a CA
// file that does not load) are reported with the tracker's line.
func (in *instance) buildTrackers(tracks []config.Track) ([]*health.Tracker, error) {
	var ts []*health.Tracker
	for _, tr := range tracks {
		name := tr.Name
		var opts []health.Option
		if obs := in.hooks.trackerCheck; obs != nil {
			opts = append(opts, health.WithCheckObserver(func(d time.Duration, ok bool) { obs(in.id.name, name, d, ok) }))
		}
		if r := in.resume; r != nil {
			for _, th := range r.Trackers {
				if th.Name == name {
					opts = append(opts, health.WithInitialState(th.Healthy, th.Cause, th.Since))
				}
			}
		}
		t, err := newTracker(tr, in.log, opts)
		if err != nil {
			return nil, fmt.Errorf("line %d: track %q: %w", tr.Line, tr.Name, err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// startTrackers runs ts until stopTrackers; their changes arrive in the
// instance's mailbox.
func (in *instance) startTrackers(ts []*health.Tracker, specs []config.Track) {
	if len(ts) == 0 {
		return // no set: most groups track nothing
	}
	ctx, cancel := context.WithCancel(context.Background())
	set := &trackerSet{trackers: ts, specs: specs, cancel: cancel}
	for _, t := range ts {
		set.wg.Add(1)
		go func() {
			defer set.wg.Done()
			t.RunFunc(ctx, func(st *health.Status) { in.mb.postOther(st) })
		}()
	}
	in.trackers = set
	in.pubMu.Lock()
	in.pub.trackers = ts
	in.pubMu.Unlock()
}

func (in *instance) stopTrackers() {
	if in.trackers == nil {
		return
	}
	in.trackers.cancel()
	// A tracker blocked sending a change gives up on cancel.
	in.trackers.wg.Wait()
	in.trackers = nil
	in.pubMu.Lock()
	in.pub.trackers = nil
	in.pubMu.Unlock()
}

// onTracker handles a tracker that turned healthy or failing.
func (in *instance) onTracker(st *health.Status) {
	if in.trackers == nil || !slices.ContainsFunc(in.trackers.trackers, func(t *health.Tracker) bool { return t.Status().Name == st.Name }) {
		return // from a tracker set replaced by a reload
	}
	// The tracker has logged the change itself; the priority it makes is
	// logged below.
	state := "failing"
	if st.Healthy {
		state = "healthy"
	}
	in.applyHealth("tracker " + st.Name + " " + state + ": " + st.Cause)
}

// health returns the trackers' verdict: the priority they make and the
// fault they demand.
func (in *instance) health() (uint8, string) {
	if in.follow != "" && in.leaderPrio != 0 {
		// A follower advertises its leader's priority; its trackers are
		// the leader's.
		return in.leaderPrio, ""
	}
	if in.trackers == nil {
		return in.cfg.Priority, ""
	}
	sts := make([]health.Status, 0, len(in.trackers.trackers))
	for _, t := range in.trackers.trackers {
		sts = append(sts, t.Status())
	}
	return health.Effective(in.cfg.Priority, sts)
}

// applyHealth hands the priority and fault the trackers and a drain make to
// the machine, logging a change with its cause.
func (in *instance) applyHealth(cause string) {
	prio, fault := in.health()
	if in.drained {
		prio = lowestPriority
	}
	in.pubMu.Lock()
	old := in.pub.priority
	in.pub.priority = prio
	in.pubMu.Unlock()
	if old != prio {
		in.log.Info("priority changed", "from", old, "to", prio, "cause", cause)
	}
	if in.m == nil {
		if in.cfg.Announce == config.AnnounceBGPAnycast && in.routes != nil {
			in.evaluateAnycast(cause)
		}
		return
	}
	var out []vrrp.Action
	out = in.m.SetPriority(prio, out)
	out = in.m.SetFault(fault, out)
	in.exec(out)
}
