//go:build !linux

package health

import (
	"context"
	"net"
)

// interfaceChecker reads the interface's flags from the standard library
// where netlink does not exist: up and running (carrier).
type interfaceChecker struct{ name string }

func newInterfaceChecker(name string) *interfaceChecker { return &interfaceChecker{name: name} }

// Check does not watch ctx.
func (c *interfaceChecker) Check(context.Context) Result {
	ifi, err := net.InterfaceByName(c.name)
	switch {
	case err != nil:
		return Result{Detail: "interface " + c.name + ": " + err.Error()}
	case ifi.Flags&net.FlagUp == 0:
		return Result{Detail: "interface " + c.name + " down"}
	case ifi.Flags&net.FlagRunning == 0:
		return Result{Detail: "interface " + c.name + " down: no carrier"}
	}
	return Result{OK: true, Detail: "interface " + c.name + " up"}
}
