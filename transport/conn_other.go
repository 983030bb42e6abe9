//go:build !linux

package transport

import "net"

// Listen is not implemented outside Linux.
func Listen(ifi *net.Interface, opts Options) (Conn, error) { return nil, ErrUnsupported }
