package health

import (
	"context"
	"errors"
	"net"

	"github.com/vishvananda/netlink"
)

// interfaceChecker asks the kernel for one link by name (one RTM_GETLINK,
// not a dump of every pod's veth).
type interfaceChecker struct {
	name string
	link func(name string) (netlink.Link, error) // a handle's LinkByName; tests pass one in a namespace
}

func newInterfaceChecker(name string) *interfaceChecker {
	return &interfaceChecker{name: name, link: netlink.LinkByName}
}

// Check is one netlink request and does not watch ctx.
func (c *interfaceChecker) Check(context.Context) Result {
	l, err := c.link(c.name)
	if err != nil {
		if _, ok := errors.AsType[netlink.LinkNotFoundError](err); ok {
			return Result{Detail: "interface " + c.name + " not found"}
		}
		return Result{Detail: "interface " + c.name + ": " + err.Error()}
	}
	a := l.Attrs()
	switch {
	case a.Flags&net.FlagUp == 0:
		return Result{Detail: "interface " + c.name + " down"}
	// As netif: drivers that do not track carrier report the unknown
	// operational state (RFC 2863) while working.
	case a.OperState != netlink.OperUp && a.OperState != netlink.OperUnknown:
		return Result{Detail: "interface " + c.name + " down: no carrier (operational state " + a.OperState.String() + ")"}
	}
	return Result{OK: true, Detail: "interface " + c.name + " up"}
}
