package health

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests here count this process's children and file descriptors: none
// of them runs in parallel.

func execSpec(timeout time.Duration, argv ...string) Spec {
	s := Spec{Name: "etcd", Type: Exec, Command: argv}.WithDefaults()
	if timeout > 0 {
		s.Timeout = timeout
		s.Interval = max(s.Interval, 2*timeout)
	}
	return s
}

func TestExecExitStatus(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		wantOK bool
		want   string
	}{
		{argv: []string{"true"}, wantOK: true, want: "exit status 0"},
		{argv: []string{"sh", "-c", "exit 3"}, want: "exit status 3"},
		// argv goes to the program untouched: no shell of ours splits or
		// expands it.
		{argv: []string{"sh", "-c", `echo "$1|$2"; exit 1`, "sh", "a b", "$HOME;*"}, want: "exit status 1: a b|$HOME;*"},
		{argv: []string{"sh", "-c", "echo to stdout; echo to stderr >&2; exit 2"}, want: "exit status 2: to stdout to stderr"},
		{argv: []string{"sh", "-c", "kill -SEGV $$"}, want: "signal: segmentation fault"},
		// Megabytes of output are read and dropped, not buffered.
		{argv: []string{"sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' y"}, wantOK: true, want: "exit status 0: " + strings.Repeat("y", maxExcerpt) + "..."},
	} {
		checkResult(t, mustChecker(t, execSpec(0, tc.argv...)), tc.wantOK, tc.want)
	}
}

func TestExecStartFailure(t *testing.T) {
	// Validate found it; by the time of the check it is gone.
	dir := t.TempDir()
	script := filepath.Join(dir, "check")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := mustChecker(t, execSpec(0, script))
	checkResult(t, c, true, "exit status 0")
	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	got := c.Check(t.Context())
	if got.OK || !strings.Contains(got.Detail, "no such file or directory") {
		t.Errorf("Check() = %+v, want a start failure", got)
	}
}

// grandchild runs argv with a shell that writes the pid of a background
// "sleep 100" to a file, and returns the check's result and that pid.
func grandchild(t *testing.T, timeout time.Duration, script string) (Result, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	res := mustChecker(t, execSpec(timeout, "sh", "-c", script, "sh", pidFile)).Check(t.Context())
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the command did not get to write its child's pid: %v (result %+v)", err, res)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return res, pid
}

// requireDead waits until pid is gone or a zombie (dead, waiting for init
// to reap it). The wait is for the kernel and init, not a speed assertion.
func requireDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		state, comm, _, err := procStat(pid)
		if errors.Is(err, os.ErrNotExist) || state == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d, %s) still runs (state %c, err %v)", what, pid, comm, state, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procStat reads a process's state, command name and parent.
func procStat(pid int) (state byte, comm string, ppid int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", 0, err
	}
	// "pid (comm) S ppid ...": comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return 0, "", 0, errors.New("unparsable stat")
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 {
		return 0, "", 0, errors.New("unparsable stat")
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0][0], string(b[open+1 : end]), ppid, err
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	res, pid := grandchild(t, 2*time.Second, `sleep 100 & echo $! > "$1"; sleep 100`)
	if res.OK || res.Detail != "killed after timeout 2s" {
		t.Errorf("Check() = %+v, want killed after timeout 2s", res)
	}
	requireDead(t, pid, "the command's background child")
	requireNoChildren(t)
}

// TestExecLeftoversKilled: a command that exits but leaves a process behind
// in its group (and holding its output pipe) passes, and its leftover is
// killed rather than accumulating every interval.
func TestExecLeftoversKilled(t *testing.T) {
	res, pid := grandchild(t, 0, `sleep 100 & echo $! > "$1"`)
	if !res.OK || res.Detail != "exit status 0" {
		t.Errorf("Check() = %+v, want exit status 0", res)
	}
	requireDead(t, pid, "the command's leftover child")
	requireNoChildren(t)
}

// TestExecEscapedProcess: a process that leaves the group (setsid) cannot be
// killed with it; holding the output pipe open, it must still not hang the
// check beyond the wait delay.
func TestExecEscapedProcess(t *testing.T) {
	// The pid is written after setsid(2), so the command exits only once
	// the process has escaped.
	res, pid := grandchild(t, 0, `setsid sh -c 'echo $$ > "$1"; exec sleep 100' sh "$1" & while [ ! -s "$1" ]; do sleep 0.01; done`)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if !res.OK || res.Detail != "exit status 0" {
		t.Errorf("Check() = %+v, want exit status 0", res)
	}
	requireNoChildren(t)
}

func TestExecCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	c := mustChecker(t, execSpec(time.Minute, "sleep", "100"))
	done := make(chan Result)
	go func() { done <- c.Check(ctx) }()
	cancel()
	if got := <-done; got.OK || got.Detail != "canceled" {
		t.Errorf("Check() = %+v, want canceled", got)
	}
	requireNoChildren(t)
}

// requireNoChildren fails if this process has any child left, zombie or not.
func requireNoChildren(t *testing.T) {
	t.Helper()
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, comm, ppid, err := procStat(pid)
		if err == nil && ppid == self {
			t.Errorf("child left behind: pid %d (%s), state %c", pid, comm, state)
		}
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestExecNoLeaks runs thousands of checks of every outcome and then
// requires no child (zombie or running) and no more open descriptors than
// before.
func TestExecNoLeaks(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	checkers := []Checker{
		mustChecker(t, execSpec(0, "true")),
		mustChecker(t, execSpec(0, "false")),
		mustChecker(t, execSpec(0, "sh", "-c", "echo out; echo err >&2; exit 2")),
		mustChecker(t, execSpec(0, "sh", "-c", "head -c 100000 /dev/zero")),
		mustChecker(t, execSpec(0, "sh", "-c", "sleep 100 & exit 0")),
	}
	hang := mustChecker(t, execSpec(20*time.Millisecond, "sh", "-c", "sleep 100 & sleep 100"))
	// Warm up: the runtime opens descriptors of its own (epoll, pidfd
	// probing) on first use.
	for _, c := range checkers {
		c.Check(t.Context())
	}
	hang.Check(t.Context())
	before := openFDs(t)

	ok := 0
	for i := range n {
		var res Result
		if i%100 == 0 {
			res = hang.Check(t.Context())
		} else {
			res = checkers[i%len(checkers)].Check(t.Context())
		}
		if res.OK {
			ok++
		}
	}
	if after := openFDs(t); after > before {
		t.Errorf("open descriptors grew from %d to %d over %d checks", before, after, n)
	}
	requireNoChildren(t)
	if ok == 0 || ok == n {
		t.Errorf("%d of %d checks passed: the mix should have both outcomes", ok, n)
	}
}
