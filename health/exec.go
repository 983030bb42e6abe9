package health

import (
	"errors"
	"os/exec"
	"slices"
	"time"
)

// execWaitDelay bounds how long a finished check waits for its output pipe
// when a process that left the check's process group still holds it open.
const execWaitDelay = time.Second

var errExecUnsupported = errors.New("exec trackers are supported on Linux only")

// execChecker runs one argv, never through a shell, in a process group of
// its own so that a timeout kills whatever the command started too.
type execChecker struct {
	path    string   // argv[0] resolved once, so PATH is searched once
	argv    []string // as configured, argv[0] included
	timeout time.Duration
}

func newExecChecker(s Spec) (*execChecker, error) {
	if !execSupported {
		return nil, errExecUnsupported
	}
	path, err := exec.LookPath(s.Command[0])
	if err != nil {
		return nil, err
	}
	return &execChecker{path: path, argv: slices.Clone(s.Command), timeout: s.Timeout}, nil
}

// command builds the exec.Cmd for one check; output goes to out, of which
// only the head is kept.
func (c *execChecker) command(out *headBuffer) *exec.Cmd {
	cmd := exec.Command(c.path)
	cmd.Args = slices.Clone(c.argv)
	// The same pointer for both: os/exec then makes one pipe, written by
	// one goroutine, so headBuffer needs no lock.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = execWaitDelay
	return cmd
}
