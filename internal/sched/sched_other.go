//go:build !linux

package sched

import "errors"

// Policy is a real-time scheduling policy.
type Policy string

const (
	RoundRobin Policy = "rr"
	FIFO       Policy = "fifo"
)

var errUnsupported = errors.New("sched: supported on Linux only")

func Realtime(Policy, int) error    { return errUnsupported }
func Keep(Policy, int) (int, error) { return 0, errUnsupported }
func Normal(int) error              { return nil }
func LockMemory() error             { return errUnsupported }
