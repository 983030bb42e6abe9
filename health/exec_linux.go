package health

import (
	"context"
	"errors"

	"golang.org/x/sys/unix"
)

const execSupported = true

// Check runs the command as the leader of a new process group. The leader's
// exit is observed with waitid(WNOWAIT), which leaves it a zombie: while it
// is one, its pid, which is also the group's id, cannot be given to another
// process, so killing the group (on timeout, and afterwards to remove
// anything the command left running) can never hit a stranger. Then Wait
// reaps it, so no zombie outlives a check.
func (c *execChecker) Check(ctx context.Context) Result {
	ctx, cancel := withCheckTimeout(ctx, c.timeout)
	defer cancel()
	out := &headBuffer{max: maxExcerpt}
	cmd := c.command(out)
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return Result{Detail: err.Error()}
	}
	pid := cmd.Process.Pid

	// Owned by this call, which always receives from exited: waitid returns
	// once the leader exits, and the leader is killed when ctx ends.
	exited := make(chan error, 1)
	go func() { exited <- waitExit(pid) }()
	killed := false
	var werr error
	select {
	case werr = <-exited:
	case <-ctx.Done():
		killed = true
		_ = unix.Kill(-pid, unix.SIGKILL)
		werr = <-exited
	}
	if werr == nil {
		// The leader is an unreaped zombie: the group id is still ours.
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
	err := cmd.Wait()
	ex := excerpt(string(out.buf), out.truncated)

	switch {
	case killed && timedOut(ctx):
		return Result{Detail: withExcerpt("killed after timeout "+c.timeout.String(), ex)}
	case killed:
		return Result{Detail: "canceled"}
	case cmd.ProcessState == nil:
		return Result{Detail: err.Error()}
	}
	// ProcessState says "exit status 2" or "signal: segmentation fault";
	// an ErrWaitDelay (output held open by an escaped process) does not
	// change the command's verdict.
	return Result{OK: cmd.ProcessState.Success(), Detail: withExcerpt(cmd.ProcessState.String(), ex)}
}

// waitExit blocks until process pid exits, without reaping it.
func waitExit(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
