package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
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
// at a time, so a slow or hanging hook never blocks the election.
type hookRunner struct {
	log   *slog.Logger
	queue chan hookRun
	done  chan struct{}
}

func newHookRunner(log *slog.Logger) *hookRunner {
	h := &hookRunner{log: log, queue: make(chan hookRun, hookQueue), done: make(chan struct{})}
	go h.loop()
	return h
}

// enqueue never blocks: when the queue is full the hook is dropped, loudly.
func (h *hookRunner) enqueue(r hookRun) {
	select {
	case h.queue <- r:
	default:
		h.log.Error("notify hook dropped: too many waiting", "event", r.event, "command", r.argv)
	}
}

// close runs what is queued (each bounded by its timeout) and waits.
func (h *hookRunner) close() {
	close(h.queue)
	<-h.done
}

func (h *hookRunner) loop() {
	defer close(h.done)
	for r := range h.queue {
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
