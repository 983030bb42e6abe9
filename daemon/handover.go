package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// A Handover is what a daemon passes to the binary that replaces it (same
// PID, re-exec), so that a Master stays Master across an upgrade: no
// priority 0, no new election, no second owner.
type Handover struct {
	Version   int                 `json:"version"`
	At        time.Time           `json:"at"`
	Instances []InstanceHandover  `json:"instances"`
	History   []HandoverHistEntry `json:"history"`
}

// InstanceHandover is one instance's state at the handover.
type InstanceHandover struct {
	Name        string `json:"name"`
	VRID        uint8  `json:"vrid"`
	Interface   string `json:"interface"`
	State       string `json:"state"`
	Held        bool   `json:"held"`
	Transitions uint64 `json:"transitions"`
	// Trackers keep their state across the upgrade: a failing tracker
	// must not come back healthy.
	Trackers []TrackerHandover `json:"trackers,omitempty"`
}

// TrackerHandover is one tracker's state at the handover.
type TrackerHandover struct {
	Name    string    `json:"name"`
	Healthy bool      `json:"healthy"`
	Cause   string    `json:"cause"`
	Since   time.Time `json:"since"`
}

// HandoverHistEntry keeps `vipd history` across the upgrade.
type HandoverHistEntry struct {
	At       time.Time `json:"at"`
	Instance string    `json:"instance"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Reason   string    `json:"reason"`
	Cause    string    `json:"cause"`
}

const handoverVersion = 1

// WriteHandover stores h at path, readable only by the daemon's user.
func WriteHandover(path string, h *Handover) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadHandover loads and removes the handover at path: it is good for one
// start only.
func ReadHandover(path string) (*Handover, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	os.Remove(path)
	var h Handover
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("handover %s: %w", path, err)
	}
	if h.Version != handoverVersion {
		return nil, fmt.Errorf("handover %s: version %d, want %d", path, h.Version, handoverVersion)
	}
	return &h, nil
}

// Detach prepares a re-exec: every instance sends one more advert if it is
// Master (so Backups' timers restart just before the gap), then stops
// without releasing anything when Run's context ends. It returns what the
// next process needs. An instance that does not answer fails it before
// anything was changed on the others.
func (d *Daemon) Detach(ctx context.Context) (*Handover, error) {
	rs := d.snapshot()
	for _, r := range rs {
		if err := r.in.do(ctx, func() {}); err != nil {
			return nil, fmt.Errorf("instance %q does not answer: %w", r.in.id.name, err)
		}
	}
	h := &Handover{Version: handoverVersion, At: d.env.Now()}
	for _, r := range rs {
		var ih InstanceHandover
		err := r.in.do(ctx, func() {
			in := r.in
			st := vrrp.StateInitialize
			if in.m != nil {
				st, _ = in.m.State()
			}
			if st == vrrp.StateMaster {
				in.sendAdvert(in.m.Priority())
			}
			held := in.holder.held
			ih = InstanceHandover{Name: in.id.name, VRID: in.id.vrid, Interface: in.id.ifname, State: st.String(), Held: held,
				Transitions: in.counters.transitions.Load()}
			if in.trackers != nil {
				for _, t := range in.trackers.trackers {
					ts := t.Status()
					ih.Trackers = append(ih.Trackers, TrackerHandover{Name: ts.Name, Healthy: ts.Healthy, Cause: ts.Cause, Since: ts.Since})
				}
			}
			in.detach = true
		})
		if err != nil {
			return nil, fmt.Errorf("instance %q: %w", r.in.id.name, err)
		}
		h.Instances = append(h.Instances, ih)
	}
	if d.speaker != nil {
		// The routers keep the routes across the re-exec (graceful
		// restart, when configured).
		d.speaker.StopForRestart()
	}
	for _, t := range d.transitions() {
		h.History = append(h.History, HandoverHistEntry{
			At: t.At, Instance: t.Instance, From: t.From.String(), To: t.To.String(),
			Reason: t.Reason.String(), Cause: t.Cause,
		})
	}
	return h, nil
}

// resumeFrom finds an instance's record in a handover: same name, VRID and
// interface, or nothing.
func (h *Handover) resumeFrom(id instanceID) *InstanceHandover {
	if h == nil {
		return nil
	}
	for i := range h.Instances {
		ih := &h.Instances[i]
		if ih.Name == id.name && ih.VRID == id.vrid && ih.Interface == id.ifname {
			return ih
		}
	}
	return nil
}

// restoreHistory puts the previous process's history back.
func (d *Daemon) restoreHistory(h *Handover) {
	if h == nil {
		return
	}
	for _, e := range h.History {
		d.appendHistory(Transition{Instance: e.Instance, Transition: vrrp.Transition{
			At: e.At, From: parseState(e.From), To: parseState(e.To), Reason: parseReason(e.Reason), Cause: e.Cause,
		}})
	}
}

func parseState(s string) vrrp.State {
	for _, st := range vrrp.States() {
		if st.String() == s {
			return st
		}
	}
	return vrrp.StateInitialize
}

func parseReason(s string) vrrp.Reason {
	for r := vrrp.Reason(1); r.String() != "invalid"; r++ {
		if r.String() == s {
			return r
		}
	}
	return vrrp.ReasonResumed
}
