//go:build !linux

package ktimer

import (
	"errors"
	"time"
)

// Timer is not available outside Linux; New fails.
type Timer struct{}

// New fails outside Linux: callers fall back to the runtime's timers.
func New() (*Timer, error) { return nil, errors.New("ktimer: timerfd is Linux only") }

func (t *Timer) C() <-chan time.Time   { return nil }
func (t *Timer) Reset(d time.Duration) {}
func (t *Timer) Stop()                 {}
func (t *Timer) Close() error          { return nil }
