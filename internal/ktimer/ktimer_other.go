//go:build !linux

package ktimer

import (
	"errors"
	"time"
)

// Group is not available outside Linux; NewGroup fails.
type Group struct{}

// NewGroup fails outside Linux: callers fall back to the runtime's timers.
func NewGroup() (*Group, error) { return nil, errors.New("ktimer: timerfd is Linux only") }

func (g *Group) New(func()) (*Timer, error) { return nil, errors.New("ktimer: timerfd is Linux only") }
func (g *Group) Close() error               { return nil }

// Timer is not available outside Linux.
type Timer struct{}

func (t *Timer) Reset(d time.Duration) {}
func (t *Timer) Stop()                 {}
func (t *Timer) Close() error          { return nil }
