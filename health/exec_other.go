//go:build !linux

package health

import "context"

// Killing a check's whole process group safely needs waitid(WNOWAIT), which
// this package only uses on Linux, vipd's platform.
const execSupported = false

func (c *execChecker) Check(context.Context) Result {
	return Result{Detail: errExecUnsupported.Error()}
}
