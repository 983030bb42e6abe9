package health

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// fileChecker is an operator's drain switch: failing while path exists.
// Lstat, so a dangling symlink placed there counts as present: the name
// exists, whatever it points to.
type fileChecker struct{ path string }

// Check is one local system call and does not watch ctx.
func (c fileChecker) Check(context.Context) Result {
	_, err := os.Lstat(c.path)
	switch {
	case err == nil:
		return Result{Detail: c.path + " exists"}
	case errors.Is(err, fs.ErrNotExist):
		return Result{OK: true, Detail: c.path + " absent"}
	}
	// Unknown is not healthy: a drain switch that cannot be read must not
	// be ignored.
	return Result{Detail: err.Error()}
}
