package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vipd/vipd/vrrp"
)

// hookQueue bounds the hooks waiting to run for one instance: a flapping
// instance must not pile up processes or memory.
const hookQueue = 32

// hookOutputLimit bounds what one hook may write to the log.
const hookOutputLimit = 64 << 10

// hookRun is one notify hook to run.
type hookRun struct {
	event   string // master, backup, fault, stop
	argv    []string
	env     []string
	timeout time.Duration
}

// hookRunner runs one instance's notify hooks asynchronously, in order, one
// at a time, so a slow or hanging hook never blocks the election — nor the
// instance's stop: the hooks still queued then run after it, while a
// replacement instance already elects (a VRID change, a re-exec).
type hookRunner struct {
	log       *slog.Logger
	queue     chan hookRun
	done      chan struct{}
	abandoned atomic.Bool
	wg        *sync.WaitGroup
	// started: the runner's goroutine and queue exist. Most instances
	// never run a hook: theirs start at the first hook or at close.
	started sync.Once
}

// newHookRunner makes a runner; wg, if not nil, counts it until its last
// hook has run, so that the daemon's final stop waits for the stop hooks.
func newHookRunner(log *slog.Logger, wg *sync.WaitGroup) *hookRunner {
	h := &hookRunner{log: log, done: make(chan struct{}), wg: wg}
	if wg != nil {
		wg.Add(1)
	}
	return h
}

func (h *hookRunner) start() {
	h.started.Do(func() {
		h.queue = make(chan hookRun, hookQueue)
		go func() {
			if h.wg != nil {
				defer h.wg.Done()
			}
			h.loop()
		}()
	})
}

// enqueue never blocks: when the queue is full the hook is dropped, loudly.
func (h *hookRunner) enqueue(r hookRun) {
	h.start()
	select {
	case h.queue <- r:
	default:
		h.log.Error("notify hook dropped: too many waiting", "event", r.event, "command", r.argv)
	}
}

// close lets what is queued run (each bounded by its timeout) without
// waiting for it.
func (h *hookRunner) close() {
	if !h.endUnstarted() {
		close(h.queue)
	}
}

// abandon drops the hooks not started yet, saying so: the process is about
// to be replaced (a re-exec) and its successor must not wait for them. A
// hook that runs now goes on in its own process group.
func (h *hookRunner) abandon() {
	h.abandoned.Store(true)
	h.close()
}

// endUnstarted ends a runner that never ran a hook, with no goroutine to
// start for it, and says whether it did.
func (h *hookRunner) endUnstarted() bool {
	ended := false
	h.started.Do(func() {
		ended = true
		close(h.done)
		if h.wg != nil {
			h.wg.Done()
		}
	})
	return ended
}

// wait blocks until the runner has finished (tests).
func (h *hookRunner) wait() { <-h.done }

func (h *hookRunner) loop() {
	defer close(h.done)
	for r := range h.queue {
		if h.abandoned.Load() {
			h.log.Warn("notify hook not run: the daemon is being replaced", "event", r.event, "command", r.argv)
			continue
		}
		h.run(r)
	}
}

func (h *hookRunner) run(r hookRun) {
	log := h.log.With("event", r.event, "command", r.argv[0])
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	cmd := exec.Command(r.argv[0], r.argv[1:]...)
	cmd.Env = append(os.Environ(), r.env...)
	// Its own process group, so a timeout kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	w := &hookLog{log: log}
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	if err := cmd.Start(); err != nil {
		log.Error("notify hook failed to start", "error", err)
		return
	}

	stopKill := context.AfterFunc(ctx, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	stopKill()
	w.flush()
	took := time.Since(start).Round(time.Millisecond)
	switch {
	case ctx.Err() != nil:
		log.Error("notify hook killed after its timeout", "timeout", r.timeout)
	case errors.Is(err, exec.ErrWaitDelay):
		// The hook exited; something it started in the background still
		// holds its output. That process is the hook's business.
		log.Warn("notify hook done, but a process it started kept its output open; redirect the output of background commands", "took", took)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			log.Warn("notify hook failed", "exit", ee.ExitCode(), "took", took)
		} else {
			log.Error("notify hook failed", "error", err, "took", took)
		}
	default:
		log.Info("notify hook done", "took", took)
	}
}

// hookLog turns a hook's output into log lines, up to hookOutputLimit. As
// the command's Stdout (not a pipe we read), exec's WaitDelay bounds the
// wait even if a grandchild keeps the output open.
type hookLog struct {
	log     *slog.Logger
	partial []byte
	written int
}

func (w *hookLog) Write(p []byte) (int, error) {
	n := len(p)
	if room := hookOutputLimit - w.written; len(p) > room {
		p = p[:max(room, 0)]
	}
	w.written += len(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.log.Info("notify hook output", "line", strings.TrimRight(string(w.partial[:i]), "\r"))
		w.partial = w.partial[i+1:]
	}
	return n, nil
}

func (w *hookLog) flush() {
	if len(w.partial) > 0 {
		w.log.Info("notify hook output", "line", string(w.partial))
		w.partial = nil
	}
}

// runHook queues the notify hook of the state entered, if configured.
func (in *instance) runHook(tr vrrp.Transition) {
	if tr.Reason == vrrp.ReasonResumed {
		return // a resumed Master did not change state
	}
	var argv []string
	event := ""
	switch tr.To {
	case vrrp.StateMaster:
		argv, event = in.cfg.Notify.Master, "master"
	case vrrp.StateBackup:
		argv, event = in.cfg.Notify.Backup, "backup"
	case vrrp.StateFault:
		argv, event = in.cfg.Notify.Fault, "fault"
	case vrrp.StateInitialize:
		argv, event = in.cfg.Notify.Stop, "stop"
	}
	if len(argv) == 0 {
		return
	}
	if in.notify == nil {
		// Made at the first hook to run: most groups have none, and a
		// reload may add some.
		in.notify = newHookRunner(in.log, in.hooks.hookRunners)
	}
	vips := make([]string, 0, len(in.cfg.VIPs))
	for _, v := range in.cfg.VIPs {
		vips = append(vips, v.String())
	}
	in.notify.enqueue(hookRun{
		event: event,
		argv:  argv,
		env: []string{
			"VIPD_INSTANCE=" + in.cfg.Name,
			"VIPD_STATE=" + tr.To.String(),
			"VIPD_PREVIOUS_STATE=" + tr.From.String(),
			"VIPD_VIPS=" + strings.Join(vips, " "),
			"VIPD_CAUSE=" + tr.Cause,
			"VIPD_REASON=" + tr.Reason.String(),
		},
		timeout: in.cfg.Notify.Timeout,
	})
}
