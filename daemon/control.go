package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vipd/vipd/control"
	"github.com/vipd/vipd/hoststat"
	"github.com/vipd/vipd/vrrp"
)

// The daemon answers the control socket, but for Reload: the program's
// handler adds systemd's notifications around Daemon.Reload and turns its
// outcome into a control.ReloadResult.

// statusSettle bounds how long a status report waits for the loops.
const statusSettle = 500 * time.Millisecond

// StatusReport is the control socket's view of every instance.
func (d *Daemon) StatusReport() []control.InstanceStatus {
	// A steady Backup reads its Master's adverts every few intervals
	// (quiet.go); asking each loop first makes "last seen" exact.
	_ = d.Alive(context.Background(), statusSettle)
	sts := d.Snapshot()
	out := make([]control.InstanceStatus, 0, len(sts))
	for _, st := range sts {
		cs := control.InstanceStatus{
			Name:         st.Name,
			Interface:    st.Interface,
			VRID:         st.VRID,
			Version:      int(st.Version),
			LocalAddress: st.Primary,
			State:        control.State(st.State.String()),
			Since:        st.Since,
			Priority: control.Priority{
				Base:      int(st.Base),
				Effective: int(st.Priority),
				Parts:     []control.PriorityPart{},
			},
			Drained:     st.Drained,
			DrainNote:   st.DrainNote,
			VIPs:        st.VIPs,
			VIPsHeld:    st.Held,
			Transitions: st.Transitions,
			Trackers:    []control.Tracker{},
			Counters: control.Counters{
				AdvertsSent:     st.Sent,
				AdvertsReceived: st.Received,
				GARPSent:        st.GARPSent,
				Drops:           st.Drops,
			},
			Warnings: st.Warnings,
			Waiting:  st.Waiting,
			Announce: st.Announce,
			Routes:   st.Routes,
		}
		if d.speaker != nil && st.Announce != "arp" && !d.speaker.Established() {
			cs.Warnings = append(cs.Warnings, "no BGP session is established: the routers do not carry this instance's VIPs")
		}
		for a, f := range st.PeerChecksums {
			if cs.PeerChecksums == nil {
				cs.PeerChecksums = map[string]string{}
			}
			cs.PeerChecksums[a.String()] = f
		}
		if st.Drained {
			cs.Priority.Parts = append(cs.Priority.Parts, control.PriorityPart{
				Tracker: "drain", Contribution: int(st.Priority) - int(st.Base), Detail: "drained by operator",
			})
		}
		for _, t := range st.Trackers {
			cs.Trackers = append(cs.Trackers, control.Tracker{
				Name: t.Name, Type: t.Type, Healthy: t.Healthy, Detail: t.Detail, Cause: t.Cause, Since: t.Since,
				Weight: t.Weight, LastCheck: t.LastCheck, LastDuration: control.Duration(t.LastDuration),
				Checks: t.Checks, Failures: t.Failures,
			})
			if t.Contribution != 0 || !t.Healthy {
				cs.Priority.Parts = append(cs.Priority.Parts, control.PriorityPart{
					Tracker: t.Name, Healthy: t.Healthy, Contribution: t.Contribution, Detail: t.Detail,
				})
			}
		}
		switch {
		case st.State == vrrp.StateMaster:
			cs.Master = control.Master{Address: st.Primary, Priority: int(st.Priority), AdvertInterval: control.Duration(st.AdvertInterval), LastSeen: st.LastSent}
		case st.Master.Addr.IsValid():
			cs.Master = control.Master{Address: st.Master.Addr, Priority: int(st.Master.Priority), AdvertInterval: control.Duration(st.Master.Interval), LastSeen: st.Master.At}
		}
		if st.LastChange.To != 0 {
			tr := toControl("", st.LastChange)
			cs.LastTransition = &tr
		}
		out = append(out, cs)
	}
	return out
}

func toControl(instance string, tr vrrp.Transition) control.Transition {
	return control.Transition{
		At: tr.At, Instance: instance,
		From: control.State(tr.From.String()), To: control.State(tr.To.String()),
		Reason: tr.Reason.String(), Cause: tr.Cause,
	}
}

// Status implements control.Handler.
func (d *Daemon) Status(context.Context) ([]control.InstanceStatus, error) {
	return d.StatusReport(), nil
}

// History implements control.Handler.
func (d *Daemon) History(context.Context) ([]control.Transition, error) {
	h := d.transitions()
	out := make([]control.Transition, 0, len(h))
	for _, t := range h {
		ct := toControl(t.Instance, t.Transition)
		ct.TimerLate = control.Duration(t.TimerLate)
		if t.Host != nil {
			ct.Host = HostStat(*t.Host)
		}
		out = append(out, ct)
	}
	return out, nil
}

// Drain implements control.Handler: the named instance (or all) gives its
// address away gracefully and keeps it away until Undrain.
func (d *Daemon) Drain(ctx context.Context, req control.DrainRequest) (control.DrainResult, error) {
	rs, err := d.find(req.Instance)
	if err != nil {
		return control.DrainResult{}, err
	}
	note := req.Note
	if req.By != "" {
		if note != "" {
			note += " "
		}
		note += "(by " + req.By + ")"
	}
	res := control.DrainResult{Instances: []control.DrainedInstance{}}
	var warnings []string
	for _, r := range rs {
		if r.in.anycast() {
			var derr error
			if err := r.in.do(ctx, func() { _, derr = r.in.drain(note) }); err != nil || derr != nil {
				return res, fmt.Errorf("instance %q: %w", r.in.id.name, errors.Join(err, derr))
			}
			res.Instances = append(res.Instances, control.DrainedInstance{Name: r.in.id.name, State: control.State(r.in.status().State.String()),
				Message: "drained: its routes are withdrawn; the other hosts carry the flows"})
			continue
		}
		if r.in.follow != "" {
			// A follower moves with its leader.
			res.Instances = append(res.Instances, control.DrainedInstance{Name: r.in.id.name, State: control.State(r.in.status().State.String()),
				Message: fmt.Sprintf("follows %s: its address moves with it (drain %s)", r.in.follow, r.in.follow)})
			continue
		}
		var at time.Time
		var derr error
		wasMaster := r.in.status().State == vrrp.StateMaster
		if err := r.in.do(ctx, func() { at, derr = r.in.drain(note) }); err != nil {
			return res, fmt.Errorf("instance %q: %w", r.in.id.name, err)
		}
		if derr != nil {
			return res, fmt.Errorf("instance %q: %w", r.in.id.name, derr)
		}
		di := control.DrainedInstance{Name: r.in.id.name}
		switch {
		case !wasMaster:
			di.Message = "drained; it did not hold the address"
		case req.Wait:
			timeout := time.Duration(req.Timeout)
			if timeout <= 0 {
				timeout = control.DefaultDrainTimeout
			}
			wctx, cancel := context.WithTimeout(ctx, timeout)
			taken, by, _ := r.in.waitTakeover(wctx, at)
			hr, done := r.in.waitHandoverDone(wctx, at)
			cancel()
			if done {
				di.Handover = &control.Handover{PriorityZeroAt: hr.PriorityZeroAt, SuccessorAt: hr.SuccessorAt,
					Successor: hr.Successor, SuccessorMAC: hr.SuccessorMAC, RemovedAt: hr.RemovedAt, Late: hr.Late}
			}
			if taken {
				di.TakenOverBy = by.Addr
				di.Message = fmt.Sprintf("%v took over (priority %d)", by.Addr, by.Priority)
				if done && !hr.Late {
					di.Message += fmt.Sprintf("; heard %v after priority 0, our addresses removed %v later",
						hr.SuccessorAt.Sub(hr.PriorityZeroAt).Round(time.Microsecond), hr.RemovedAt.Sub(hr.SuccessorAt).Round(time.Microsecond))
				}
			} else {
				w := fmt.Sprintf("no other host took over %s within %v", r.in.id.name, timeout)
				if done && hr.Late {
					w += fmt.Sprintf(" (addresses kept %v, the handover bound, then removed)", hr.RemovedAt.Sub(hr.PriorityZeroAt).Round(time.Millisecond))
				}
				if r.in.status().State == vrrp.StateMaster {
					w += ": this host holds the address again, because an address with no owner is worse"
				}
				warnings = append(warnings, w)
				di.Message = w
			}
		default:
			di.Message = "drained: priority 0 sent, a peer takes over within its Skew_Time"
		}
		di.State = control.State(r.in.status().State.String())
		res.Instances = append(res.Instances, di)
	}
	res.Warning = joinWarnings(warnings)
	return res, nil
}

func joinWarnings(ws []string) string {
	out := ""
	for i, w := range ws {
		if i > 0 {
			out += "; "
		}
		out += w
	}
	return out
}

// Undrain implements control.Handler. The instance returns to its
// configured priority; with equal priorities the address stays where it is.
func (d *Daemon) Undrain(ctx context.Context, instance string) (control.DrainResult, error) {
	rs, err := d.find(instance)
	if err != nil {
		return control.DrainResult{}, err
	}
	res := control.DrainResult{Instances: []control.DrainedInstance{}}
	for _, r := range rs {
		var uerr error
		if err := r.in.do(ctx, func() { uerr = r.in.undrain() }); err != nil {
			return res, fmt.Errorf("instance %q: %w", r.in.id.name, err)
		}
		if uerr != nil {
			return res, fmt.Errorf("instance %q: %w", r.in.id.name, uerr)
		}
		res.Instances = append(res.Instances, control.DrainedInstance{
			Name: r.in.id.name, State: control.State(r.in.status().State.String()),
			Message: "undrained: back at the configured priority",
		})
	}
	return res, nil
}

// ReloadResult is a reload's outcome as the control socket answers it.
func (o ReloadOutcome) ReloadResult(err error) control.ReloadResult {
	res := control.ReloadResult{OK: err == nil, Problems: o.Problems, Changes: o.Changes}
	if res.Problems == nil {
		res.Problems = []string{}
	}
	if res.Changes == nil {
		res.Changes = []string{}
	}
	return res
}

// UpgradeRefused says why the new binary was not started: it refused the
// configuration (Problems as it printed them) or could not be run.
type UpgradeRefused struct {
	Problems []string
	Err      error
}

func (e *UpgradeRefused) Error() string {
	return "the new binary refuses to take over; the running one is kept: " + e.Err.Error()
}

func (e *UpgradeRefused) Unwrap() error { return e.Err }

// HostStat turns a host sample into the control protocol's form.
func HostStat(s hoststat.Sample) *control.HostStat {
	h := &control.HostStat{PSI: s.PSI.Available,
		CPUSome: s.PSI.CPU.Some, IOSome: s.PSI.IO.Some, IOFull: s.PSI.IO.Full,
		MemSome: s.PSI.Memory.Some, MemFull: s.PSI.Memory.Full}
	if s.HasCPU {
		h.StealPct, h.IOWaitPct, h.Span = s.CPU.StealPct, s.CPU.IOWaitPct, control.Duration(s.Span)
	}
	return h
}

// ControlBGPPeers are the BGP peers as the control socket answers them.
func (d *Daemon) ControlBGPPeers() []control.BGPPeer {
	var out []control.BGPPeer
	for _, p := range d.BGPPeers() {
		out = append(out, control.BGPPeer{Address: p.Address, ASN: p.ASN, State: p.State, Up: p.Up, Since: p.Since,
			PrefixesSent: p.PrefixesSent, LastError: p.LastError, Failures: p.Failures, RetryAt: p.RetryAt})
	}
	return out
}
