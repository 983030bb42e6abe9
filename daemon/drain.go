package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// lowestPriority is what a drained router advertises: any peer wins.
const lowestPriority = 1

// drainFile is where a drain is kept so that it survives a restart and a
// reboot.
func (in *instance) drainFile() string {
	if in.stateDir == "" {
		return ""
	}
	return filepath.Join(in.stateDir, "drained", in.cfg.Name+".json")
}

type drainMark struct {
	Note string    `json:"note"`
	At   time.Time `json:"at"`
}

func (in *instance) loadDrain() (bool, string) {
	f := in.drainFile()
	if f == "" {
		return false, ""
	}
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return false, ""
	}
	if err != nil {
		// Unreadable state must not silently undo an operator's drain.
		in.log.Error("reading drain state; treating the instance as drained", "file", f, "error", err)
		return true, "drain state unreadable: " + err.Error()
	}
	var m drainMark
	if err := json.Unmarshal(b, &m); err != nil {
		in.log.Error("parsing drain state; treating the instance as drained", "file", f, "error", err)
		return true, "drain state unreadable"
	}
	in.log.Warn("instance is drained (kept from an earlier run); `vipd undrain` ends it", "note", m.Note, "since", m.At)
	return true, m.Note
}

func (in *instance) saveDrain(drained bool, note string) error {
	f := in.drainFile()
	if f == "" {
		return nil
	}
	if !drained {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	b, _ := json.Marshal(drainMark{Note: note, At: in.env.Now()})
	tmp := f + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f)
}

// effectivePriority is what the trackers make of the base priority, or the
// lowest while drained.
func (in *instance) effectivePriority() uint8 {
	if in.drained {
		return lowestPriority
	}
	p, _ := in.health()
	return p
}

// applyPriority hands a changed effective priority to the machine.
func (in *instance) applyPriority() {
	in.applyHealth("drain or configuration changed")
}

// drain gives the address away and keeps it away. It runs on the
// instance's goroutine and returns when the machine has resigned; at is
// when, so a waiting caller can tell a later Master from an earlier one.
func (in *instance) drain(note string) (at time.Time, err error) {
	if err := in.saveDrain(true, note); err != nil {
		return time.Time{}, fmt.Errorf("keeping the drain in %s: %w", in.drainFile(), err)
	}
	in.setDrained(true, note)
	at = in.env.Now()
	if in.m != nil {
		cause := "drained by operator"
		if note != "" {
			cause += ": " + note
		}
		in.planned(func() { in.exec(in.m.Resign(cause, nil)) })
	}
	in.log.Info("drained: running at the lowest priority until undrained", "note", note)
	return at, nil
}

func (in *instance) setDrained(drained bool, note string) {
	in.drained, in.drainNote = drained, note
	in.pubMu.Lock()
	in.pub.drained, in.pub.drainNote = drained, note
	in.pubMu.Unlock()
	in.applyPriority()
}

func (in *instance) undrain() error {
	if err := in.saveDrain(false, ""); err != nil {
		return fmt.Errorf("removing %s: %w", in.drainFile(), err)
	}
	in.setDrained(false, "")
	in.log.Info("undrained: back at the configured priority")
	return nil
}

// waitTakeover waits until another router advertises as Master after at, or
// this one takes the address back, or ctx ends.
func (in *instance) waitTakeover(ctx context.Context, at time.Time) (taken bool, by vrrp.MasterInfo, state vrrp.State) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		st := in.status()
		if st.State == vrrp.StateMaster {
			return false, vrrp.MasterInfo{}, st.State
		}
		if m := st.Master; m.Addr.IsValid() && m.Addr != st.Primary && m.Priority > 0 && m.At.After(at) {
			return true, m, st.State
		}
		select {
		case <-ctx.Done():
			return false, vrrp.MasterInfo{}, st.State
		case <-t.C:
		}
	}
}

// waitHandoverDone waits until the planned move that started at or after at
// has removed our addresses (or ctx ends).
func (in *instance) waitHandoverDone(ctx context.Context, at time.Time) (HandoverReport, bool) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		in.pubMu.Lock()
		r := in.pub.lastHandover()
		in.pubMu.Unlock()
		if !r.PriorityZeroAt.Before(at) && !r.RemovedAt.IsZero() {
			return r, true
		}
		select {
		case <-ctx.Done():
			return r, false
		case <-t.C:
		}
	}
}
