//go:build !linux

package ndp

import "net"

// Dial fails with ErrUnsupported outside Linux.
func Dial(ifi *net.Interface) (*Announcer, error) { return nil, ErrUnsupported }

// ListenMonitor fails with ErrUnsupported outside Linux.
func ListenMonitor(ifi *net.Interface) (*Monitor, error) { return nil, ErrUnsupported }

func transient(error) bool { return false }
