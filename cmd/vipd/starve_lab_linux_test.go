package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vipd/vipd/internal/lab"
	"github.com/vipd/vipd/internal/sched"
	"golang.org/x/sys/unix"
)

// Issue 11, starvation protection: realtime_priority puts every thread of
// the daemon under SCHED_RR, lock_memory locks it, and the hooks it starts
// stay on the ordinary scheduler.
func TestLabRealtimeScheduling(t *testing.T) {
	needRoot(t)
	c := newCluster(t, 100*time.Millisecond, noDaemon)
	marker := filepath.Join(t.TempDir(), "hook")
	spec := c.spec(1)
	spec.Kind, spec.Binary = lab.Vipd, vipdBinary
	spec.Config = func(_ int, cfg []byte) []byte {
		cfg = bytes.Replace(cfg, []byte("[global]\n"), []byte("[global]\nrealtime_priority = 7\nlock_memory = true\n"), 1)
		hook := fmt.Sprintf("\n[instance.notify]\nmaster = [\"/bin/sh\", \"-c\", \"cat /proc/self/sched > %s.tmp; mv %s.tmp %s; sleep 30\"]\ntimeout = \"60s\"\n", marker, marker, marker)
		return append(cfg, hook...)
	}
	c.kinds[0] = lab.Vipd
	c.startSpec(1, spec)
	c.waitOnlyHolder(1)
	if !c.waitLog(1, "real-time scheduling", "policy=rr", "priority=7") || !c.waitLog(1, "memory locked") {
		t.Fatal("the daemon does not report its scheduling")
	}
	// Threads the runtime creates later start without the policy (reset on
	// fork) and get it within a few seconds.
	pid := c.daemons[1].PID()
	var wrong []string
	for deadline := time.Now().Add(8 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatal(err)
		}
		wrong = wrong[:0]
		for _, e := range tasks {
			tid, _ := strconv.Atoi(e.Name())
			pol, prio, err := sched.Of(tid)
			if err == nil && (pol != unix.SCHED_RR || prio != 7) {
				wrong = append(wrong, fmt.Sprintf("thread %d: policy %d priority %d", tid, pol, prio))
			}
		}
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(wrong) > 0 {
		t.Errorf("threads of the daemon not under SCHED_RR 7: %v", wrong)
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if !strings.Contains(string(status), "VmLck:") || strings.Contains(string(status), "VmLck:\t       0 kB") {
		t.Errorf("no locked memory: %s", grepLine(status, "VmLck"))
	}
	// The Master's hook reads its own scheduling policy.
	deadline := time.Now().Add(10 * time.Second)
	var b []byte
	var err error
	for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err = os.ReadFile(marker); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal("the master hook did not run")
	}
	if f := strings.Fields(grepLine(b, "policy")); len(f) != 3 || f[2] != "0" {
		t.Errorf("the hook runs under %q, want policy 0 (SCHED_OTHER)", grepLine(b, "policy"))
	}
}

func grepLine(b []byte, key string) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key) {
			return l
		}
	}
	return ""
}
