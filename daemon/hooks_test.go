package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests run real, short-lived processes through hookRunner (not in
// synctest time: the processes and their timeouts are real).

// hookLogBuf collects what the runner logs, as text lines.
type hookLogBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *hookLogBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *hookLogBuf) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Split(strings.TrimRight(b.buf.String(), "\n"), "\n")
}

// count is how many lines contain every part.
func (b *hookLogBuf) count(parts ...string) int {
	n := 0
	for _, l := range b.lines() {
		if containsAll(l, parts...) {
			n++
		}
	}
	return n
}

// index is the first line that contains every part, or -1.
func (b *hookLogBuf) index(parts ...string) int {
	for i, l := range b.lines() {
		if containsAll(l, parts...) {
			return i
		}
	}
	return -1
}

func (b *hookLogBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// newTestHookRunner returns a runner and its close, which a test calls to
// wait for its hooks; cleanup calls it too, so that a test that fails early
// still lets its hooks end (by their timeouts) before the test binary exits.
func newTestHookRunner(t *testing.T) (h *hookRunner, log *hookLogBuf, closeRunner func()) {
	t.Helper()
	log = &hookLogBuf{}
	h = newHookRunner(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})), nil)
	var once sync.Once
	closeRunner = func() { once.Do(func() { h.close(); h.wait() }) }
	t.Cleanup(closeRunner)
	return h, log, closeRunner
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procDead reports whether pid is gone or a zombie.
func procDead(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %q", path, b)
	}
	return pid
}

func TestHookRunsWithEnvironmentAndOutput(t *testing.T) {
	h, log, closeRunner := newTestHookRunner(t)
	h.enqueue(hookRun{
		event: "master",
		argv:  sh(`echo "state=$VIPD_STATE previous=$VIPD_PREVIOUS_STATE instance=$VIPD_INSTANCE"; echo "to stderr" >&2; printf "no newline"`),
		env:   []string{"VIPD_STATE=MASTER", "VIPD_PREVIOUS_STATE=BACKUP", "VIPD_INSTANCE=k8s-api"},
		// Generous: a bound for a broken test, not a speed requirement.
		timeout: time.Minute,
	})
	closeRunner()
	for _, want := range [][]string{
		{"notify hook output", "event=master", "command=/bin/sh", `line="state=MASTER previous=BACKUP instance=k8s-api"`},
		{"notify hook output", `line="to stderr"`},
		{"notify hook output", `line="no newline"`},
		{"level=INFO", "notify hook done", "event=master", "took="},
	} {
		if log.count(want...) != 1 {
			t.Errorf("want one line with %q in:\n%s", want, log)
		}
	}
}

func TestHookKilledAtTimeoutWithItsChildren(t *testing.T) {
	dir := t.TempDir()
	childPID, next := filepath.Join(dir, "child.pid"), filepath.Join(dir, "next")
	h, log, closeRunner := newTestHookRunner(t)
	const timeout = time.Second
	start := time.Now()
	// The hook starts a child of its own and waits for it: both must go.
	h.enqueue(hookRun{event: "master", argv: sh(`/bin/sleep 1000 & echo $! > ` + childPID + `.tmp; mv ` + childPID + `.tmp ` + childPID + `; wait`), timeout: timeout})
	// Queued behind it; runs once the first is killed.
	h.enqueue(hookRun{event: "backup", argv: sh(`touch ` + next), timeout: time.Minute})
	waitFile(t, childPID)
	pid := readPID(t, childPID)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if procDead(pid) {
		t.Fatalf("the hook's child %d is not running", pid)
	}
	if _, err := os.Stat(next); err == nil {
		t.Fatal("the second hook ran while the first one was still running")
	}
	closeRunner()
	took := time.Since(start)
	if took < timeout {
		t.Errorf("the runner finished after %v, before the first hook's timeout of %v", took, timeout)
	}
	t.Logf("hanging hook killed; both hooks done %v after the start (timeout %v)", took.Round(time.Millisecond), timeout)

	killed := log.index("level=ERROR", "notify hook killed after its timeout", "event=master", "timeout=1s")
	done := log.index("notify hook done", "event=backup")
	if killed < 0 || done < 0 || done < killed {
		t.Errorf("want the master hook killed, then the backup hook done:\n%s", log)
	}
	if _, err := os.Stat(next); err != nil {
		t.Errorf("the hook queued behind the hanging one did not run: %v", err)
	}
	// The kill reaches the hook's process group, its child included.
	deadline := time.Now().Add(10 * time.Second)
	for !procDead(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the hook's child %d survived the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHookFailuresDoNotStopTheQueue(t *testing.T) {
	next := filepath.Join(t.TempDir(), "next")
	h, log, closeRunner := newTestHookRunner(t)
	h.enqueue(hookRun{event: "fault", argv: []string{"/nonexistent/vipd-hook"}, timeout: time.Minute})
	h.enqueue(hookRun{event: "backup", argv: sh("exit 3"), timeout: time.Minute})
	h.enqueue(hookRun{event: "master", argv: sh("touch " + next), timeout: time.Minute})
	closeRunner()
	if log.count("level=ERROR", "notify hook failed to start", "event=fault", "command=/nonexistent/vipd-hook") != 1 {
		t.Errorf("no start failure logged:\n%s", log)
	}
	if log.count("level=WARN", "notify hook failed", "event=backup", "exit=3") != 1 {
		t.Errorf("no exit status logged:\n%s", log)
	}
	if log.count("notify hook done", "event=master") != 1 {
		t.Errorf("the hook after the failures did not run:\n%s", log)
	}
	if _, err := os.Stat(next); err != nil {
		t.Error(err)
	}
}

func TestHookQueueFullDropsWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	h, log, closeRunner := newTestHookRunner(t)
	// Runs before closeRunner's cleanup: a failed test releases the hook.
	t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
	// The first hook holds the runner until the test releases it.
	h.enqueue(hookRun{event: "master", timeout: time.Minute,
		argv: sh(`touch ` + started + `; while [ ! -e ` + release + ` ]; do sleep 0.01; done`)})
	waitFile(t, started)
	// It has left the queue: hookQueue more fit, the next is dropped, and
	// enqueue returns every time.
	for i := range hookQueue + 1 {
		h.enqueue(hookRun{event: "backup", argv: []string{"/bin/true", strconv.Itoa(i)}, timeout: time.Minute})
	}
	if n := log.count("level=ERROR", "notify hook dropped: too many waiting", "event=backup"); n != 1 {
		t.Errorf("%d hooks dropped, want 1:\n%s", n, log)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	closeRunner()
	if n := log.count("notify hook done"); n != hookQueue+1 {
		t.Errorf("%d hooks done, want %d (the first and the %d queued)", n, hookQueue+1, hookQueue)
	}
}

func TestHookOutputIsBounded(t *testing.T) {
	h, log, closeRunner := newTestHookRunner(t)
	// 10000 lines of 16 bytes: far more than hookOutputLimit.
	h.enqueue(hookRun{event: "master", argv: sh(`i=0; while [ $i -lt 10000 ]; do echo 0123456789abcde; i=$((i+1)); done`), timeout: time.Minute})
	closeRunner()
	if n, want := log.count("notify hook output", "line=0123456789abcde"), hookOutputLimit/16; n != want {
		t.Errorf("%d output lines logged, want %d (hookOutputLimit)", n, want)
	}
	if log.count("notify hook done") != 1 {
		t.Errorf("the hook did not finish normally:\n%.2000s", log)
	}
}

func TestHookBackgroundChildDoesNotHoldTheRunner(t *testing.T) {
	dir := t.TempDir()
	childPID, next := filepath.Join(dir, "child.pid"), filepath.Join(dir, "next")
	h, log, closeRunner := newTestHookRunner(t)
	// The hook exits at once but leaves a child that keeps its output
	// open: the runner must move on (exec's WaitDelay), not wait for it.
	h.enqueue(hookRun{event: "master", argv: sh(`/bin/sleep 1000 & echo $! > ` + childPID + `.tmp; mv ` + childPID + `.tmp ` + childPID), timeout: time.Minute})
	h.enqueue(hookRun{event: "backup", argv: sh("touch " + next), timeout: time.Minute})
	waitFile(t, childPID)
	pid := readPID(t, childPID)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	start := time.Now()
	closeRunner()
	t.Logf("runner done %v after the hook started its child; the master hook was logged as: %q",
		time.Since(start).Round(time.Millisecond), log.lines()[max(0, log.index("event=master", "notify hook"))])
	t.Logf("the hook's background child %d still runs after the runner closed: %v", pid, !procDead(pid))
	if _, err := os.Stat(next); err != nil {
		t.Errorf("the next hook did not run: %v", err)
	}
	if log.count("notify hook done", "event=backup") != 1 {
		t.Errorf("the next hook did not finish:\n%s", log)
	}
}

// Most instances never run a hook: their runner holds no goroutine until
// the first, and closing it still ends it, so the daemon's final stop
// does not wait for a runner that never ran.
func TestHookRunnerWithoutHooksHoldsNoGoroutine(t *testing.T) {
	var wg sync.WaitGroup
	before := runtime.NumGoroutine()
	runners := make([]*hookRunner, 64)
	for i := range runners {
		runners[i] = newHookRunner(slog.New(slog.DiscardHandler), &wg)
	}
	// A goroutine the runtime counts for a moment (a cleanup running) is
	// not a runner's, which would stay.
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > 0 {
		t.Errorf("64 idle runners hold %d goroutines", n)
	}
	for _, h := range runners {
		h.close()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the final stop still waits for runners that never ran a hook")
	}
}
