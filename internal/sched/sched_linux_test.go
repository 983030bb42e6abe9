package sched

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The test runs in a child process: real-time scheduling is not something
// to leave on the test binary.
func TestRealtimeEveryThreadAndNormalChildren(t *testing.T) {
	if os.Getenv("VIPD_SCHED_CHILD") == "1" {
		realtimeChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_NICE) for real-time scheduling; run the tests as root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealtimeEveryThreadAndNormalChildren$", "-test.v")
	cmd.Env = append(os.Environ(), "VIPD_SCHED_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func realtimeChild(t *testing.T) {
	if err := Realtime(RoundRobin, 5); err != nil {
		t.Fatal(err)
	}
	tids, err := threads()
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		pol, prio, err := Of(tid)
		if err != nil {
			continue
		}
		if pol != unix.SCHED_RR || prio != 5 {
			t.Errorf("thread %d: policy %d priority %d, want SCHED_RR 5", tid, pol, prio)
		}
	}
	// A started program, and what it starts at once, begin on the
	// ordinary scheduler (SCHED_RESET_ON_FORK): no window.
	out, err := exec.Command("/bin/sh", "-c", "grep '^policy' /proc/self/sched; sh -c \"grep '^policy' /proc/self/sched\"").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) != 3 || f[2] != "0" {
			t.Errorf("a child runs under %q, want policy 0", l)
		}
	}
	// A thread that lost the policy (as a new runtime thread does) gets it
	// back from Keep. The runtime may start threads of its own at any time
	// (the exec above does), and those start on the ordinary scheduler too,
	// so Keep may fix more than the one made ordinary here: at least one.
	tid := tids[len(tids)-1]
	if err := Normal(tid); err != nil {
		t.Fatal(err)
	}
	if n, err := Keep(RoundRobin, 5); err != nil || n < 1 {
		t.Errorf("Keep = %d, %v; want at least the 1 thread made ordinary fixed", n, err)
	}
	if pol, _, _ := Of(tid); pol != unix.SCHED_RR {
		t.Errorf("thread %d after Keep: policy %d", tid, pol)
	}
	if err := Realtime("idle", 5); err == nil {
		t.Error("an unknown policy was accepted")
	}
	if err := Realtime(FIFO, 100); err == nil {
		t.Error("priority 100 was accepted")
	}
}
